// Package mount makes and removes the bind mounts that put a RAMDISK at a
// job's own paths, without ever letting a user steer a root mount: targets
// are opened with openat2(RESOLVE_NO_SYMLINKS), checked for ownership on the
// opened descriptor, and mounted through that descriptor (move_mount), so no
// path is resolved twice. It owns /proc/self/mountinfo parsing. It must not
// create or destroy RAMDISKs (that is the engine's job).
package mount

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

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

// OpenTarget opens path for mounting over it on behalf of uid, checking on
// the opened descriptor that it is a real directory owned by uid. The caller
// closes the returned fd.
func OpenTarget(role, path string, uid uint32) (int, error) {
	fd, st, err := openDir(role, path)
	if err != nil {
		return -1, err
	}
	if err := checkOwner(role, path, st, uid); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

func openDir(role, path string) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return -1, st, &TargetError{role, path, "must be a clean absolute path (no '..', no trailing '/')"}
	}
	if path == "/" {
		return -1, st, &TargetError{role, path, "RSA never mounts over /"}
	}
	fd, err := openNoSymlinks(unix.AT_FDCWD, path)
	switch {
	case err == nil:
	case errors.Is(err, unix.ENOENT):
		return -1, st, &TargetError{role, path, "does not exist; create the directory before submitting"}
	case errors.Is(err, unix.ELOOP):
		return -1, st, &TargetError{role, path, "is or passes through a symbolic link; give the real path (readlink -f)"}
	case errors.Is(err, unix.ENOTDIR):
		return -1, st, &TargetError{role, path, "is not a directory"}
	default:
		return -1, st, &TargetError{role, path, fmt.Sprintf("cannot be opened: %v", err)}
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, &TargetError{role, path, fmt.Sprintf("cannot be examined: %v", err)}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		unix.Close(fd)
		return -1, st, &TargetError{role, path, "is not a directory"}
	}
	return fd, st, nil
}

func checkOwner(role, path string, st unix.Stat_t, uid uint32) error {
	if st.Uid != uid {
		return &TargetError{role, path, fmt.Sprintf("is owned by uid %d, not by the job's user (uid %d); RSA only mounts over directories the job's user owns", st.Uid, uid)}
	}
	if st.Uid == 0 {
		return &TargetError{role, path, "is owned by root; RSA never mounts over root's directories"}
	}
	return nil
}

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

