package lifecycle

import "slices"

// Gate is a point where a batch system waits on RSA before it moves a job
// on (Slurm's burst_buffer hooks, its prolog and epilog). Its verdict is
// read off the job's committed state, so a gate asked twice, or after a
// restart, answers the same.
type Gate string

const (
	// GateStageIn: may the pending job be started? Its input is in RAM,
	// or RSA lets it start without (Slurm: data_in).
	GateStageIn Gate = "stage-in"
	// GateStart: the job is starting; may its batch script run? Its
	// RAMDISK is at its paths on its compute nodes, or RSA mounts nothing
	// for it (Slurm: pre_run, the prolog).
	GateStart Gate = "start"
	// GateUnmount: the job ended; are RSA's mounts gone from its compute
	// nodes (Slurm: the epilog)?
	GateUnmount Gate = "unmount"
	// GateStageOut: the job ended; is its output on persistent storage,
	// verified (Slurm: data_out)?
	GateStageOut Gate = "stage-out"
	// GateTeardown: is everything RSA held for the job released (Slurm:
	// teardown)?
	GateTeardown Gate = "teardown"
)

// AllGates lists every gate.
var AllGates = []Gate{GateStageIn, GateStart, GateUnmount, GateStageOut, GateTeardown}

// Answer is a gate's verdict.
type Answer int

const (
	// Wait: ask again; RSA's work for the job is under way.
	Wait Answer = iota
	// Pass: the job may move on.
	Pass
	// Refuse: the job must not move on as if RSA's work had succeeded
	// (Slurm holds it, or marks its stage-out failed).
	Refuse
)

func (a Answer) String() string {
	switch a {
	case Wait:
		return "wait"
	case Pass:
		return "pass"
	case Refuse:
		return "refuse"
	}
	return "answer?"
}

// Why is the reason behind a verdict. The scheduler adapter words it for
// its users with what only the job's record knows (its error, paths,
// hosts, lost nodes).
type Why string

const (
	WhyStagingIn         Why = "staging in"
	WhyRebuilding        Why = "an RSA node was lost: the RAMDISK is rebuilt on live nodes and the input staged in again"
	WhyEndedBeforeInput  Why = "the job ended before its stage-in"
	WhyWithoutRSA        Why = "the job runs without RSA"
	WhyStageInFailed     Why = "the stage-in failed or was stopped"
	WhyInputInRAM        Why = "input staged into RAM"
	WhyStarted           Why = "the job has started"
	WhyInputNotInRAM     Why = "the job reads its input from disk: it is not in RAM"
	WhyMountedIn         Why = "RAMDISK mounted at the input path"
	WhyMountedOut        Why = "RAMDISK mounted at the output path"
	WhyEnded             Why = "the job already ended"
	WhyAssigning         Why = "assigning RSA nodes"
	WhyMounting          Why = "mounting"
	WhyUnmounting        Why = "unmounting"
	WhyUnmounted         Why = "nothing of RSA is mounted on the job's nodes"
	WhyStageOutFailed    Why = "the stage-out failed; the output stays in RAM"
	WhyOutputLost        Why = "RSA lost the output"
	WhyStagingOut        Why = "staging out"
	WhyOutputVerified    Why = "output staged out and verified"
	WhyNoOutputInRAM     Why = "no output of the job is in RAM"
	WhyReleased          Why = "RAMDISK released"
	WhyKeptForAdmin      Why = "the RAMDISK is kept for an administrator"
	WhyTearingDown       Why = "tearing down"
	WhyNoVerdict         Why = "no verdict for this state"
	WhyAdminTeardownWait Why = "the job reads its input from disk: its old RAMDISK waits for an administrator"
)

// gateRow is one verdict. Empty job or rsa sets match any; the guard, when
// set, must hold too. First matching row wins, and every (job-state,
// rsa-state) pair has a row (TestEveryGateAnswers): no state falls
// through to an answer that claims success.
type gateRow struct {
	gate   Gate
	job    []JobState
	rsa    []RSAState
	guard  func(Job) bool
	answer Answer
	why    Why
}

var live = []JobState{OnDeck, Demoted, Running}

// afterStart: rsa-states a job reaches only once it has started.
var afterStart = []RSAState{MountingIn, InUseIn, UnmountNeeded, Unmounting, UnmountBusy, Unmounted,
	Mounting, InUseOut, StagingOut, StageOutFailed, DoneStagingOut, OutputLost}

// mountsAtJobPaths: rsa-states in which RSA's binds may be on the job's
// compute nodes, or are being made or removed.
var mountsAtJobPaths = []RSAState{MountingIn, Mounting, InUseIn, InUseOut, UnmountNeeded, Unmounting}

