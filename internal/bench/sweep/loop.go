package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rsa-hpc/rsa/internal/rsatest"
	"golang.org/x/sys/unix"
)

// cleanupTimeout bounds each command of a teardown, which runs without
// the sweep's context (it is often cancelled by then).
const cleanupTimeout = 30 * time.Second

// attachLoop attaches a free loop device to image and returns its path.
func attachLoop(ctx context.Context, image string, directIO bool) (string, error) {
	args := []string{"--find", "--show"}
	if directIO {
		args = append(args, "--direct-io=on")
	}
	out, err := rsatest.Run(ctx, "losetup", append(args, image)...)
	if err != nil {
		return "", err
	}
	dev := strings.TrimSpace(out)
	if !strings.HasPrefix(dev, "/dev/loop") {
		return "", fmt.Errorf("losetup printed %q, not a loop device", dev)
	}
	return dev, nil
}

// detachImage detaches every loop device whose backing file is image: the
// ones this sweep attached, since image is in a directory of its own.
func detachImage(image string) error {
	if _, err := os.Stat(image); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	out, err := rsatest.Run(ctx, "losetup", "--noheadings", "--output", "NAME", "--associated", image)
	if err != nil {
		return err
	}
	var errs []error
	for _, dev := range strings.Fields(out) {
		if _, err := rsatest.Run(ctx, "losetup", "--detach", dev); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// loopDirectIO reports whether the loop device does direct I/O to its
// backing file. losetup --direct-io=on falls back to buffered I/O
// without failing where the file system cannot, so this is checked.
func loopDirectIO(dev string) (bool, error) {
	b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "loop", "dio"))
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(string(b)) == "1", nil
}

// blockGeometry returns the device's logical block size and its size in
// bytes.
func blockGeometry(dev string) (logical int, size int64, err error) {
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0, fmt.Errorf("open %s: %w", dev, err)
	}
	defer unix.Close(fd)
	if logical, err = unix.IoctlGetInt(fd, unix.BLKSSZGET); err != nil {
		return 0, 0, fmt.Errorf("%s: logical block size: %w", dev, err)
	}
	// The end of a block device is its size, as BLKGETSIZE64 has it.
	if size, err = unix.Seek(fd, 0, io.SeekEnd); err != nil {
		return 0, 0, fmt.Errorf("%s: size: %w", dev, err)
	}
	return logical, size, nil
}

// preallocate writes size bytes of random data into a new file at path
// and syncs it. Writing, rather than fallocate, makes every block real:
// ext4 would read an unwritten extent as zeros without touching the disk,
// and a tmpfs would allocate its pages on the first write of the sweep.
func preallocate(ctx context.Context, path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	rng := rand.NewChaCha8([32]byte{'r', 's', 'a'})
	_, _ = rng.Read(buf) // ChaCha8.Read never fails
	for off := int64(0); off < size; off += int64(len(buf)) {
		if err := ctx.Err(); err != nil {
			f.Close()
			return err
		}
		n := min(int64(len(buf)), size-off)
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// checkOnDisk refuses a disk directory that is in RAM: disk-dev would
// then be a second ram-dev.
func checkOnDisk(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", dir, err)
	}
	if st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC {
		return fmt.Errorf("%s is in RAM (tmpfs or ramfs): give disk-dev a directory on a disk file system such as ext4", dir)
	}
	return nil
}

// mountTmpfs mounts a new tmpfs of size bytes on dir.
func mountTmpfs(dir string, size int64) error {
	opts := "size=" + strconv.FormatInt(size, 10) + ",mode=0700"
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, opts); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

// unmount unmounts the tmpfs on dir. A loop device lets go of its backing
// file only when its last opener closes it, which can be a moment after
// the detach returns, so a busy mount is tried again for a while.
func unmount(dir string) error {
	deadline := time.Now().Add(cleanupTimeout)
	for {
		err := unix.Unmount(dir, 0)
		switch {
		case err == nil, errors.Is(err, unix.EINVAL): // EINVAL: not mounted
			return nil
		case errors.Is(err, unix.EBUSY) && time.Now().Before(deadline):
			time.Sleep(100 * time.Millisecond)
		default:
			return fmt.Errorf("unmount %s: %w", dir, err)
		}
	}
}
