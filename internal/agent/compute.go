package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rsa-hpc/rsa/internal/access"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/gate"
	"github.com/rsa-hpc/rsa/internal/gluster"
	"github.com/rsa-hpc/rsa/internal/mount"
)

// Compute: a job's volume is mounted on the compute node at
// VolumeRoot/ID/ram, behind the job's gate VolumeRoot/ID (package gate:
// only root and the job's user pass), as the local engine mounts a
// RAMDISK on the control host, so that the job's RAMDISK path is the same
// everywhere. The agent mounts it there itself (the Gluster client) when
// the daemon names the servers. From there it is bound over the job's own
// directories by package mount, with the checks RSA makes on one host:
// the target opened with openat2 without symbolic links, owned by the
// job's user, on a file system the site's policy allows, and mounted
// through the opened descriptor (move_mount).
//
// The kernel's mount table is the only record: the volume is the mount at
// VolumeRoot/ID/ram whose source names the volume, and its binds are the
// other mounts of the same file system (its device).

// volumeGate is the gate above volume's mount, VolumeRoot/ID.
func (s *Server) volumeGate(volume string) string {
	id, _ := ParseVolume(volume) // checked by every caller
	return filepath.Join(s.volumeRoot, strconv.FormatInt(id, 10))
}

// volumeSource is where volume is mounted, VolumeRoot/ID/ram.
func (s *Server) volumeSource(volume string) string {
	return filepath.Join(s.volumeGate(volume), "ram")
}

