package lifecycle

import "slices"

// What states mean to everything outside the machine. The daemon, the CLI,
// the dashboard and the API's job view ask these functions instead of
// listing rsa-states, so a new state, or a state that changes meaning, is
// decided here once (meaning_test.go lists every state for each).

// Phase is the part of its life a job's RAMDISK is in, as a person or a
// client sees it: several rsa-states make one phase (building is BOOTING
// then BOOTED), and a phase's name stays when the states behind it change.
// Its values are part of the public interface (`rsa status --json`,
// "phase"; the dashboard's rows).
type Phase string

const (
	// PhaseWaiting: RSA has no RAMDISK for the job yet. Its nodes are
	// being chosen, which waits while there is no capacity (INITIAL), or
	// were just chosen (ASSIGNED).
	PhaseWaiting Phase = "waiting"
	// PhaseWithoutRSA: the job runs without RSA, from disk (INELIGIBLE:
	// too small, no RSA directories, no capacity in time, or its RAMDISK
	// could not be built or mounted). Job.Error says why.
	PhaseWithoutRSA Phase = "without-rsa"
	// PhaseBuild: the RAMDISK is being built on its nodes (BOOTING), or
	// is built and about to be filled or mounted (BOOTED).
	PhaseBuild Phase = "build"
	// PhaseStageIn: the input is being copied into RAM (STAGING_IN), or
	// that copy is being stopped (STOPPING_STAGING_IN).
	PhaseStageIn Phase = "stage-in"
	// PhaseAborted: the input did not make it into RAM (its stage-in
	// failed or was stopped, or its mount failed): the RAMDISK is never
	// mounted for input; it is rebuilt for output or torn down (ABORTED).
	PhaseAborted Phase = "aborted"
	// PhaseReady: the input is in RAM and the job may start (READY).
	PhaseReady Phase = "ready"
	// PhaseInUseIn: the RAMDISK is at the job's input path: being mounted
	// there (MOUNTING_IN), serving the input (INUSE_IN), or kept there
	// until the job ends because input files were still open at the
	// switch to output (UNMOUNT_BUSY).
	PhaseInUseIn Phase = "inuse-in"
	// PhaseSwitch: the RAMDISK moves from the input path to the output
	// path (UNMOUNT_NEEDED, UNMOUNTING, UNMOUNTED), and is mounted there
	// (MOUNTING; for a job without input, at its start).
	PhaseSwitch Phase = "switch"
	// PhaseInUseOut: the RAMDISK is at the job's output path and catches
	// what the job writes (INUSE_OUT).
	PhaseInUseOut Phase = "inuse-out"
	// PhaseStageOut: the output is being copied to persistent storage
	// and verified (STAGING_OUT), has been (DONE_STAGING_OUT), or the
	// copy failed and the output waits in RAM for an administrator
	// (STAGE_OUT_FAILED).
	PhaseStageOut Phase = "stage-out"
	// PhaseTeardown: the RAMDISK is being destroyed (TEARDOWN; ABANDONING
	// when the job goes on without RSA), could not be (TEARDOWN_FAILED,
	// for an administrator), or is gone while its nodes are still held
	// (DESTROYED).
	PhaseTeardown Phase = "teardown"
	// PhaseOutputLost: the RAMDISK went away with output not yet on
	// persistent storage (OUTPUT_LOST). Nothing brings it back.
	PhaseOutputLost Phase = "output-lost"
	// PhaseReleased: RSA holds nothing for the job (RELEASED).
	PhaseReleased Phase = "released"
)

// PhaseOf is the phase of rsa-state s. Every rsa-state has one; a string
// that is no rsa-state has none ("").
func PhaseOf(s RSAState) Phase {
	switch s {
	case Initial, Assigned:
		return PhaseWaiting
	case Ineligible:
		return PhaseWithoutRSA
	case Booting, Booted:
		return PhaseBuild
	case StagingIn, StoppingStagingIn:
		return PhaseStageIn
	case Aborted:
		return PhaseAborted
	case Ready:
		return PhaseReady
	case MountingIn, InUseIn, UnmountBusy:
		return PhaseInUseIn
	case UnmountNeeded, Unmounting, Unmounted, Mounting:
		return PhaseSwitch
	case InUseOut:
		return PhaseInUseOut
	case StagingOut, DoneStagingOut, StageOutFailed:
		return PhaseStageOut
	case Teardown, Abandoning, TeardownFailed, Destroyed:
		return PhaseTeardown
	case OutputLost:
		return PhaseOutputLost
	case Released:
		return PhaseReleased
	}
	return ""
}

