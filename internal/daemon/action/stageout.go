package action

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/stage"
	"github.com/rsa-hpc/rsa/internal/textsafe"
	"github.com/rsa-hpc/rsa/internal/units"
)

// stageOut copies the job's output from its RAMDISK (or its compute
// nodes' own file systems) into its output directory as the job's user,
// verified, once nothing can write it any more.
type stageOut struct{ *Env }

var _ Action = stageOut{}

func (stageOut) Kind() lifecycle.ActionKind { return lifecycle.StageOut }

// Run stages the output out. The job has ended: its mounts go first, busy
// or not, then the processes it left holding the RAMDISK, and the RAMDISK
// turns read-only, so nothing writes while the output is copied and
// verified: a late write fails (EROFS) instead of vanishing. A failure
// leaves the output in RAM and writes to the job's log which files are
// there.
func (a stageOut) Run(ctx context.Context, j *job.Job) lifecycle.Event {
	rd := a.Daemon.Ramdisk(j)
	if rd.RootOnly {
		return a.private(ctx, j, rd)
	}
	fence, err := a.fenceClients(ctx, j, rd)
	if err != nil {
		return failed(lifecycle.EvStageOutFailed, err)
	}
	if err := a.seal(ctx, j, rd, fence); err != nil {
		return failed(lifecycle.EvStageOutFailed, err)
	}
	r := rounds{Env: a.Env, j: j, rd: rd}
	if err := r.copy(ctx); err != nil {
		// Not when the daemon stops: the stage-out runs again.
		if ctx.Err() == nil {
			err = a.withInventory(j, rd, r.seen, err)
		}
		return failed(lifecycle.EvStageOutFailed, err)
	}
	return done(lifecycle.EvStagedOut)
}

// private is Run for output=private.
func (a stageOut) private(ctx context.Context, j *job.Job, rd engine.Ramdisk) lifecycle.Event {
	if err := a.stageOutPrivate(ctx, j, rd); err != nil {
		ev := failed(lifecycle.EvStageOutFailed, err)
		if lost := (*writesLostError)(nil); errors.As(err, &lost) {
			ev.Nodes = lost.Nodes() // recorded: job.PrivateLost
		}
		return ev
	}
	return done(lifecycle.EvStagedOut)
}

// fenceClients unbinds the job's compute nodes, busy or not. A compute
// node out of reach may still write into the RAMDISK: fence is true, and
// the seal that follows fences it (the bricks refuse every client's
// writes, connections already open included); the copy goes on without
// it.
func (a stageOut) fenceClients(ctx context.Context, j *job.Job, rd engine.Ramdisk) (fence bool, err error) {
	err = a.Access.Unbind(ctx, j.Hosts, rd, true)
	if err == nil {
		return false, nil
	}
	un, ok := unreachable(err)
	if !ok {
		return true, err
	}
	a.Log.Warn("compute node out of reach at stage-out: fenced by sealing the RAMDISK", "job", j.ID, "nodes", un.Nodes, "err", un.Err)
	a.note(j, fmt.Sprintf("stage-out: compute node %s out of reach (%v): fenced, the RAMDISK is read-only for it from now on; what it wrote before is staged out",
		strings.Join(un.Nodes, ", "), un.Err))
	return true, nil
}

// stageOutRounds bounds the copies of one stage-out that a part of the
// RAMDISK coming back starts again: a node that comes and goes all the
// time is for the admin to see.
const stageOutRounds = 3

// rounds is one stage-out's copies. A part out of reach drops its files
// from the listing without an error: what is copied is copied, but the
// stage-out is verified only if every part was in reach, without a break,
// from before the copy to after it. A part back after it left (in reach
// at the end, but not at the start, or gone and back meanwhile) may have
// had files left out: the copy runs again, over what is on disk already,
// up to stageOutRounds times.
type rounds struct {
	*Env
	j    *job.Job
	rd   engine.Ramdisk
	seen engine.Degraded // the parts out of reach over every round
}

// copy runs the rounds and returns why the output is not verified, or nil.
func (r *rounds) copy(ctx context.Context) error {
	before, cerr := r.Engine.Check(ctx, r.rd)
	err := r.once(ctx, before)
	steady := false
	for round := 1; cerr == nil && ctx.Err() == nil; round++ {
		var after engine.Degraded
		after, cerr = r.Engine.Check(ctx, r.rd)
		if cerr != nil {
			break
		}
		steady = before.Steady(after)
		if steady || after.Missing || round == stageOutRounds {
			before = before.Merge(after)
			break
		}
		r.Log.Info("a part of the RAMDISK came back during its stage-out: copying again", "job", r.j.ID, "round", round+1)
		r.note(r.j, "stage-out: a part of the RAMDISK came back during the copy, which may have left its files out: copying again")
		before = after
		err = r.once(ctx, before)
	}
	r.seen = before
	return r.verdict(ctx, err, cerr, steady)
}

