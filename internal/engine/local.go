package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/gate"
	"github.com/rsa-hpc/rsa/internal/mount"
)

// Local is the embedded engine: one tmpfs per job on this host, the
// single-node case of the thesis' per-job RAMDISK (§2.2). All parts of the
// allocation must be on this host; their sizes add up.
//
// Layout: Root (root-owned 0711: anyone may pass, no one but root may list)
// holds one gate directory per job, Root/ID, root-owned 0700 with a POSIX
// ACL entry that lets the job's user alone pass (u:UID:--x); the tmpfs is
// mounted at Root/ID/ram. So the RAMDISK's root directory can take the
// mode and group of the job directory it is shown at (a 0755 input/ in a
// 0700 home) while no other user can reach it through Root, and staging
// children, which run as the job's user, still reach it by path.
type Local struct {
	Root string // directory holding one gate per job, root-owned
}

var _ Engine = (*Local)(nil)

// defaultBytesPerInode sizes the inode table when the Ramdisk does not say.
const defaultBytesPerInode = 8 << 10

// NewLocal prepares root (root-owned 0711).
func NewLocal(root string) (*Local, error) {
	if err := os.MkdirAll(root, 0o711); err != nil {
		return nil, fmt.Errorf("creating RAMDISK root: %w", err)
	}
	if err := os.Chown(root, 0, 0); err != nil {
		return nil, fmt.Errorf("securing RAMDISK root: %w", err)
	}
	if err := os.Chmod(root, 0o711); err != nil {
		return nil, fmt.Errorf("securing RAMDISK root: %w", err)
	}
	return &Local{Root: root}, nil
}

func (l *Local) Name() string { return "local" }

// mounted finds the job's own tmpfs at r.Dir by its identity (source and
// type), whatever a user may have stacked on top of it.
func (l *Local) mounted(r Ramdisk) (mount.Info, bool, error) {
	ms, err := mount.List()
	if err != nil {
		return mount.Info{}, false, err
	}
	for _, m := range ms {
		if m.Source == SourceFor(r.Job) && m.FSType == "tmpfs" && m.Point == r.Dir {
			return m, true, nil
		}
	}
	return mount.Info{}, false, nil
}

func (l *Local) Construct(ctx context.Context, r Ramdisk) error {
	if r.Dir != DirFor(l.Root, r.Job) {
		return fmt.Errorf("RAMDISK of job %d must be at %s, not %s", r.Job, DirFor(l.Root, r.Job), r.Dir)
	}
	size := r.Size()
	if size < 1<<20 {
		return fmt.Errorf("RAMDISK of job %d: size %d is below 1M", r.Job, size)
	}
	if r.UID == 0 {
		return fmt.Errorf("RAMDISK of job %d: refusing a RAMDISK for root", r.Job)
	}
	gateDir := GateFor(l.Root, r.Job)
	if err := os.Mkdir(gateDir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating the RAMDISK's gate: %w", err)
	}
	if err := openGate(gateDir, r); err != nil {
		return err
	}
	if _, ok, err := l.mounted(r); err != nil {
		return err
	} else if ok {
		return nil
	}
	if m, ok, err := mount.MountedAt(r.Dir); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("%s is already a mount point of %s; not stacking a RAMDISK on it", r.Dir, m.Source)
	}
	if err := os.Mkdir(r.Dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating mount point: %w", err)
	}
	inodes := r.Inodes
	if inodes <= 0 {
		inodes = size / defaultBytesPerInode
	}
	inodes = max(inodes, 1024)
	uid, gid := r.UID, r.GID
	if r.RootOnly {
		uid, gid = 0, 0
	}
	opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=0700,uid=%d,gid=%d", size, inodes, uid, gid)
	if err := unix.Mount(SourceFor(r.Job), r.Dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mounting tmpfs of %d bytes at %s: %w", size, r.Dir, err)
	}
	return nil
}

// openGate lets r's user pass the gate above it, or, for a RootOnly
// RAMDISK, no one but root.
func openGate(dir string, r Ramdisk) error {
	if r.RootOnly {
		return gate.Close(dir)
	}
	return gate.Open(dir, r.UID)
}

func (l *Local) Revoke(ctx context.Context, r Ramdisk) error {
	return gate.Close(GateFor(l.Root, r.Job))
}

