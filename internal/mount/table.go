package mount

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Info describes one mount of this process' mount namespace.
type Info struct {
	// ID and Parent are unique 64-bit mount IDs, as listmount(2) and statx
	// STATX_MNT_ID_UNIQUE give them, never reused; on kernels without
	// listmount (Table() == Mountinfo) mountinfo's 32-bit ones, which are.
	// Parent is ID for the namespace's root.
	ID, Parent uint64
	Dev        string // major:minor of the file system
	Root       string // path within the file system
	// Point is the mount point. Only List and MountedAt fill it in, List
	// only up to 1 MiB; MountPoint reads any mount's.
	Point  string
	FSType string // with FUSE's subtype, as mountinfo writes it: "fuse.sshfs"
	Source string
	// Attr are the mount's MOUNT_ATTR_* flags (nosuid, nodev, read-only,
	// ...), as statmount reports them.
	Attr uint64
}

// Unprivileged reports whether the mount honours neither set-user-ID bits
// nor device files (nosuid and nodev): what every mount a user can reach
// must be, so that a file a user planted there as root (through a file
// server that trusts its clients) gives no one root.
func (m Info) Unprivileged() bool {
	const want = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	return m.Attr&want == want
}

// statmountInfo is what Info holds besides the mount point.
const statmountInfo = statmountIdentity | statmountMntRoot

// List reads this process' mount table. A mount that vanishes while it is
// read is left out; a mount point longer than 1 MiB is left empty (a user
// can move a directory above a mount arbitrarily deep, and that must cost
// no one else more than this).
func List() ([]Info, error) {
	var s statmounter
	ids, err := s.ids(maxListPointLen)
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(ids))
	for _, id := range ids {
		sm, err := s.stat(id, statmountInfo|statmountMntPoint, maxListPointLen+maxStringsLen)
		if errors.Is(err, errTooLong) {
			sm, err = s.stat(id, statmountIdentity, maxStringsLen)
		}
		if err != nil {
			continue
		}
		out = append(out, sm.info())
	}
	return out, nil
}

// MountedAt returns the mount whose mount point is exactly path, if any (the
// top one when mounts are stacked).
func MountedAt(path string) (Info, bool, error) {
	at, err := mountsAt(path)
	if err != nil || len(at) == 0 {
		return Info{}, false, err
	}
	top := stackEnd(at, true)
	var s statmounter
	sm, err := s.stat(top.id, statmountInfo, maxStringsLen)
	if errors.Is(err, unix.ENOENT) {
		return Info{}, false, nil
	}
	if err != nil {
		return Info{}, false, fmt.Errorf("reading mount %d at %s: %w", top.id, path, err)
	}
	if sm.dev() != top.dev() || sm.parent != top.parent {
		return Info{}, false, nil // gone since; its ID names another mount
	}
	m := sm.info()
	m.Point = path
	return m, true, nil
}

// DevOf returns the device (major:minor) of the mount at src (the bottom one
// when mounts are stacked), or "" if nothing is mounted there. It names a
// RAMDISK in every mount namespace.
func DevOf(src string) (string, error) {
	at, err := mountsAt(src)
	if err != nil || len(at) == 0 {
		return "", err
	}
	return stackEnd(at, false).dev(), nil
}

// mountsAt returns the mounts whose mount point is path. Only points that
// fit in len(path) bytes are read: the others cannot be path, and may be
// as long as a user made them.
func mountsAt(path string) ([]statmount, error) {
	var s statmounter
	ids, err := s.ids(len(path))
	if err != nil {
		return nil, err
	}
	var at []statmount
	for _, id := range ids {
		sm, fits, err := s.statFits(id, statmountSBBasic|statmountMntBasic|statmountMntPoint, len(path))
		if err == nil && fits && sm.hasPoint && sm.point == path {
			at = append(at, sm)
		}
	}
	return at, nil
}

// stackEnd returns the top (or the bottom) of mounts stacked at one point:
// the one no other is mounted on (or the one mounted on none of the others).
func stackEnd(at []statmount, top bool) statmount {
	parents := map[uint64]bool{}
	ids := map[uint64]bool{}
	for _, m := range at {
		parents[m.parent] = true
		ids[m.id] = true
	}
	for _, m := range at {
		if top && !parents[m.id] || !top && !ids[m.parent] {
			return m
		}
	}
	return at[len(at)-1]
}

// Binds lists the mounts showing the same file system as the mount at src,
// other than src itself: the RAMDISK's bind mounts at job paths, wherever a
// user may have moved them since. Their Point is left empty.
func Binds(src string) ([]Info, error) {
	dev, err := DevOf(src)
	if err != nil || dev == "" {
		return nil, err
	}
	ms, err := sameFS(dev, src)
	if err != nil {
		return nil, err
	}
	return describe(ms), nil
}

