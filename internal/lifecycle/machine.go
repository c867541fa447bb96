package lifecycle

import (
	"fmt"
	"slices"
	"time"
)

// EventKind names something that happened to a job.
type EventKind string

// Scheduler events: the batch system changed the job-state.
const (
	EvOnDeck   EventKind = "on-deck"
	EvDemoted  EventKind = "demoted"
	EvStarted  EventKind = "started"
	EvFinished EventKind = "finished"
	// EvStartedWithoutRSA: the scheduler runs the job though nothing
	// held its start until RSA's mounts were made (its prolog gave up on
	// a daemon that did not answer, or never reached it). The job reads
	// and writes its directories on disk already: RSA lets go of what it
	// holds for the job and never mounts over them.
	EvStartedWithoutRSA EventKind = "started-without-rsa"
	// EvStageInTime: the scheduler's estimate of the start of a job on
	// deck moved, and with it when its stage-in is to begin
	// (Event.NotBefore; Job.NotBefore).
	EvStageInTime EventKind = "stage-in-time"
)

// Completion events: an action ended.
const (
	EvAssigned   EventKind = "assigned"
	EvIneligible EventKind = "ineligible"
	// EvWaitCapacity: the assignment found no RSA capacity free; the job
	// stays INITIAL, and its wait's clock starts (Job.WaitingSince).
	EvWaitCapacity EventKind = "wait-capacity"
	EvBooted       EventKind = "booted"
	EvBootFailed   EventKind = "boot-failed"
	// EvBootLost: building the RAMDISK failed on RSA nodes that do not
	// answer (Event.Nodes): it is built anew on live nodes, not given up.
	EvBootLost       EventKind = "boot-node-lost"
	EvStagedIn       EventKind = "staged-in"
	EvStageInFailed  EventKind = "stage-in-failed"
	EvStageInStopped EventKind = "stage-in-stopped"
	EvMounted        EventKind = "mounted"
	EvMountFailed    EventKind = "mount-failed"
	EvUnmounted      EventKind = "unmounted"
	EvUnmountBusy    EventKind = "unmount-busy"
	EvStagedOut      EventKind = "staged-out"
	EvStageOutFailed EventKind = "stage-out-failed"
	EvDestroyed      EventKind = "destroyed"
	EvDestroyFailed  EventKind = "destroy-failed"
)

// Time, recovery and administrator events.
const (
	EvTick    EventKind = "tick"    // time passed: re-evaluate (the thesis' polling pass)
	EvResume  EventKind = "resume"  // the daemon restarted: start the current state's work again
	EvRetry   EventKind = "retry"   // the job's user or root retries a failed stage-out; root a failed teardown
	EvDiscard EventKind = "discard" // the job's user or root gives up a failed stage-out's output
	// EvRamdiskLost: the RAMDISK is gone though the job's state says it exists
	// (its host restarted, or someone unmounted it). Found by the daemon
	// when it starts, before it resumes anything.
	EvRamdiskLost EventKind = "ramdisk-lost"
	// EvNodeLost: an RSA node of the job's RAMDISK is lost (its agent
	// silent for cluster.down_after, or back after a reboot): the RAM
	// it held is gone, the rest of the RAMDISK is not.
	EvNodeLost EventKind = "node-lost"
)

// Event is one input to the machine. At is the event's time; the machine has
// no clock of its own.
type Event struct {
	Kind   EventKind
	At     time.Time
	Reason string // why, for failures; shown to users
	// NotBefore is the job's new stage-in time (EvStageInTime).
	NotBefore time.Time
	// Nodes are RSA nodes whose part of the RAMDISK the event found
	// lost (EvNodeLost, or a stage-in's check): the job counts as having
	// lost a node from then on.
	Nodes []string
	// Build is the RAMDISK build (Job.Build in the daemon's record) the
	// event observed. Every poster of EvNodeLost sets it: a loss seen in
	// one build says nothing about the next, which the daemon's apply
	// enforces before Step.
	Build int
	// Whole, with EvNodeLost: the rest of the RAMDISK still serves every
	// file (the lost parts' replicas are alive). The poster learns it from
	// the engine; when it cannot, it leaves Whole false, which only ever
	// costs the job its input in RAM, never a file.
	Whole bool
}

// Action is work for the daemon to start.
type Action struct {
	Kind ActionKind
}

// Change is one step the machine took, for the job's event log.
type Change struct {
	FromJob JobState
	ToJob   JobState
	FromRSA RSAState
	ToRSA   RSAState
	Why     string
}

