// Package target brings up and down the storage that rsa-lab bench measures,
// under the names every benchmark and docs/evidence.md share:
//
//	ram      a tmpfs of its own (a modern RSA node: RAM, no network)
//	ram-blk  ext2 on a loop device over a file in a tmpfs (the thesis'
//	         "ext2 on /dev/ram0": this kernel has no brd)
//	disk     a directory on the local ext4 disk
//	shared@1g  a GlusterFS volume on an ext4 brick behind a 1 Gbit/s link
//	         (the site's shared file system; see shared.go)
//
// ram@1g, an RSA RAMDISK behind the same kind of link, comes with the
// emulated cluster.
//
// Up and Down are idempotent: Up of a target that is up returns it as it
// is, Down of one that is down does nothing. Both need root.
package target

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/bench"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/rsatest"
)

// Names are the targets this package can bring up, in the order docs list them.
var Names = []string{"ram", "ram-blk", "disk", "shared@1g"}

// Target is a storage target that is up: benchmarks write under Dir.
type Target struct {
	Name string
	Dir  string // where benchmarks write
	// Device is the block device under Dir, for ram-blk (raw device tests).
	Device string
	// Dirs are the mounts of one shared target, one per client (Dir is
	// the first): each has caches of its own.
	Dirs []string
}

// Config says where targets live and how big the RAM ones are.
type Config struct {
	RunDir  string // mounts: RunDir/ram, RunDir/ram-blk (default /run/rsa-bench)
	DiskDir string // disk: a directory on ext4 (default /var/tmp/rsa-bench/disk)
	Size    int64  // bytes of each RAM target (default 4 GiB)

	Clients    int    // shared@1g: client mounts (default 1)
	SharedNet  string // shared@1g: the link's /30, as its first three octets (default 10.76.9)
	SharedRate string // shared@1g: tbf rate each way (default 1gbit)
}

func (c Config) withDefaults() Config {
	if c.RunDir == "" {
		c.RunDir = bench.RunHome
	}
	if c.DiskDir == "" {
		c.DiskDir = filepath.Join(bench.StateHome, "disk")
	}
	if c.Size == 0 {
		c.Size = 4 << 30
	}
	if c.Clients == 0 {
		c.Clients = 1
	}
	if c.SharedNet == "" {
		c.SharedNet = "10.76.9"
	}
	if c.SharedRate == "" {
		c.SharedRate = "1gbit"
	}
	return c
}

// SharedNetOrDefault is the first three octets of shared@1g's link.
func (c Config) SharedNetOrDefault() string { return c.withDefaults().SharedNet }

// UnknownError names a target that is not one of Names.
type UnknownError struct{ Name string }

func (e *UnknownError) Error() string {
	return fmt.Sprintf("unknown target %q: use one of %s, or a directory (a path starting with /)", e.Name, strings.Join(Names, ", "))
}

// Up brings the named target up and returns it.
func Up(ctx context.Context, c Config, name string) (Target, error) {
	c = c.withDefaults()
	switch name {
	case "ram":
		dir := filepath.Join(c.RunDir, "ram")
		if err := mountTmpfs(dir, c.Size); err != nil {
			return Target{}, fmt.Errorf("target ram: %w", err)
		}
		return Target{Name: name, Dir: dir}, nil
	case "ram-blk":
		return upRAMBlock(ctx, c)
	case "disk":
		if err := os.MkdirAll(c.DiskDir, 0o755); err != nil {
			return Target{}, fmt.Errorf("target disk: %w", err)
		}
		return Target{Name: name, Dir: c.DiskDir}, nil
	case "shared@1g":
		return upShared(ctx, c)
	}
	return Target{}, &UnknownError{name}
}

// Down takes the named target down, removing what its benchmarks left.
func Down(ctx context.Context, c Config, name string) error {
	c = c.withDefaults()
	switch name {
	case "ram":
		return unmountDir(filepath.Join(c.RunDir, "ram"))
	case "ram-blk":
		return downRAMBlock(ctx, c)
	case "disk":
		if err := os.RemoveAll(c.DiskDir); err != nil {
			return fmt.Errorf("target disk: %w", err)
		}
		return nil
	case "shared@1g":
		if err := downShared(ctx, c); err != nil {
			return fmt.Errorf("target shared@1g: %w", err)
		}
		return nil
	}
	return &UnknownError{name}
}

