package action

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/access"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/holders"
	"github.com/rsa-hpc/rsa/internal/job"
)

// seal makes the RAMDISK read-only. A file still open for writing (a
// process the job left behind) blocks that: the holders are ended first.
// A RAMDISK sealed but for a part cut off from the rest (the engine could
// not confirm it, engine.ErrPartlySealed) is staged out all the same, its
// log saying so, when the job's compute nodes are unbound and their
// processes gone: nobody is left to write. With fence (a compute node out
// of reach kept its mount) the seal is all that stops that node, and a
// part it may still write fails the stage-out, to be retried once the
// RSA nodes are in touch again.
func (e *Env) seal(ctx context.Context, j *job.Job, rd engine.Ramdisk, fence bool) error {
	err := e.Engine.Seal(ctx, rd)
	if errors.Is(err, engine.ErrBusy) {
		if err := e.Evict(ctx, j, rd); err != nil {
			return err
		}
		err = e.Engine.Seal(ctx, rd)
	}
	if errors.Is(err, engine.ErrPartlySealed) && !fence {
		e.Log.Warn("RAMDISK sealed but for a part", "job", j.ID, "err", err)
		e.note(j, fmt.Sprintf("stage-out: the RAMDISK is read-only except, maybe, a part cut off from the rest (%v); staging out all the same", err))
		return nil
	}
	return err
}

// unbindAndEvict removes the job's mounts on its compute nodes and ends
// what still holds the RAMDISK or the file systems mounted beside it here
// (an input image, private output), which are pinned from before their
// mounts go until their holders are gone: see engine.PinBeside. At
// teardown the gate closes first, and a compute node out of reach keeps
// its client mount until it answers again (a debt, paid then; it holds no
// RSA RAM); before a private stage-out every node must answer.
func (e *Env) unbindAndEvict(ctx context.Context, j *job.Job, rd engine.Ramdisk, teardown bool) error {
	beside, unpin, err := engine.PinBeside(rd)
	if err != nil {
		return err
	}
	defer unpin()
	if err := e.Access.Unbind(ctx, j.Hosts, rd, true); err != nil {
		un, ok := unreachable(err)
		if !ok || !teardown {
			return err
		}
		e.Log.Warn("compute node out of reach at teardown: its mount is removed when it answers", "job", j.ID, "nodes", un.Nodes, "err", un.Err)
		if err := e.Daemon.OweMounts(ctx, j, un); err != nil {
			return err
		}
	}
	if teardown {
		if err := e.Engine.Revoke(ctx, rd); err != nil {
			return err
		}
	}
	return e.Evict(ctx, j, rd, beside...)
}

// Evict ends the processes that still hold a finished job's RAMDISK (or
// the devices also names), the policy docs/security.md states: every
// process not root's gets SIGTERM, and SIGKILL limits.kill_grace later;
// root's processes are never signalled but are waited for as long, since
// many hold it only for a moment (a new mount namespace copies every
// mount until its maker drops RSA's). One still there after that keeps
// the RAMDISK (counted as held) until an administrator ends it and
// retries: the error says so. Each signal is written to the job's log and
// the daemon's.
func (e *Env) Evict(ctx context.Context, j *job.Job, rd engine.Ramdisk, also ...uint64) error {
	dev, ok, err := e.Engine.Device(rd)
	if err != nil {
		return err
	}
	devs := slices.DeleteFunc(also, func(n uint64) bool { return n == 0 })
	if ok {
		devs = append(devs, dev)
	}
	if len(devs) == 0 {
		return nil
	}
	ev := eviction{Env: e, j: j, grace: e.Config.Limits.KillGrace, started: time.Now(), termed: map[int]bool{}}
	for {
		live, roots, err := ev.signal(ctx, devs)
		if err != nil {
			return err
		}
		if live == 0 && len(roots) == 0 {
			return nil
		}
		if live == 0 && time.Since(ev.started) >= ev.grace {
			return fmt.Errorf("RAMDISK held by root's %s; RSA never signals root's processes: end them, then rsa retry %d", strings.Join(roots, ", "), j.ID)
		}
		if time.Since(ev.started) > ev.grace+10*time.Second {
			return fmt.Errorf("RAMDISK still held %s after SIGKILL (a process stuck in the kernel?); rsa retry %d when it is gone", time.Since(ev.started).Round(time.Second), j.ID)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// eviction is one Evict's state: which processes got SIGTERM, and since
// when it runs.
type eviction struct {
	*Env
	j       *job.Job
	grace   time.Duration
	started time.Time
	termed  map[int]bool
}

// signal finds the holders of devs and signals each user's process once
// with SIGTERM, then, past the grace, with SIGKILL. It returns how many
// holders are not root's and root's holders, which are never signalled.
func (ev *eviction) signal(ctx context.Context, devs []uint64) (live int, roots []string, err error) {
	var hs []holders.Holder
	for _, dev := range devs {
		h, err := findHolders(ctx, dev)
		if err != nil {
			return 0, nil, fmt.Errorf("looking for processes that hold the RAMDISK: %w", err)
		}
		hs = append(hs, h...)
	}
	for _, h := range hs {
		if h.UID == 0 {
			roots = append(roots, h.String())
			continue
		}
		live++
		sig, name := unix.SIGTERM, "SIGTERM"
		if ev.termed[h.PID] && time.Since(ev.started) >= ev.grace {
			sig, name = unix.SIGKILL, "SIGKILL"
		} else if ev.termed[h.PID] {
			continue
		}
		ev.termed[h.PID] = true
		ev.note(ev.j, fmt.Sprintf("RAMDISK still held after the job ended by %s: sending %s", h, name))
		ev.Log.Warn("ending a process that holds a finished job's RAMDISK", "job", ev.j.ID, "pid", h.PID, "uid", h.UID,
			"comm", strconv.Quote(h.Comm), "by", h.What, "signal", name)
		if err := holders.Signal(h, sig); err != nil {
			return 0, nil, err
		}
	}
	return live, roots, nil
}

// findHolders bounds the /proc search in time: it never asks a file
// system, but /proc itself can be slow on a loaded host.
func findHolders(ctx context.Context, dev uint64) ([]holders.Holder, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return holders.Find(ctx, dev)
}

// unreachable is the compute nodes an unbind could not reach, if that is
// all that failed: their mounts stay until they answer.
func unreachable(err error) (*access.UnreachableError, bool) {
	// Unbind returns one bare when nothing else failed; joined with
	// other errors it is not all, and errors.As would find it anyway.
	un, ok := err.(*access.UnreachableError)
	return un, ok
}