// FindBySource lists the mounts of the file systems whose source and type
// are source and fsType (a RAMDISK is "rsa-<job>" and "tmpfs"): the RAMDISK
// and its bind mounts, found by what they are rather than by a path. Their
// Point is left empty.
func FindBySource(source, fsType string) ([]Info, error) {
	var s statmounter
	ids, err := s.ids(0)
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, id := range ids {
		sm, err := s.stat(id, statmountInfo, maxStringsLen)
		if err == nil && sm.source == source && sm.fullType() == fsType {
			out = append(out, sm.info())
		}
	}
	return out, nil
}

// MountPoint reads the current mount point of mount id, however long.
func MountPoint(id uint64) (string, error) {
	var s statmounter
	sm, err := s.stat(id, statmountMntPoint, maxPointLen)
	switch {
	case errors.Is(err, errTooLong):
		return "", fmt.Errorf("the mount point of mount %d is longer than %d bytes", id, maxPointLen)
	case err != nil:
		return "", fmt.Errorf("reading the mount point of mount %d: %w", id, err)
	case !sm.hasPoint:
		return "", fmt.Errorf("mount %d is outside this process' root", id)
	}
	return sm.point, nil
}

// sameFS returns the mounts of the file system dev, but for the one at
// except; no mount point is read but except's candidates'.
func sameFS(dev, except string) ([]statmount, error) {
	var s statmounter
	ids, err := s.ids(len(except))
	if err != nil {
		return nil, err
	}
	var out []statmount
	for _, id := range ids {
		// The device first, with no strings; the identity only of the
		// mounts of dev (unmountID checks it).
		if sm, err := s.stat(id, statmountSBBasic|statmountMntBasic, 0); err != nil || sm.dev() != dev {
			continue
		}
		if except != "" {
			at, fits, err := s.statFits(id, statmountMntPoint, len(except))
			if err == nil && fits && at.hasPoint && at.point == except {
				continue
			}
		}
		sm, err := s.stat(id, statmountInfo, maxStringsLen)
		if err != nil || sm.dev() != dev {
			continue
		}
		out = append(out, sm)
	}
	return out, nil
}

