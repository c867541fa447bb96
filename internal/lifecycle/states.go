// Package lifecycle is the RSA state machine: the thesis' two-level model of
// a job (job-state × rsa-state, App. A and Figures 3.1–3.5) as one pure,
// table-driven function.
//
// It owns the meaning of every state and which action each state starts. It
// must not touch the store, the clock, the file system or any process: the
// daemon feeds it events (carrying their own time) and carries out the
// actions it returns, committing each transition before the action starts.
package lifecycle

import (
	"slices"
	"time"
)

// JobState is what the batch system says about the job (Figure 3.1). It
// changes only through scheduler events, never through RSA's own work.
type JobState string

const (
	OnDeck   JobState = "ONDECK"   // pending, next in line for compute nodes
	Demoted  JobState = "DEMOTED"  // was on deck, pushed back by the scheduler
	Running  JobState = "RUNNING"  // holds its compute nodes
	Finished JobState = "FINISHED" // left its compute nodes (or was cancelled)
)

// RSAState is where the job's RAMDISK is in its own life (Figures 3.2–3.5).
type RSAState string

// The rsa-states of App. A.
const (
	Initial           RSAState = "INITIAL"
	Ineligible        RSAState = "INELIGIBLE"
	Assigned          RSAState = "ASSIGNED"
	Booting           RSAState = "BOOTING"
	Booted            RSAState = "BOOTED"
	StagingIn         RSAState = "STAGING_IN"
	StoppingStagingIn RSAState = "STOPPING_STAGING_IN"
	Aborted           RSAState = "ABORTED"
	Ready             RSAState = "READY"
	InUseIn           RSAState = "INUSE_IN"
	UnmountNeeded     RSAState = "UNMOUNT_NEEDED"
	Unmounting        RSAState = "UNMOUNTING"
	Unmounted         RSAState = "UNMOUNTED"
	Mounting          RSAState = "MOUNTING" // mounting for output, as in App. A
	InUseOut          RSAState = "INUSE_OUT"
	StagingOut        RSAState = "STAGING_OUT"
	DoneStagingOut    RSAState = "DONE_STAGING_OUT"
	Teardown          RSAState = "TEARDOWN"
	Destroyed         RSAState = "DESTROYED"
)

// States the thesis does not name. The prototype hid these situations in
// synchronous scripts, in deleted state directories or in data loss; a daemon
// that must survive crashes needs them spelled out.
const (
	// MountingIn: the job started with its input staged; the RAMDISK is
	// being bind-mounted over the input directory. The thesis does this
	// synchronously inside job-start.sh (App. K).
	MountingIn RSAState = "MOUNTING_IN"
	// UnmountBusy: the switch from input to output found input files still
	// open. The RAMDISK stays on the input path until the job ends (thesis
	// footnote 16) and is not used for output.
	UnmountBusy RSAState = "UNMOUNT_BUSY"
	// Abandoning: building or mounting the RAMDISK failed; it is being torn
	// down and the job continues without RSA (INELIGIBLE).
	Abandoning RSAState = "ABANDONING"
	// StageOutFailed: stage-out failed. The RAMDISK keeps the output until
	// an administrator retries or explicitly discards it.
	StageOutFailed RSAState = "STAGE_OUT_FAILED"
	// OutputLost: the RAMDISK went away (a reboot of its host) while it
	// held output not yet verified on persistent storage. Nothing can
	// bring that output back; RSA holds no RAM for the job any more and
	// says so, and the record keeps what was lost. Once the job has ended
	// this is where it stays: an end, like RELEASED.
	OutputLost RSAState = "OUTPUT_LOST"
	// TeardownFailed: the RAMDISK could not be destroyed; it stays until an
	// administrator retries.
	TeardownFailed RSAState = "TEARDOWN_FAILED"
	// Released: RSA holds nothing for the job any more. The thesis deleted
	// the job's state directory at this point; we keep the record.
	Released RSAState = "RELEASED"
)

// AllRSAStates lists every rsa-state, in lifecycle order.
var AllRSAStates = []RSAState{
	Initial, Ineligible, Assigned, Booting, Booted, StagingIn, StoppingStagingIn,
	Aborted, Ready, MountingIn, InUseIn, UnmountNeeded, Unmounting, UnmountBusy,
	Unmounted, Mounting, InUseOut, StagingOut, StageOutFailed, OutputLost, DoneStagingOut,
	Teardown, Abandoning, TeardownFailed, Destroyed, Released,
}

