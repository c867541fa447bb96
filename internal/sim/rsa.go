package sim

import (
	"cmp"
	"slices"
	"time"

	"github.com/rsa-hpc/rsa/internal/alloc"
	"github.com/rsa-hpc/rsa/internal/capacity"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// RSA's side: scheduler events and action completions go through
// lifecycle.Step, and the actions Step returns start work whose end is the
// next event. Nothing here decides a transition or what a state means (the
// lifecycle's predicates do), nor when a stage-in begins
// (lifecycle.StageInTime); it only times the work.

// track starts the lifecycle of a job RSA first hears of: on deck (the
// thesis' poll finds it pending on Resources), or already running (it
// started without ever being on deck). Either way it enters the machine
// INITIAL (lifecycle.NewJob), with no RSA nodes yet.
func (s *sim) track(j *simJob, started bool) {
	j.tracked = true
	s.met++
	j.met = s.met
	j.m = lifecycle.NewJob(started, s.wall(s.clock.now))
	j.m.HasInput, j.m.HasOutput, j.m.Delay = j.in > 0, j.out > 0, s.cfg.RSA.Delay
	j.m.NotBefore = s.stageInWall(j)
	s.apply(j, lifecycle.EvTick) // Step's first pass over the new job
}

// promote: j became head of the queue.
func (s *sim) promote(j *simJob) {
	if !s.rsa {
		return
	}
	j.notBefore = s.stageInTime(j, j.shadow)
	if !j.tracked {
		s.track(j, false)
		return
	}
	// A demoted job whose cleanup has not ended ignores this; apply
	// sends it again once the cleanup ends, as the next poll would.
	// The record holds the new stage-in time when the event comes, as
	// the daemon's does when Slurm puts a job on deck.
	j.m.NotBefore = s.stageInWall(j)
	s.apply(j, lifecycle.EvOnDeck)
}

// demote: j lost the head of the queue before starting.
func (s *sim) demote(j *simJob) {
	if s.rsa && j.tracked {
		s.apply(j, lifecycle.EvDemoted)
	}
}

// refresh: the on-deck job's reservation moved; so does its stage-in time,
// while the job waits for RSA nodes. A stage-in time that moves by less
// than a second keeps its old value and costs the job no tick.
func (s *sim) refresh(j *simJob, shadow time.Duration) {
	if shadow == j.shadow {
		return
	}
	j.shadow = shadow
	if !s.rsa || !j.tracked || !j.m.Pending() || !j.m.AwaitsNodes() {
		return
	}
	nb := s.stageInTime(j, shadow)
	if d := nb - j.notBefore; d > -time.Second && d < time.Second {
		return
	}
	j.notBefore = nb
	s.step(j, lifecycle.Event{Kind: lifecycle.EvStageInTime, At: s.wall(s.clock.now), NotBefore: s.stageInWall(j)})
}

// stageInWall is j's stage-in time as the record holds it (Job.NotBefore):
// zero for none.
func (s *sim) stageInWall(j *simJob) time.Time {
	if j.notBefore == 0 {
		return time.Time{}
	}
	return s.wall(j.notBefore)
}

// stageInTime is when the stage-in of j, expected to start at shadow,
// begins: lifecycle.StageInTime for the size lifecycle.StageInSize budgets
// (the capacity j asks for with --alloc capacity, else one node's RAM), in
// simulated time. 0: at once.
func (s *sim) stageInTime(j *simJob, shadow time.Duration) time.Duration {
	r := s.cfg.RSA
	var capacity int64
	if r.ByCapacity {
		capacity = wantCapacity(j)
	}
	size := lifecycle.StageInSize(capacity, r.RAM)
	at := lifecycle.StageInTime(s.wall(shadow), s.wall(s.clock.now), r.StageInLead, size, r.StageInRate)
	if at.IsZero() {
		return 0
	}
	return at.Sub(s.epoch)
}

// started: the scheduler started j.
func (s *sim) started(j *simJob) {
	if !s.rsa {
		return
	}
	if !j.tracked {
		s.track(j, true)
		return
	}
	// Counted for a job started from on deck only: a demoted one had its
	// stage-in given up when it lost its place, not overtaken.
	if j.in > 0 && j.m.State == lifecycle.OnDeck {
		switch {
		case j.m.AwaitsNodes():
			s.res.NotStagedInYet++
		case !lifecycle.SettledBeforeStart(j.m):
			s.res.LateStageIns++
		}
	}
	s.apply(j, lifecycle.EvStarted)
}

// finished: j left its nodes.
func (s *sim) finished(j *simJob) {
	if s.rsa && j.tracked {
		s.apply(j, lifecycle.EvFinished)
	}
}

// apply feeds one event to lifecycle.Step, keeps its outcome, and starts
// the actions it returns. No state changes but through Step
// (TestTransitionsAreLifecycleStep).
func (s *sim) apply(j *simJob, kind lifecycle.EventKind) {
	s.step(j, lifecycle.Event{Kind: kind, At: s.wall(s.clock.now)})
}

// step is apply for an event that carries more than its kind.
func (s *sim) step(j *simJob, ev lifecycle.Event) {
	now, kind := s.clock.now, ev.Kind
	before := j.m
	out := lifecycle.Step(before, ev)
	if s.cfg.Observe != nil {
		var parts []job.Part
		if lifecycle.HoldsNodes(out.Job.RSA) {
			parts = slices.Clone(j.parts)
		}
		s.cfg.Observe(j.id, before, ev, out, parts)
	}
	if out.Ignored {
		return
	}
	j.m = out.Job
	held, holds := lifecycle.HoldsNodes(before.RSA), lifecycle.HoldsNodes(j.m.RSA)
	switch {
	case !held && holds:
		s.hold(j, 1)
	case held && !holds:
		s.hold(j, -1)
	}
	if !j.m.AwaitsNodes() {
		s.unwait(j)
	}
	if lifecycle.TimeSensitive(j.m) && !j.m.InputAt.Equal(before.InputAt) {
		// The input was mounted just now (Step stamps InputAt), and
		// the job waits for time, not for an event: its switch to
		// output is due RSA_DELAY after the mount. Only a tick moves
		// it then, if it still waits for time.
		s.clock.at(now+j.m.Delay, event{fn: func() {
			if lifecycle.TimeSensitive(j.m) {
				s.apply(j, lifecycle.EvTick)
			}
		}})
	}
	if out.Hold == lifecycle.HoldStageInTime && j.tickAt != j.notBefore {
		// Held for its stage-in time: the daemon's next tick after it
		// lets the job go on.
		at := j.notBefore
		j.tickAt = at
		s.clock.at(at, event{fn: func() {
			if j.m.Pending() && j.m.AwaitsNodes() {
				s.apply(j, lifecycle.EvTick)
			}
		}})
	}
	if kind == lifecycle.EvMounted && j.phase == mountWait {
		// A job waits in mountWait only while its input is being
		// mounted (startJob): the mount's end is its cue to read.
		s.readInput(j)
	}
	for _, a := range out.Actions {
		s.act(j, a)
	}
	if held && !holds {
		s.retry() // capacity came free: waiting jobs try now, in order
	}
	if s.onDeck == j && lifecycle.Applies(j.m, lifecycle.Event{Kind: lifecycle.EvOnDeck, At: ev.At}) {
		// Demoted, the job ignored being on deck again until its
		// cleanup ended; now it ended, the event applies. It comes
		// after the jobs waiting for the RAM the cleanup released, as
		// the daemon's next poll comes after the tick its release
		// gave them.
		s.apply(j, lifecycle.EvOnDeck)
	}
}

// act starts the work of one action and schedules its completion.
func (s *sim) act(j *simJob, a lifecycle.Action) {
	r := s.cfg.RSA
	switch a.Kind {
	case lifecycle.Assign:
		s.assign(j)
	case lifecycle.Construct:
		s.complete(j, r.Boot.of(j.rsaNodes), lifecycle.EvBooted)
	case lifecycle.StageIn:
		s.stageIn(j)
	case lifecycle.StopStageIn:
		// Cancelling the copy ends it; it reports that it stopped.
		s.stop(j.stageIn)
		j.stageIn = nil
		if j.g != nil {
			closeSpan(j.g.StageIn, s.clock.now)
		}
		s.complete(j, 0, lifecycle.EvStageInStopped)
	case lifecycle.MountIn, lifecycle.MountOut:
		s.complete(j, r.Mount, lifecycle.EvMounted)
	case lifecycle.Unmount:
		s.clock.after(r.Mount, func() {
			// Input files still open (the job is still reading
			// them): footnote 16's busy unmount.
			if j.phase == reading && j.readRAM {
				s.res.UnmountBusy++
				s.apply(j, lifecycle.EvUnmountBusy)
				return
			}
			s.apply(j, lifecycle.EvUnmounted)
		})
	case lifecycle.StageOut:
		s.stageOut(j)
	case lifecycle.Destroy:
		s.complete(j, r.Destroy.of(j.rsaNodes), lifecycle.EvDestroyed)
	}
}

// complete delivers kind to j after d.
func (s *sim) complete(j *simJob, d time.Duration, kind lifecycle.EventKind) {
	s.clock.after(d, func() { s.apply(j, kind) })
}

func (s *sim) stageIn(j *simJob) {
	bytes, fits := j.in, j.in <= j.capacity
	if !fits {
		bytes = j.capacity // the copy runs until RAM is full
	}
	if j.g != nil {
		j.g.StageIn = append(j.g.StageIn, Span{From: secs(s.clock.now), To: -1})
	}
	j.stageIn = s.start(&transfer{steps: s.stageInSteps(j, bytes), done: func() {
		j.stageIn = nil
		if j.g != nil {
			closeSpan(j.g.StageIn, s.clock.now)
		}
		if !fits {
			s.res.StageInsFailed++
			s.apply(j, lifecycle.EvStageInFailed)
			return
		}
		s.apply(j, lifecycle.EvStagedIn)
	}})
}

func (s *sim) stageOut(j *simJob) {
	if j.g != nil {
		j.g.StageOut = append(j.g.StageOut, Span{From: secs(s.clock.now), To: -1})
	}
	s.start(&transfer{steps: s.stageOutSteps(j), done: func() {
		if j.g != nil {
			closeSpan(j.g.StageOut, s.clock.now)
		}
		s.apply(j, lifecycle.EvStagedOut)
	}})
}

// closeSpan ends the last open span.
func closeSpan(spans []Span, now time.Duration) {
	if n := len(spans); n > 0 && spans[n-1].To < 0 {
		spans[n-1].To = secs(now)
	}
}

// assign carries out the Assign action, which the lifecycle asks for once
// the job's stage-in time has come: capacity.Decide, the daemon's own
// decision, decides beside the capacity the tracked jobs hold.
func (s *sim) assign(j *simJob) {
	dec := s.plan(j)
	switch dec.Verdict {
	case alloc.Assign:
		j.parts = dec.Parts
		j.rsaNodes = len(dec.Parts)
		j.capacity = 0
		for _, p := range dec.Parts {
			j.capacity += p.Bytes
		}
		s.apply(j, lifecycle.EvAssigned)
	case alloc.Ineligible:
		if !j.ineligible {
			j.ineligible = true
			s.res.Ineligible++
		}
		s.apply(j, lifecycle.EvIneligible)
	default:
		s.wait(j)
	}
}

// plan is the daemon's capacity decision for j over what the tracked jobs
// hold. The simulated site has no drained or silent RSA nodes and no
// per-user limit.
func (s *sim) plan(j *simJob) capacity.Decision {
	req := alloc.Request{ComputeNodes: j.nodes, Running: j.m.Runs(),
		HasInput: j.m.HasInput, HasOutput: j.m.HasOutput}
	if s.cfg.RSA.ByCapacity {
		req.Capacity = wantCapacity(j)
	}
	return capacity.Decide(capacity.Job{Request: req}, capacity.Snapshot{Policy: s.policy, Nodes: s.rsaList, Used: s.used})
}

// wantCapacity is the capacity j asks for with --alloc capacity: the
// larger of its input and output, in whole MiB as RAMDISKs are sized. It
// is fixed when the job is submitted (Slurm's capacity=), so a job that
// started before its RAMDISK was built asks for the same again.
func wantCapacity(j *simJob) int64 {
	return max(mib, (max(j.in, j.out)+mib-1)/mib*mib)
}

// hold adds (sign 1) or removes (-1) j's allocation from what is in use.
func (s *sim) hold(j *simJob, sign int64) {
	for _, p := range j.parts {
		s.used[p.Node] += sign * p.Bytes
	}
	s.held += sign * j.capacity
	s.ram.set(s.clock.now, float64(s.held))
	if sign < 0 {
		s.drained = s.clock.now
	}
}

// wait and unwait keep the jobs Plan told to wait in the order RSA met
// them, which is the daemon's: it numbers its jobs as it creates them and
// its tick lets waiting jobs try in that order. A job started by backfill
// is met before the jobs queued ahead of it.
func (s *sim) wait(j *simJob) {
	if j.waiting {
		return
	}
	j.waiting = true
	i, _ := slices.BinarySearchFunc(s.waiting, j, func(a, b *simJob) int { return cmp.Compare(a.met, b.met) })
	s.waiting = slices.Insert(s.waiting, i, j)
}

func (s *sim) unwait(j *simJob) {
	if !j.waiting {
		return
	}
	j.waiting = false
	if i := slices.Index(s.waiting, j); i >= 0 {
		s.waiting = slices.Delete(s.waiting, i, i+1)
	}
}

// retry lets the waiting jobs try again once capacity came free: each gets
// a tick, in the order RSA met them (wait). A job Plan would still tell to
// wait is skipped: its tick would change nothing.
func (s *sim) retry() {
	if s.retrying {
		return
	}
	s.retrying = true
	defer func() { s.retrying = false }()
	for i := 0; i < len(s.waiting); {
		j := s.waiting[i]
		if s.plan(j).Verdict == alloc.Wait {
			i++
			continue
		}
		s.apply(j, lifecycle.EvTick)
		if i < len(s.waiting) && s.waiting[i] == j {
			i++
		}
	}
}
