package action

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/access"
	"github.com/rsa-hpc/rsa/internal/asuser"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/mount"
)

// mountIn shows the job's input, in its RAMDISK or input image, at its
// input directory on its compute nodes.
type mountIn struct{ *Env }

var _ Action = mountIn{}

func (mountIn) Kind() lifecycle.ActionKind { return lifecycle.MountIn }

// Run mounts the input. A RAMDISK that lost a part would show the job its
// input with files missing, and say nothing: the mount fails, naming the
// nodes, the job reads from disk instead, and the RAMDISK is rebuilt for
// its output.
func (a mountIn) Run(ctx context.Context, j *job.Job) lifecycle.Event {
	rd := a.Daemon.Ramdisk(j)
	if dg, _, err := a.Daemon.Probe(ctx, rd); err == nil && dg.Missing {
		why := fmt.Sprintf("the part of the RAMDISK on RSA node %s is out of reach: the job reads its input from disk", strings.Join(dg.Nodes, ", "))
		a.note(j, "mount: "+why)
		return lifecycle.Event{Kind: lifecycle.EvMountFailed, Reason: why, Nodes: dg.Nodes}
	}
	if rd.RootOnly {
		if err := a.bindImage(ctx, j, rd); err != nil {
			// Refused (a node lost with a piece of it, damage) or not
			// mounted: nothing of it is shown anywhere.
			why := fmt.Sprintf("the input image cannot be mounted: the job reads its input from disk: %v", err)
			a.note(j, "mount: "+why)
			return failed(lifecycle.EvMountFailed, errors.New(why))
		}
		return done(lifecycle.EvMounted)
	}
	if err := a.bind(ctx, j, access.InputRole, j.Spec.Input); err != nil {
		return failed(lifecycle.EvMountFailed, err)
	}
	return done(lifecycle.EvMounted)
}

// mountOut shows the job's RAMDISK, or a file system of each compute
// node's own (output=private), at its output directory.
type mountOut struct{ *Env }

var _ Action = mountOut{}

func (mountOut) Kind() lifecycle.ActionKind { return lifecycle.MountOut }

func (a mountOut) Run(ctx context.Context, j *job.Job) lifecycle.Event {
	var err error
	if rd := a.Daemon.Ramdisk(j); rd.RootOnly {
		err = a.bindPrivate(ctx, j, rd)
	} else {
		err = a.bind(ctx, j, access.OutputRole, j.Spec.Output)
	}
	if err != nil {
		return failed(lifecycle.EvMountFailed, err)
	}
	return done(lifecycle.EvMounted)
}

// bind shows the RAMDISK at one of the job's directories, with that
// directory's owner, group, permission bits and ACLs on the RAMDISK's
// root, so the job, and whoever the directory admits, see no difference,
// and nobody gets more than the directory gave (a project directory's
// owner stays its owner). The job's user is checked again, with the
// user's rights, for the access the directory's role needs. (No one else
// reaches the RAMDISK's root through r.Dir: the engine's gate admits the
// job's user alone.)
func (e *Env) bind(ctx context.Context, j *job.Job, role access.Role, target string) error {
	fd, err := e.Policy.OpenTarget(string(role), target, j.UID)
	if err != nil {
		if showsRamdisk(target, j.Ramdisk) {
			// A resumed mount that already happened: the target shows
			// this job's own RAMDISK (which the policy refuses as a
			// target); Bind finds it in place.
			return e.Access.Bind(ctx, j.Hosts, role, e.Daemon.Ramdisk(j), target)
		}
		return err
	}
	defer unix.Close(fd)
	who := asuser.Identity{UID: j.UID, GID: j.GID, Groups: j.Groups}
	if err := asuser.Do(who, func() error { return e.Policy.CheckTarget(string(role), target, j.UID) }); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("examining %s %s: %w", role, target, err)
	}
	if err := e.dressRoot(j, fd, &st, role, target); err != nil {
		return err
	}
	if a, ok := engine.As[engine.ClientAdmitter](e.Engine); ok {
		if err := a.AdmitClients(ctx, e.Daemon.Ramdisk(j), j.Hosts); err != nil {
			return err
		}
	}
	return e.Access.Bind(ctx, j.Hosts, role, e.Daemon.Ramdisk(j), target)
}

// dressRoot gives the RAMDISK's root the owner, group, mode and ACLs of
// the directory open as fd (status st). It works through a descriptor
// opened without following symlinks: the RAMDISK's root belongs to the
// user, who must not steer root's chown elsewhere.
func (e *Env) dressRoot(j *job.Job, fd int, st *unix.Stat_t, role access.Role, target string) error {
	rfd, err := unix.Openat2(unix.AT_FDCWD, j.Ramdisk, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return fmt.Errorf("opening RAMDISK root: %w", err)
	}
	defer unix.Close(rfd)
	if err := unix.Fchownat(rfd, "", int(st.Uid), int(st.Gid), unix.AT_EMPTY_PATH); err != nil {
		return fmt.Errorf("setting RAMDISK owner and group: %w", err)
	}
	// fchmodat cannot take AT_EMPTY_PATH on an O_PATH descriptor; the
	// magic link of this very descriptor names the same inode.
	if err := unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", rfd), st.Mode&0o7777); err != nil {
		return fmt.Errorf("setting RAMDISK mode: %w", err)
	}
	if err := mount.CopyACLs(fd, rfd); err != nil {
		return fmt.Errorf("giving the RAMDISK (engine %s) the ACLs of %s %s: %w; a directory shared by ACLs needs an engine that keeps them (local does): use a group directory without ACLs, or one of your own", e.Engine.Name(), role, target, err)
	}
	return nil
}

// bindImage shows the job's input image at its input directory on its
// compute nodes. The image's root carries the input directory's own
// owner, group and mode (its pack's first entry), so, unlike a RAMDISK's
// root, it needs none set.
func (e *Env) bindImage(ctx context.Context, j *job.Job, rd engine.Ramdisk) error {
	ib, ok := e.Access.(access.ImageBinder)
	if !ok {
		return fmt.Errorf("the compute nodes of engine %s cannot mount an input image; the job reads its input from disk (input=files stages it into RAM)", e.Engine.Name())
	}
	if a, ok := engine.As[engine.ClientAdmitter](e.Engine); ok {
		if err := a.AdmitClients(ctx, rd, j.Hosts); err != nil {
			return err
		}
	}
	backing, err := ib.BindImage(ctx, j.Hosts, rd, j.Spec.Input, mount.ImageOptions{Loop: e.Config.ImageLoop})
	if err != nil {
		return err
	}
	if backing != "" {
		e.note(j, fmt.Sprintf("mount: input image mounted read-only at the input directory (%s-backed)", backing))
	}
	return nil
}

// showsRamdisk reports whether target, reached without symlinks, is the
// root of the RAMDISK at ramdisk.
func showsRamdisk(target, ramdisk string) bool {
	var a, b unix.Stat_t
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	for _, p := range []struct {
		path string
		st   *unix.Stat_t
	}{{target, &a}, {ramdisk, &b}} {
		fd, err := unix.Openat2(unix.AT_FDCWD, p.path, how)
		if err != nil {
			return false
		}
		err = unix.Fstat(fd, p.st)
		unix.Close(fd)
		if err != nil {
			return false
		}
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}

// statClose is the status of the file open as fd, which it closes.
func statClose(fd int) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstat(fd, &st)
	unix.Close(fd)
	return st, err
}
