package access

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
const InputRole Role = "input directory"

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

// imageOf is rd as its image is shown: package mount binds the image's
// mount as it binds a RAMDISK.
func imageOf(rd engine.Ramdisk) engine.Ramdisk {
	rd.Dir = engine.ImagePoint(rd)
	return rd
}

// mountImageHere mounts rd's input image at engine.ImagePoint(rd) on this
// host, unless an image is mounted there already.
func mountImageHere(rd engine.Ramdisk, opt mount.ImageOptions) (mount.ImageBacking, error) {
	point := engine.ImagePoint(rd)
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

// unmountImageHere removes the image mounted at engine.ImagePoint(rd) on this
// host, once its binds are gone; nothing there is no error. Detached if
// busy: its loop device goes when the last user lets go.
func unmountImageHere(rd engine.Ramdisk) error {
	point := engine.ImagePoint(rd)
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
	m, ok, err := mount.MountedAt(engine.ImagePoint(rd))
	if err != nil || !ok || m.FSType != "erofs" {
		return err
	}
	if err := unbind(engine.ImagePoint(rd)); err != nil {
		return fmt.Errorf("the input image: %w", err)
	}
	return unmountImageHere(rd)
}

func (l Local) BindImage(ctx context.Context, nodes []string, rd engine.Ramdisk, target string, opt mount.ImageOptions) (mount.ImageBacking, error) {
	return bindImage(rd, opt, func(img engine.Ramdisk) error { return l.Bind(ctx, nodes, InputRole, img, target) })
}

func (n Namespaces) BindImage(ctx context.Context, nodes []string, rd engine.Ramdisk, target string, opt mount.ImageOptions) (mount.ImageBacking, error) {
	return bindImage(rd, opt, func(img engine.Ramdisk) error { return n.Bind(ctx, nodes, InputRole, img, target) })
}

// bindImage mounts rd's image on this host and shows it with bind (given
// the image as a RAMDISK); if bind fails, the image goes again.
func bindImage(rd engine.Ramdisk, opt mount.ImageOptions, bind func(img engine.Ramdisk) error) (mount.ImageBacking, error) {
	backing, err := mountImageHere(rd, opt)
	if err != nil {
		return "", err
	}
	if err := bind(imageOf(rd)); err != nil {
		_ = unmountImageHere(rd)
		return "", err
	}
	return backing, nil
}

var (
	_ ImageBinder = Local{}
	_ ImageBinder = Namespaces{}
)
