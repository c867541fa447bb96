package lifecycle

import "time"

// The transition table. Read eventTable next to Figure 3.1 (job-states) and
// the "external call-outs" of Figures 3.2–3.5 (dashed edges: an action's end
// sets the rsa-state); read passTable next to App. A, whose line numbers the
// comments give. First matching row wins.

var anyLive = []JobState{OnDeck, Demoted, Running}

// notYetIn: rsa-states of a job on deck whose input is not in RAM yet.
var notYetIn = []RSAState{Initial, Assigned, Booting, Booted, StagingIn, StoppingStagingIn,
	Aborted, Teardown, TeardownFailed, Destroyed}

var eventTable = []eventRow{
	// --- scheduler events (Figure 3.1) ---
	// A demoted job stays DEMOTED until its cleanup has finished, even if it
	// is on deck again (App. A l.30-35); then it starts over.
	{on: EvOnDeck, job: []JobState{Demoted}, rsa: []RSAState{Released, Ineligible},
		nextJob: OnDeck, nextRSA: Initial, why: "on deck again after cleanup"},
	{on: EvDemoted, job: []JobState{OnDeck}, nextJob: Demoted, why: "demoted by the scheduler"},
	// Slurm may start a job whose RAMDISK is not (or no longer) ready for
	// it: stage-in still running, or the RAMDISK being rebuilt after a
	// lost node. The job then reads its input where it is, on disk
	// (§3.2.1); say so, it is the one thing its user needs to know.
	{on: EvStarted, job: []JobState{OnDeck}, rsa: notYetIn, guard: jobHas(hasInput), nextJob: Running,
		why: "job started before its input was in RAM: the job reads its input from disk"},
	{on: EvStarted, job: []JobState{OnDeck}, nextJob: Running, why: "job started"},
	// A demoted job that starts before its cleanup ended continues under the
	// RUNNING rules (its RAMDISK is rebuilt for output); one already cleaned
	// up starts over, as job-start.sh does for a job without state (App. K l.27).
	{on: EvStarted, job: []JobState{Demoted}, rsa: []RSAState{Released, Ineligible},
		nextJob: Running, nextRSA: Initial, why: "job started after demotion"},
	{on: EvStarted, job: []JobState{Demoted}, nextJob: Running, why: "job started while demoted"},
	// A job that runs without its start held for RSA is never mounted
	// over: what RSA holds for it is let go. One whose RAMDISK is being
	// built, filled or torn down waits for that action to end; the
	// scheduler adapter reports the start again.
	{on: EvStartedWithoutRSA, job: []JobState{OnDeck, Demoted}, rsa: []RSAState{Initial, Ineligible, Released, Assigned, Destroyed},
		nextJob: Running, nextRSA: Ineligible, why: "job started without RSA: it runs on disk"},
	{on: EvStartedWithoutRSA, job: []JobState{OnDeck, Demoted}, rsa: []RSAState{Booted, Ready, Aborted},
		nextJob: Running, nextRSA: Abandoning, why: "job started without RSA: it runs on disk; its RAMDISK is torn down"},
	{on: EvStartedWithoutRSA, job: []JobState{OnDeck}, rsa: []RSAState{StagingIn},
		nextRSA: StoppingStagingIn, why: "job started without RSA: its stage-in is stopped"},
	{on: EvFinished, job: anyLive, nextJob: Finished, why: "job finished"},
	// Not in the thesis: a job no scheduler drives starts only when its
	// user comes back for it (rsa run --job); one that never does must
	// not hold RAM for ever.
	{on: EvTick, job: []JobState{OnDeck}, guard: unstartedExpired, nextJob: Finished, fails: FailureExpired,
		why: "expired: not started within limits.unstarted_expiry of its submission or of its input being ready; its RAM is released. Submit again when you can run it (rsa run --job ID right after rsa submit)"},

	// --- allocation (App. P) ---
	// Waiting is not a transition; only the first wait starts the clock.
	{on: EvWaitCapacity, job: anyLive, rsa: []RSAState{Initial}, guard: jobHas(notWaiting), why: "waiting for RSA capacity"},
	// Only a job not yet assigned waits for its stage-in time.
	{on: EvStageInTime, job: []JobState{OnDeck}, rsa: []RSAState{Initial}, why: "stage-in time moved"},
	{on: EvAssigned, rsa: []RSAState{Initial}, nextRSA: Assigned, why: "RSA nodes assigned"},
	{on: EvIneligible, rsa: []RSAState{Initial}, nextRSA: Ineligible, why: "not eligible for RSA"},

	// --- construction (App. D) ---
	{on: EvBooted, rsa: []RSAState{Booting}, nextRSA: Booted, why: "RAMDISK built"},
	{on: EvBootFailed, rsa: []RSAState{Booting}, nextRSA: Abandoning, why: "building the RAMDISK failed"},
	// Not in the thesis: a node that stopped answering is no reason to
	// give RSA up. What was built is torn down, and DESTROYED with a lost
	// node assigns anew (released, if the job ended or was demoted).
	{on: EvBootLost, rsa: []RSAState{Booting}, nextRSA: Teardown, why: "building the RAMDISK failed on an RSA node that does not answer: rebuilding on live nodes"},

	// --- stage-in (App. H, I) ---
	{on: EvStagedIn, rsa: []RSAState{StagingIn}, nextRSA: Ready, why: "input staged in"},
	// A failed stage-in leaves partial input: it is never mounted for input,
	// but the RAMDISK can still serve output after a rebuild.
	{on: EvStageInFailed, rsa: []RSAState{StagingIn}, nextRSA: Aborted, why: "stage-in failed"},
	// rsa-stop-stage-in.sh writes "rsa_state" instead of "rsa-state" (App. I
	// l.25), so the prototype never reached ABORTED this way; ABORTED is what
	// App. A l.98 and l.215 expect. Whatever ended the stage-in, it is over.
	{on: EvStageInStopped, rsa: []RSAState{StoppingStagingIn}, nextRSA: Aborted, why: "stage-in stopped"},
	{on: EvStagedIn, rsa: []RSAState{StoppingStagingIn}, nextRSA: Aborted, why: "stage-in ended while being stopped"},
	{on: EvStageInFailed, rsa: []RSAState{StoppingStagingIn}, nextRSA: Aborted, why: "stage-in ended while being stopped"},

	// --- mounting (App. K, L) ---
	// The job finished while its input was being mounted: unmount again
	// (App. L l.42-46).
	{on: EvMounted, job: []JobState{Finished}, rsa: []RSAState{MountingIn}, nextRSA: UnmountNeeded, why: "mounted after the job finished"},
	{on: EvMounted, rsa: []RSAState{MountingIn}, nextRSA: InUseIn, why: "RAMDISK mounted at the input path"},
	// App. L sends a job that finished while being mounted for output to
	// UNMOUNT_NEEDED and so to teardown; but the job may have written output
	// into the new mount before it ended. Output is only ever dropped after
	// stage-out, so this goes to INUSE_OUT and on to STAGING_OUT.
	{on: EvMounted, rsa: []RSAState{Mounting}, nextRSA: InUseOut, why: "RAMDISK mounted at the output path"},
	// Mounting for input is all or nothing. Without the input mount the job
	// reads from disk (the thesis' fallback) and the RAMDISK is rebuilt for
	// output.
	{on: EvMountFailed, rsa: []RSAState{MountingIn}, nextRSA: Aborted, why: "mounting for input failed"},
	// Mounting for output can fail on one node after others already show
	// the RAMDISK, and the job may have written there: output in RAM is
	// never dropped without a stage-out, so whatever reached RAM is staged
	// out when the job ends (the failed nodes write to disk).
	{on: EvMountFailed, rsa: []RSAState{Mounting}, nextRSA: InUseOut, why: "mounting for output failed on some node; what reaches RAM is staged out after the job"},

	// --- unmounting (App. M) ---
	{on: EvUnmounted, rsa: []RSAState{Unmounting}, nextRSA: Unmounted, why: "RAMDISK unmounted"},
	// Input files still open: stay on the input path (footnote 16).
	{on: EvUnmountBusy, job: []JobState{Running}, rsa: []RSAState{Unmounting}, nextRSA: UnmountBusy, why: "input still in use; output goes to disk"},
	{on: EvUnmountBusy, job: []JobState{Finished}, rsa: []RSAState{Unmounting}, nextRSA: Teardown, why: "still busy after the job ended; detaching"},

	// --- stage-out (App. J) ---
	{on: EvStagedOut, rsa: []RSAState{StagingOut}, nextRSA: DoneStagingOut, why: "output staged out and verified"},
	{on: EvStageOutFailed, rsa: []RSAState{StagingOut}, nextRSA: StageOutFailed, why: "stage-out failed; output kept in RAM"},

	// --- teardown (App. E) ---
	{on: EvDestroyed, rsa: []RSAState{Teardown}, nextRSA: Destroyed, why: "RAMDISK destroyed"},
	{on: EvDestroyed, rsa: []RSAState{Abandoning}, nextRSA: Ineligible, why: "RAMDISK destroyed; job continues without RSA"},
	{on: EvDestroyFailed, rsa: []RSAState{Teardown, Abandoning}, nextRSA: TeardownFailed, why: "destroying the RAMDISK failed"},

	// --- administrator ---
	{on: EvRetry, rsa: []RSAState{StageOutFailed}, nextRSA: StagingOut, why: "stage-out retried"},
	{on: EvRetry, rsa: []RSAState{TeardownFailed}, nextRSA: Teardown, why: "teardown retried"},
	{on: EvDiscard, rsa: []RSAState{StageOutFailed}, nextRSA: Teardown, why: "output discarded by an administrator"},

	// --- a RAMDISK that is gone (the RSA host rebooted) ---
	// Output that was only in RAM is lost: say so, and hold no RAM for it.
	// (MOUNTING counts: the job may have written where the mount came up.)
	{on: EvRamdiskLost, rsa: []RSAState{Mounting, InUseOut, StagingOut, StageOutFailed}, nextRSA: OutputLost, why: "RAMDISK lost with output not staged out"},
	// Anything else in it is on disk too: as if torn down. The job-state
	// then decides, as after any teardown (rebuilt on deck or for output,
	// released when finished).
	{on: EvRamdiskLost, rsa: []RSAState{Booted, StagingIn, StoppingStagingIn, Aborted, Ready, MountingIn, InUseIn,
		UnmountNeeded, Unmounting, UnmountBusy, Unmounted, DoneStagingOut, TeardownFailed},
		nextRSA: Destroyed, why: "RAMDISK lost; it held nothing that is not on disk"},

	// --- an RSA node lost (silent for cluster.down_after, or rebooted) ---
	// The RAM it held is gone, the rest of the RAMDISK is not. Before the
	// job runs, the RAMDISK is rebuilt on live nodes and the input staged
	// in again: torn down, and DESTROYED with a lost node re-assigns.
	{on: EvNodeLost, job: []JobState{Demoted}, rsa: []RSAState{Booted, Ready, Aborted},
		nextRSA: Teardown, why: "an RSA node was lost: rebuilding the RAMDISK on live nodes"},
	{on: EvNodeLost, job: []JobState{OnDeck}, rsa: []RSAState{Booted, Aborted},
		nextRSA: Teardown, why: "an RSA node was lost: rebuilding the RAMDISK on live nodes"},
	// READY is a promise to the scheduler, which may be starting the job
	// at this instant: nothing the start cannot undo begins here. A
	// RAMDISK whose replicas still serve every file stays READY, degraded
	// (the switch to output rebuilds it on live nodes, as for INUSE_IN).
	// One that lost files is never mounted: ABORTED, the job reads its
	// input from disk if it starts now, and the pass rebuilds it while
	// the job is still on deck.
	{on: EvNodeLost, job: []JobState{OnDeck}, rsa: []RSAState{Ready}, guard: whole,
		why: "an RSA node was lost: the RAMDISK is degraded, its replicas serve every file"},
	{on: EvNodeLost, job: []JobState{OnDeck}, rsa: []RSAState{Ready}, nextRSA: Aborted,
		why: "an RSA node was lost with part of the input: the RAMDISK is never mounted; the job reads its input from disk should it start before the rebuild"},
	// A stage-in into a RAMDISK whose replicas hold every file goes on:
	// its own check at the end finds the same node and commits READY,
	// degraded. Otherwise it is stopped; it ends ABORTED, which a lost
	// node rebuilds.
	{on: EvNodeLost, rsa: []RSAState{StagingIn}, guard: whole, why: "an RSA node was lost during stage-in; its replicas hold every file: the stage-in goes on"},
	{on: EvNodeLost, rsa: []RSAState{StagingIn}, nextRSA: StoppingStagingIn, why: "an RSA node was lost during stage-in"},
	// A running job reading its input from files whose part on the lost
	// node is gone would read a shorter input without an error (a
	// distribute volume lists no name on a lost brick, and opening one
	// says ENOENT): the switch comes now, so the input path shows the
	// input on disk again, whole, and the RAMDISK is rebuilt on live nodes
	// for output. (An input image's lost pieces fail reads with EIO; it is
	// taken away all the same.) A process of the job that holds the input
	// open keeps it mounted (UNMOUNT_BUSY), as at any switch.
	{on: EvNodeLost, job: []JobState{Running}, rsa: []RSAState{InUseIn}, guard: partial, nextRSA: UnmountNeeded,
		why: "an RSA node was lost with part of the input the job reads: the input path goes back to disk, where the input is whole; the RAMDISK is rebuilt on live nodes for output"},
	// Anywhere else the job goes on with what is left, degraded: its input
	// is on disk too, the switch to output rebuilds on live nodes, and its
	// output is staged out in full (replica 2) or the stage-out fails
	// naming the node, never "verified" over a part. A RAMDISK being built
	// fails or is rebuilt; one being destroyed leaves a debt on the node.
	{on: EvNodeLost, why: "an RSA node was lost: the RAMDISK is degraded"},
}