// describe reads the Info (but the point) of each mount still there.
func describe(ms []statmount) []Info {
	var s statmounter
	if err := s.snapshot(0, 0); err != nil {
		return nil
	}
	out := make([]Info, 0, len(ms))
	for _, m := range ms {
		if sm, err := s.stat(m.id, statmountInfo, maxStringsLen); err == nil && sm.dev() == m.dev() && sm.parent == m.parent {
			out = append(out, sm.info())
		}
	}
	return out
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
// It tries every mount even when one fails, and returns all failures (one
// is ErrBusy if a mount is busy).
func UnbindDev(dev, except string, detach bool) error {
	ms, err := sameFS(dev, except)
	if err != nil {
		return fmt.Errorf("reading mounts: %w", err)
	}
	var errs []error
	// Newest first: a bind made inside another goes before it.
	for i := len(ms) - 1; i >= 0; i-- {
		if err := unmountID(ms[i].id, identityOf(ms[i]), detach); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Unmounting one mount by its ID: read its point, walk there from "/" and
// check that the walk ended on it. Each of these is bounded, because each
// is driven by what a user may keep changing.
const (
	// moveTries is how often a mount point that changed under RSA is read
	// again (its owner may rename a directory above it at any time).
	moveTries = 5
	// maxStacked is how many mounts stacked on one of RSA's a detach
	// removes before it.
	maxStacked = 64
	// maxNesting bounds the walk up a mount's ancestors.
	maxNesting = 4096
)

// identity is what tells a mount from another that got its ID: the
// mountinfo table's IDs are reused as soon as their mount goes, and the
// next file system made often gets the freed device number too (both are
// handed out lowest first), so the device alone does not tell a user's
// FUSE mount, unmounted a moment ago, from another job's RAMDISK mounted
// since. A file system's type, source and root do. The zero identity
// matches any mount.
type identity struct{ dev, fsType, source, root string }

func identityOf(sm statmount) identity { return sm.info().identity() }

// identity is m's; the zero identity (any mount) when m's file system is
// not known, only its ID.
func (m Info) identity() identity {
	if m.Dev == "" {
		return identity{}
	}
	return identity{dev: m.Dev, fsType: m.FSType, source: m.Source, root: m.Root}
}

// of reports whether sm is (still) the mount want names.
func (want identity) of(sm statmount) bool {
	return want == identity{} || want == identityOf(sm)
}

// unmountID unmounts mount id, if it is still the mount want names (see
// identity), without following any symbolic link to it and
// without PATH_MAX limiting how deep it may be: it walks from "/" one
// component at a time (staying on the mount's ancestors), checks that the
// last component is mount id, and unmounts it through its parent's
// descriptor. A mount point cannot be renamed or removed while mounted, so
// the name cannot be swapped in between; a mount stacked on it meanwhile is
// caught by checking afterwards that id is gone.
//
// With detach, mounts stacked on id (a user's FUSE mount over their job
// directory, say), which the detach would take along, are detached first;
// without it they make id busy.
func unmountID(id uint64, want identity, detach bool) error {
	var s statmounter
	var last error // why the last try did not reach the mount
	for tries, stacked := 0, 0; tries < moveTries; {
		// One read of the table for the try's walk (mountinfo: the
		// table whole, costly when users' mount points are long).
		if err := s.snapshot(id, maxPointLen); err != nil {
			return fmt.Errorf("reading mount %d: %w", id, err)
		}
		sm, err := s.stat(id, statmountInfo|statmountMntPoint, maxPointLen+maxStringsLen)
		switch {
		case errors.Is(err, unix.ENOENT), err == nil && !want.of(sm):
			return nil // gone, maybe detached along with its parent
		case errors.Is(err, errTooLong):
			return fmt.Errorf("not unmounting mount %d: its mount point is longer than %d bytes (a directory above it was moved that deep); move it back or detach it by hand", id, maxPointLen)
		case err != nil:
			return fmt.Errorf("reading mount %d: %w", id, err)
		case !sm.hasPoint:
			return fmt.Errorf("not unmounting mount %d: it is outside this process' root", id)
		}
		done, err := unmountAt(&s, sm, detach)
		switch {
		case errors.Is(err, errStacked):
			if stacked++; stacked > maxStacked {
				return fmt.Errorf("unmounting %s: more than %d mounts stacked on it", shortPath(sm.point), maxStacked)
			}
		case errors.As(err, new(*movedError)):
			last = err
			tries++
		case err != nil:
			return err
		case done:
			s.snap = nil
			after, err := s.stat(id, statmountInfo, maxStringsLen)
			if errors.Is(err, unix.ENOENT) || err == nil && identityOf(after) != identityOf(sm) {
				return nil
			}
			// Something was mounted over it just before the unmount,
			// which took that instead.
			last = moved("%s: a mount appeared on it as it was unmounted", shortPath(sm.point))
			tries++
		}
	}
	return fmt.Errorf("not unmounting mount %d (tried %d times, reading its mount point again each time): %w", id, moveTries, last)
}

// errStacked: a mount stacked on the one to unmount was removed first.
var errStacked = errors.New("a mount stacked on it was removed")

// movedError says why a try did not reach the mount: its path changed, or
// something now hides it. A try on the mount point read again may.
type movedError struct{ msg string }

func (e *movedError) Error() string { return e.msg }

func moved(format string, a ...any) error { return &movedError{fmt.Sprintf(format, a...)} }

// unmountAt makes one try at unmounting sm at sm.point.
func unmountAt(s *statmounter, sm statmount, detach bool) (bool, error) {
	point := sm.point
	pfd, name, err := walkToParent(s, point, sm.parent)
	if err != nil {
		return false, err
	}
	defer unix.Close(pfd)
	if got, err := mountIDOf(pfd); err != nil || got != sm.parent {
		return false, moved("%s: its directory is no longer on mount %d", shortPath(point), sm.parent)
	}
	cfd, err := openComponent(pfd, name, 0)
	if err != nil {
		return false, moved("%s: %v", shortPath(point), err)
	}
	got, err := mountIDOf(cfd)
	unix.Close(cfd)
	if err != nil {
		return false, fmt.Errorf("examining %s: %w", shortPath(point), err)
	}
	// Through the parent's descriptor, so the path stays short.
	where := fmt.Sprintf("/proc/self/fd/%d/%s", pfd, name)
	if got != sm.id {
		s.snap = nil // other mounts' points, read fresh
		top, ok := stackedOn(s, got, sm.id, point)
		if !ok {
			return false, moved("%s now leads to mount %d, not %d", shortPath(point), got, sm.id)
		}
		if !detach {
			return false, fmt.Errorf("unmounting %s: a %s file system is mounted over it: %w", shortPath(point), top.fullType(), ErrBusy)
		}
		if err := unix.Unmount(where, unix.UMOUNT_NOFOLLOW|unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			return false, fmt.Errorf("detaching the %s file system mounted over %s: %w", top.fullType(), shortPath(point), err)
		}
		return false, errStacked
	}
	flags := unix.UMOUNT_NOFOLLOW
	if detach {
		flags |= unix.MNT_DETACH
	}
	err = unix.Unmount(where, flags)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EINVAL): // no longer a mount point
		return false, moved("%s: %v", shortPath(point), err)
	case errors.Is(err, unix.EBUSY):
		return false, fmt.Errorf("unmounting %s: %w", shortPath(point), ErrBusy)
	default:
		return false, fmt.Errorf("unmounting %s: %w", shortPath(point), err)
	}
}

// ancestors returns the IDs of mount id and of every mount above it up to
// root, the mount of this process' root.
func ancestors(s *statmounter, id, root uint64) (map[uint64]bool, error) {
	chain := map[uint64]bool{}
	for range maxNesting {
		chain[id] = true
		if id == root {
			return chain, nil
		}
		sm, err := s.stat(id, statmountMntBasic, 0)
		if err != nil {
			return nil, err
		}
		if sm.parent == id {
			break
		}
		id = sm.parent
	}
	return nil, errors.New("not below this process' root")
}

// walkToParent opens the directory holding the last component of the
// absolute, canonical point, one component at a time from "/", never
// following a symbolic link and never entering a mount that is not parent
// or above it: a mount a user stacked over a directory on the way (a FUSE
// file system whose server could stall root) is reported, not walked
// through. It returns that directory and the last component.
func walkToParent(s *statmounter, point string, parent uint64) (int, string, error) {
	parts := strings.Split(strings.TrimPrefix(point, "/"), "/")
	if !strings.HasPrefix(point, "/") || point == "/" {
		return -1, "", fmt.Errorf("not unmounting %s: not a mount point below /", shortPath(point))
	}
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return -1, "", fmt.Errorf("not unmounting %s: not a canonical path", shortPath(point))
		}
	}
	fd, err := openNoSymlinks(unix.AT_FDCWD, "/")
	if err != nil {
		return -1, "", fmt.Errorf("opening /: %w", err)
	}
	root, err := mountIDOf(fd)
	if err != nil {
		unix.Close(fd)
		return -1, "", fmt.Errorf("examining /: %w", err)
	}
	chain, err := ancestors(s, parent, root)
	if err != nil {
		unix.Close(fd)
		return -1, "", moved("%s: reading the mounts above it: %v", shortPath(point), err)
	}
	for i := 0; ; i++ {
		id := root
		if i > 0 {
			if id, err = mountIDOf(fd); err != nil {
				unix.Close(fd)
				return -1, "", fmt.Errorf("examining %s: %w", shortPath("/"+strings.Join(parts[:i], "/")), err)
			}
		}
		if !chain[id] {
			unix.Close(fd)
			what := "another file system"
			if sm, err := s.stat(id, statmountFSType|statmountFSSubtype, maxStringsLen); err == nil {
				what = "a " + sm.fullType() + " file system"
			}
			return -1, "", moved("%s is hidden: %s (mount %d) is mounted over %s; unmount that first",
				shortPath(point), what, id, shortPath("/"+strings.Join(parts[:i], "/")))
		}
		if i == len(parts)-1 {
			return fd, parts[i], nil
		}
		next, err := openComponent(fd, parts[i], unix.O_DIRECTORY)
		unix.Close(fd)
		if err != nil {
			return -1, "", moved("%s: opening %s: %v", shortPath(point), shortPath("/"+strings.Join(parts[:i+1], "/")), err)
		}
		fd = next
	}
}