// volumeAtPoint names the volume mounted as m, if its mount point is one
// (VolumeRoot/ID/ram) and its source names a volume of job ID: one of
// its builds (BuildName), which the point does not tell.
func (s *Server) volumeAtPoint(m mount.Info) (string, bool) {
	gate := filepath.Dir(m.Point)
	if filepath.Base(m.Point) != "ram" || filepath.Dir(gate) != s.volumeRoot {
		return "", false
	}
	id, err := strconv.ParseInt(filepath.Base(gate), 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != filepath.Base(gate) {
		return "", false
	}
	name := SourceVolume(m)
	if of, err := ParseVolume(name); err != nil || of != id {
		return "", false
	}
	return name, true
}

// SourceVolume is the volume m's source names: HOST:/VOLUME for a Gluster
// client mount, the source itself for a tmpfs (a volume on one node, as
// tests make); "" for other mounts.
func SourceVolume(m mount.Info) string {
	switch m.FSType {
	case "fuse.glusterfs":
		if i := strings.LastIndex(m.Source, ":"); i > 0 {
			return strings.TrimPrefix(m.Source[i+1:], "/")
		}
	case "tmpfs":
		return m.Source
	}
	return ""
}

// isVolume reports whether m is volume's own file system: a Gluster
// client mount of the volume (source HOST:/volume), or a tmpfs named
// after it (a volume on one node, as tests make). The root of the file
// system, not a bind of a directory in it: its binds are found by its
// device, which must be the volume's alone.
func isVolume(volume string, m mount.Info) bool {
	return m.Root == "/" && volume != "" && SourceVolume(m) == volume
}

// volumeAt reads volume's mount on this node. ok is false when nothing is
// mounted at VolumeRoot/ID/ram; something else there is an error
// wrapping ErrConflict.
func (s *Server) volumeAt(volume string) (m mount.Info, ok bool, err error) {
	src := s.volumeSource(volume)
	m, ok, err = mount.MountedAt(src)
	if err != nil {
		return mount.Info{}, false, fmt.Errorf("reading the mount table: %w", err)
	}
	if ok && !isVolume(volume, m) {
		return mount.Info{}, true, failf(ErrConflict, "%s is a mount point of %s (%s), not of volume %s; leaving it for an administrator",
			src, m.FSType, shorten(m.Source), volume)
	}
	return m, ok, nil
}

// bindRole is the role package mount names a target by in its messages.
func bindRole(role string) (string, error) {
	switch role {
	case RoleInput:
		return "input directory", nil
	case RoleOutput:
		return "output directory", nil
	}
	return "", failf(ErrInvalid, "role %q is neither %s nor %s", shorten(role), RoleInput, RoleOutput)
}

// Mount binds volume, mounted on this node at VolumeRoot/ID/ram, over
// req.Target, after package mount's race-free checks of the target under
// the policy req carries. A volume not mounted here yet is mounted from
// req.Servers first (the Gluster client), its gate opened for req.UID;
// without servers it fails wrapping ErrNotFound. A target that already
// shows the volume is left as it is; one that fails the checks fails
// wrapping ErrInvalid, with the reason and the fix (mount.TargetError).
// It returns the volume's mounts afterwards.
func (s *Server) Mount(ctx context.Context, volume string, req MountRequest) (Mount, error) {
	if err := CheckVolume(volume); err != nil {
		return Mount{}, err
	}
	role, err := bindRole(req.Role)
	if err != nil {
		return Mount{}, err
	}
	if req.UID == 0 {
		return Mount{}, failf(ErrInvalid, "binding volume %s for uid 0: RSA never mounts for root", volume)
	}
	for _, p := range req.AllowedPaths {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p {
			return Mount{}, failf(ErrInvalid, "allowed path %q is not a clean absolute path", shorten(p))
		}
	}
	for _, h := range req.Servers {
		if err := gluster.CheckHost(h); err != nil {
			return Mount{}, failf(ErrInvalid, "volume %s: server %w", volume, err)
		}
	}
	policy := mount.Policy{AllowedPaths: req.AllowedPaths, RefuseFSTypes: req.RefuseFSTypes}
	s.mu.Lock()
	defer s.mu.Unlock()
	vm, ok, err := s.volumeAt(volume)
	if err != nil {
		return Mount{}, err
	}
	src := s.volumeSource(volume)
	if !ok && len(req.Servers) == 0 {
		return Mount{}, failf(ErrNotFound, "volume %s is not mounted on this node (at %s): mount it there first, or name its servers", volume, src)
	}
	// The gate lets the job's user reach the volume by its RAMDISK path;
	// opened each time, so a volume someone else mounted gets it too.
	if err := s.openGate(volume, req.UID, req.Image || req.Private != nil); err != nil {
		return Mount{}, err
	}
	if !ok {
		if vm, err = s.mountVolume(ctx, volume, req.Servers); err != nil {
			return Mount{}, err
		}
	}
	if req.Image {
		return s.bindImage(volume, vm, req, role, policy)
	}
	if req.Private != nil {
		return s.bindPrivate(ctx, volume, vm, req, role, policy)
	}
	return s.bindOver(volume, vm, vm, src, "volume "+volume, "volume bound", req, role, policy)
}

// bindOver binds shown, the file system mounted at point (the volume,
// or its image or private output), over req.Target after the policy's
// checks of the target; what names it in errors, logged in the log
// line. Called with s.mu held, the volume mounted as vm.
func (s *Server) bindOver(volume string, vm, shown mount.Info, point, what, logged string, req MountRequest, role string, policy mount.Policy) (Mount, error) {
	// Bound there already, by a request whose answer was lost? Asked of
	// the mount table, by the target's name: nothing is opened, so no
	// check is skipped for a mount that is not already shown.
	if top, ok, err := mount.MountedAt(req.Target); err != nil {
		return Mount{}, fmt.Errorf("reading the mount table: %w", err)
	} else if ok && top.Dev == shown.Dev && top.Root == shown.Root {
		return s.mountOf(volume, vm)
	}
	if err := policy.Bind(role, point, req.Target, req.UID); err != nil {
		if te := (*mount.TargetError)(nil); errors.As(err, &te) {
			return Mount{}, failf(ErrInvalid, "binding %s: %w", what, err)
		}
		return Mount{}, fmt.Errorf("binding %s over %s: %w", what, shorten(req.Target), err)
	}
	s.log.Info(logged, "volume", volume, "target", req.Target, "uid", req.UID, "role", req.Role)
	return s.mountOf(volume, vm)
}

// Unmount removes volume's binds on this node: the one at target, or
// every one if target is empty. The volume's own mount at
// VolumeRoot/ID/ram stays. A bind in use (a process inside, a file
// open) fails wrapping ErrBusy and stays, unless detach is set: then it
// is detached, gone from the job's path at once, and its file system goes
// when the last user lets go. Nothing to remove is no error.
//
// Binds are found by the volume's device, so binds left behind after the
// volume itself was unmounted are not found: unmount the volume last.
func (s *Server) Unmount(volume, target string, detach bool) error {
	if err := CheckVolume(volume); err != nil {
		return err
	}
	if target != "" && (!filepath.IsAbs(target) || filepath.Clean(target) != target) {
		return failf(ErrInvalid, "target %q is not a clean absolute path", shorten(target))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	vm, ok, err := s.volumeAt(volume)
	if err != nil || !ok {
		return err
	}
	src := s.volumeSource(volume)
	binds, err := mount.Binds(src)
	if err != nil {
		return fmt.Errorf("reading the binds of volume %s: %w", volume, err)
	}
	if len(binds) == 0 {
		return nil
	}
	if target == "" {
		err = mount.UnbindDev(vm.Dev, src, detach)
	} else {
		err = unbindAt(binds, target, detach)
	}
	if errors.Is(err, mount.ErrBusy) {
		return failf(ErrBusy, "volume %s is still in use on this node (a process inside, a file open): %w", volume, err)
	}
	if err != nil {
		return fmt.Errorf("unbinding volume %s: %w", volume, err)
	}
	s.log.Info("volume unbound", "volume", volume, "target", target, "detach", detach)
	return nil
}

// unbindAt removes those of a volume's binds whose mount point is target.
func unbindAt(binds []mount.Info, target string, detach bool) error {
	var errs []error
	for _, b := range binds {
		if p, err := mount.MountPoint(b.ID); err == nil && p == target {
			errs = append(errs, mount.Unmount(b, detach))
		}
	}
	return errors.Join(errs...)
}

// openGate makes volume's gate, VolumeRoot/ID, and its mount point, and
// lets uid alone pass the gate; for a volume that holds an input image,
// no one but root.
func (s *Server) openGate(volume string, uid uint32, image bool) error {
	g := s.volumeGate(volume)
	if err := os.Mkdir(g, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating the gate of volume %s: %w", volume, err)
	}
	if fi, err := os.Lstat(g); err != nil || !fi.IsDir() {
		return failf(ErrConflict, "%s, the gate of volume %s, is not a directory; leaving it for an administrator", g, volume)
	}
	open := func() error { return gate.Open(g, uid) }
	if image {
		open = func() error { return gate.Close(g) }
	}
	if err := open(); err != nil {
		return err
	}
	// Its mode shows only while nothing is mounted on it; 0755 so that
	// the job's user sees an empty directory, not a refusal, if the
	// volume is gone.
	if err := os.Mkdir(s.volumeSource(volume), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating the mount point of volume %s: %w", volume, err)
	}
	return nil
}

// releaseOrphans detaches the binds of volume whose own mount is gone:
// a Gluster client that its bricks stopped admitting (the seal fences a
// compute node out) ends and unmounts its own mount point, and the binds
// made of it stay behind, dead, where Release's search by device no longer
// finds them. They are found by their source instead, which names the
// volume, and by their owner: a user may mount FUSE of their own with any
// type and source (fusermount), and one made to look like this volume's
// client must neither be detached by root nor, by failing to detach, fail
// this volume's release; only root's are RSA's (mount.FUSEOwner).
func releaseOrphans(volume string) error {
	ms, err := mount.List()
	if err != nil {
		return fmt.Errorf("reading the mount table: %w", err)
	}
	var errs []error
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		if m.FSType != "fuse.glusterfs" || SourceVolume(m) != volume {
			continue
		}
		uid, ok, err := mount.FUSEOwner(m)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok && uid == 0 {
			errs = append(errs, mount.Unmount(m, true))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("detaching the binds of volume %s left after its client ended: %w", volume, err)
	}
	return nil
}

// mountVolume mounts the Gluster volume from servers at its source and
// returns its mount.
func (s *Server) mountVolume(ctx context.Context, volume string, servers []string) (mount.Info, error) {
	src := s.volumeSource(volume)
	if err := gluster.CheckTLS(s.sslDir); err != nil {
		return mount.Info{}, fmt.Errorf("mounting volume %s: %w", volume, err)
	}
	if err := gluster.Mount(ctx, servers, volume, src); err != nil {
		return mount.Info{}, fmt.Errorf("mounting volume %s: %w", volume, err)
	}
	vm, ok, err := s.volumeAt(volume)
	if err == nil && !ok {
		err = fmt.Errorf("volume %s is not in the mount table after mounting it at %s", volume, src)
	}
	if err != nil {
		return mount.Info{}, err
	}
	s.log.Info("volume mounted", "volume", volume, "at", src, "servers", servers)
	return vm, nil
}

// Release takes volume off this node: every bind of it, then the volume's
// own mount, then its gate. A bind or the volume in use (a process inside,
// a file open) fails wrapping ErrBusy and stays, unless detach is set:
// then they are detached, gone from every path at once, and the Gluster
// client ends when the last user lets go. Nothing there is no error.
func (s *Server) Release(volume string, detach bool) error {
	if err := CheckVolume(volume); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.release(volume, detach)
}

// takeWatch hands over the descriptor held on the private output mounted
// at point, if any (s.watch). Called with s.mu held.
func (s *Server) takeWatch(point string) *os.File {
	w := s.watch[point]
	delete(s.watch, point)
	return w
}

// release is Release with s.mu held.
func (s *Server) release(volume string, detach bool) error {
	if err := s.releaseImage(volume, detach); err != nil {
		return err
	}
	if err := access.UnbindPrivate(engine.Ramdisk{Dir: s.volumeSource(volume)}, detach, func(point string) error { return mount.Unbind(point, detach) }, s.takeWatch); err != nil {
		if errors.Is(err, mount.ErrBusy) {
			return failf(ErrBusy, "the private output of volume %s is still in use on this node: %w", volume, err)
		}
		return fmt.Errorf("releasing the private output of volume %s: %w", volume, err)
	}
	src := s.volumeSource(volume)
	for range maxStacked {
		vm, ok, err := s.volumeAt(volume)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		err = mount.UnbindDev(vm.Dev, src, detach)
		if err == nil {
			err = mount.Unmount(vm, detach)
		}
		if errors.Is(err, mount.ErrBusy) {
			return failf(ErrBusy, "volume %s is still in use on this node (a process inside, a file open): %w", volume, err)
		}
		if err != nil {
			return fmt.Errorf("unmounting volume %s: %w", volume, err)
		}
		s.log.Info("volume released", "volume", volume, "detach", detach)
	}
	if _, ok, err := mount.MountedAt(src); err != nil {
		return fmt.Errorf("reading the mount table: %w", err)
	} else if ok {
		return failf(ErrConflict, "more than %d mounts of volume %s are stacked at %s; leaving them for an administrator", maxStacked, volume, src)
	}
	if err := releaseOrphans(volume); err != nil {
		return err
	}
	g := s.volumeGate(volume)
	if err := gate.Close(g); err != nil {
		return err
	}
	// The mount points beside the volume's (image, out-NODE), its own,
	// then the gate.
	return engine.RemoveGate(g, engine.Ramdisk{Dir: src})
}

// mountOf describes volume's mount vm and its binds.
func (s *Server) mountOf(volume string, vm mount.Info) (Mount, error) {
	src := s.volumeSource(volume)
	binds, err := mount.Binds(src)
	if err != nil {
		return Mount{}, fmt.Errorf("reading the binds of volume %s: %w", volume, err)
	}
	out := Mount{Volume: volume, Source: src, FSType: vm.FSType, Targets: []string{}}
	for _, b := range binds {
		p, err := mount.MountPoint(b.ID)
		if err != nil {
			continue // gone meanwhile, or moved where RSA does not read
		}
		out.Targets = append(out.Targets, p)
	}
	slices.Sort(out.Targets)
	return out, nil
}

// mounts lists the volumes mounted below VolumeRoot in the mount table ms,
// with their binds, by job.
func (s *Server) mounts(ms []mount.Info) ([]Mount, error) {
	out := []Mount{}
	for _, v := range volumesIn(ms, s.volumeAtPoint, isVolume) {
		vm, ok, err := s.volumeAt(v)
		if errors.Is(err, ErrConflict) || err == nil && !ok {
			continue // hidden or gone meanwhile
		}
		if err != nil {
			return nil, err
		}
		m, err := s.mountOf(v, vm)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Mount) int { return byJob(a.Volume, b.Volume) })
	return out, nil
}