// nodeLost: an RSA node of the allocation was lost.
func nodeLost(j Job, _ time.Time) bool { return j.NodeLost }

// lostWithOutput: a node was lost, and the job has output to catch (a
// running job without any is done with RSA once its input is gone).
func lostWithOutput(j Job, now time.Time) bool { return nodeLost(j, now) && hasOutput(j, now) }

// whole: the lost node's files are still served by their replicas.
func whole(_ Job, ev Event) bool { return ev.Whole }

// partial: the lost node's files are gone with it (no replica serves them).
func partial(j Job, ev Event) bool { return !whole(j, ev) }

// jobHas makes a pass guard, which sees only the job, an event row's.
func jobHas(g func(Job, time.Time) bool) func(Job, Event) bool {
	return func(j Job, ev Event) bool { return g(j, ev.At) }
}

// notWaiting: the job's wait for capacity has not begun.
func notWaiting(j Job, _ time.Time) bool { return j.WaitingSince.IsZero() }

// capacityWaitOver: the job has waited for RSA capacity as long as its
// policy lets it.
func capacityWaitOver(j Job, now time.Time) bool {
	return j.CapacityWait > 0 && !j.WaitingSince.IsZero() && !now.Before(j.WaitingSince.Add(j.CapacityWait))
}

// beforeStageInTime: the job's stage-in is not to begin yet.
func beforeStageInTime(j Job, now time.Time) bool { return now.Before(j.NotBefore) }

