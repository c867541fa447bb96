package sim

import (
	"slices"
	"time"

	"github.com/rsa-hpc/rsa/internal/alloc"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// RSA's side, as the daemon does it: scheduler events and action
// completions go through lifecycle.Step, and the actions Step returns
// start work whose end is the next event. Nothing here decides a
// transition; it only times the work.

// track starts the lifecycle of a job RSA first hears of: on deck (the
// thesis' poll finds it pending on Resources), or already running (it
// started without ever being on deck; the daemon adopts such a job in
// Slurm's prolog the same way).
func (s *sim) track(j *simJob, st lifecycle.JobState) {
	j.tracked = true
	j.m = lifecycle.Job{State: st, RSA: lifecycle.Initial, HasInput: j.in > 0, HasOutput: j.out > 0, Delay: s.cfg.RSA.Delay}
	if st == lifecycle.Running {
		j.m.StartedAt = s.wall(s.clock.now)
	}
	s.apply(j, lifecycle.EvTick) // the daemon's first pass over a new job
}

// promote: j became head of the queue.
func (s *sim) promote(j *simJob) {
	if !s.rsa {
		return
	}
	j.notBefore = s.stageInTime(j, j.shadow)
	if !j.tracked {
		s.track(j, lifecycle.OnDeck)
		return
	}
	// A demoted job whose cleanup has not ended ignores this; apply
	// sends it again once the cleanup ends, as the next poll would.
	s.apply(j, lifecycle.EvOnDeck)
}

// demote: j lost the head of the queue before starting.
func (s *sim) demote(j *simJob) {
	if s.rsa && j.tracked {
		s.apply(j, lifecycle.EvDemoted)
	}
}

// refresh: the on-deck job's reservation moved; so does its stage-in time
// (the daemon's refreshStart).
func (s *sim) refresh(j *simJob, shadow time.Duration) {
	if shadow == j.shadow {
		return
	}
	j.shadow = shadow
	if !s.rsa || !j.tracked || j.m.State != lifecycle.OnDeck || j.m.RSA != lifecycle.Initial {
		return
	}
	nb := s.stageInTime(j, shadow)
	if d := nb - j.notBefore; d > -time.Second && d < time.Second {
		return // the daemon ignores changes under a second
	}
	j.notBefore = nb
	s.apply(j, lifecycle.EvTick)
}

// stageInTime is when the daemon begins the stage-in of j, expected to
// start at shadow: its lead plus the time to fill its RAMDISK at the
// mover's speed before (daemon.stageInTime): the capacity j asks for with
// --alloc capacity, else one node's RAM (the nodes fill in parallel).
// 0: at once.
func (s *sim) stageInTime(j *simJob, shadow time.Duration) time.Duration {
	r := s.cfg.RSA
	if r.StageInLead <= 0 {
		return 0
	}
	size := r.RAM
	if r.ByCapacity {
		size = s.wantCapacity(j, false)
	}
	at := shadow - r.StageInLead - durationCeil(float64(size)/r.StageInRate)
	if at <= s.clock.now {
		return 0
	}
	return at
}

// started: the scheduler started j.
func (s *sim) started(j *simJob) {
	if !s.rsa {
		return
	}
	if !j.tracked {
		s.track(j, lifecycle.Running)
		return
	}
	if j.in > 0 && j.m.State == lifecycle.OnDeck {
		switch j.m.RSA {
		case lifecycle.Assigned, lifecycle.Booting, lifecycle.Booted, lifecycle.StagingIn:
			s.res.LateStageIns++
		case lifecycle.Initial:
			s.res.NotStagedInYet++
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
// the actions it returns: the daemon's apply, without the store.
func (s *sim) apply(j *simJob, kind lifecycle.EventKind) {
	now := s.clock.now
	ev := lifecycle.Event{Kind: kind, At: s.wall(now)}
	before := j.m
	out := lifecycle.Step(before, ev)
	if s.cfg.Observe != nil {
		s.cfg.Observe(j.id, before, ev, out)
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
	if j.m.RSA != lifecycle.Initial {
		s.unwait(j)
	}
	if j.m.RSA == lifecycle.InUseIn && before.RSA != lifecycle.InUseIn {
		// The daemon's tick re-evaluates INUSE_IN jobs; the switch
		// is due RSA_DELAY after the input was mounted (now).
		s.clock.at(now+j.m.Delay, event{fn: func() {
			if j.m.State == lifecycle.Running && j.m.RSA == lifecycle.InUseIn {
				s.apply(j, lifecycle.EvTick)
			}
		}})
	}
	if kind == lifecycle.EvMounted && before.RSA == lifecycle.MountingIn && j.phase == mountWait {
		s.readInput(j)
	}
	for _, a := range out.Actions {
		s.act(j, a)
	}
	if j.m.State == lifecycle.Demoted && j.m.RSA == lifecycle.Released && s.onDeck == j {
		s.apply(j, lifecycle.EvOnDeck) // on deck again, and now clean
	}
	if held && !holds {
		s.retry() // capacity came free: waiting jobs try now, in order
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

// assign is the daemon's assign: not before the stage-in time, then
// alloc.Plan on the capacity the tracked jobs hold.
func (s *sim) assign(j *simJob) {
	if j.m.State == lifecycle.OnDeck && s.clock.now < j.notBefore {
		if at := j.notBefore; j.tickAt != at {
			j.tickAt = at
			s.clock.at(at, event{fn: func() {
				if j.m.State == lifecycle.OnDeck && j.m.RSA == lifecycle.Initial {
					s.apply(j, lifecycle.EvTick)
				}
			}})
		}
		return
	}
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

func (s *sim) plan(j *simJob) alloc.Decision {
	req := alloc.Request{ComputeNodes: j.nodes, Running: j.m.State == lifecycle.Running,
		HasInput: j.m.HasInput, HasOutput: j.m.HasOutput}
	if s.cfg.RSA.ByCapacity {
		req.Capacity = s.wantCapacity(j, req.Running)
	}
	return alloc.Plan(s.policy, s.rsaList, s.used, req)
}

// wantCapacity is the capacity j asks for with --alloc capacity: its
// output once running, else the larger of input and output, in whole MiB
// as RAMDISKs are sized.
func (s *sim) wantCapacity(j *simJob, running bool) int64 {
	want := j.out
	if !running {
		want = max(j.in, j.out)
	}
	return max(mib, (want+mib-1)/mib*mib)
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

// wait and unwait keep the jobs Plan told to wait, in arrival order.
func (s *sim) wait(j *simJob) {
	if j.waiting {
		return
	}
	j.waiting = true
	i, _ := slices.BinarySearchFunc(s.waiting, j, func(a, b *simJob) int { return int(a.seq - b.seq) })
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

// retry lets the waiting jobs try again, as the daemon's tick does after a
// release. A job Plan would still tell to wait is skipped: its tick would
// change nothing.
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
