package agent

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/mount"
)

// Bricks: one tmpfs per job's volume, mounted at BrickRoot/{volume} with
// the volume's name as its source (what df and the mount table show), the
// brick directory Gluster is given a subdirectory of it. The kernel's
// mount table is the only record: a brick is the mount whose point,
// source and type say so, and its size is what statfs reports.

const (
	minBrickSize = 1 << 20
	minInodes    = 1024
	// bytesPerInode sizes the inode table when the daemon does not say:
	// the local engine's default, so that a job's RAMDISK holds as many
	// files on one node as spread over several.
	bytesPerInode = 8 << 10
	// brickFlags are the brick's mount flags: a brick holds data only,
	// written by the Gluster brick process; nothing on it is run or is
	// a device, whoever wrote it.
	brickFlags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	// maxStacked bounds how many copies of a brick mounted on one
	// another RemoveBrick takes off.
	maxStacked = 8
)

func (s *Server) brickMount(volume string) string { return filepath.Join(s.brickRoot, volume) }

// isBrick reports whether m is volume's brick tmpfs, whatever its point.
func isBrick(volume string, m mount.Info) bool {
	return m.FSType == "tmpfs" && m.Source == volume && m.Root == "/"
}

// brickAt reads volume's brick from the kernel. ok is false when nothing
// is mounted at its mount point; a mount there that is not the brick, or
// a brick hidden by another mount, is an error wrapping ErrConflict.
func (s *Server) brickAt(volume string) (b Brick, ok bool, err error) {
	point := s.brickMount(volume)
	m, ok, err := mount.MountedAt(point)
	if err != nil {
		return Brick{}, false, fmt.Errorf("reading the mount table: %w", err)
	}
	if !ok {
		return Brick{}, false, nil
	}
	if !isBrick(volume, m) {
		return Brick{}, true, failf(ErrConflict, "%s, where the brick of %s goes, is a mount point of %s (%s) that is not the brick; leaving it for an administrator (unmount it, then make the brick again)",
			point, volume, m.FSType, shorten(m.Source))
	}
	b, err = readBrick(volume, point)
	return b, true, err
}

