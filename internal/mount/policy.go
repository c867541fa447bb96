package mount

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/asuser"
)

// Policy limits the directories RSA mounts a RAMDISK over, beyond what
// every target must be (a clean absolute path reached without symbolic
// links, a directory the job's user owns or a project directory, see
// checkOwner). The zero Policy refuses the
// DefaultRefusedFSTypes and allows any path.
type Policy struct {
	// RefuseFSTypes are file system types never mounted over; an entry
	// also covers its subtypes ("fuse" covers "fuse.sshfs"). Nil means
	// DefaultRefusedFSTypes(); an empty, non-nil list refuses none. RSA's
	// own RAMDISKs (tmpfs whose source is "rsa-...") are refused whatever
	// the list says.
	RefuseFSTypes []string
	// AllowedPaths, if not empty, are the absolute directories at or
	// below which a target must be ("/home", "/scratch").
	AllowedPaths []string
}

// DefaultRefusedFSTypes returns the file system types the zero Policy
// refuses: kernel interfaces whose directories a user may own (their own
// /proc/<pid>, a delegated cgroup) but that no job's data belongs on, and
// FUSE, whose server is the user's and could stall root.
func DefaultRefusedFSTypes() []string {
	return []string{
		"proc", "sysfs", "cgroup", "cgroup2", "devpts", "devtmpfs",
		"securityfs", "debugfs", "tracefs", "bpf", "mqueue", "fusectl",
		"configfs", "pstore", "efivarfs", "hugetlbfs", "autofs",
		"binfmt_misc", "fuse", "fuseblk",
	}
}