// unstartedExpired: the job may expire, runs no action, and has not
// changed for as long as it may wait.
func unstartedExpired(j Job, ev Event) bool {
	_, busy := work[j.RSA]
	return j.ExpireAfter > 0 && !busy && !ev.At.Before(j.ChangedAt.Add(j.ExpireAfter))
}

func hasInput(j Job, _ time.Time) bool  { return j.HasInput }
func noInput(j Job, _ time.Time) bool   { return !j.HasInput }
func hasOutput(j Job, _ time.Time) bool { return j.HasOutput }
func noOutput(j Job, _ time.Time) bool  { return !j.HasOutput }

// outputHere: the RAMDISK built can take the job's output (not one built
// for an input image, which is root's and holds the image).
func outputHere(j Job, _ time.Time) bool { return j.HasOutput && !j.HoldsImage() }

// imageNoOutput: the RAMDISK built holds (or was to hold) the input image,
// and the job has started: it cannot take output.
func imageNoOutput(j Job, _ time.Time) bool { return j.HasOutput && j.HoldsImage() }

// switchDue: the job has run for its delay and has an output directory
// (App. A l.189-199). The delay counts from when the input was mounted:
// the scheduler holds the job until then (a prolog, pre_run), so that is
// when it starts to read; counted from the scheduler's start, mounts that
// took longer than the delay would switch the input away before the job
// ever saw it. (A record from before InputAt counts from its start.)
func switchDue(j Job, now time.Time) bool {
	from := j.InputAt
	if from.IsZero() {
		from = j.StartedAt
	}
	return j.HasOutput && !from.IsZero() && !now.Before(from.Add(j.Delay))
}

