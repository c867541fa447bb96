package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/rsa-hpc/rsa/internal/alloc"
	"github.com/rsa-hpc/rsa/internal/daemon/board"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/holders"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
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
		began := time.Now()
		ev := d.execute(ctx, &jj, a.Kind)
		ev.At = time.Now()
		d.observeAction(jj.ID, a.Kind, ev.At.Sub(began), ev)
		if ev.Reason != "" {
			d.log.Warn("action failed", "job", jj.ID, "action", a.Kind, "err", ev.Reason)
		}
		d.post(msg{id: jj.ID, ev: ev})
	}()
}

// assign decides on capacity (App. P); the lifecycle asks for it only once
// the job's stage-in time has come. Waiting is not a transition: the job
// stays INITIAL and is tried again on the next tick or release; its first
// wait for capacity is an event (EvWaitCapacity) that starts the wait's
// clock in its record, which the lifecycle bounds (Job.CapacityWait).
func (d *Daemon) assign(j *job.Job) (msg, bool) {
	dec := d.book.Decide(j)
	now := time.Now()
	switch dec.Verdict {
	case alloc.Assign:
		d.board.SetWait(j.ID, "", "")
		parts := d.book.Reserve(j, dec.Parts)
		dir := engine.DirFor(d.cfg.RamdiskRoot, j.ID)
		return msg{id: j.ID, ev: lifecycle.Event{Kind: lifecycle.EvAssigned, At: now}, edit: func(n *job.Job) {
			n.Alloc, n.Ramdisk, n.Lost = parts, dir, nil
		}}, true
	case alloc.Ineligible:
		d.board.SetWait(j.ID, "", "")
		return msg{id: j.ID, ev: lifecycle.Event{Kind: lifecycle.EvIneligible, At: now, Reason: dec.Reason}}, true
	default:
		if d.board.SetWait(j.ID, board.WaitCapacity, dec.Reason) {
			d.log.Info("job waits for capacity", "job", j.ID, "why", dec.Reason)
		}
		if j.WaitingSince.IsZero() {
			// The wait's clock is the record's: a restart neither
			// restarts nor stops it (Job.CapacityWait).
			return msg{id: j.ID, ev: lifecycle.Event{Kind: lifecycle.EvWaitCapacity, At: now}}, true
		}
		return msg{}, false
	}
}

// waitForStageIn says why j, held for its stage-in time
// (lifecycle.HoldStageInTime), waits.
func (d *Daemon) waitForStageIn(j *job.Job) {
	why := fmt.Sprintf("stage-in starts at %s, %s before the job's expected start", j.NotBefore.Format(time.DateTime), d.cfg.Slurm.StageInLead)
	if j.Expected.IsZero() {
		why = fmt.Sprintf("Slurm has not yet estimated when the job starts, and its nodes are busy: stage-in waits for the estimate, until %s at the latest", j.NotBefore.Format(time.DateTime))
	}
	if d.board.SetWait(j.ID, board.WaitStart, why) {
		d.log.Info("job waits for its stage-in time", "job", j.ID, "not_before", j.NotBefore)
	}
}

// stageLog is the file of j's own log.
func (d *Daemon) stageLog(j *job.Job) string { return d.logs.Path(j.ID, j.CreatedAt) }

// jobLog adds a line to j's own log, which 'rsa log' shows its user.
func (d *Daemon) jobLog(j *job.Job, format string, a ...any) {
	d.logs.Append(j.ID, j.CreatedAt, fmt.Sprintf(format, a...))
}

// appendStageLog adds a line, and a list under it, to j's own log.
func (d *Daemon) appendStageLog(j *job.Job, line string, more ...string) {
	d.logs.Append(j.ID, j.CreatedAt, line, more...)
}

// watchOwner finishes j when the process that owns it (rsa run) exits,
// however it exits.
func (d *Daemon) watchOwner(j *job.Job) {
	if j.Owner.PID == 0 || j.State == lifecycle.Finished {
		return
	}
	id, pid, start := j.ID, j.Owner.PID, j.Owner.StartTime
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if how := holders.AwaitExit(d.actx, pid, start); how != "" {
			why := fmt.Sprintf("its rsa run process %d %s", pid, how)
			d.post(msg{id: id, ev: lifecycle.Event{Kind: lifecycle.EvFinished, At: time.Now(), Reason: why}})
		}
	}()
}