// OpenTarget opens path for mounting over it on behalf of uid, checking on
// the opened descriptor that it is a directory owned by uid, or a project
// directory (checkOwner), on a file system p allows. The caller closes the
// returned fd.
func (p Policy) OpenTarget(role, path string, uid uint32) (int, error) {
	fd, fs, err := p.open(role, path)
	if err != nil {
		return -1, err
	}
	st, err := p.examine(role, path, fd, fs)
	if err == nil {
		err = checkOwner(role, path, st, uid)
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// CheckTarget validates a mount target without mounting (at submission,
// and before each mount): OpenTarget's checks, and that whoever calls it
// may use the directory in its role by the ordinary permission rules, ACLs
// included (faccessat2 with AT_EACCESS: the caller's file system
// identity). Call it with the job's user's rights (asuser) so that a
// project directory another user owns is checked for this user, and an
// error tells the user nothing they could not see.
func (p Policy) CheckTarget(role, path string, uid uint32) error {
	fd, err := p.OpenTarget(role, path, uid)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return checkAccess(role, path, fd)
}

// checkAccess checks that the caller's file system identity may use the
// directory open as fd in its role (faccessat2, AT_EACCESS: permission
// bits and ACLs as the kernel applies them).
func checkAccess(role, path string, fd int) error {
	err := unix.Faccessat2(fd, "", accessFor(role), unix.AT_EMPTY_PATH|unix.AT_EACCESS)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
		want := "read and write"
		if role == InputRole {
			want = "read"
		}
		return &TargetError{role, path, fmt.Sprintf("may not be used by the job's user: it needs to %s it (its permission bits and ACLs, checked with the user's rights); ask its owner for access, or use another directory", want)}
	case errors.Is(err, unix.EROFS) && role != InputRole:
		return &TargetError{role, path, "is on a read-only file system; output needs a directory RSA can stage it back into"}
	default:
		return &TargetError{role, path, fmt.Sprintf("cannot be checked for access: %v", err)}
	}
}

// checkAccessOf is checkAccess with the rights of the user uid as this
// host's user database (NSS) knows them: the bind side, which is root and
// told only the job's uid, checks a project directory again where it
// mounts.
func checkAccessOf(role, path string, fd int, uid uint32) error {
	id, err := asuser.Lookup(uid)
	if err != nil {
		return &TargetError{role, path, fmt.Sprintf("is not the job's user's own (uid %d), and that user's groups cannot be read on this host to check access: %v", uid, err)}
	}
	return asuser.Do(id, func() error { return checkAccess(role, path, fd) })
}

// CheckDir is CheckTarget whoever owns the directory (used when the owner
// is not known yet).
func (p Policy) CheckDir(role, path string) error {
	fd, fs, err := p.open(role, path)
	if err != nil {
		return err
	}
	_, err = p.examine(role, path, fd, fs)
	unix.Close(fd)
	return err
}

// Bind mounts the directory src (a root-controlled RAMDISK path) over target
// (a directory the job's user owns). It is idempotent: if target already
// shows src's file system at its root, it does nothing.
func (p Policy) Bind(role, src, target string, uid uint32) error {
	tree, err := CloneTree(src)
	if err != nil {
		return err
	}
	defer unix.Close(tree)
	return p.Attach(role, tree, target, uid)
}

// Attach mounts the detached tree over target after the race-free checks of
// OpenTarget. It is idempotent: a target that already shows the tree's root
// is left as it is.
func (p Policy) Attach(role string, tree int, target string, uid uint32) error {
	tfd, fs, err := p.open(role, target)
	if err != nil {
		return err
	}
	defer unix.Close(tfd)
	if isRAMDISK(fs) || fs.FSType == "erofs" {
		// Maybe this very RAMDISK or input image, mounted by an earlier
		// try (a resumed action). Neither is a file system whose stat
		// asks a user's server.
		var sst, tst unix.Stat_t
		if err := unix.Fstat(tree, &sst); err != nil {
			return fmt.Errorf("examining RAMDISK: %w", err)
		}
		if err := unix.Fstat(tfd, &tst); err == nil && sst.Dev == tst.Dev && sst.Ino == tst.Ino {
			return nil
		}
	}
	tst, err := p.examine(role, target, tfd, fs)
	if err != nil {
		return err
	}
	if err := checkOwner(role, target, tst, uid); err != nil {
		return err
	}
	if tst.Uid != uid {
		if err := checkAccessOf(role, target, tfd, uid); err != nil {
			return err
		}
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("making the RAMDISK for %s %s nosuid and nodev (mount_setattr): %w", role, target, err)
	}
	if err := unix.MoveMount(tree, "", tfd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("mounting RAMDISK over %s %s: %w", role, target, err)
	}
	// Checked once attached (statmount sees no detached mount): a bind
	// a user can reach that honours set-user-ID bits or devices is
	// taken down again.
	m, err := infoOfFD(tree)
	if err == nil && !m.Unprivileged() {
		err = fmt.Errorf("it has attributes %#x after mount_setattr, not nosuid and nodev", m.Attr)
	}
	if err != nil {
		if m.ID != 0 {
			_ = Unmount(m, true)
		}
		return fmt.Errorf("checking the RAMDISK over %s %s: %w; it is not shown there", role, target, err)
	}
	return nil
}

// infoOfFD is the mount fd is on, as statmount reports it.
func infoOfFD(fd int) (Info, error) {
	id, err := mountIDOf(fd)
	if err != nil {
		return Info{}, err
	}
	var s statmounter
	sm, err := s.stat(id, statmountInfo, maxStringsLen)
	if err != nil {
		return Info{ID: id}, fmt.Errorf("statmount: %w", err)
	}
	return sm.info(), nil
}

// open checks path itself, opens it without following symbolic links, and
// reads the file system it is on from the opened descriptor's mount (never
// from the path, which its owner can change).
func (p Policy) open(role, path string) (int, Info, error) {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return -1, Info{}, &TargetError{role, path, "must be a clean absolute path (no '..', no trailing '/')"}
	}
	if path == "/" {
		return -1, Info{}, &TargetError{role, path, "RSA never mounts over /"}
	}
	if err := p.checkAllowed(role, path); err != nil {
		return -1, Info{}, err
	}
	fd, err := openNoSymlinks(unix.AT_FDCWD, path)
	switch {
	case err == nil:
	case errors.Is(err, unix.ENOENT):
		return -1, Info{}, &TargetError{role, path, "does not exist; create the directory before submitting"}
	case errors.Is(err, unix.ELOOP):
		return -1, Info{}, &TargetError{role, path, "is or passes through a symbolic link; give the real path (readlink -f)"}
	case errors.Is(err, unix.ENOTDIR):
		return -1, Info{}, &TargetError{role, path, "is not a directory"}
	default:
		return -1, Info{}, &TargetError{role, path, fmt.Sprintf("cannot be opened: %v", err)}
	}
	fs, err := fsOf(fd)
	if err != nil {
		unix.Close(fd)
		return -1, Info{}, &TargetError{role, path, fmt.Sprintf("cannot be examined: %v", err)}
	}
	return fd, fs, nil
}