// CheckDir checks that path is a real directory, reached without symlinks,
// whoever owns it (used when the owner is not known yet).
func CheckDir(role, path string) error {
	fd, _, err := openDir(role, path)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

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

// CheckTarget validates a mount target without mounting (used at submit).
func CheckTarget(role, path string, uid uint32) error {
	fd, err := OpenTarget(role, path, uid)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// Bind mounts the directory src (a root-controlled RAMDISK path) over target
// (a directory the job's user owns). It is idempotent: if target already
// shows src's file system at its root, it does nothing.
func Bind(role, src, target string, uid uint32) error {
	tree, err := CloneTree(src)
	if err != nil {
		return err
	}
	defer unix.Close(tree)
	return Attach(role, tree, target, uid)
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

// Attach mounts the detached tree over target after the race-free checks of
// OpenTarget. It is idempotent: a target that already shows the tree's root
// is left as it is.
func Attach(role string, tree int, target string, uid uint32) error {
	tfd, tst, err := openDir(role, target)
	if err != nil {
		return err
	}
	defer unix.Close(tfd)
	var sst unix.Stat_t
	if err := unix.Fstat(tree, &sst); err != nil {
		return fmt.Errorf("examining RAMDISK: %w", err)
	}
	if sst.Dev == tst.Dev && sst.Ino == tst.Ino {
		return nil // already mounted (a resumed action)
	}
	if err := checkOwner(role, target, tst, uid); err != nil {
		return err
	}
	if err := unix.MoveMount(tree, "", tfd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("mounting RAMDISK over %s %s: %w", role, target, err)
	}
	return nil
}

// Info is one line of /proc/self/mountinfo.
type Info struct {
	ID, Parent int
	Dev        string // major:minor of the file system
	Root       string // path within the file system
	Point      string // mount point
	FSType     string
	Source     string
}

// List reads this process' mount table.
func List() ([]Info, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Info
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 7 || sep < 6 || len(fields) < sep+3 {
			continue
		}
		id, _ := strconv.Atoi(fields[0])
		parent, _ := strconv.Atoi(fields[1])
		out = append(out, Info{ID: id, Parent: parent, Dev: fields[2], Root: unescape(fields[3]), Point: unescape(fields[4]),
			FSType: fields[sep+1], Source: unescape(fields[sep+2])})
	}
	return out, sc.Err()
}

// unescape undoes mountinfo's octal escapes (\040 for space, ...).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// MountedAt returns the mount whose mount point is exactly path, if any (the
// top one when mounts are stacked).
func MountedAt(path string) (Info, bool, error) {
	ms, err := List()
	if err != nil {
		return Info{}, false, err
	}
	var found Info
	ok := false
	for _, m := range ms {
		if m.Point == path {
			found, ok = m, true
		}
	}
	return found, ok, nil
}

// Binds lists the mounts showing the same file system as the mount at src,
// other than src itself: the RAMDISK's bind mounts at job paths, wherever a
// user may have moved them since.
func Binds(src string) ([]Info, error) {
	dev, err := DevOf(src)
	if err != nil || dev == "" {
		return nil, err
	}
	return bindsOf(dev, src)
}

// DevOf returns the device (major:minor) of the mount at src, or "" if
// nothing is mounted there. It names a RAMDISK in every mount namespace.
func DevOf(src string) (string, error) {
	ms, err := List()
	if err != nil {
		return "", err
	}
	for _, m := range ms {
		if m.Point == src {
			return m.Dev, nil
		}
	}
	return "", nil
}

func bindsOf(dev, except string) ([]Info, error) {
	ms, err := List()
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, m := range ms {
		if m.Dev == dev && m.Point != except {
			out = append(out, m)
		}
	}
	return out, nil
}

// Unbind removes every bind mount of the RAMDISK mounted at src. With detach
// the mounts are detached even if busy (used once the job has ended); without
// it a busy mount returns ErrBusy and stays.
func Unbind(src string, detach bool) error {
	dev, err := DevOf(src)
	if err != nil {
		return fmt.Errorf("reading mounts: %w", err)
	}
	if dev == "" {
		return nil
	}
	return UnbindDev(dev, src, detach)
}

// UnbindDev removes every mount of the file system dev in this mount
// namespace except the one at except (the RAMDISK itself, on its own host).
func UnbindDev(dev, except string, detach bool) error {
	binds, err := bindsOf(dev, except)
	if err != nil {
		return fmt.Errorf("reading mounts: %w", err)
	}
	// Innermost first, in case a user stacked paths.
	for i := len(binds) - 1; i >= 0; i-- {
		if err := unmountVerified(binds[i], detach); err != nil {
			return err
		}
	}
	return nil
}

// unmountVerified unmounts m without following any user symlink: it opens
// the parent race-free, checks that the child is still mount m, and unmounts
// the child through the parent's descriptor. A mount point cannot be renamed
// or removed while mounted, so the name cannot be swapped in between.
func unmountVerified(m Info, detach bool) error {
	parent, name := filepath.Split(m.Point)
	if name == "" {
		return fmt.Errorf("refusing to unmount %s", m.Point)
	}
	pfd, err := openNoSymlinks(unix.AT_FDCWD, filepath.Clean(parent))
	if err != nil {
		return fmt.Errorf("opening parent of %s: %w", m.Point, err)
	}
	defer unix.Close(pfd)
	cfd, err := openNoSymlinks(pfd, name)
	if err != nil {
		return fmt.Errorf("opening %s: %w", m.Point, err)
	}
	var st unix.Statx_t
	err = unix.Statx(cfd, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &st)
	unix.Close(cfd)
	if err != nil {
		return fmt.Errorf("examining %s: %w", m.Point, err)
	}
	if int(st.Mnt_id) != m.ID {
		return fmt.Errorf("%s changed (mount %d, expected %d); not unmounting", m.Point, st.Mnt_id, m.ID)
	}
	flags := unix.UMOUNT_NOFOLLOW
	if detach {
		flags |= unix.MNT_DETACH
	}
	err = unix.Unmount(fmt.Sprintf("/proc/self/fd/%d/%s", pfd, name), flags)
	switch {
	case err == nil, errors.Is(err, unix.EINVAL) && detach: // EINVAL: already gone
		return nil
	case errors.Is(err, unix.EBUSY):
		return fmt.Errorf("unmounting %s: %w", m.Point, ErrBusy)
	default:
		return fmt.Errorf("unmounting %s: %w", m.Point, err)
	}
}