// clearAbove detaches whatever is mounted on top of or inside the job's
// tmpfs m (a user's FUSE mount over their RAMDISK, say), so that the path
// r.Dir leads to RSA's own mount again.
func clearAbove(m mount.Info) error {
	ms, err := mount.List()
	if err != nil {
		return err
	}
	for _, c := range ms {
		if c.Parent == m.ID && c.ID != m.ID {
			if err := mount.Unmount(c, true); err != nil {
				return fmt.Errorf("removing %s mounted over RAMDISK %s: %w", c.FSType, m.Point, err)
			}
		}
	}
	return nil
}

func (l *Local) Seal(ctx context.Context, r Ramdisk) error {
	m, ok, err := l.mounted(r)
	if err != nil || !ok {
		return err
	}
	if err := clearAbove(m); err != nil {
		return err
	}
	// MS_REMOUNT without MS_BIND changes the superblock: every mount of
	// this tmpfs, the job's bind mounts and clones included, is read-only.
	err = unix.Mount("", r.Dir, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "")
	if errors.Is(err, unix.EBUSY) {
		return fmt.Errorf("making RAMDISK %s read-only: a file is open for writing: %w", r.Dir, ErrBusy)
	}
	if err != nil {
		return fmt.Errorf("making RAMDISK %s read-only: %w", r.Dir, err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(r.Dir, &st); err != nil {
		return err
	}
	if st.Type != unix.TMPFS_MAGIC || st.Flags&unix.ST_RDONLY == 0 {
		return fmt.Errorf("RAMDISK %s is not read-only after remounting it (something was mounted over it again?)", r.Dir)
	}
	return nil
}

func (l *Local) Device(r Ramdisk) (uint64, bool, error) {
	m, ok, err := l.mounted(r)
	if err != nil || !ok {
		return 0, false, err
	}
	dev, err := DeviceOf(m)
	return dev, err == nil, err
}

// DeviceOf is the device number of the file system mounted as m, as
// stat(2) gives it.
func DeviceOf(m mount.Info) (uint64, error) {
	maj, min, found := strings.Cut(m.Dev, ":")
	a, err1 := strconv.ParseUint(maj, 10, 32)
	b, err2 := strconv.ParseUint(min, 10, 32)
	if !found || err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%s: bad device number %q", m.Point, m.Dev)
	}
	return unix.Mkdev(uint32(a), uint32(b)), nil
}

func (l *Local) Destroy(ctx context.Context, r Ramdisk) error {
	if err := l.Revoke(ctx, r); err != nil {
		return err
	}
	if err := ClearBeside(r); err != nil {
		return err
	}
	m, ok, err := l.mounted(r)
	if err != nil {
		return err
	}
	if ok {
		if err := mount.UnbindDev(m.Dev, r.Dir, true); err != nil {
			return fmt.Errorf("removing bind mounts of job %d: %w", r.Job, err)
		}
		if err := clearAbove(m); err != nil {
			return err
		}
		// Not detached: a detached tmpfs that a straggler still holds
		// keeps its RAM while RSA would count it free. The daemon ends
		// the stragglers first (holders), then this succeeds.
		if err := mount.Unmount(m, false); err != nil {
			if errors.Is(err, mount.ErrBusy) {
				return fmt.Errorf("unmounting RAMDISK of job %d: %w", r.Job, ErrBusy)
			}
			return fmt.Errorf("unmounting RAMDISK of job %d: %w", r.Job, err)
		}
	}
	if _, ok, err := mount.MountedAt(r.Dir); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("%s is still a mount point of something not RSA's; leaving it for an administrator", r.Dir)
	}
	return RemoveGate(GateFor(l.Root, r.Job), r)
}

// RemoveGate removes the empty mount points beside r's (image, out-NODE,
// ro-NODE), r's own, then the gate.
func RemoveGate(gate string, r Ramdisk) error {
	if ents, err := os.ReadDir(gate); err == nil {
		for _, e := range ents {
			if p := filepath.Join(gate, e.Name()); e.IsDir() && p != r.Dir {
				if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("removing %s: %w", p, err)
				}
			}
		}
	}
	for _, p := range []string{r.Dir, gate} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", p, err)
		}
	}
	return nil
}