// InRAM reports whether the job's RAMDISK is mounted at its path and the
// job works in it: it reads its input from RAM (INUSE_IN) or writes its
// output into RAM (INUSE_OUT). States on the way into or out of a mount are
// not, nor is UNMOUNT_BUSY, whose RAMDISK stays at the input path only for
// files opened before the switch while new output goes to disk.
func InRAM(s RSAState) bool {
	return s == InUseIn || s == InUseOut
}

// BeingMounted reports whether the RAMDISK is being mounted at the job's
// input or output path (MOUNTING_IN, MOUNTING): what the job sees there
// is not settled until the mount ends.
func BeingMounted(s RSAState) bool {
	a, _ := Work(s)
	return a == MountIn || a == MountOut
}

// Staging reports whether a stage copies between the RAMDISK and
// persistent storage in state s (STAGING_IN, STAGING_OUT): only then does
// the job's progress describe a copy under way.
func Staging(s RSAState) bool {
	a, _ := Work(s)
	return a == StageIn || a == StageOut
}

// Watched reports whether the daemon probes a RAMDISK in state s for parts
// out of reach: it is built and serves its job or is ready to (BOOTED,
// READY, INUSE_IN, INUSE_OUT), and no action checks its parts meanwhile (a
// stage checks them itself when it ends).
func Watched(s RSAState) bool {
	switch s {
	case Booted, Ready, InUseIn, InUseOut:
		return true
	}
	return false
}

// Rebuilding reports whether s can be a step of giving the job a new
// RAMDISK: tearing the old one down (TEARDOWN, DESTROYED) or building the
// new one (BOOTING, BOOTED), as a running job's switch from input to
// output does. Whether it is one depends on the job-state (a finished
// job's teardown builds nothing after). ABANDONING and TEARDOWN_FAILED
// tear down too but never lead to a RAMDISK for the job: the first ends
// without RSA, the second waits for an administrator.
func Rebuilding(s RSAState) bool {
	switch s {
	case Teardown, Destroyed, Booting, Booted:
		return true
	}
	return false
}

// Discardable reports whether an administrator may give up the output a
// RAMDISK in state s holds (`rsa discard`): only after a stage-out failed.
func Discardable(s RSAState) bool {
	return slices.ContainsFunc(eventTable, func(r eventRow) bool {
		return r.on == EvDiscard && slices.Contains(r.rsa, s)
	})
}

// CountsTowardLimits reports whether j takes a place under the job limits
// (limits.max_active_jobs, limits.max_jobs_per_user): it holds RSA nodes
// or waits for them (INITIAL). A job without RSA (INELIGIBLE) and one RSA
// holds nothing for any more (RELEASED, OUTPUT_LOST; every done job is
// one) hold nothing and wait for nothing, so they never keep anyone out.
func CountsTowardLimits(j Job) bool {
	return HoldsNodes(j.RSA) || j.RSA == Initial
}

// KeepsRamdisk reports whether a RAMDISK found under j's name must be left
// alone by a sweep for leftovers: j holds RSA nodes, or waits to be
// assigned them again while it has not finished (INITIAL, as after a lost
// node), and the RAMDISK's gate and directory are its live RAMDISK's too.
func KeepsRamdisk(j Job) bool {
	return HoldsNodes(j.RSA) || j.AwaitsNodes()
}

// SettledBeforeStart reports whether a job has nothing more to wait for
// from RSA before its command starts: its input is in RAM (READY), or RSA
// will not serve it from RAM (INELIGIBLE, ABORTED), or the job started or
// ended already. `rsa run` waits for this before it runs the command.
func SettledBeforeStart(j Job) bool {
	if !j.Pending() {
		return true
	}
	switch PhaseOf(j.RSA) {
	case PhaseReady, PhaseWithoutRSA, PhaseAborted:
		return true
	}
	return false
}

// TimeSensitive reports whether a tick (time passing, or capacity freed)
// may move j: it waits for RSA nodes (INITIAL: each tick asks for capacity
// again), or it runs with its input in RAM until its switch to output is
// due (RUNNING, INUSE_IN), or it may expire unstarted (Job.ExpireAfter).
// Every other state a Step leaves a job in waits for an event, so the
// daemon need not tick it.
func TimeSensitive(j Job) bool {
	return j.RSA == Initial || j.Runs() && j.RSA == InUseIn || j.State == OnDeck && j.ExpireAfter > 0
}

// IsFailure reports whether event k says that the job gets less of RSA
// than it asked for: RSA gave it up (not eligible), an action failed, its
// input stayed busy at the switch, or its RAMDISK or one of its nodes was
// lost. The event's reason becomes the job's error, and the daemon counts
// it by kind.
func (k EventKind) IsFailure() bool {
	switch k {
	case EvIneligible, EvBootFailed, EvStageInFailed, EvMountFailed, EvUnmountBusy,
		EvStageOutFailed, EvDestroyFailed, EvRamdiskLost, EvNodeLost:
		return true
	}
	return false
}