// AllJobStates lists every job-state.
var AllJobStates = []JobState{OnDeck, Demoted, Running, Finished}

// ActionKind names the work a state starts. Actions run asynchronously; each
// ends with exactly one completion event.
type ActionKind string

const (
	Assign      ActionKind = "assign"        // pick RSA nodes: Assigned, Ineligible, or nothing (wait)
	Construct   ActionKind = "construct"     // build the RAMDISK: Booted or BootFailed
	StageIn     ActionKind = "stage-in"      // fill it from the input directory: StagedIn or StageInFailed
	StopStageIn ActionKind = "stop-stage-in" // cancel a running stage-in: StageInStopped (or its own end)
	MountIn     ActionKind = "mount-in"      // bind it over the input directory: Mounted or MountFailed
	MountOut    ActionKind = "mount-out"     // bind it over the output directory: Mounted or MountFailed
	Unmount     ActionKind = "unmount"       // remove the job's bind mounts: Unmounted or UnmountBusy
	StageOut    ActionKind = "stage-out"     // copy and verify the output: StagedOut or StageOutFailed
	Destroy     ActionKind = "destroy"       // unmount all and free the RAM: Destroyed or TeardownFailed
)

// work is the action each in-progress state runs. Entering such a state
// starts the action; after a crash, the daemon starts it again (Resume), so
// every action must be idempotent.
var work = map[RSAState]ActionKind{
	Booting:           Construct,
	StagingIn:         StageIn,
	StoppingStagingIn: StopStageIn,
	MountingIn:        MountIn,
	Mounting:          MountOut,
	Unmounting:        Unmount,
	StagingOut:        StageOut,
	Teardown:          Destroy,
	Abandoning:        Destroy,
}

// Work returns the action that runs while the job is in state s, if any.
func Work(s RSAState) (ActionKind, bool) {
	a, ok := work[s]
	return a, ok
}

// HoldsNodes reports whether a job in rsa-state s holds RSA capacity. Free
// capacity is derived from this, so releasing nodes is just a transition.
func HoldsNodes(s RSAState) bool {
	switch s {
	case Initial, Ineligible, OutputLost, Released:
		return false
	}
	return true
}

// HasRamdisk reports whether a job in rsa-state s has a RAMDISK that should
// exist now (not one being built or torn down). If it does not, the daemon
// says so with EvRamdiskLost.
func HasRamdisk(s RSAState) bool {
	return slices.ContainsFunc(eventTable, func(r eventRow) bool {
		return r.on == EvRamdiskLost && slices.Contains(r.rsa, s)
	})
}

// HoldsOutput reports whether the RAMDISK may hold job output that is not
// yet verified on persistent storage. Such a RAMDISK is never destroyed
// except by an explicit Discard.
func HoldsOutput(s RSAState) bool {
	switch s {
	case InUseOut, StagingOut, StageOutFailed:
		return true
	}
	return false
}

// NeedsAdmin reports states that wait for `rsa retry` or `rsa discard`.
func NeedsAdmin(s RSAState) bool {
	return s == StageOutFailed || s == TeardownFailed
}

// OwnersToFix reports the states of NeedsAdmin that the job's own user may
// also retry or discard: a failed stage-out, whose output is theirs and
// whose retry runs as them, to their own directory. A failed teardown is
// root's alone: what holds the RAMDISK may be root's processes.
func OwnersToFix(s RSAState) bool { return s == StageOutFailed }