// upRAMBlock makes ext2 on a loop device over a file in a tmpfs: the
// backing tmpfs at RunDir/ram-blk.backing, the file system at RunDir/ram-blk.
func upRAMBlock(ctx context.Context, c Config) (Target, error) {
	backing := filepath.Join(c.RunDir, "ram-blk.backing")
	dir := filepath.Join(c.RunDir, "ram-blk")
	image := filepath.Join(backing, "image")
	if dev, ok, err := mountedDevice(dir); err != nil {
		return Target{}, fmt.Errorf("target ram-blk: %w", err)
	} else if ok {
		return Target{Name: "ram-blk", Dir: dir, Device: dev}, nil
	}
	// The image takes the whole tmpfs but a little, for the tmpfs' own use.
	if err := mountTmpfs(backing, c.Size+(64<<20)); err != nil {
		return Target{}, fmt.Errorf("target ram-blk: %w", err)
	}
	if err := os.WriteFile(image, nil, 0o600); err != nil {
		return Target{}, fmt.Errorf("target ram-blk: %w", err)
	}
	if err := os.Truncate(image, c.Size); err != nil {
		return Target{}, fmt.Errorf("target ram-blk: %w", err)
	}
	// Pages of a tmpfs file are allocated when written; write them all
	// now, as the thesis' brd had its RAM before the file system came.
	if err := fill(image, c.Size); err != nil {
		return Target{}, fmt.Errorf("target ram-blk: preallocate %s: %w", image, err)
	}
	out, err := rsatest.Run(ctx, "losetup", "--find", "--show", image)
	if err != nil {
		return Target{}, fmt.Errorf("target ram-blk: %w", err)
	}
	dev := strings.TrimSpace(out)
	if _, err := rsatest.Run(ctx, "mkfs.ext2", "-q", "-F", "-m", "0", dev); err != nil {
		_, _ = rsatest.Run(ctx, "losetup", "-d", dev)
		return Target{}, fmt.Errorf("target ram-blk: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Target{}, fmt.Errorf("target ram-blk: %w", err)
	}
	if err := unix.Mount(dev, dir, "ext2", unix.MS_NOATIME, ""); err != nil {
		_, _ = rsatest.Run(ctx, "losetup", "-d", dev)
		return Target{}, fmt.Errorf("target ram-blk: mount %s on %s: %w", dev, dir, err)
	}
	return Target{Name: "ram-blk", Dir: dir, Device: dev}, nil
}

func downRAMBlock(ctx context.Context, c Config) error {
	backing := filepath.Join(c.RunDir, "ram-blk.backing")
	dir := filepath.Join(c.RunDir, "ram-blk")
	_, mounted, err := mountedDevice(dir)
	if err != nil {
		return fmt.Errorf("target ram-blk: %w", err)
	}
	if mounted {
		if err := unmountDir(dir); err != nil {
			return fmt.Errorf("target ram-blk: %w", err)
		}
	}
	// The loop device of the image, whether or not it was mounted.
	image := filepath.Join(backing, "image")
	if out, err := rsatest.Run(ctx, "losetup", "--noheadings", "--output", "NAME", "--associated", image); err == nil {
		for _, d := range strings.Fields(out) {
			if _, err := rsatest.Run(ctx, "losetup", "-d", d); err != nil {
				return fmt.Errorf("target ram-blk: %w", err)
			}
		}
	}
	return unmountDir(backing)
}

// mountTmpfs mounts a tmpfs of size bytes on dir, unless one is there.
func mountTmpfs(dir string, size int64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	opts := "size=" + strconv.FormatInt(size, 10) + ",mode=0755"
	if ok, err := isMountPoint(dir); err != nil {
		return err
	} else if ok {
		// Up for a bigger run than the one that brought it up: grow it.
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err != nil {
			return fmt.Errorf("statfs %s: %w", dir, err)
		}
		if int64(st.Blocks)*st.Bsize >= size {
			return nil
		}
		if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_REMOUNT|unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("grow the tmpfs on %s to %d bytes: %w", dir, size, err)
		}
		return nil
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

// unmountDir unmounts dir if it is a mount point and removes it.
func unmountDir(dir string) error {
	if ok, err := isMountPoint(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	} else if ok {
		if err := unix.Unmount(dir, 0); err != nil {
			return fmt.Errorf("unmount %s: %w", dir, err)
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// isMountPoint reports whether dir is the root of a mount: its parent
// is on another device, or the two are the same inode (/).
func isMountPoint(dir string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, os.ErrNotExist
		}
		return false, fmt.Errorf("stat %s: %w", dir, err)
	}
	if err := unix.Lstat(filepath.Dir(dir), &parent); err != nil {
		return false, fmt.Errorf("stat %s: %w", filepath.Dir(dir), err)
	}
	return st.Dev != parent.Dev || st.Ino == parent.Ino, nil
}

// mountedDevice returns the source mounted on dir (for ram-blk its loop
// device), if any, from the mount table.
func mountedDevice(dir string) (string, bool, error) {
	mounts, err := mountTable()
	if err != nil {
		return "", false, err
	}
	src, ok := mounts[dir]
	return src, ok, nil
}

// mountTable maps each mount point to its source (the last mount on a
// point wins, as it is the one seen there).
func mountTable() (map[string]string, error) {
	ms, err := mount.List()
	if err != nil {
		return nil, err
	}
	mounts := map[string]string{}
	for _, m := range ms {
		mounts[m.Point] = m.Source
	}
	return mounts, nil
}

// fill writes size zero bytes into the file at path, 1 MiB at a time.
func fill(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for off := int64(0); off < size; off += int64(len(buf)) {
		n := min(int64(len(buf)), size-off)
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
