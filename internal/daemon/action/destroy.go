package action

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// destroy tears the job's RAMDISK down and frees its RAM.
type destroy struct{ *Env }

var _ Action = destroy{}

func (destroy) Kind() lifecycle.ActionKind { return lifecycle.Destroy }

// Run tears down in the order that keeps the RAM counted until it is
// free: the compute nodes' mounts first (each keeps the RAMDISK, and so
// its RAM, alive), then the gate closes, the processes still holding the
// RAMDISK end, and only then is it destroyed. An input image or a private
// output mounted here holds its file in the RAMDISK open until the last
// process using it lets go: their holders are ended too, found by their
// devices, pinned before their mounts here go.
//
// Parts on silent RSA nodes become debts (Daemon.Owe), held on those
// nodes until their agents confirm them gone; the event names those nodes
// (unless their RAM is free), which get no part of a rebuild: the RAMDISK
// is assigned anew on live nodes.
func (a destroy) Run(ctx context.Context, j *job.Job) lifecycle.Event {
	rd := a.Daemon.Ramdisk(j)
	a.noteProfile(ctx, j, rd)
	if err := a.unbindAndEvict(ctx, j, rd, true); err != nil {
		return failed(lifecycle.EvDestroyFailed, err)
	}
	err := a.destroyWhenFree(ctx, j, rd)
	if err == nil {
		a.Daemon.Forget(j.ID)
		return done(lifecycle.EvDestroyed)
	}
	debt := (*engine.DebtError)(nil)
	if !errors.As(err, &debt) {
		return failed(lifecycle.EvDestroyFailed, err)
	}
	if err := a.Daemon.Owe(ctx, j, debt); err != nil {
		return failed(lifecycle.EvDestroyFailed, err)
	}
	a.Daemon.Forget(j.ID)
	if debt.Freed {
		return lifecycle.Event{Kind: lifecycle.EvDestroyed, Reason: debt.Error()}
	}
	return lifecycle.Event{Kind: lifecycle.EvDestroyed, Nodes: debt.Nodes, Reason: debt.Error()}
}

// profileTimeout bounds the read of a RAMDISK's profile: it is for the
// job's log, and a node slow to answer must not hold the teardown.
const profileTimeout = 10 * time.Second

// noteProfile writes the file operations the RAMDISK served, as its
// engine counted them (engine.Profiler), into the job's log in the form
// engine.ParseProfile reads: a line an operation, the most called first.
// An engine not counting them writes nothing; one that fails to read
// them says so in a line.
func (a destroy) noteProfile(ctx context.Context, j *job.Job, rd engine.Ramdisk) {
	p, ok := engine.As[engine.Profiler](a.Engine)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, profileTimeout)
	defer cancel()
	ops, ok, err := p.Profile(ctx, rd)
	switch {
	case !ok:
	case err != nil:
		a.note(j, fmt.Sprintf("%s (%v)", engine.ProfileUnread, err))
	default:
		more := make([]string, len(ops))
		for i, o := range ops {
			more[i] = o.LogLine()
		}
		a.note(j, engine.ProfileHead, more...)
	}
}

// busyPause is the pause between a teardown's tries of a busy RAMDISK.
const busyPause = 250 * time.Millisecond

// destroyWhenFree is Engine.Destroy, tried again while the RAMDISK is busy
// for a moment after the eviction: a mount namespace made meanwhile (a
// stage of another job's) copies every mount, this RAMDISK's too, until
// its maker drops RSA's, and the kernel lets go of an unmounted image's
// file a moment after the unmount. Holders found meanwhile are awaited
// or ended as at the eviction (Evict); busy past limits.kill_grace (how
// long RSA waits for a RAMDISK's holders) with no holder, the teardown
// fails as busy, naming what may then hold it: a copy of an image
// mounted from it in another namespace, whose device RSA no longer knows
// once the image here is gone (and may have passed to another file
// system: no process is ended for it).
func (a destroy) destroyWhenFree(ctx context.Context, j *job.Job, rd engine.Ramdisk) error {
	deadline := time.Now().Add(a.Config.Limits.KillGrace)
	for {
		err := a.Engine.Destroy(ctx, rd)
		if !errors.Is(err, engine.ErrBusy) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w %s after its holders were ended, and no process holds it itself: "+
				"a copy, in another mount namespace, of an image mounted from it can "+
				"(/proc/PID/mountinfo shows those of namespaces a process is in; findmnt -t nsfs lists namespaces kept without one); "+
				"unmount that copy there, then rsa retry %d",
				err, a.Config.Limits.KillGrace, j.ID)
		}
		if eerr := a.Evict(ctx, j, rd); eerr != nil {
			return fmt.Errorf("%w; then: %w", err, eerr)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(busyPause):
		}
	}
}