func (c Change) String() string {
	s := ""
	if c.FromJob != c.ToJob {
		s = fmt.Sprintf("job-state %s -> %s", c.FromJob, c.ToJob)
	}
	if c.FromRSA != c.ToRSA {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("rsa-state %s -> %s", c.FromRSA, c.ToRSA)
	}
	if c.Why != "" {
		s += ": " + c.Why
	}
	return s
}

// Outcome is the result of one Step.
type Outcome struct {
	Job     Job
	Actions []Action
	Changes []Change
	// Ignored is true when no row of the table matched the event: a stale
	// completion or a scheduler event that does not apply in this state.
	Ignored bool
	// Rows names the table rows Step took, in order: "event N" for
	// eventTable[N], "pass N" for passTable[N] (for tests and debugging).
	Rows []string
	// Error is set when a row that fails was taken: its reason, which
	// Job.Error holds too (a caller may add what only it knows), and
	// Failure names the failure for counting ("ineligible", "expired").
	Error   string
	Failure string
	// Hold, when set, is what keeps the job where it is: a row that waits
	// for time was taken (the job moves on at a later tick).
	Hold Hold
}

// Failures rows of the table name (Outcome.Failure).
const (
	// FailureIneligible: the job runs without RSA, as after EvIneligible.
	FailureIneligible = string(EvIneligible)
	// FailureExpired: the job never started, and RSA let it go.
	FailureExpired = "expired"
)

// Hold is a wait a row of the table takes.
type Hold string

// HoldStageInTime: a job on deck waits for its stage-in time
// (Job.NotBefore).
const HoldStageInTime Hold = "stage-in time"

// maxPasses bounds the chain of immediate transitions after one event; the
// table has no cycle without an action (TestNoSilentCycles), so this is only
// a guard.
const maxPasses = 16

// Step applies ev to j and then lets the job advance, as one pass of the
// thesis scheduler would, until it reaches a state that waits for an action
// or for another event. It is pure: same input, same output.
func Step(j Job, ev Event) (out Outcome) {
	out = Outcome{Job: j}
	applied := false
	switch ev.Kind {
	case EvResume:
		applied = true
		if a, ok := work[j.RSA]; ok {
			out.Actions = append(out.Actions, Action{Kind: a})
			out.Changes = append(out.Changes, Change{j.State, j.State, j.RSA, j.RSA, "resumed " + string(a) + " after restart"})
		}
	default:
		if r, i, ok := matchEvent(j, ev); ok {
			applied = true
			out.Rows = append(out.Rows, fmt.Sprintf("event %d", i))
			out.record(r.apply(j, ev), r.why, ev.Reason)
			switch {
			case ev.Kind == EvStarted || ev.Kind == EvStartedWithoutRSA:
				out.Job.StartedAt = ev.At
			case ev.Kind == EvMounted && j.RSA == MountingIn:
				out.Job.InputAt = ev.At
			case ev.Kind == EvAssigned:
				out.Job.NodeLost, out.Job.Lost = false, nil // new nodes, all live
			case ev.Kind == EvNodeLost || len(ev.Nodes) > 0:
				out.Job.NodeLost = true
				out.Job.PrivateLost = out.Job.PrivateLost || j.HoldsPrivateOutput() && !ev.Whole
				out.Job.Lost = slices.Clone(out.Job.Lost)
				for _, n := range ev.Nodes {
					if !slices.Contains(out.Job.Lost, n) {
						out.Job.Lost = append(out.Job.Lost, n)
					}
				}
			case ev.Kind == EvWaitCapacity:
				out.Job.WaitingSince = ev.At
			case ev.Kind == EvStageInTime:
				out.Job.NotBefore = ev.NotBefore
			}
			if ev.Kind.IsFailure() && ev.Reason != "" {
				out.Job.Error = ev.Reason
			}
			out.fail(r.fails, r.why)
			if a, ok := work[out.Job.RSA]; ok && out.Job.RSA != j.RSA {
				out.Actions = append(out.Actions, Action{Kind: a})
			}
		}
	}
	// A tick is an event of its own only where a row waits for time (an
	// unstarted job's expiry); taken or not, it lets the job advance.
	applied = applied || ev.Kind == EvTick
	if !applied {
		out.Ignored = true
		return out
	}
	defer func() { out.settle(j, ev.At) }()
	if len(out.Actions) > 0 || ev.Kind == EvWaitCapacity {
		// A wait is tried again at the next tick, not at once.
		return out
	}
	for range maxPasses {
		r, i, ok := matchPass(out.Job, ev.At)
		if !ok {
			break
		}
		out.Rows = append(out.Rows, fmt.Sprintf("pass %d", i))
		prev := out.Job
		next := prev
		next.RSA = r.next
		out.record(next, r.why, "")
		out.fail(r.fails, r.why)
		out.Hold = r.holds
		if r.do != "" {
			out.Actions = append(out.Actions, Action{Kind: r.do})
			break
		}
		if a, ok := work[next.RSA]; ok {
			out.Actions = append(out.Actions, Action{Kind: a})
			break
		}
		if next.RSA == prev.RSA {
			break
		}
	}
	return out
}