// examine refuses the file system fs, then stats fd: only once the file
// system is known not to be a user's FUSE mount, whose server would answer
// (or never answer) root's stat.
func (p Policy) examine(role, path string, fd int, fs Info) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := p.checkFS(role, path, fs); err != nil {
		return st, err
	}
	if err := unix.Fstat(fd, &st); err != nil {
		return st, &TargetError{role, path, fmt.Sprintf("cannot be examined: %v", err)}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return st, &TargetError{role, path, "is not a directory"}
	}
	return st, nil
}

func (p Policy) checkAllowed(role, path string) error {
	if len(p.AllowedPaths) == 0 {
		return nil
	}
	for _, dir := range p.AllowedPaths {
		if within(path, dir) {
			return nil
		}
	}
	return &TargetError{role, path, fmt.Sprintf("is not in a directory RSA mounts in (%s); use a directory there (allowed_paths in rsa.toml)",
		strings.Join(p.AllowedPaths, ", "))}
}

// within reports whether the clean absolute path is dir or below it.
func within(path, dir string) bool {
	if !filepath.IsAbs(dir) {
		return false
	}
	dir = filepath.Clean(dir)
	if dir == "/" {
		return true
	}
	return path == dir || strings.HasPrefix(path, dir+"/")
}

func (p Policy) checkFS(role, path string, fs Info) error {
	if isRAMDISK(fs) {
		return &TargetError{role, path, fmt.Sprintf("is on RSA's RAMDISK %s; RSA never mounts a RAMDISK over another (give a directory on a real file system)", fs.Source)}
	}
	refused := p.RefuseFSTypes
	if refused == nil {
		refused = DefaultRefusedFSTypes()
	}
	if fsTypeIn(fs.FSType, refused) {
		return &TargetError{role, path, fmt.Sprintf("is on a %s file system; RSA mounts only over directories on real file systems (refused_fs_types in rsa.toml)", fs.FSType)}
	}
	return nil
}

// fsTypeIn reports whether fsType ("fuse.sshfs") is one of types or a
// subtype of one.
func fsTypeIn(fsType string, types []string) bool {
	for _, t := range types {
		if fsType == t || strings.HasPrefix(fsType, t+".") {
			return true
		}
	}
	return false
}

// isRAMDISK reports whether m is a mount of one of RSA's RAMDISKs (the
// engine mounts them as tmpfs with the source "rsa-<job>").
func isRAMDISK(m Info) bool {
	return m.FSType == "tmpfs" && strings.HasPrefix(m.Source, "rsa-")
}

// fsOf describes the mount fd is on (its Point left empty).
func fsOf(fd int) (Info, error) {
	id, err := mountIDOf(fd)
	if err != nil {
		return Info{}, fmt.Errorf("reading its mount ID: %w", err)
	}
	var s statmounter
	sm, err := s.stat(id, statmountIdentity, maxStringsLen)
	if err != nil {
		return Info{}, fmt.Errorf("reading its file system (statmount): %w", err)
	}
	// (A source is left out when empty; a type never is.)
	if sm.mask&statmountFSType == 0 {
		return Info{}, errors.New("statmount reports no file system type")
	}
	return sm.info(), nil
}
