// Package holders finds the processes that keep a file system alive: an
// open file, a working or root directory, a memory mapping inside it, or a
// mount of it in their mount namespace. A RAMDISK that is unmounted while
// such a process lives keeps its RAM; RSA finds these processes before it
// counts the RAM free, and ends them (package daemon decides when; whose
// they are, root's or a user's, is Holder.Root).
//
// It reads /proc only, and never asks the file systems involved: every
// stat is made with AT_STATX_DONT_SYNC on /proc's magic links, so a user's
// stalled FUSE or NFS mount cannot hang the search.
package holders

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Holder is one process holding the file system.
type Holder struct {
	PID int
	// UID is the user whose process it is: its real uid; if that is 0,
	// its saved uid; if that is 0 too, its effective uid. A process
	// whose real uid is a user's is the user's to lose: they could signal
	// it themselves (kill(2) lets a sender whose real or effective uid
	// is the target's real or saved uid). So a setuid-root program a user started (effective
	// and saved uid 0) is the user's, or it could keep their job's RAM
	// after the job ended; and a process root started that is, or may
	// become again, a user (effective or saved uid the user's) counts as
	// theirs. 0 means real, effective and saved uids are all root's: the
	// process is root's (Root).
	UID uint32
	// EUID is its effective uid, for the logs: 0 for a setuid-root
	// program.
	EUID      uint32
	Comm      string // its command name, as /proc/PID/comm has it
	What      string // how it holds it: "cwd", "root", "fd 3", "mapping", "mount namespace"
	StartTime uint64 // clock ticks after boot: with PID, names the process across pid reuse
}

// Root reports whether the process is root's: its real, effective and
// saved uids are all 0. RSA never signals root's processes; every other
// holder of a finished job's RAMDISK is a user's to lose.
func (h Holder) Root() bool { return h.UID == 0 }

func (h Holder) String() string {
	if h.EUID != h.UID {
		return fmt.Sprintf("pid %d (%s, uid %d, euid %d) by its %s", h.PID, strconv.Quote(h.Comm), h.UID, h.EUID, h.What)
	}
	return fmt.Sprintf("pid %d (%s, uid %d) by its %s", h.PID, strconv.Quote(h.Comm), h.UID, h.What)
}

// Find lists the processes that hold the file system with device number
// dev. Processes that vanish while it looks are skipped.
func Find(ctx context.Context, dev uint64) ([]Holder, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("reading /proc: %w", err)
	}
	self := os.Getpid()
	ownNS, _ := os.Readlink("/proc/self/ns/mnt")
	nsHolds := map[string]bool{} // mount namespace -> holds dev
	var out []Holder
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		what := holds(pid, dev, ownNS, nsHolds)
		if what == "" {
			continue
		}
		h := Holder{PID: pid, What: what}
		// Whose it is comes from its real uid first, not from the
		// owner of /proc/PID, which is its effective uid: 0 for a
		// setuid-root program.
		ruid, euid, suid, err := uids(pid)
		if err != nil {
			continue // gone: the kernel's status file is unreadable only then
		}
		h.EUID = euid
		for _, id := range []uint32{ruid, suid, euid} {
			if id != 0 {
				h.UID = id
				break
			}
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/comm"); err == nil {
			h.Comm = strings.TrimSpace(string(b))
		}
		if h.StartTime, err = StartTime(pid); err != nil {
			continue
		}
		out = append(out, h)
	}
	return out, nil
}

// holds says how process pid holds dev, or "".
func holds(pid int, dev uint64, ownNS string, nsHolds map[string]bool) string {
	base := "/proc/" + strconv.Itoa(pid)
	for _, l := range []string{"cwd", "root"} {
		if on(base+"/"+l, dev) {
			return l
		}
	}
	if fds, err := os.ReadDir(base + "/fd"); err == nil {
		for _, fd := range fds {
			if on(base+"/fd/"+fd.Name(), dev) {
				return "fd " + fd.Name()
			}
		}
	}
	if mapsHold(base+"/maps", dev) {
		return "mapping"
	}
	if ns, err := os.Readlink(base + "/ns/mnt"); err == nil && ns != ownNS {
		held, seen := nsHolds[ns]
		if !seen {
			held = mountinfoHolds(base+"/mountinfo", dev)
			nsHolds[ns] = held
		}
		if held {
			return "mount namespace"
		}
	}
	return ""
}