var passTable = []passRow{
	// --- ONDECK (Figure 3.2; App. A l.122-165) ---
	// Not in the thesis: a batch system may block in its stage-in hook
	// while the job waits for RSA, and so hold up the very job whose RAM
	// it waits for (Slurm 22.05). A bounded wait lets the job run from
	// disk instead.
	{job: OnDeck, rsa: []RSAState{Initial}, guard: capacityWaitOver, next: Ineligible, fails: FailureIneligible,
		why: "no RSA capacity came free within the job's capacity wait (slurm.capacity_wait): it runs from disk"},
	// Not in the thesis: a stage-in that begins long before the job
	// starts holds RAM other jobs could use (Slurm's stage_in_lead).
	{job: OnDeck, rsa: []RSAState{Initial}, guard: beforeStageInTime, next: Initial, holds: HoldStageInTime,
		why: "waiting for its stage-in time"},
	{job: OnDeck, rsa: []RSAState{Initial}, do: Assign, next: Initial, why: "assigning RSA nodes"}, // l.137
	// Not in the thesis: a RAMDISK that lost a node is rebuilt elsewhere.
	{job: OnDeck, rsa: []RSAState{Destroyed}, guard: nodeLost, next: Initial, why: "an RSA node was lost: assigning anew"},
	{job: OnDeck, rsa: []RSAState{Aborted}, guard: nodeLost, next: Teardown, why: "an RSA node was lost: rebuilding the RAMDISK on live nodes"},
	{job: OnDeck, rsa: []RSAState{Assigned, Destroyed}, next: Booting, why: "building the RAMDISK"},   // l.142
	{job: OnDeck, rsa: []RSAState{Booted}, guard: hasInput, next: StagingIn, why: "staging input in"}, // l.149
	// Nothing to stage for an output-only job: it is ready as built.
	{job: OnDeck, rsa: []RSAState{Booted}, guard: noInput, next: Ready, why: "ready for output"},
	// Waits: BOOTING, STAGING_IN, READY, INELIGIBLE (l.146-163) and the ends
	// of actions started under other job-states.

	// --- DEMOTED (Figure 3.3; App. A l.72-120) ---
	// BOOTING (l.85) and TEARDOWN (l.88) wait for their action.
	{job: Demoted, rsa: []RSAState{Booted, Ready, Aborted}, next: Teardown, why: "demoted: tearing down"},    // l.91
	{job: Demoted, rsa: []RSAState{StagingIn}, next: StoppingStagingIn, why: "demoted: stopping stage-in"},   // l.97
	{job: Demoted, rsa: []RSAState{Destroyed, Assigned}, next: Released, why: "demoted: RSA nodes released"}, // l.106
	{job: Demoted, rsa: []RSAState{Ineligible, Initial}, next: Released, why: "demoted: nothing to release"}, // l.114

	// --- RUNNING (Figure 3.4; App. A l.167-232) ---
	{job: Running, rsa: []RSAState{Initial}, do: Assign, next: Initial, why: "assigning RSA nodes"}, // l.174
	{job: Running, rsa: []RSAState{Destroyed}, guard: lostWithOutput, next: Initial, why: "an RSA node was lost: assigning anew"},
	{job: Running, rsa: []RSAState{Assigned, Destroyed}, guard: hasOutput, next: Booting, why: "building the RAMDISK for output"}, // l.179
	// Input is too late once the job runs; without an output directory the
	// nodes are of no use to it (App. P l.23-24 makes such jobs INELIGIBLE).
	{job: Running, rsa: []RSAState{Assigned, Destroyed}, guard: noOutput, next: Released, why: "no output to catch: RSA nodes released"},
	// job-start.sh (App. K l.20-24) mounts a READY RAMDISK over the input.
	{job: Running, rsa: []RSAState{Ready}, guard: hasInput, next: MountingIn, why: "mounting at the input path"},
	// Output only: RAM for output from the start (App. L l.29-33).
	{job: Running, rsa: []RSAState{Ready}, guard: noInput, next: Mounting, why: "mounting at the output path"},
	{job: Running, rsa: []RSAState{InUseIn}, guard: switchDue, next: UnmountNeeded, why: "delay over: switching from input to output"}, // l.187
	{job: Running, rsa: []RSAState{UnmountNeeded}, next: Unmounting, why: "unmounting from the input path"},                            // l.201
	// The job started before stage-in ended: ignore the RAMDISK for input
	// (l.209; §3.2.1) and rebuild it for output.
	{job: Running, rsa: []RSAState{StagingIn}, next: StoppingStagingIn, why: "job started before stage-in ended"},
	// Tear down to rebuild for output (l.217); DESTROYED then decides.
	{job: Running, rsa: []RSAState{Aborted, Unmounted}, next: Teardown, why: "tearing down to rebuild for output"},
	{job: Running, rsa: []RSAState{Booted}, guard: outputHere, next: Mounting, why: "mounting at the output path"}, // l.226
	{job: Running, rsa: []RSAState{Booted}, guard: imageNoOutput, next: Teardown, why: "started before its input image was built: tearing down to rebuild for output"},
	{job: Running, rsa: []RSAState{Booted}, guard: noOutput, next: Teardown, why: "started before the input was staged; no output to catch"},
	// Waits: BOOTING, MOUNTING(_IN), TEARDOWN, UNMOUNTING (l.223),
	// STOPPING_STAGING_IN (l.214), INUSE_OUT (l.206), UNMOUNT_BUSY,
	// INUSE_IN before the delay, INELIGIBLE (l.184).

	// --- FINISHED (Figure 3.5; App. A l.234-283) ---
	{job: Finished, rsa: []RSAState{UnmountNeeded}, next: Unmounting, why: "unmounting after the job ended"}, // l.244
	{job: Finished, rsa: []RSAState{InUseOut}, next: StagingOut, why: "staging output out"},                  // l.249
	{job: Finished, rsa: []RSAState{StagingIn}, next: StoppingStagingIn, why: "job ended during stage-in"},   // l.254
	{job: Finished, rsa: []RSAState{DoneStagingOut, Ready, InUseIn, Aborted, Booted, Unmounted, UnmountBusy}, // l.265
		next: Teardown, why: "tearing down"},
	{job: Finished, rsa: []RSAState{Destroyed, Assigned}, next: Released, why: "RSA nodes released"}, // l.270
	{job: Finished, rsa: []RSAState{Initial, Ineligible}, next: Released, why: "done"},               // l.276
	// Waits: BOOTING, MOUNTING(_IN), TEARDOWN, UNMOUNTING (l.241),
	// STOPPING_STAGING_IN (l.259), STAGING_OUT (l.262), STAGE_OUT_FAILED and
	// TEARDOWN_FAILED (for an administrator). RELEASED is the end.
	// OUTPUT_LOST is an end as RELEASED is, one that keeps saying what
	// happened; a RUNNING job waits in it (what it writes now goes to disk).
}