// openComponent opens the single name in dir as an O_PATH descriptor,
// refusing a symbolic link.
func openComponent(dir int, name string, flags uint64) (int, error) {
	for {
		fd, err := unix.Openat2(dir, name, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_CLOEXEC | flags,
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_BENEATH,
		})
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		return fd, err
	}
}

// stackedOn reports whether mount got is stacked on mount id at point
// (directly or on other mounts stacked there), and returns it.
func stackedOn(s *statmounter, got, id uint64, point string) (statmount, bool) {
	top, fits, err := s.statFits(got, statmountMntBasic|statmountMntPoint|statmountFSType|statmountFSSubtype, len(point)+256)
	if err != nil || !fits || top.point != point {
		return statmount{}, false
	}
	for p, n := top.parent, 0; n < maxStacked; n++ {
		if p == id {
			return top, true
		}
		sm, fits, err := s.statFits(p, statmountMntBasic|statmountMntPoint, len(point))
		if err != nil || !fits || sm.point != point {
			return statmount{}, false
		}
		p = sm.parent
	}
	return statmount{}, false
}

// shortPath shortens a path for a message: one a user made very long must
// not flood the logs.
func shortPath(p string) string {
	const keep = 120
	if len(p) <= 2*keep {
		return p
	}
	return p[:keep] + "[...]" + p[len(p)-keep:]
}
