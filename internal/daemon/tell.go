package daemon

import (
	"context"
	"time"

	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/notify"
)

// teller tells job users what waits for them (config [notify]): their
// stage-out failed, their output was lost, their output still waits in
// RAM. Notices go out off the loop, a few at a time; one that fails is
// logged and never holds a job up. A notice is sent at most once per
// commit that calls for it: a daemon that stops while one is out may lose
// it, and the reminders (notify.held_after) tell again.
type teller struct {
	program   notify.Program
	heldAfter time.Duration
	slots     chan struct{} // bounds the programs running at once
	// scanned is when the loop last looked for output held long; it
	// looks once a minute (held_after is an hour or more).
	scanned time.Time
}

// tellersAtOnce bounds the notification programs running together: a
// mass failure (the archive down for every job) must not fork hundreds.
const tellersAtOnce = 4

func newTeller(c config.Notify) *teller {
	if c.Program == "" {
		return nil
	}
	return &teller{program: notify.Program{Path: c.Program, Timeout: c.Timeout}, heldAfter: c.HeldAfter,
		slots: make(chan struct{}, tellersAtOnce)}
}

// noticeFor is what the change from old to next tells the job's user, if
// anything: that its stage-out failed, or that its output was lost.
func noticeFor(old, next *job.Job) (notify.Kind, bool) {
	switch {
	case next.RSA == old.RSA:
		return "", false
	case next.RSA == lifecycle.StageOutFailed:
		return notify.StageOutFailed, true
	case lifecycle.PhaseOf(next.RSA) == lifecycle.PhaseOutputLost && lifecycle.PhaseOf(old.RSA) != lifecycle.PhaseOutputLost:
		return notify.OutputLost, true
	}
	return "", false
}

// sendNotice tells j's user of kind, off the loop; the job's log says
// whether it went out.
func (d *Daemon) sendNotice(j *job.Job, kind notify.Kind) {
	t := d.tell
	if t == nil {
		return
	}
	n := notify.Notice{Kind: kind, Job: j.ID, User: j.User, Output: j.Spec.Output, Error: j.Error, Since: j.FinishedAt}
	if j.Scheduler == config.SchedulerSlurm || j.Scheduler == config.SchedulerSlurmPoll {
		n.SlurmJob = j.Spec.Name
	}
	rec := *j
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		select {
		case t.slots <- struct{}{}:
		case <-d.actx.Done():
			return
		}
		defer func() { <-t.slots }()
		if err := t.program.Send(d.actx, n); err != nil {
			d.log.Warn("telling a job's user", "job", n.Job, "user", n.User, "notice", string(kind), "err", err)
			d.jobLog(&rec, "could not tell %s that the job's %s: %v", n.User, kind, err)
			return
		}
		d.jobLog(&rec, "told %s: %s", n.User, kind)
	}()
}

// remindHeld tells again the user of each job whose output has waited in
// RAM after a failed stage-out for notify.held_after since they were last
// told (or since the job's last change, for one never told), and records
// when. It runs on the loop, as its commits must.
func (d *Daemon) remindHeld(ctx context.Context, now time.Time) {
	t := d.tell
	if t == nil || t.heldAfter <= 0 || now.Sub(t.scanned) < time.Minute {
		return
	}
	t.scanned = now
	var due []int64
	d.store.EachActive(func(j *job.Job) {
		if j.RSA == lifecycle.StageOutFailed && now.Sub(toldAt(j)) >= t.heldAfter {
			due = append(due, j.ID)
		}
	})
	for _, id := range due {
		j, err := d.store.Get(ctx, id)
		if err != nil || j.RSA != lifecycle.StageOutFailed {
			continue
		}
		j.NoticeAt = now
		if err := d.store.Commit(ctx, j, nil); err != nil {
			d.log.Error("recording a reminder", "job", id, "err", err)
			continue
		}
		d.changed()
		d.sendNotice(j, notify.OutputHeld)
	}
}

// toldAt is when j's user was last told that its output waits, or, never
// told (no program then), when the job last changed.
func toldAt(j *job.Job) time.Time {
	if !j.NoticeAt.IsZero() {
		return j.NoticeAt
	}
	return j.UpdatedAt
}
