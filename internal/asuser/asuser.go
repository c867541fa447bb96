// Package asuser runs file system checks with a user's rights instead of
// root's. The daemon is root, and a check it makes for a user must not tell
// that user more than they could see themselves: whether a path in another
// user's 0700 home exists, or who owns it. Do switches one OS thread's file
// system identity (setfsuid, setfsgid, setgroups are per thread in the
// kernel) for the duration of a function; the thread is then thrown away,
// so no other goroutine ever runs with that identity or with root's rights
// half restored.
package asuser

import (
	"errors"
	"fmt"
	"os/user"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// Identity is whose rights a check runs with.
type Identity struct {
	UID, GID uint32
	Groups   []uint32
}

// Nobody is the identity for checks made before the user is known (Slurm
// 22.05 validates a job script without saying whose it is): such a check
// sees only what anyone may see.
var Nobody = Identity{UID: 65534, GID: 65534}

// Do runs fn on a fresh OS thread whose file system uid, gid and
// supplementary groups are id's. When the file system uid leaves 0 the
// kernel drops the thread's file capabilities (CAP_DAC_OVERRIDE,
// CAP_DAC_READ_SEARCH, CAP_FOWNER, ...), so every permission check inside
// fn is the user's. fn must not start goroutines that touch the file
// system on its behalf: they would run on other threads, as root.
func Do(id Identity, fn func() error) error {
	if id.UID == 0 {
		return errors.New("asuser: refusing to check as root (uid 0)")
	}
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: when this goroutine returns, the runtime ends the
		// thread instead of handing it, changed, to other goroutines.
		runtime.LockOSThread()
		errc <- become(id, fn)
	}()
	return <-errc
}

func become(id Identity, fn func() error) error {
	groups := make([]int, len(id.Groups))
	for i, g := range id.Groups {
		groups[i] = int(g)
	}
	// x/sys' Setgroups is the raw per-thread system call (the standard
	// library's syscall.Setgroups would change every thread of the daemon).
	if err := unix.Setgroups(groups); err != nil {
		return fmt.Errorf("asuser: setgroups: %w", err)
	}
	unix.SetfsgidRetGid(int(id.GID))
	unix.SetfsuidRetUid(int(id.UID))
	// setfsuid reports the previous value and fails silently: ask again
	// (-1 changes nothing) to be sure the switch took.
	if cur, _ := unix.SetfsuidRetUid(-1); cur != int(id.UID) {
		return fmt.Errorf("asuser: could not switch the file system uid to %d", id.UID)
	}
	if cur, _ := unix.SetfsgidRetGid(-1); cur != int(id.GID) {
		return fmt.Errorf("asuser: could not switch the file system gid to %d", id.GID)
	}
	return fn()
}

// Lookup is uid's identity in this host's user database (NSS): its
// primary group and its groups, as a login would give them.
func Lookup(uid uint32) (Identity, error) {
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return Identity{}, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return Identity{}, fmt.Errorf("primary group %q of uid %d: %w", u.Gid, uid, err)
	}
	names, err := u.GroupIds()
	if err != nil {
		return Identity{}, fmt.Errorf("groups of uid %d: %w", uid, err)
	}
	id := Identity{UID: uid, GID: uint32(gid)}
	for _, g := range names {
		if n, err := strconv.ParseUint(g, 10, 32); err == nil {
			id.Groups = append(id.Groups, uint32(n))
		}
	}
	return id, nil
}
