package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/stage"
)

// InputRole is the role of the input directory in package mount's
// messages.
const InputRole = "input directory"

// ImageBinder is an Access that can show a RAMDISK's input image (the
// file stage.ImageName in the root of a RootOnly RAMDISK) at the job's
// input path: the image is mounted read-only, nosuid and nodev after its
// check (mount.MountImage), never the RAMDISK itself. Unbind removes the
// image's mounts as well as the RAMDISK's.
type ImageBinder interface {
	// BindImage shows rd's input image over target on every node, after
	// the checks Bind makes of target; all or nothing, as Bind for input.
	// It says how the kernel reads the image ("" when it was mounted
	// already). Idempotent.
	BindImage(ctx context.Context, nodes []string, rd engine.Ramdisk, target string, opt mount.ImageOptions) (mount.ImageBacking, error)
}

// ImagePoint is where a host mounts the input image of rd
// (engine.ImagePoint), behind the gate, which admits root alone for a
// RAMDISK that holds an image.
func ImagePoint(rd engine.Ramdisk) string { return engine.ImagePoint(rd) }

// imageOf is rd as its image is shown: package mount binds the image's
// mount as it binds a RAMDISK.
func imageOf(rd engine.Ramdisk) engine.Ramdisk {
	rd.Dir = ImagePoint(rd)
	return rd
}

// mountImageHere mounts rd's input image at ImagePoint(rd) on this host,
// unless an image is mounted there already.
func mountImageHere(rd engine.Ramdisk, opt mount.ImageOptions) (mount.ImageBacking, error) {
	point := ImagePoint(rd)
	if err := os.Mkdir(point, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("creating the image's mount point: %w", err)
	}
	if m, ok, err := mount.MountedAt(point); err != nil {
		return "", err
	} else if ok {
		if m.FSType != "erofs" {
			return "", fmt.Errorf("%s is a mount point of %s, not of the job's input image; leaving it for an administrator", point, m.FSType)
		}
		return "", nil
	}
	return mount.MountImage(filepath.Join(rd.Dir, stage.ImageName), point, opt)
}

// unmountImageHere removes the image mounted at ImagePoint(rd) on this
// host, once its binds are gone; nothing there is no error. Detached if
// busy: its loop device goes when the last user lets go.
func unmountImageHere(rd engine.Ramdisk) error {
	point := ImagePoint(rd)
	m, ok, err := mount.MountedAt(point)
	if err != nil || !ok {
		return err
	}
	if m.FSType != "erofs" {
		return nil // not RSA's: BindImage refuses it
	}
	if err := mount.Unmount(m, false); err != nil {
		if !errors.Is(err, mount.ErrBusy) && !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("unmounting the input image: %w", err)
		}
		return mount.Unmount(m, true)
	}
	return nil
}

// unbindImage removes the input image of rd, if this host has it
// mounted: its binds with unbind (given the image's mount point), then its
// own mount.
func unbindImage(rd engine.Ramdisk, unbind func(point string) error) error {
	m, ok, err := mount.MountedAt(ImagePoint(rd))
	if err != nil || !ok || m.FSType != "erofs" {
		return err
	}
	if err := unbind(ImagePoint(rd)); err != nil {
		return fmt.Errorf("the input image: %w", err)
	}
	return unmountImageHere(rd)
}

func (l Local) BindImage(ctx context.Context, nodes []string, rd engine.Ramdisk, target string, opt mount.ImageOptions) (mount.ImageBacking, error) {
	backing, err := mountImageHere(rd, opt)
	if err != nil {
		return "", err
	}
	if err := l.Bind(ctx, nodes, InputRole, imageOf(rd), target); err != nil {
		_ = unmountImageHere(rd)
		return "", err
	}
	return backing, nil
}

func (n Namespaces) BindImage(ctx context.Context, nodes []string, rd engine.Ramdisk, target string, opt mount.ImageOptions) (mount.ImageBacking, error) {
	backing, err := mountImageHere(rd, opt)
	if err != nil {
		return "", err
	}
	if err := n.Bind(ctx, nodes, InputRole, imageOf(rd), target); err != nil {
		_ = unmountImageHere(rd)
		return "", err
	}
	return backing, nil
}

var (
	_ ImageBinder = Local{}
	_ ImageBinder = Namespaces{}
)
