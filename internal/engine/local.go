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

	"github.com/rsa-hpc/rsa/internal/mount"
)

// Local is the embedded engine: one tmpfs per job on this host, the
// single-node case of the thesis' per-job RAMDISK (§2.2). All parts of the
// allocation must be on this host; their sizes add up.
type Local struct {
	Root string // directory holding one mount point per job, root-owned
}

// NewLocal prepares root (0755, root-owned, so staging children running as
// the job's user can reach their own RAMDISK below it).
func NewLocal(root string) (*Local, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("creating RAMDISK root: %w", err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		return nil, err
	}
	return &Local{Root: root}, nil
}

func (l *Local) Name() string { return "local" }

func (l *Local) Construct(ctx context.Context, r Ramdisk) error {
	if r.Dir != DirFor(l.Root, r.Job) {
		return fmt.Errorf("RAMDISK of job %d must be at %s, not %s", r.Job, DirFor(l.Root, r.Job), r.Dir)
	}
	size := r.Size()
	if size < 1<<20 {
		return fmt.Errorf("RAMDISK of job %d: size %d is below 1M", r.Job, size)
	}
	if m, ok, err := mount.MountedAt(r.Dir); err != nil {
		return err
	} else if ok {
		if m.Source == SourceFor(r.Job) {
			return nil
		}
		return fmt.Errorf("%s is already a mount point of %s; not stacking a RAMDISK on it", r.Dir, m.Source)
	}
	if err := os.Mkdir(r.Dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating mount point: %w", err)
	}
	opts := fmt.Sprintf("size=%d,mode=0700,uid=%d,gid=%d", size, r.UID, r.GID)
	if err := unix.Mount(SourceFor(r.Job), r.Dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mounting tmpfs of %d bytes at %s: %w", size, r.Dir, err)
	}
	return nil
}

func (l *Local) Destroy(ctx context.Context, r Ramdisk) error {
	if err := mount.Unbind(r.Dir, true); err != nil {
		return fmt.Errorf("removing bind mounts of job %d: %w", r.Job, err)
	}
	for {
		m, ok, err := mount.MountedAt(r.Dir)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if m.Source != SourceFor(r.Job) {
			return fmt.Errorf("%s is a mount of %s, not RSA's; leaving it", r.Dir, m.Source)
		}
		// Detach: a straggling process inside must not keep the RAM
		// from its next owner's accounting; tmpfs frees it when the last
		// reference goes.
		if err := unix.Unmount(r.Dir, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW); err != nil {
			return fmt.Errorf("unmounting %s: %w", r.Dir, err)
		}
	}
	if err := os.Remove(r.Dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing mount point: %w", err)
	}
	return nil
}

func (l *Local) Usage(r Ramdisk) (Usage, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(r.Dir, &st); err != nil {
		return Usage{}, err
	}
	if st.Type != unix.TMPFS_MAGIC {
		return Usage{}, fmt.Errorf("%s is not a tmpfs", r.Dir)
	}
	bs := int64(st.Bsize)
	return Usage{Used: (int64(st.Blocks) - int64(st.Bfree)) * bs, Size: int64(st.Blocks) * bs}, nil
}

func (l *Local) List(ctx context.Context) ([]Found, error) {
	ms, err := mount.List()
	if err != nil {
		return nil, err
	}
	var out []Found
	seen := map[int64]bool{}
	for _, m := range ms {
		if filepath.Dir(m.Point) != l.Root || m.FSType != "tmpfs" || !strings.HasPrefix(m.Source, "rsa-") {
			continue
		}
		id, err := strconv.ParseInt(filepath.Base(m.Point), 10, 64)
		if err != nil || seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, Found{Job: id, Dir: m.Point})
	}
	return out, nil
}
