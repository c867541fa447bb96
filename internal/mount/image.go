package mount

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/erofs"
)

// ImageBacking says how the kernel reads a mounted image.
type ImageBacking string

const (
	// BackingFile: erofs reads the image file itself (Linux 6.12 and
	// later, CONFIG_EROFS_FS_BACKED_BY_FILE).
	BackingFile ImageBacking = "file"
	// BackingLoop: through a loop device bound to the image file, which
	// goes when the image is unmounted (autoclear).
	BackingLoop ImageBacking = "loop"
)

// ImageOptions choose how MountImage mounts.
type ImageOptions struct {
	// Loop asks for a loop device even where the kernel could read the
	// file itself (tests of the path older kernels take).
	Loop bool
}

// MountImage mounts the erofs image file at image read-only, nosuid and
// nodev at point, and says how the kernel reads it. The kernel parses the
// image as root, so the file is opened without following any symlink and
// must be a regular file of root's that no group or other may write; it
// is checked whole (erofs.Check) through that same descriptor, and that
// descriptor, never the path again, is what the kernel mounts: file-backed
// erofs where the kernel has it, a loop device otherwise. A file that
// fails a check is refused with the reason, and nothing is mounted.
// point must be a directory only root can reach.
func MountImage(image, point string, opt ImageOptions) (ImageBacking, error) {
	f, st, err := openRootFile(image, "the image", unix.O_RDONLY)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fd := int(f.Fd())
	if err := erofs.Check(f, st.Size); err != nil {
		return "", fmt.Errorf("refusing the image %s before mounting it: %w", image, err)
	}
	const flags = unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV
	if !opt.Loop {
		// The descriptor's own magic link: the kernel opens the very
		// file checked above, whatever the path names by now.
		err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", fd), point, "erofs", flags, "")
		if err == nil {
			return BackingFile, nil
		}
		if errors.Is(err, unix.ENODEV) {
			return "", fmt.Errorf("mounting the image %s: this kernel has no erofs file system (modprobe erofs; or input_mode = \"files\" in rsa.toml): %w", image, err)
		}
		if !errors.Is(err, unix.ENOTBLK) {
			return "", fmt.Errorf("mounting the image %s at %s: %w", image, point, err)
		}
		// A kernel without file-backed erofs (before 6.12) wants a
		// block device.
	}
	loop, err := attachLoopMode(fd, true)
	if err != nil {
		return "", fmt.Errorf("mounting the image %s: %w", image, err)
	}
	defer loop.Close()
	if err := unix.Mount(loop.Name(), point, "erofs", flags, ""); err != nil {
		// Autoclear detaches a loop device when its last user goes;
		// one never mounted has had none, so it is detached here.
		_ = unix.IoctlSetInt(int(loop.Fd()), unix.LOOP_CLR_FD, 0)
		hint := ""
		if errors.Is(err, unix.ENODEV) {
			hint = ": this kernel has no erofs file system (modprobe erofs; or input_mode = \"files\" in rsa.toml)"
		}
		return "", fmt.Errorf("mounting the image %s from %s at %s%s: %w", image, loop.Name(), point, hint, err)
	}
	return BackingLoop, nil
}

// openRootFile opens the file at path (what names it in errors) with
// flags, reached without following any symlink, and returns it with its
// status if it is a regular file of root's that no group or other may
// write: the only files RSA hands the kernel to parse as root.
func openRootFile(path, what string, flags uint64) (*os.File, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags:   flags | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
		return nil, st, fmt.Errorf("refusing %s %s: it is a symbolic link, or lies below one: %w", what, path, err)
	}
	if err != nil {
		return nil, st, fmt.Errorf("opening %s %s: %w", what, path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, st, fmt.Errorf("reading %s %s: %w", what, path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != 0 || st.Mode&0o022 != 0 {
		f.Close()
		return nil, st, fmt.Errorf("refusing %s %s: it must be a regular file of root's that no one else may write (it is uid %d, mode %06o)", what, path, st.Uid, st.Mode)
	}
	return f, st, nil
}

// attachLoopMode binds a free loop device to the file fd, with autoclear
// and read-only with readOnly, and returns it open.
func attachLoopMode(fd int, readOnly bool) (*os.File, error) {
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("no loop devices: %w", err)
	}
	defer ctl.Close()
	cfg := unix.LoopConfig{Fd: uint32(fd)}
	cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
	if readOnly {
		cfg.Info.Flags |= unix.LO_FLAGS_READ_ONLY
	}
	// Another process may take the device found free before this one
	// binds it (EBUSY): ask again.
	for try := 0; ; try++ {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return nil, fmt.Errorf("finding a free loop device: %w", err)
		}
		dev, err := openLoop(fmt.Sprintf("/dev/loop%d", n), readOnly)
		if err != nil {
			return nil, err
		}
		err = unix.IoctlLoopConfigure(int(dev.Fd()), &cfg)
		if err == nil {
			return dev, nil
		}
		dev.Close()
		if !errors.Is(err, unix.EBUSY) || try == 20 {
			return nil, fmt.Errorf("binding loop device %d to the image: %w", n, err)
		}
	}
}

// openLoop opens a loop device node, which udev may create a moment after
// LOOP_CTL_GET_FREE made the device.
func openLoop(path string, readOnly bool) (*os.File, error) {
	mode := os.O_RDWR
	if readOnly {
		mode = os.O_RDONLY
	}
	for wait := time.Millisecond; ; wait *= 2 {
		dev, err := os.OpenFile(path, mode|unix.O_CLOEXEC, 0)
		if err == nil || !errors.Is(err, os.ErrNotExist) || wait > 500*time.Millisecond {
			return dev, err
		}
		time.Sleep(wait)
	}
}
