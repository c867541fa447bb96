package notify

import (
	"context"
	"time"

	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// Teller tells job users what waits for them (config [notify]): their
// stage-out failed, their output was lost, their output still waits in
// RAM. Notices go out off the caller's goroutine, a few at a time; one
// that fails is reported and never holds a job up. A notice is sent at
// most once per commit that calls for it: a daemon that stops while one
// is out may lose it, and the reminders (notify.held_after) tell again.
type Teller struct {
	program   Program
	heldAfter time.Duration
	slots     chan struct{} // bounds the programs running at once
	// scanned is when the caller last looked for output held long
	// (Scan); it looks once a minute (held_after is an hour or more).
	scanned time.Time
}

// tellersAtOnce bounds the notification programs running together: a
// mass failure (the archive down for every job) must not fork hundreds.
const tellersAtOnce = 4

// NewTeller is the teller c configures, or nil without notify.program.
func NewTeller(c config.Notify) *Teller {
	if c.Program == "" {
		return nil
	}
	return &Teller{program: Program{Path: c.Program, Timeout: c.Timeout}, heldAfter: c.HeldAfter,
		slots: make(chan struct{}, tellersAtOnce)}
}

// For is what the change of a job from old to next tells its user, if
// anything: that its stage-out failed, or that its output was lost.
func For(old, next *job.Job) (Kind, bool) {
	switch {
	case next.RSA == old.RSA:
		return "", false
	case next.RSA == lifecycle.StageOutFailed:
		return StageOutFailed, true
	case lifecycle.PhaseOf(next.RSA) == lifecycle.PhaseOutputLost && lifecycle.PhaseOf(old.RSA) != lifecycle.PhaseOutputLost:
		return OutputLost, true
	}
	return "", false
}

// NoticeOf is the notice of kind for j.
func NoticeOf(j *job.Job, kind Kind) Notice {
	n := Notice{Kind: kind, Job: j.ID, User: j.User, Output: j.Spec.Output, Error: j.Error, Since: j.FinishedAt}
	if j.Scheduler == config.SchedulerSlurm || j.Scheduler == config.SchedulerSlurmPoll {
		n.SlurmJob = j.Spec.SchedulerID
	}
	return n
}

// Tell sends n when a slot is free, and then calls done with the
// program's error (nil: told). It blocks until the program ends or ctx
// does (then done is not called).
func (t *Teller) Tell(ctx context.Context, n Notice, done func(error)) {
	select {
	case t.slots <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-t.slots }()
	done(t.program.Send(ctx, n))
}

// Scan reports whether it is time (a minute since the last scan, and
// reminders configured) to look for output held long, and if so marks
// now as the last scan.
func (t *Teller) Scan(now time.Time) bool {
	if t == nil || t.heldAfter <= 0 || now.Sub(t.scanned) < time.Minute {
		return false
	}
	t.scanned = now
	return true
}

// Due reports whether j's user is to be reminded at now that its output
// waits in RAM after a failed stage-out: held_after since they were last
// told (or since the job's last change, for one never told: no program
// then).
func (t *Teller) Due(j *job.Job, now time.Time) bool {
	told := j.NoticeAt
	if told.IsZero() {
		told = j.UpdatedAt
	}
	return j.RSA == lifecycle.StageOutFailed && now.Sub(told) >= t.heldAfter
}