// Job is the part of a job the machine decides on.
type Job struct {
	State     JobState
	RSA       RSAState
	HasInput  bool          // an input directory (or stage-in program) was given
	HasOutput bool          // an output directory was given
	Delay     time.Duration // input-to-output switch delay after start
	StartedAt time.Time     // set by the Started event
	// InputAt is when the input was mounted at its path (the Mounted
	// event in MOUNTING_IN): the delay counts from then, since the
	// scheduler holds the job until its mounts are made.
	InputAt time.Time
	// NodeLost: an RSA node of its allocation was lost since it was
	// assigned (set by NodeLost, cleared by Assigned).
	NodeLost bool
	// Lost names those nodes: every node an event reported lost
	// (Event.Nodes) since the assignment, each once.
	Lost []string
	// Error is the last failure's reason: a failure event's, or a
	// failing pass row's.
	Error string
	// Build counts the RAMDISKs built for the job: each entry into
	// BOOTING starts a new one, under a name of its own.
	Build int
	// FinishedAt is when the job-state became FINISHED.
	FinishedAt time.Time
	// CapacityWait bounds how long a job on deck waits for RSA capacity
	// before it runs without RSA (0: as long as it takes). It is the
	// job's policy, fixed when it is created.
	CapacityWait time.Duration
	// WaitingSince is when the job, INITIAL, began to wait for RSA
	// capacity (EvWaitCapacity); zero when it does not. Kept in the
	// record, so a restart of the daemon neither restarts nor stops the
	// clock.
	WaitingSince time.Time
	// NotBefore holds a job on deck back from its assignment until this
	// time, when its stage-in is to begin (StageInTime); zero: at once.
	NotBefore time.Time
	// ExpireAfter ends a job on deck that has not changed for this long
	// and runs no action: a job no scheduler will ever start unless its
	// user comes back for it (rsa submit, limits.unstarted_expiry). 0:
	// never.
	ExpireAfter time.Duration
	// ChangedAt is when the job's record last changed: the clock of
	// ExpireAfter.
	ChangedAt time.Time
	// InputImage: the job's input is staged as one read-only image
	// (input=image), not as files.
	InputImage bool
	// ImageBuild is the build (Build) made for the input image: entered
	// into BOOTING before the job started, with InputImage. 0: none.
	ImageBuild int
	// OutputPrivate: the job's output goes to a file system of its own
	// on each compute node (output=private), not to one shared by all.
	OutputPrivate bool
	// PrivateBuild is the build made for private output: entered into
	// BOOTING for output (the job running, or without input), with
	// OutputPrivate. 0: none.
	PrivateBuild int
	// PrivateLost: a part of the private-output RAMDISK was lost with no
	// copy in reach (an event with Nodes, not Whole) while the job held
	// it: what a compute node wrote into its file system may never have
	// reached RAM, so its image can no longer be verified. A new build
	// clears it.
	PrivateLost bool
}

// HoldsPrivateOutput reports whether the job's RAMDISK now is the one
// built for its private output: root's alone, holding one file-system
// image per compute node.
func (j Job) HoldsPrivateOutput() bool { return j.PrivateBuild != 0 && j.PrivateBuild == j.Build }

// HoldsImage reports whether the job's RAMDISK now is the one built for
// its input image: root's alone, holding the image the compute nodes
// mount read-only, never shown to the job as files nor used for output.
func (j Job) HoldsImage() bool { return j.ImageBuild != 0 && j.ImageBuild == j.Build }

// Done reports whether nothing more will ever happen to the job.
// OUTPUT_LOST is such an end too: RSA holds nothing more for the job.
func (j Job) Done() bool { return j.State == Finished && (j.RSA == Released || j.RSA == OutputLost) }

// Pending reports whether the batch system has not started the job yet
// (on deck, or pushed back).
func (j Job) Pending() bool { return j.State == OnDeck || j.State == Demoted }

// Runs reports whether the job holds its compute nodes.
func (j Job) Runs() bool { return j.State == Running }

// Ended reports whether the job left its compute nodes, or was cancelled
// before it got them. RSA's work for it may go on (stage-out, teardown).
func (j Job) Ended() bool { return j.State == Finished }

// AwaitsNodes reports whether the job, not ended, holds no RSA nodes yet
// and waits for an assignment.
func (j Job) AwaitsNodes() bool { return j.RSA == Initial && j.State != Finished }

// NewJob is a job RSA takes on at at: on deck, or, when the batch system
// started it before RSA met it (started), running since at. Either way RSA
// holds nothing for it yet; its first Step (a tick) decides what next.
func NewJob(started bool, at time.Time) Job {
	if started {
		return Job{State: Running, RSA: Initial, StartedAt: at}
	}
	return Job{State: OnDeck, RSA: Initial}
}