// once is one copy, degraded if parts were out of reach before it.
func (r *rounds) once(ctx context.Context, before engine.Degraded) error {
	return r.stage(ctx, r.j, stage.StageOut, r.j.Spec.StageOut, r.j.Spec.Output, len(before.Nodes) > 0, false)
}

// verdict is the stage-out's result from the last copy's error, the last
// check's error and whether the parts in reach stayed steady.
func (r *rounds) verdict(ctx context.Context, err, cerr error, steady bool) error {
	seen, j := r.seen, r.j
	switch {
	case ctx.Err() != nil:
		// The daemon stops: the stage-out runs again, checks and all.
		return cmp.Or(err, ctx.Err())
	case seen.Missing:
		// Named first: it is why files are missing, whatever the copy
		// met on its way.
		why := fmt.Sprintf("not verified: the part of the RAMDISK on RSA node %s was out of reach, and the files there are not on disk (those copied are). 'rsa retry %d' completes it if the node comes back with its RAM (a brick restarted, a cut link healed); if it rebooted they are gone, and 'rsa discard %d' gives them up",
			strings.Join(seen.Nodes, ", "), j.ID, j.ID)
		if err != nil {
			why += "; the copy: " + err.Error()
		}
		return errors.New(why)
	case err != nil:
		return err
	case cerr != nil:
		return fmt.Errorf("the copy ended, but whether every part of the RAMDISK was in reach is unknown: %w", cerr)
	case !steady:
		return fmt.Errorf("not verified: a part of the RAMDISK left and came back during each of %d copies, which may have left its files out; 'rsa retry %d' copies again once the RSA nodes are steady", stageOutRounds, j.ID)
	case len(seen.Nodes) > 0:
		r.note(j, fmt.Sprintf("stage-out: RSA node %s out of reach; its replicas were copied instead", strings.Join(seen.Nodes, ", ")))
	}
	return nil
}

// withInventory adds to a failed stage-out's err what the RAMDISK still
// holds, listed in the job's log.
func (e *Env) withInventory(j *job.Job, rd engine.Ramdisk, seen engine.Degraded, err error) error {
	held := e.inventory(j, rd)
	if held == "" {
		return err
	}
	if seen.Missing {
		// A distribute volume keeps a file's name on the file's own
		// brick alone.
		held += fmt.Sprintf("; that counts the parts in reach alone: the files on %s cannot be listed until the node is back", strings.Join(seen.Nodes, ", "))
	}
	return fmt.Errorf("%w; %s", err, held)
}

// maxListed bounds the file names a failed stage-out writes to the job's
// log; the count and size cover all of them.
const maxListed = 200

// inventory writes to the job's log which files the RAMDISK holds when a
// stage-out failed, and sums them up: should the RAMDISK be lost before a
// retry, the user knows what to recreate. The RAMDISK is sealed (read-only)
// by then, and the walk follows no symlink. "" if it cannot be listed.
func (e *Env) inventory(j *job.Job, rd engine.Ramdisk) string {
	var files, listed int
	var bytes int64
	var names []string
	err := filepath.WalkDir(rd.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		files++
		if info, err := d.Info(); err == nil && d.Type().IsRegular() {
			bytes += info.Size()
		}
		if listed < maxListed {
			rel, _ := filepath.Rel(rd.Dir, path)
			names = append(names, "  "+textsafe.Line(rel))
			listed++
		}
		return nil
	})
	if err != nil {
		e.Log.Error("listing a RAMDISK after a failed stage-out", "job", j.ID, "err", err)
		return ""
	}
	head := fmt.Sprintf("files only in RAM after the failed stage-out: %d (%s)", files, units.FormatSize(bytes))
	if files > listed {
		head += fmt.Sprintf(", the first %d:", listed)
	} else if files > 0 {
		head += ":"
	}
	e.note(j, head, names...)
	return fmt.Sprintf("the RAMDISK holds %d files (%s), listed by 'rsa log %d'", files, units.FormatSize(bytes), j.ID)
}
