package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/alloc"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/stage"
)

// start begins action a for j, whose transition is already committed.
// Assign and StopStageIn are quick bookkeeping done in the loop; the rest
// run in goroutines and report back with one completion event.
func (d *Daemon) start(j *job.Job, a lifecycle.Action) {
	switch a.Kind {
	case lifecycle.Assign:
		if m, ok := d.assign(j); ok {
			d.pending = append(d.pending, m)
		}
		return
	case lifecycle.StopStageIn:
		if cancel, ok := d.staging[j.ID]; ok {
			cancel() // the stage-in reports its own end
		} else {
			// Nothing runs (the daemon restarted): it is stopped.
			d.pending = append(d.pending, msg{id: j.ID, ev: lifecycle.Event{Kind: lifecycle.EvStageInStopped, At: time.Now()}})
		}
		return
	}
	ctx := d.actx
	if a.Kind == lifecycle.StageIn {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(d.actx)
		d.staging[j.ID] = cancel
	}
	jj := *j
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		ev := d.run(ctx, &jj, a.Kind)
		ev.At = time.Now()
		if ev.Reason != "" {
			d.log.Warn("action failed", "job", jj.ID, "action", a.Kind, "err", ev.Reason)
		}
		d.post(msg{id: jj.ID, ev: ev})
	}()
}

// assign decides on capacity (App. P). Waiting is not a transition: the job
// stays INITIAL and is tried again on the next tick or release.
func (d *Daemon) assign(j *job.Job) (msg, bool) {
	if now := time.Now(); j.State == lifecycle.OnDeck && now.Before(j.NotBefore) {
		why := fmt.Sprintf("stage-in starts at %s, %s before the job's expected start", j.NotBefore.Format(time.DateTime), d.cfg.Slurm.StageInLead)
		if d.setWaiting(j.ID, why) {
			d.log.Info("job waits for its stage-in time", "job", j.ID, "not_before", j.NotBefore)
		}
		return msg{}, false
	}
	used, err := d.allocated(context.Background(), nil)
	if err != nil {
		d.log.Error("reading allocations", "err", err)
		return msg{}, false
	}
	m := j.Machine()
	dec := alloc.Plan(alloc.PolicyFrom(d.cfg), d.cfg.Nodes, used, alloc.Request{
		ComputeNodes: j.Spec.ComputeNodes, Capacity: j.Spec.Capacity,
		Running: j.State == lifecycle.Running, HasInput: m.HasInput, HasOutput: m.HasOutput,
	})
	now := time.Now()
	switch dec.Verdict {
	case alloc.Assign:
		d.setWaiting(j.ID, "")
		parts := dec.Parts
		dir := engine.DirFor(d.cfg.RamdiskRoot, j.ID)
		return msg{id: j.ID, ev: lifecycle.Event{Kind: lifecycle.EvAssigned, At: now}, edit: func(n *job.Job) {
			n.Alloc, n.Ramdisk = parts, dir
		}}, true
	case alloc.Ineligible:
		d.setWaiting(j.ID, "")
		return msg{id: j.ID, ev: lifecycle.Event{Kind: lifecycle.EvIneligible, At: now, Reason: dec.Reason}}, true
	default:
		if d.setWaiting(j.ID, dec.Reason) {
			d.log.Info("job waits for capacity", "job", j.ID, "why", dec.Reason)
		}
		return msg{}, false
	}
}

// setWaiting records why a job waits; it reports whether that changed.
func (d *Daemon) setWaiting(id int64, why string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.waiting[id] == why {
		return false
	}
	if why == "" {
		delete(d.waiting, id)
	} else {
		d.waiting[id] = why
	}
	return true
}

// allocated sums the RAM held on each node by the jobs whose state holds it
// (and, if only is given, that it keeps).
func (d *Daemon) allocated(ctx context.Context, only func(*job.Job) bool) (map[string]int64, error) {
	jobs, err := d.store.List(ctx, false, 0)
	if err != nil {
		return nil, err
	}
	used := map[string]int64{}
	for _, j := range jobs {
		if lifecycle.HoldsNodes(j.RSA) && (only == nil || only(j)) {
			for _, p := range j.Alloc {
				used[p.Node] += p.Bytes
			}
		}
	}
	return used, nil
}

// run carries out one action and returns its completion event.
func (d *Daemon) run(ctx context.Context, j *job.Job, kind lifecycle.ActionKind) lifecycle.Event {
	rd := d.ramdisk(j)
	ok := func(k lifecycle.EventKind) lifecycle.Event { return lifecycle.Event{Kind: k} }
	fail := func(k lifecycle.EventKind, err error) lifecycle.Event {
		return lifecycle.Event{Kind: k, Reason: err.Error()}
	}
	switch kind {
	case lifecycle.Construct:
		if err := d.engine.Construct(ctx, rd); err != nil {
			return fail(lifecycle.EvBootFailed, err)
		}
		return ok(lifecycle.EvBooted)
	case lifecycle.StageIn:
		err := d.stage(ctx, j, "stage-in", j.Spec.StageIn, j.Spec.Input)
		switch {
		case err == nil:
			return ok(lifecycle.EvStagedIn)
		case ctx.Err() != nil:
			return ok(lifecycle.EvStageInStopped)
		default:
			return fail(lifecycle.EvStageInFailed, err)
		}
	case lifecycle.MountIn:
		if err := d.bind(ctx, j, "input directory", j.Spec.Input); err != nil {
			return fail(lifecycle.EvMountFailed, err)
		}
		return ok(lifecycle.EvMounted)
	case lifecycle.MountOut:
		if err := d.bind(ctx, j, "output directory", j.Spec.Output); err != nil {
			return fail(lifecycle.EvMountFailed, err)
		}
		return ok(lifecycle.EvMounted)
	case lifecycle.Unmount:
		if err := d.access.Unbind(ctx, j.Hosts, rd.Dir, false); err != nil {
			return fail(lifecycle.EvUnmountBusy, err)
		}
		return ok(lifecycle.EvUnmounted)
	case lifecycle.StageOut:
		// The job has ended: its mounts go first, busy or not, so nothing
		// writes while the output is copied.
		if err := d.access.Unbind(ctx, j.Hosts, rd.Dir, true); err != nil {
			return fail(lifecycle.EvStageOutFailed, err)
		}
		if err := d.stage(ctx, j, "stage-out", j.Spec.StageOut, j.Spec.Output); err != nil {
			return fail(lifecycle.EvStageOutFailed, err)
		}
		return ok(lifecycle.EvStagedOut)
	case lifecycle.Destroy:
		// The compute nodes' mounts first: each keeps the tmpfs, and so
		// its RAM, alive.
		if err := d.access.Unbind(ctx, j.Hosts, rd.Dir, true); err != nil {
			return fail(lifecycle.EvDestroyFailed, err)
		}
		if err := d.engine.Destroy(ctx, rd); err != nil {
			return fail(lifecycle.EvDestroyFailed, err)
		}
		d.forget(j.ID)
		return ok(lifecycle.EvDestroyed)
	}
	return fail(lifecycle.EvDestroyFailed, fmt.Errorf("unknown action %s", kind))
}

