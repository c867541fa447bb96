package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rsa-hpc/rsa/internal/access"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/gluster"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/stage"
)

// Input images on a compute node: the volume of a job whose input is an
// image is mounted at VolumeRoot/ID/ram as any other, behind a gate only
// root passes; its image, stage.ImageName in the volume's root, is
// mounted read-only at VolumeRoot/ID/image (mount.MountImage: opened
// without symlinks, checked, then mounted through that descriptor), and
// that mount, never the volume, is bound over the job's input directory.

// imagePoint is where volume's input image is mounted, VolumeRoot/ID/image
// (engine.ImagePoint of the volume's mount).
func (s *Server) imagePoint(volume string) string {
	return engine.ImagePoint(engine.Ramdisk{Dir: s.volumeSource(volume)})
}

// bindImage mounts volume's image (unless it is mounted already) and binds
// it over req.Target, after the policy's checks of the target. Called
// with s.mu held, the volume mounted as vm.
func (s *Server) bindImage(volume string, vm mount.Info, req MountRequest, role string, policy mount.Policy) (Mount, error) {
	point := s.imagePoint(volume)
	if err := os.Mkdir(point, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return Mount{}, fmt.Errorf("creating the mount point of volume %s's image: %w", volume, err)
	}
	im, ok, err := mount.MountedAt(point)
	if err != nil {
		return Mount{}, fmt.Errorf("reading the mount table: %w", err)
	}
	if ok && im.FSType != "erofs" {
		return Mount{}, failf(ErrConflict, "%s is a mount point of %s, not of volume %s's image; leaving it for an administrator", point, im.FSType, volume)
	}
	if !ok {
		backing, err := mount.MountImage(filepath.Join(s.volumeSource(volume), stage.ImageName), point, mount.ImageOptions{Loop: req.ImageLoop})
		if err != nil {
			return Mount{}, failf(ErrInvalid, "volume %s: %w", volume, err)
		}
		s.log.Info("input image mounted", "volume", volume, "backing", backing)
		if im, _, err = mount.MountedAt(point); err != nil {
			return Mount{}, fmt.Errorf("reading the mount table: %w", err)
		}
	}
	return s.bindOver(volume, vm, im, point, "the input image of volume "+volume, "input image bound", req, role, policy)
}

// releaseImage removes volume's image from this node: its binds, then its
// own mount (detached if busy with detach; its loop device goes when the
// last user lets go). Called with s.mu held; nothing there is no error.
func (s *Server) releaseImage(volume string, detach bool) error {
	point := s.imagePoint(volume)
	im, ok, err := mount.MountedAt(point)
	if err != nil {
		return fmt.Errorf("reading the mount table: %w", err)
	}
	if !ok || im.FSType != "erofs" {
		return nil
	}
	err = mount.UnbindDev(im.Dev, point, detach)
	if err == nil {
		err = mount.Unmount(im, detach)
	}
	if errors.Is(err, mount.ErrBusy) {
		return failf(ErrBusy, "the input image of volume %s is still in use on this node (a process inside, a file open): %w", volume, err)
	}
	if err != nil {
		return fmt.Errorf("unmounting the input image of volume %s: %w", volume, err)
	}
	s.log.Info("input image released", "volume", volume, "detach", detach)
	return nil
}

// bindPrivate makes and mounts this node's private output file system in
// volume (unless mounted already) and binds it over req.Target. Called
// with s.mu held, the volume mounted as vm.
func (s *Server) bindPrivate(ctx context.Context, volume string, vm mount.Info, req MountRequest, role string, policy mount.Policy) (Mount, error) {
	p := req.Private
	if err := gluster.CheckHost(p.Node); err != nil || p.Size < 16<<20 || p.Size%4096 != 0 {
		return Mount{}, failf(ErrInvalid, "private output of volume %s: node %q, size %d: give a node name and a size of at least 16M in 4K blocks", volume, shorten(p.Node), p.Size)
	}
	rd := engine.Ramdisk{Dir: s.volumeSource(volume), UID: req.UID}
	point, err := access.MountPrivate(ctx, rd, p.Node, p.Size, access.RootAttrs{UID: req.UID, GID: p.GID, Mode: p.Mode})
	if err != nil {
		return Mount{}, fmt.Errorf("volume %s: %w", volume, err)
	}
	if s.watch[point] == nil {
		w, err := access.WatchPrivate(point)
		if err != nil {
			return Mount{}, fmt.Errorf("volume %s: %w", volume, err)
		}
		if s.watch == nil {
			s.watch = map[string]*os.File{}
		}
		s.watch[point] = w
	}
	pm, _, err := mount.MountedAt(point)
	if err != nil {
		return Mount{}, fmt.Errorf("reading the mount table: %w", err)
	}
	return s.bindOver(volume, vm, pm, point, "the private output of volume "+volume, "private output bound", req, role, policy)
}
