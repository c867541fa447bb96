// Package mount makes and removes the bind mounts that put a RAMDISK at a
// job's own paths, without ever letting a user steer a root mount: targets
// are opened with openat2(RESOLVE_NO_SYMLINKS), checked for ownership and
// file system type on the opened descriptor, and mounted through that
// descriptor (move_mount), so no path is resolved twice. It owns reading
// the mount table, which it does by mount ID (listmount and statmount), so
// that no path a user can change decides what RSA finds or unmounts. It
// must not create or destroy RAMDISKs (that is the engine's job).
package mount

import (
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrBusy is returned by Unbind when a mount is still in use.
var ErrBusy = errors.New("still in use (files open or a process inside)")

// TargetError explains why a path cannot be a mount target; it names the
// path, the problem and the fix.
type TargetError struct {
	Role string // "input directory", "output directory"
	Path string
	Why  string
}

func (e *TargetError) Error() string {
	return fmt.Sprintf("%s %q: %s", e.Role, e.Path, e.Why)
}

// openNoSymlinks opens path as an O_PATH directory descriptor, refusing any
// symbolic link in any component.
func openNoSymlinks(dirfd int, path string) (int, error) {
	return openPathNoSymlinks(dirfd, path, unix.O_DIRECTORY)
}

// openPathNoSymlinks opens path as an O_PATH descriptor with the extra
// flags, refusing any symbolic link in any component.
func openPathNoSymlinks(dirfd int, path string, flags uint64) (int, error) {
	for {
		fd, err := unix.Openat2(dirfd, path, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_CLOEXEC | flags,
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		return fd, err
	}
}

// OpenTarget is Policy{}.OpenTarget: the default refused file system
// types, any path.
func OpenTarget(role, path string, uid uint32) (int, error) {
	return Policy{}.OpenTarget(role, path, uid)
}

// checkOwner refuses a target that is not the job's user's own directory
// nor a project directory: one owned by another user (a PI, a service
// account) that not everyone may write. Root's directories and
// directories open to everyone (world-writable, or sticky like /tmp) are
// shared by all the node's users, and a RAMDISK over one would hide theirs.
// Whether the job's user may use a project directory is for CheckTarget,
// run with the user's rights, to say; a RAMDISK over one carries its
// owner, group, mode and ACLs (the daemon's bind), so nobody gets more
// access through it than the directory gave.
func checkOwner(role, path string, st unix.Stat_t, uid uint32) error {
	switch {
	case st.Uid == 0:
		return &TargetError{role, path, "is owned by uid 0 (root); RSA never mounts over root's directories"}
	case st.Uid == uid:
		return nil
	case st.Mode&(unix.S_IWOTH|unix.S_ISVTX) != 0:
		return &TargetError{role, path, fmt.Sprintf("is owned by uid %d, not by the job's user (uid %d), and open to everyone (mode %04o): RSA mounts only over the job user's own directories and project directories not everyone may write; use a directory of your own or your project's",
			st.Uid, uid, st.Mode&0o7777)}
	}
	return nil
}

// accessFor is what the job's user must be allowed in a directory of
// role: to read its input (list it and open what is in it), or to write
// output into it and read it back for the stage-out's check.
func accessFor(role string) uint32 {
	if role == InputRole {
		return unix.R_OK | unix.X_OK
	}
	return unix.R_OK | unix.W_OK | unix.X_OK
}

// InputRole is the role of a job's input directory in checks and errors;
// any other role is one the job writes into.
const InputRole = "input directory"

// PubliclyReachable reports whether every directory above path lets anyone
// search it (o+x). Checks made as root on behalf of a user who is not known
// yet are made only then, so that they reveal nothing a user could not see.
func PubliclyReachable(path string) bool {
	if !filepath.IsAbs(path) {
		return false
	}
	for dir := filepath.Dir(filepath.Clean(path)); ; dir = filepath.Dir(dir) {
		var st unix.Stat_t
		if unix.Lstat(dir, &st) != nil || st.Mode&0o001 == 0 {
			return false
		}
		if dir == "/" {
			return true
		}
	}
}

// CheckDir is Policy{}.CheckDir.
func CheckDir(role, path string) error { return Policy{}.CheckDir(role, path) }

// CheckProgram checks that path, reached without symlinks, is a regular
// file that uid may execute (any execute bit when the user is not known).
// The group bits are not weighed: the program runs with the user's groups,
// and a program only the group may run fails then with that reason.
func CheckProgram(role, path string, uid uint32, knownUID bool) error {
	fd, err := openPathNoSymlinks(unix.AT_FDCWD, path, unix.O_NOFOLLOW)
	switch {
	case errors.Is(err, unix.ENOENT):
		return &TargetError{role, path, "does not exist"}
	case errors.Is(err, unix.ELOOP):
		return &TargetError{role, path, "is or passes through a symbolic link; give the real path (readlink -f)"}
	case err != nil:
		return &TargetError{role, path, fmt.Sprintf("cannot be opened: %v", err)}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &TargetError{role, path, fmt.Sprintf("cannot be examined: %v", err)}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return &TargetError{role, path, "is not a regular file"}
	}
	exec := st.Mode&0o111 != 0
	if knownUID && st.Uid == uid {
		exec = st.Mode&0o100 != 0
	}
	if !exec {
		return &TargetError{role, path, "is not executable; chmod +x it"}
	}
	return nil
}

// CheckTarget is Policy{}.CheckTarget.
func CheckTarget(role, path string, uid uint32) error {
	return Policy{}.CheckTarget(role, path, uid)
}

// Bind is Policy{}.Bind.
func Bind(role, src, target string, uid uint32) error {
	return Policy{}.Bind(role, src, target, uid)
}

// CloneTree returns a detached copy of the mount at src (open_tree with
// OPEN_TREE_CLONE), which Attach can place in this or, passed as a file
// descriptor, in another mount namespace. The caller closes it.
func CloneTree(src string) (int, error) {
	tree, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("cloning RAMDISK %s: %w", src, err)
	}
	return tree, nil
}

// Attach is Policy{}.Attach.
func Attach(role string, tree int, target string, uid uint32) error {
	return Policy{}.Attach(role, tree, target, uid)
}