var gateTable = []gateRow{
	// --- stage-in: Slurm starts the pending job only on Pass ---
	{gate: GateStageIn, job: live, rsa: []RSAState{Aborted, StoppingStagingIn, Teardown, Destroyed},
		guard: func(j Job) bool { return j.NodeLost }, answer: Wait, why: WhyRebuilding},
	{gate: GateStageIn, job: []JobState{Finished}, rsa: []RSAState{Initial, Assigned, Booting, Booted, StagingIn, Abandoning},
		answer: Refuse, why: WhyEndedBeforeInput},
	{gate: GateStageIn, rsa: []RSAState{Initial, Assigned, Booting, Booted, StagingIn, Abandoning}, answer: Wait, why: WhyStagingIn},
	{gate: GateStageIn, rsa: []RSAState{Ineligible}, answer: Pass, why: WhyWithoutRSA},
	{gate: GateStageIn, rsa: []RSAState{Aborted, StoppingStagingIn, Teardown, Destroyed, Released}, answer: Refuse, why: WhyStageInFailed},
	{gate: GateStageIn, rsa: []RSAState{Ready}, answer: Pass, why: WhyInputInRAM},
	{gate: GateStageIn, rsa: afterStart, answer: Pass, why: WhyStarted},
	// A teardown that failed waits for an administrator; the job need
	// not: it reads its input from disk.
	{gate: GateStageIn, rsa: []RSAState{TeardownFailed}, answer: Pass, why: WhyAdminTeardownWait},

	// --- start: the batch script runs on Pass; an early Pass would let
	// the job write on disk where RSA then mounts ---
	{gate: GateStart, rsa: []RSAState{InUseIn, UnmountBusy}, answer: Pass, why: WhyMountedIn},
	{gate: GateStart, rsa: []RSAState{InUseOut}, answer: Pass, why: WhyMountedOut},
	{gate: GateStart, rsa: []RSAState{Ineligible, Released, OutputLost}, answer: Pass, why: WhyWithoutRSA},
	{gate: GateStart, job: []JobState{Finished}, answer: Pass, why: WhyEnded},
	// Nothing will be mounted for a job without output whose input is
	// not in RAM (not yet staged in, or lost with a node): its compute
	// nodes do not wait for a teardown.
	{gate: GateStart, guard: func(j Job) bool { return !j.HasOutput && j.RSA != Ready && j.RSA != MountingIn },
		answer: Pass, why: WhyInputNotInRAM},
	{gate: GateStart, rsa: []RSAState{Initial}, answer: Wait, why: WhyAssigning},
	{gate: GateStart, rsa: []RSAState{Assigned, Booting, Booted, StagingIn, StoppingStagingIn, Aborted, Ready, MountingIn,
		UnmountNeeded, Unmounting, Unmounted, Mounting, StagingOut, StageOutFailed, DoneStagingOut,
		Teardown, Abandoning, TeardownFailed, Destroyed}, answer: Wait, why: WhyMounting},

	// --- unmount: the epilog frees the compute nodes on Pass ---
	{gate: GateUnmount, rsa: mountsAtJobPaths, answer: Wait, why: WhyUnmounting},
	{gate: GateUnmount, rsa: others(mountsAtJobPaths), answer: Pass, why: WhyUnmounted},

	// --- stage-out ---
	{gate: GateStageOut, rsa: []RSAState{StageOutFailed}, answer: Refuse, why: WhyStageOutFailed},
	{gate: GateStageOut, rsa: []RSAState{OutputLost}, answer: Refuse, why: WhyOutputLost},
	{gate: GateStageOut, rsa: mountsAtJobPaths, answer: Wait, why: WhyUnmounting},
	{gate: GateStageOut, rsa: []RSAState{StagingOut}, answer: Wait, why: WhyStagingOut},
	{gate: GateStageOut, rsa: []RSAState{DoneStagingOut, Teardown, Destroyed, Released},
		guard: func(j Job) bool { return j.HasOutput }, answer: Pass, why: WhyOutputVerified},
	{gate: GateStageOut, answer: Pass, why: WhyNoOutputInRAM,
		rsa: others([]RSAState{StageOutFailed, OutputLost, StagingOut}, mountsAtJobPaths)},

	// --- teardown ---
	{gate: GateTeardown, guard: Job.Done, answer: Pass, why: WhyReleased},
	{gate: GateTeardown, rsa: []RSAState{StageOutFailed, TeardownFailed}, answer: Pass, why: WhyKeptForAdmin},
	{gate: GateTeardown, rsa: others([]RSAState{StageOutFailed, TeardownFailed}), answer: Wait, why: WhyTearingDown},
}

// others is every rsa-state in none of the sets.
func others(sets ...[]RSAState) []RSAState {
	var rest []RSAState
	for _, s := range AllRSAStates {
		if !slices.ContainsFunc(sets, func(set []RSAState) bool { return slices.Contains(set, s) }) {
			rest = append(rest, s)
		}
	}
	return rest
}

// Verdict is gate g's answer for j, and why. A state the table does not
// cover (TestEveryGateAnswers proves there is none) waits.
func Verdict(g Gate, j Job) (Answer, Why) {
	for _, r := range gateTable {
		if r.gate != g {
			continue
		}
		if len(r.job) > 0 && !slices.Contains(r.job, j.State) {
			continue
		}
		if len(r.rsa) > 0 && !slices.Contains(r.rsa, j.RSA) {
			continue
		}
		if r.guard != nil && !r.guard(j) {
			continue
		}
		return r.answer, r.why
	}
	return Wait, WhyNoVerdict
}
