package mount

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"golang.org/x/sys/unix"
)

// Private output images (output=private): one ext4 file system per compute
// node, in a file of its own in a RAMDISK only root reaches. RSA makes each
// (mkfs.ext4, as root, so no user ever writes its bytes but through the
// kernel's ext4), the node mounts its own read-write at the job's output
// path, and at stage-out each is checked (e2fsck) and mounted read-only
// for the copy.

// MakeExt4 creates the file image of size bytes (a multiple of 4 KiB) and
// makes an ext4 file system in it whose root belongs to uid:gid: no
// journal (the image lives in RAM and dies with the host), no reserved
// blocks. A file already there is left as it is: an earlier try made it.
func MakeExt4(ctx context.Context, image string, size int64, uid, gid uint32) error {
	fd, err := unix.Openat2(unix.AT_FDCWD, image, &unix.OpenHow{
		Flags: unix.O_RDWR | unix.O_CREAT | unix.O_EXCL | unix.O_CLOEXEC | unix.O_NOFOLLOW, Mode: 0o600,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating the private output image %s: %w", image, err)
	}
	f := os.NewFile(uintptr(fd), image)
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		os.Remove(image)
		return fmt.Errorf("sizing the private output image %s: %w", image, err)
	}
	// mkfs writes through the descriptor's own link: the file made above.
	cmd := exec.CommandContext(ctx, "mkfs.ext4", "-q", "-F", "-m", "0", "-O", "^has_journal",
		"-E", fmt.Sprintf("root_owner=%d:%d,nodiscard", uid, gid), fmt.Sprintf("/proc/self/fd/%d", 3))
	cmd.ExtraFiles = []*os.File{f}
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(image)
		return fmt.Errorf("making the private output image %s: %v: %s (mkfs.ext4 is in e2fsprogs)", image, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// CheckExt4 checks the ext4 image with e2fsck, fixing what it may fix
// without asking (a file system whose node died while it was mounted).
// An image e2fsck cannot make consistent is an error: it is never mounted
// again.
func CheckExt4(ctx context.Context, image string) error {
	out, err := exec.CommandContext(ctx, "e2fsck", "-f", "-p", image).CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() < 4 {
		return nil // 1: errors corrected; 2: corrected, reboot advised (not for a file)
	}
	if errors.As(err, &ee) {
		return &CheckError{Image: image, Code: ee.ExitCode(), Output: strings.TrimSpace(string(out))}
	}
	if err != nil {
		return fmt.Errorf("checking the private output image %s: %v: %s", image, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// CheckError is e2fsck's verdict on an image it could not make whole:
// Code 4, errors left uncorrected (a file system that lacks what was
// written to it, or one e2fsck could not write to fix), or 8 and up, it
// could not check.
type CheckError struct {
	Image  string
	Code   int
	Output string
}

func (e *CheckError) Error() string {
	return fmt.Sprintf("checking the private output image %s: e2fsck exit status %d: %s", e.Image, e.Code, e.Output)
}

// Uncorrected reports whether e2fsck found errors it left uncorrected:
// the image is not a whole file system.
func (e *CheckError) Uncorrected() bool { return e.Code&4 != 0 }

// MountExt4 mounts the ext4 image at point through a loop device of its
// own (autoclear: it goes with the mount), nosuid and nodev, read-only
// with readOnly. The image must be a regular file of root's that no one
// else may write, reached without symlinks.
func MountExt4(image, point string, readOnly bool) error {
	var flags uint64 = unix.O_RDWR
	if readOnly {
		flags = unix.O_RDONLY
	}
	f, _, err := openRootFile(image, "the private output image", flags)
	if err != nil {
		return err
	}
	defer f.Close()
	fd := int(f.Fd())
	loop, err := attachLoopMode(fd, readOnly)
	if err != nil {
		return fmt.Errorf("mounting the private output image %s: %w", image, err)
	}
	defer loop.Close()
	mflags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	if readOnly {
		mflags |= unix.MS_RDONLY | unix.MS_NOEXEC
	}
	if err := unix.Mount(loop.Name(), point, "ext4", mflags, "errors=remount-ro"); err != nil {
		_ = unix.IoctlSetInt(int(loop.Fd()), unix.LOOP_CLR_FD, 0)
		return fmt.Errorf("mounting the private output image %s from %s at %s: %w", image, loop.Name(), point, err)
	}
	return nil
}