// readBrick reads the brick mounted at point with statfs. The path is
// safe to follow: only root can create anything in BrickRoot (0700).
func readBrick(volume, point string) (Brick, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(point, &st); err != nil {
		return Brick{}, fmt.Errorf("reading the brick of %s at %s: %w", volume, point, err)
	}
	if st.Type != unix.TMPFS_MAGIC {
		return Brick{}, fmt.Errorf("the brick of %s at %s is not a tmpfs after all (statfs type %#x)", volume, point, st.Type)
	}
	bs := st.Bsize
	b := Brick{
		Volume:     volume,
		Mount:      point,
		Dir:        filepath.Join(point, BrickSubdir),
		Size:       int64(st.Blocks) * bs,
		Used:       (int64(st.Blocks) - int64(st.Bfree)) * bs,
		Inodes:     int64(st.Files),
		InodesUsed: int64(st.Files) - int64(st.Ffree),
	}
	var missing []string
	for _, f := range []struct {
		flag int64
		name string
	}{{unix.ST_NOSUID, "nosuid"}, {unix.ST_NODEV, "nodev"}, {unix.ST_NOEXEC, "noexec"}} {
		if st.Flags&f.flag == 0 {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		b.Problem = "mounted without " + strings.Join(missing, ",")
	}
	return b, nil
}

// brickSize checks spec against the node's RAM and returns the size as
// the kernel will keep it (whole pages) and the inode bound.
func brickSize(volume string, spec BrickSpec) (size, inodes int64, err error) {
	total, _, err := readMeminfo()
	if err != nil {
		return 0, 0, err
	}
	page := int64(os.Getpagesize())
	switch {
	case spec.Size < minBrickSize:
		return 0, 0, failf(ErrInvalid, "brick of %s: size %d is below 1 MiB", volume, spec.Size)
	case spec.Size > total:
		return 0, 0, failf(ErrInvalid, "brick of %s: size %d is more than this node's RAM (%d bytes): the allocation counts this node wrongly", volume, spec.Size, total)
	case spec.Inodes != 0 && spec.Inodes < minInodes:
		return 0, 0, failf(ErrInvalid, "brick of %s: %d inodes is below %d (0 gives the default, one per %d bytes)", volume, spec.Inodes, minInodes, bytesPerInode)
	}
	size = (spec.Size + page - 1) / page * page
	inodes = spec.Inodes
	if inodes == 0 {
		inodes = max(size/bytesPerInode, minInodes)
	}
	return size, inodes, nil
}

// MakeBrick makes volume's brick: a tmpfs of spec's size and inode bound,
// mounted nosuid, nodev and noexec at BrickRoot/{volume}, root's, mode
// 0700, holding the empty brick directory. If the brick exists with the
// same size and inode bound it only makes sure the brick directory is
// there; with another size or bound it fails, wrapping ErrConflict, and
// changes nothing (the daemon removes the brick first, or asks for what
// it asked before). It returns the brick as the kernel has it.
func (s *Server) MakeBrick(volume string, spec BrickSpec) (Brick, error) {
	if err := CheckVolume(volume); err != nil {
		return Brick{}, err
	}
	size, inodes, err := brickSize(volume, spec)
	if err != nil {
		return Brick{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok, err := s.brickAt(volume)
	if err != nil {
		return Brick{}, err
	}
	if ok {
		if b.Size != size || b.Inodes != inodes {
			return Brick{}, failf(ErrConflict, "the brick of %s already exists with %d bytes and %d inodes, not %d bytes and %d inodes; remove it first (DELETE /v1/bricks/%s) or ask for what it has",
				volume, b.Size, b.Inodes, size, inodes, volume)
		}
		if b.Problem != "" {
			return Brick{}, failf(ErrConflict, "the brick of %s at %s is %s; remove it and make it again", volume, b.Mount, b.Problem)
		}
		if err := makeBrickDir(b.Dir); err != nil {
			return Brick{}, err
		}
		return b, nil
	}
	point := s.brickMount(volume)
	if err := os.Mkdir(point, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return Brick{}, fmt.Errorf("creating the mount point of the brick of %s: %w", volume, err)
	}
	if fi, err := os.Lstat(point); err != nil || !fi.IsDir() {
		return Brick{}, failf(ErrConflict, "%s, where the brick of %s goes, is not a directory; leaving it for an administrator", point, volume)
	}
	opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=0700,uid=0,gid=0", size, inodes)
	if err := unix.Mount(volume, point, "tmpfs", brickFlags, opts); err != nil {
		return Brick{}, fmt.Errorf("mounting the brick of %s (tmpfs %s) at %s: %w", volume, opts, point, err)
	}
	b, ok, err = s.brickAt(volume)
	if err == nil && !ok {
		err = fmt.Errorf("the brick of %s is not in the mount table after mounting it at %s", volume, point)
	}
	if err == nil {
		err = makeBrickDir(b.Dir)
	}
	if err != nil {
		// Half made: take the tmpfs away again, so that a retry starts
		// afresh rather than finding a brick without its directory.
		if m, ok, merr := mount.MountedAt(point); merr == nil && ok && isBrick(volume, m) {
			_ = mount.Unmount(m, true)
		}
		return Brick{}, err
	}
	s.log.Info("brick made", "volume", volume, "dir", b.Dir, "size", b.Size, "inodes", b.Inodes)
	return b, nil
}

// makeBrickDir makes the brick directory inside the brick's tmpfs if it
// is not there yet. Gluster may have changed its mode and owner since
// (they are the volume root's): those stay as they are.
func makeBrickDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating the brick directory %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("examining the brick directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return failf(ErrConflict, "the brick directory %s is not a directory; remove the brick and make it again", dir)
	}
	return nil
}

// RemoveBrick unmounts volume's brick and removes its mount point; its data
// is gone with it. A brick that does not exist is no error. It does not
// detach a brick in use (a Gluster brick process still running): that
// would hide the RAM the brick holds, not free it; it fails wrapping
// ErrBusy instead, and the daemon stops the volume and tries again.
func (s *Server) RemoveBrick(volume string) error {
	if err := CheckVolume(volume); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	point := s.brickMount(volume)
	removed := false
	for range maxStacked {
		m, ok, err := mount.MountedAt(point)
		if err != nil {
			return fmt.Errorf("reading the mount table: %w", err)
		}
		if !ok {
			break
		}
		if !isBrick(volume, m) {
			return failf(ErrConflict, "%s, where the brick of %s is, is a mount point of %s (%s) that is not the brick; leaving it for an administrator",
				point, volume, m.FSType, shorten(m.Source))
		}
		if err := mount.Unmount(m, false); err != nil {
			if errors.Is(err, mount.ErrBusy) {
				return failf(ErrBusy, "the brick of %s is in use (is its Gluster volume still started?): stop the volume, then remove the brick: %w", volume, err)
			}
			return fmt.Errorf("unmounting the brick of %s: %w", volume, err)
		}
		removed = true
	}
	if _, ok, err := mount.MountedAt(point); err != nil {
		return fmt.Errorf("reading the mount table: %w", err)
	} else if ok {
		return failf(ErrConflict, "more than %d mounts are stacked at %s; leaving them for an administrator", maxStacked, point)
	}
	if err := os.Remove(point); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the mount point of the brick of %s: %w", volume, err)
	}
	if removed {
		s.log.Info("brick removed", "volume", volume)
	}
	return nil
}

// bricks lists the bricks in the mount table ms, by job.
func (s *Server) bricks(ms []mount.Info) ([]Brick, error) {
	out := []Brick{}
	for _, v := range volumesIn(ms, s.brickAtPoint, isBrick) {
		b, ok, err := s.brickAt(v)
		switch {
		case errors.Is(err, ErrConflict):
			b = Brick{Volume: v, Mount: s.brickMount(v), Problem: err.Error()}
		case err != nil:
			return nil, err
		case !ok:
			continue // removed meanwhile
		}
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b Brick) int { return byJob(a.Volume, b.Volume) })
	return out, nil
}

// brickAtPoint names the volume whose brick m is mounted at, if its mount
// point is one: BrickRoot/{volume}.
func (s *Server) brickAtPoint(m mount.Info) (string, bool) {
	v := filepath.Base(m.Point)
	return v, filepath.Dir(m.Point) == s.brickRoot && CheckVolume(v) == nil
}

// volumesIn names, each once, the volumes mounted in the mount table ms
// where at says a volume's mount point is, for which is holds (a brick, a
// volume).
func volumesIn(ms []mount.Info, at func(m mount.Info) (string, bool), is func(v string, m mount.Info) bool) []string {
	var names []string
	for _, m := range ms {
		v, ok := at(m)
		if ok && is(v, m) && !slices.Contains(names, v) {
			names = append(names, v)
		}
	}
	return names
}

// byJob orders volume names by their jobs.
func byJob(a, b string) int {
	x, _ := ParseVolume(a)
	y, _ := ParseVolume(b)
	return cmp.Compare(x, y)
}