// bind shows the RAMDISK at one of the job's directories, with that
// directory's permission bits on the RAMDISK's root so the job sees no
// difference.
func (d *Daemon) bind(ctx context.Context, j *job.Job, role, target string) error {
	fd, err := mount.OpenTarget(role, target, j.UID)
	if err != nil {
		return err
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	unix.Close(fd)
	if err != nil {
		return err
	}
	if err := os.Chmod(j.Ramdisk, os.FileMode(st.Mode&0o7777)&os.ModePerm); err != nil {
		return fmt.Errorf("setting RAMDISK mode: %w", err)
	}
	return d.access.Bind(ctx, j.Hosts, role, j.Ramdisk, target, j.UID)
}

// stage runs one staging phase as the job's user, logging to the job's
// stage log and recording progress.
func (d *Daemon) stage(ctx context.Context, j *job.Job, phase, program, data string) error {
	if d.cfg.Limits.StageTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.cfg.Limits.StageTimeout)
		defer cancel()
	}
	logf, err := os.OpenFile(d.stageLog(j.ID), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening stage log: %w", err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "%s %s: %s\n", time.Now().Format(time.RFC3339), phase, describe(program, data))
	started := time.Now()
	d.setProgress(j.ID, job.Progress{Phase: phase, Started: started, Updated: started})
	err = d.runner.Run(ctx, stage.Task{
		Job: j.ID, Phase: phase, User: identity(j), Program: program, Ramdisk: j.Ramdisk, Data: data, Log: logf,
		Progress: func(p stage.Progress) {
			d.setProgress(j.ID, job.Progress{Phase: phase, Files: p.Files, Bytes: p.Bytes, TotalFiles: p.TotalFiles,
				TotalBytes: p.TotalBytes, Started: started, Updated: time.Now()})
		},
	})
	if err != nil {
		fmt.Fprintf(logf, "%s %s failed: %v\n", time.Now().Format(time.RFC3339), phase, err)
	} else {
		fmt.Fprintf(logf, "%s %s done in %s\n", time.Now().Format(time.RFC3339), phase, time.Since(started).Round(time.Millisecond))
	}
	return err
}

func describe(program, data string) string {
	if stage.BuiltIn(program) {
		return "built-in " + program + " with " + data
	}
	if program != "" {
		return fmt.Sprintf("running %s RAMDISK %s", program, data)
	}
	return "built-in copy with " + data
}

func identity(j *job.Job) stage.Identity {
	return stage.Identity{UID: j.UID, GID: j.GID, Groups: j.Groups, Name: j.User, Home: j.Home}
}

func (d *Daemon) stageLog(id int64) string {
	return filepath.Join(d.cfg.StateDir, "logs", strconv.FormatInt(id, 10)+".log")
}

func (d *Daemon) setProgress(id int64, p job.Progress) {
	d.mu.Lock()
	d.progress[id] = p
	d.mu.Unlock()
}

// watchOwner finishes j when the process that owns it (rsa run) exits,
// however it exits.
func (d *Daemon) watchOwner(j *job.Job) {
	if j.Owner.PID == 0 || j.State == lifecycle.Finished {
		return
	}
	gone := func(why string) {
		d.post(msg{id: j.ID, ev: lifecycle.Event{Kind: lifecycle.EvFinished, At: time.Now(), Reason: why}})
	}
	if st, err := procStartTime(j.Owner.PID); err != nil || st != j.Owner.StartTime {
		gone(fmt.Sprintf("its rsa run process %d is gone", j.Owner.PID))
		return
	}
	fd, err := unix.PidfdOpen(j.Owner.PID, 0)
	if err != nil {
		gone(fmt.Sprintf("its rsa run process %d is gone", j.Owner.PID))
		return
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer unix.Close(fd)
		for d.actx.Err() == nil {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, 1000)
			if err != nil && !errors.Is(err, unix.EINTR) {
				return
			}
			if n > 0 {
				gone(fmt.Sprintf("its rsa run process %d exited", j.Owner.PID))
				return
			}
		}
	}()
}

// procStartTime reads a process' start time (clock ticks after boot), which
// with the pid identifies it across pid reuse.
func procStartTime(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("bad stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, errors.New("bad stat")
	}
	return strconv.ParseUint(f[19], 10, 64)
}