// settle completes the record change of a Step from j: a new build on
// entering BOOTING, the time the job ended, and the end of a wait for
// capacity once the job leaves INITIAL.
func (o *Outcome) settle(j Job, at time.Time) {
	if o.Job.RSA == Booting && j.RSA != Booting {
		o.Job.Build++
		o.Job.PrivateLost = false
		switch {
		case o.Job.InputImage && o.Job.HasInput && o.Job.Pending():
			o.Job.ImageBuild = o.Job.Build
		case o.Job.OutputPrivate && o.Job.HasOutput && (o.Job.Runs() || !o.Job.HasInput):
			o.Job.PrivateBuild = o.Job.Build
		}
	}
	if o.Job.State == Finished && j.State != Finished {
		o.Job.FinishedAt = at
	}
	if o.Job.RSA != Initial {
		o.Job.WaitingSince = time.Time{}
	}
}

// fail records the failure a row that fails (failure != "") gives the job:
// why becomes its error.
func (o *Outcome) fail(failure, why string) {
	if failure != "" {
		o.Failure, o.Error, o.Job.Error = failure, why, why
	}
}

// Applies reports whether ev would change j: some row of the event table
// takes it. Ticks, resumes and events no row takes do not apply.
func Applies(j Job, ev Event) bool {
	_, _, ok := matchEvent(j, ev)
	return ok
}

func (o *Outcome) record(next Job, why, reason string) {
	prev := o.Job
	if reason != "" {
		why = why + " (" + reason + ")"
	}
	if prev.State != next.State || prev.RSA != next.RSA {
		o.Changes = append(o.Changes, Change{prev.State, next.State, prev.RSA, next.RSA, why})
	}
	o.Job = next
}

// eventRow says how an event changes a job. Empty job or rsa sets match any.
type eventRow struct {
	on  EventKind
	job []JobState
	rsa []RSAState
	// guard, when set, must hold too; it sees the event (its At is now).
	guard   func(j Job, ev Event) bool
	nextJob JobState // "" keeps the job-state
	nextRSA RSAState // "" keeps the rsa-state
	why     string
	// fails, when set, names the failure that taking the row gives the
	// job; why becomes its error (Outcome.Error).
	fails string
}

func (r eventRow) apply(j Job, ev Event) Job {
	if r.nextJob != "" {
		j.State = r.nextJob
	}
	if r.nextRSA != "" {
		j.RSA = r.nextRSA
	}
	return j
}

// passRow is one cell of Figures 3.2–3.5: in this job-state and rsa-state
// (and when the guard holds), move to next; do names an action for rows that
// poll without changing state.
type passRow struct {
	job   JobState
	rsa   []RSAState
	guard func(j Job, now time.Time) bool
	next  RSAState
	do    ActionKind
	why   string
	// fails, when set, names the failure: taking the row gives the job
	// less of RSA than it asked for; why becomes the job's error
	// (Outcome.Error).
	fails string
	// holds: the row waits (next is the state it is in) for what it names.
	holds Hold
}

func matchEvent(j Job, ev Event) (eventRow, int, bool) {
	for i, r := range eventTable {
		if r.on != ev.Kind {
			continue
		}
		if len(r.job) > 0 && !slices.Contains(r.job, j.State) {
			continue
		}
		if len(r.rsa) > 0 && !slices.Contains(r.rsa, j.RSA) {
			continue
		}
		if r.guard != nil && !r.guard(j, ev) {
			continue
		}
		return r, i, true
	}
	return eventRow{}, -1, false
}

func matchPass(j Job, now time.Time) (passRow, int, bool) {
	for i, r := range passTable {
		if r.job != j.State || !slices.Contains(r.rsa, j.RSA) {
			continue
		}
		if r.guard != nil && !r.guard(j, now) {
			continue
		}
		return r, i, true
	}
	return passRow{}, -1, false
}