// ClearBeside removes what node access mounts beside r's mount point,
// behind its gate (the input image, erofs; private output images, ext4),
// with their binds: each holds its file in the RAMDISK, and so the
// RAMDISK, open. Busy, it fails wrapping ErrBusy, as the RAMDISK would.
func ClearBeside(r Ramdisk) error {
	ms, err := BesideMounts(r)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if err := mount.UnbindDev(m.Dev, m.Point, true); err != nil {
			return fmt.Errorf("removing the mounts of job %d's %s: %w", r.Job, filepath.Base(m.Point), err)
		}
		if err := mount.Unmount(m, false); err != nil {
			if errors.Is(err, mount.ErrBusy) {
				return fmt.Errorf("unmounting job %d's %s: %w", r.Job, filepath.Base(m.Point), ErrBusy)
			}
			return fmt.Errorf("unmounting job %d's %s: %w", r.Job, filepath.Base(m.Point), err)
		}
	}
	return nil
}

// PinBeside holds open what node access mounts beside r's mount point on
// this host (see ClearBeside) and returns their device numbers, by which
// the processes that still hold them are found once those mounts are
// removed. While pinned, a file system outlives its unmount, so its device
// number (a loop device's, or an anonymous one) cannot pass to another
// job's file system mounted meanwhile: processes found by these numbers
// are r's holders, never another user's. unpin lets them go; call it once
// the holders are gone and before anything that needs the file systems
// released (a check of a private image, the RAMDISK's unmount). The
// daemon's own process is no holder (package holders skips it).
func PinBeside(r Ramdisk) (devs []uint64, unpin func(), err error) {
	ms, err := BesideMounts(r)
	if err != nil {
		return nil, func() {}, err
	}
	var fds []int
	unpin = func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
		fds = nil
	}
	for _, m := range ms {
		want, err := DeviceOf(m)
		if err != nil {
			unpin()
			return nil, func() {}, err
		}
		// O_PATH reaches the mount's root without asking its file
		// system; the gate above it is root's, and no link is followed.
		fd, err := unix.Openat2(unix.AT_FDCWD, m.Point, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
		if errors.Is(err, unix.ENOENT) {
			continue // gone since the listing: nothing holds it through r
		}
		if err != nil {
			unpin()
			return nil, func() {}, fmt.Errorf("holding job %d's %s: %w", r.Job, filepath.Base(m.Point), err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Dev != want {
			// Replaced since the listing: what is there now is not
			// what node access mounted for r.
			unix.Close(fd)
			continue
		}
		fds = append(fds, fd)
		devs = append(devs, want)
	}
	return devs, unpin, nil
}

// BesideMounts are the input image (erofs) and the private output images
// (ext4) that node access mounts beside r's mount point, behind its gate.
func BesideMounts(r Ramdisk) ([]mount.Info, error) {
	ms, err := mount.List()
	if err != nil {
		return nil, err
	}
	gate := filepath.Dir(r.Dir)
	var out []mount.Info
	for _, m := range ms {
		if filepath.Dir(m.Point) == gate && m.Point != r.Dir && (m.FSType == "erofs" || m.FSType == "ext4") {
			out = append(out, m)
		}
	}
	return out, nil
}

// Check finds nothing: a tmpfs on this host is all there or not at all
// (the daemon finds a RAMDISK gone with Device).
func (l *Local) Check(context.Context, Ramdisk) (Degraded, error) { return Degraded{}, nil }

// Probe: a tmpfs on this host has no part out of reach.
func (l *Local) Probe(Ramdisk) (Degraded, error) { return Degraded{}, nil }

func (l *Local) Usage(r Ramdisk) (Usage, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(r.Dir, &st); err != nil {
		return Usage{}, err
	}
	if st.Type != unix.TMPFS_MAGIC {
		return Usage{}, fmt.Errorf("%s is not a tmpfs", r.Dir)
	}
	bs := int64(st.Bsize)
	// A tmpfs's inodes in use are its root and what is below it.
	files := max(int64(st.Files)-int64(st.Ffree)-1, 0)
	return Usage{Used: (int64(st.Blocks) - int64(st.Bfree)) * bs, Size: int64(st.Blocks) * bs, Files: files}, nil
}

func (l *Local) List(ctx context.Context) ([]Found, error) {
	ms, err := mount.List()
	if err != nil {
		return nil, err
	}
	var out []Found
	seen := map[int64]bool{}
	for _, m := range ms {
		gate := filepath.Dir(m.Point)
		if filepath.Base(m.Point) != "ram" || filepath.Dir(gate) != l.Root || m.FSType != "tmpfs" || !strings.HasPrefix(m.Source, "rsa-") {
			continue
		}
		id, err := strconv.ParseInt(filepath.Base(gate), 10, 64)
		if err != nil || seen[id] || m.Source != SourceFor(id) {
			continue
		}
		seen[id] = true
		out = append(out, Found{Job: id, Dir: m.Point})
	}
	return out, nil
}