// on reports whether the magic link at p leads into dev, without asking
// the file system it leads to.
func on(p string, dev uint64) bool {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, p, unix.AT_STATX_DONT_SYNC, 0, &st); err != nil {
		return false
	}
	return unix.Mkdev(st.Dev_major, st.Dev_minor) == dev
}

// mapsHold reads /proc/PID/maps ("addr perms offset MAJ:MIN inode path",
// device in hex) for a mapping of a file on dev.
func mapsHold(p string, dev uint64) bool {
	want := fmt.Sprintf("%02x:%02x", unix.Major(dev), unix.Minor(dev))
	found := false
	eachLine(p, func(l []byte) bool {
		f := bytes.Fields(l)
		if len(f) >= 4 && devEqual(string(f[3]), want, 16) {
			found = true
			return false
		}
		return true
	})
	return found
}

// mountinfoHolds reads another namespace's mount table ("ID PARENT
// MAJ:MIN ...", device in decimal) for a mount of dev.
func mountinfoHolds(p string, dev uint64) bool {
	want := fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev))
	found := false
	eachLine(p, func(l []byte) bool {
		f := bytes.Fields(l)
		if len(f) >= 3 && string(f[2]) == want {
			found = true
			return false
		}
		return true
	})
	return found
}

func devEqual(have, want string, base int) bool {
	if have == want {
		return true
	}
	hm, hn, ok1 := strings.Cut(have, ":")
	wm, wn, ok2 := strings.Cut(want, ":")
	if !ok1 || !ok2 {
		return false
	}
	a, e1 := strconv.ParseUint(hm, base, 32)
	b, e2 := strconv.ParseUint(hn, base, 32)
	c, e3 := strconv.ParseUint(wm, base, 32)
	d, e4 := strconv.ParseUint(wn, base, 32)
	return e1 == nil && e2 == nil && e3 == nil && e4 == nil && a == c && b == d
}

// eachLine calls fn with the first 4 KiB of every line of the file at p
// (the fields it needs come first; a user can make the rest of a line as
// long as they like) until fn returns false.
func eachLine(p string, fn func([]byte) bool) {
	f, err := os.Open(p)
	if err != nil {
		return
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 4096)
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 && !fn(line) {
			return
		}
		for errors.Is(err, bufio.ErrBufferFull) { // skip the rest of a long line
			_, err = r.ReadSlice('\n')
		}
		if err == io.EOF || err != nil {
			return
		}
	}
}

// uids reads a process' real, effective and saved uids from the "Uid:"
// line of /proc/PID/status ("Uid:\treal\teffective\tsaved\tfs"), which
// the kernel writes (a page at most).
func uids(pid int) (ruid, euid, suid uint32, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, 0, err
	}
	for l := range bytes.Lines(b) {
		rest, ok := bytes.CutPrefix(l, []byte("Uid:"))
		if !ok {
			continue
		}
		bad := fmt.Errorf("/proc/%d/status: bad Uid line %q", pid, bytes.TrimSpace(l))
		f := bytes.Fields(rest)
		if len(f) < 3 {
			return 0, 0, 0, bad
		}
		var ids [3]uint32
		for i := range ids {
			n, err := strconv.ParseUint(string(f[i]), 10, 32)
			if err != nil {
				return 0, 0, 0, bad
			}
			ids[i] = uint32(n)
		}
		return ids[0], ids[1], ids[2], nil
	}
	return 0, 0, 0, fmt.Errorf("/proc/%d/status has no Uid line", pid)
}

// StartTime reads a process' start time (clock ticks after boot) from
// /proc/PID/stat, which with the pid identifies it across pid reuse.
func StartTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("bad /proc stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, errors.New("bad /proc stat")
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// Signal sends sig to h if it is still the same process (pidfd: no pid
// reuse can redirect it). A process that is gone is not an error.
func Signal(h Holder, sig unix.Signal) error {
	fd, err := unix.PidfdOpen(h.PID, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("opening pid %d: %w", h.PID, err)
	}
	defer unix.Close(fd)
	if st, err := StartTime(h.PID); err != nil || st != h.StartTime {
		return nil // another process has the pid now; h is gone
	}
	if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("signalling pid %d: %w", h.PID, err)
	}
	return nil
}
