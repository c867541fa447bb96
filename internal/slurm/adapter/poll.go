package adapter

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/slurm"
)

// pollSlurm is the thesis' integration (ch. 3-4): every poll_interval it
// reads squeue and turns each job's change into a scheduler event. On deck
// is pending on Resources; demoted is pending for any other reason (back
// to Priority, held, ...). Starts are the prolog's to report: it holds the
// job until its mounts are made (slurmStart). The epilog reports ends
// sooner than a poll; both send the same event, which applies once.
func (a *Adapter) pollSlurm(ctx context.Context) {
	p := poller{skip: map[string]bool{}, noStart: map[string]int{}, unheld: map[int64]bool{}}
	t := time.NewTicker(a.cfg.Slurm.PollInterval)
	defer t.Stop()
	var failing onlyChanges
	for {
		if err := a.pollOnce(ctx, &p); ctx.Err() == nil && failing.changed(err) {
			a.logSlurmErr("polling Slurm", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// poller is what the poller remembers from one poll to the next.
type poller struct {
	// skip: Slurm jobs whose script asks nothing of RSA (or asks
	// wrongly), read once.
	skip map[string]bool
	// noStart counts the polls that saw a job on Resources without an
	// expected start.
	noStart map[string]int
	// unheld: RSA jobs already found running without RSA (said once).
	unheld map[int64]bool
	// toldAccount: the InvalidAccount hint was logged (once per run).
	toldAccount bool
}

func (a *Adapter) pollOnce(ctx context.Context, p *poller) error {
	// squeue before RSA's jobs: a start the prolog reported is committed
	// before the prolog ends, so a job squeue shows past its prolog is
	// one RSA's record then shows started, unless nothing reported it.
	sjobs, err := a.slurm.Jobs(ctx)
	if err != nil {
		return err
	}
	bySlurm := slurm.ByID(sjobs)
	tracked, err := a.jobs.List(ctx, false, 0)
	if err != nil {
		return err
	}
	known := map[string]bool{}
	live := map[int64]bool{}
	for _, j := range tracked {
		if j.Spec.SchedulerID == "" || j.Machine().Done() {
			continue
		}
		known[j.Spec.SchedulerID] = true
		live[j.ID] = true
		sj, ok := bySlurm[j.Spec.SchedulerID]
		var kind lifecycle.EventKind
		switch {
		case !ok || sj.Ended():
			kind = lifecycle.EvFinished
		case sj.Running():
			// A start is the prolog's to report: it holds the job in
			// CONFIGURING until the mounts are made. A job Slurm runs
			// whose start nothing reported got past its prolog without
			// RSA.
			if j.Machine().Pending() && !heldForStart(sj) {
				a.startedWithoutRSA(j, sj, !p.unheld[j.ID])
				p.unheld[j.ID] = true
			}
		case sj.Reason == "Resources":
			kind = lifecycle.EvOnDeck
			a.refreshStart(j, sj)
		case sj.Pending() && sj.Reason == "None":
			// Slurm has not looked at the job since it was submitted or
			// updated (scontrol update resets a pending job's Reason):
			// no news of its place in the queue.
		case sj.Pending():
			kind = lifecycle.EvDemoted
		}
		// Only what changes the job is posted: Slurm repeats itself every
		// poll. A change this snapshot missed is seen at the next poll.
		ev := lifecycle.Event{Kind: kind, At: time.Now(), Reason: "Slurm: " + sj.State + " " + sj.Reason}
		if kind != "" && lifecycle.Applies(j.Machine(), ev) {
			a.jobs.Post(j.ID, ev, nil)
		}
	}
	for _, sj := range sjobs {
		if sj.Pending() && sj.Reason == "InvalidAccount" && !p.toldAccount {
			p.toldAccount = true
			a.log.Warn("a Slurm job is pending with reason InvalidAccount; if every job shows it, "+
				"this is Slurm 23.11 or later without accounting storage, whose main scheduler then "+
				"never reports Resources and RSA never stages a job in: give slurmctld an mpi.conf "+
				"(it may be empty) and restart it (docs/slurm.md)", "slurm", sj.ID)
		}
		if known[sj.ID] || p.skip[sj.ID] || !sj.Pending() || sj.Reason != "Resources" {
			continue
		}
		// Backfill sets the expected start a moment after the Reason;
		// without it a job due tomorrow would be staged in today. Give
		// it a few polls.
		if sj.Start.IsZero() && p.noStart[sj.ID] < 5 {
			p.noStart[sj.ID]++
			continue
		}
		j, err := a.adopt(ctx, sj, false)
		if errors.Is(err, errAdopted) {
			continue // its prolog took it on as it started
		}
		if err != nil {
			// Polling cannot refuse a job at submission as
			// burst_buffer/lua does; it runs without RSA, and its
			// comment tells its user why.
			a.log.Warn("not accelerating Slurm job", "slurm", sj.ID, "err", err)
			if cerr := a.slurm.Comment(ctx, sj.ID, "RSA: "+oneLine(err.Error())); cerr != nil {
				a.log.Warn("setting the job's comment", "slurm", sj.ID, "err", cerr)
			}
		}
		if j == nil {
			p.skip[sj.ID] = true
		}
	}
	// Forget jobs Slurm has purged and RSA jobs that are done, or the
	// maps grow with every job.
	maps.DeleteFunc(p.skip, func(id string, _ bool) bool { _, ok := bySlurm[id]; return !ok })
	maps.DeleteFunc(p.noStart, func(id string, _ int) bool { _, ok := bySlurm[id]; return !ok })
	maps.DeleteFunc(p.unheld, func(id int64, _ bool) bool { return !live[id] })
	return nil
}

// heldForStart reports whether Slurm keeps a job that has its nodes from
// running its batch script yet: CONFIGURING, while its PrologSlurmctld runs
// (or its nodes boot).
func heldForStart(sj slurm.Job) bool { return sj.State == "CONFIGURING" }

// startedWithoutRSA tells the lifecycle that Slurm runs j's job without
// RSA (lifecycle.EvStartedWithoutRSA), saying why in the job's log once (first).
func (a *Adapter) startedWithoutRSA(j *job.Job, sj slurm.Job, first bool) {
	why := "Slurm started the job without its prolog reaching rsa serve (PrologSlurmctld gave up on a daemon that did not answer, or is not configured): it reads and writes its directories on disk, and RSA mounts nothing over them"
	if first {
		a.log.Warn("a Slurm job runs without RSA", "job", j.ID, "slurm", sj.ID, "why", why)
		a.jobs.JobLog(j, "runs without RSA: "+why)
	}
	now := time.Now()
	started := sj.Start
	if started.IsZero() {
		started = now
	}
	hosts, _ := slurm.ExpandHosts(sj.NodeList)
	a.jobs.Post(j.ID, lifecycle.Event{Kind: lifecycle.EvStartedWithoutRSA, At: now, Reason: why},
		func(n *job.Job) { n.Hosts, n.StartedAt, n.Error = hosts, started, why })
}

// errAdopted: the Slurm job has a live RSA job already, made by the poller
// or by the job's prolog, which may meet the same job at the same moment.
var errAdopted = errors.New("the Slurm job has an RSA job already")

// adopt creates the RSA job for a Slurm job that RSA first hears of by
// polling or in its prolog: its script is read through scontrol. A job
// whose script has no #RSA line gives (nil, nil); one that has an RSA job
// not done gives errAdopted.
func (a *Adapter) adopt(ctx context.Context, sj slurm.Job, started bool) (*job.Job, error) {
	script, err := a.slurm.Script(ctx, sj.ID)
	if err != nil {
		return nil, err
	}
	req, ok, err := slurm.Parse(script)
	if err != nil || !ok {
		return nil, err
	}
	spec := req.Spec
	spec.SchedulerID, spec.ComputeNodes = sj.ID, max(sj.Nodes, 1)
	hosts, _ := slurm.ExpandHosts(sj.NodeList)
	return a.jobs.Create(ctx, sj.UID, sj.GID, spec, config.SchedulerSlurmPoll, func(j *job.Job) error {
		// Under the admission lock, as every creation: one Slurm job
		// never gets two RSA jobs.
		if err := a.adoptedAlready(ctx, sj.ID); err != nil {
			return err
		}
		if started {
			m := lifecycle.NewJob(true, time.Now())
			j.State, j.StartedAt, j.Hosts = m.State, m.StartedAt, hosts
		} else {
			j.NotBefore, j.Expected = a.stageInTime(spec, sj.Start), sj.Start
		}
		return nil
	})
}

// adoptedAlready is errAdopted when Slurm job name has an RSA job that is
// not done. One that is done is an earlier run (Slurm requeued the job):
// this run gets a new one.
func (a *Adapter) adoptedAlready(ctx context.Context, name string) error {
	j, err := a.jobs.Latest(ctx, name)
	switch {
	case err != nil:
		return fmt.Errorf("looking for Slurm job %s's RSA job: %w", name, err)
	case j == nil:
		return nil
	case !j.Machine().Done():
		return errAdopted
	}
	return nil
}

// reconcileSlurm is burst_buffer/lua mode's safety net: Slurm tells RSA
// everything through hooks, but a slurmctld that crashes can forget a job
// (it restarts from its last saved state) and never call its teardown. A
// job Slurm no longer knows, or that ended while RSA still saw it pending,
// is finished here so its RAM does not leak.
func (a *Adapter) reconcileSlurm(ctx context.Context) {
	t := time.NewTicker(max(a.cfg.Slurm.PollInterval, time.Second))
	defer t.Stop()
	var failing onlyChanges
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := a.reconcileOnce(ctx); ctx.Err() == nil && failing.changed(err) {
			a.logSlurmErr("checking RSA's jobs against Slurm", err)
		}
	}
}

func (a *Adapter) reconcileOnce(ctx context.Context) error {
	tracked, err := a.jobs.List(ctx, false, 0)
	if err != nil {
		return err
	}
	var open []*job.Job
	for _, j := range tracked {
		if j.Spec.SchedulerID != "" && !j.Machine().Ended() {
			open = append(open, j)
		}
	}
	if len(open) == 0 {
		return nil
	}
	sjobs, err := a.slurm.Jobs(ctx)
	if err != nil {
		return err
	}
	bySlurm := slurm.ByID(sjobs)
	for _, j := range open {
		sj, ok := bySlurm[j.Spec.SchedulerID]
		if ok {
			a.refreshStart(j, sj)
		}
		why := ""
		switch {
		case !ok:
			why = "Slurm no longer knows the job"
		case sj.Ended() && j.Machine().Pending():
			why = "the job ended (" + sj.State + ") before it ran"
		default:
			continue
		}
		a.log.Warn("finishing a job Slurm let go of without telling RSA", "job", j.ID, "slurm", j.Spec.SchedulerID, "why", why)
		a.jobs.Post(j.ID, lifecycle.Event{Kind: lifecycle.EvFinished, At: time.Now(), Reason: why}, nil)
	}
	return nil
}

// refreshStart moves a waiting job's stage-in time when Slurm's estimate of
// its start moves (backfill revises it every cycle).
func (a *Adapter) refreshStart(j *job.Job, sj slurm.Job) {
	if m := j.Machine(); !m.Pending() || !m.AwaitsNodes() {
		return
	}
	if awaitingEstimate(j, sj) {
		return
	}
	at := a.stageInTime(j.Spec, sj.Start)
	held := j.Expected.IsZero() && !j.NotBefore.IsZero() // now ends: Slurm has estimated
	if diff := at.Sub(j.NotBefore); diff > -time.Second && diff < time.Second && !held {
		return
	}
	a.jobs.Post(j.ID, lifecycle.Event{Kind: lifecycle.EvStageInTime, At: time.Now(), NotBefore: at}, func(n *job.Job) { n.Expected = sj.Start })
}

// oneLine keeps a message fit for a Slurm comment.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 400 {
		s = s[:400]
	}
	return s
}

// onlyChanges tells a loop that runs every second whether its error is news,
// so a Slurm that is down for an hour is logged twice, not 3,600 times.
type onlyChanges struct{ last string }

func (o *onlyChanges) changed(err error) bool {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	news := msg != o.last
	o.last = msg
	return news
}

func (a *Adapter) logSlurmErr(what string, err error) {
	if err != nil {
		a.log.Warn(what+" failed; retrying quietly until it changes", "err", err)
	} else {
		a.log.Info(what + " works again")
	}
}
