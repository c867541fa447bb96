package lifecycle

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// io is a job with input and output directories, started at t0 with the
// thesis' default delay.
func io(s JobState, r RSAState) Job {
	return Job{State: s, RSA: r, HasInput: true, HasOutput: true, Delay: 300 * time.Second, StartedAt: t0}
}
func inOnly(s JobState, r RSAState) Job  { j := io(s, r); j.HasOutput = false; return j }
func outOnly(s JobState, r RSAState) Job { j := io(s, r); j.HasInput = false; return j }

// imaged is j (input=image) with its current RAMDISK built for the image.
func imaged(j Job) Job { j.InputImage, j.Build, j.ImageBuild = true, 1, 1; return j }

// lost is j after one of its RSA nodes was lost.
func lost(j Job) Job { j.NodeLost = true; return j }

// waitedFor is j with a capacity wait of limit, waiting since ago before
// the events of ev.
func waitedFor(j Job, limit, ago time.Duration) Job {
	j.CapacityWait, j.WaitingSince = limit, t0.Add(time.Second-ago)
	return j
}

func ev(k EventKind) Event { return Event{Kind: k, At: t0.Add(time.Second)} }

// stageInAt is j held on deck until its stage-in time at, after the
// events of ev.
func stageInAt(j Job, at time.Duration) Job { j.NotBefore = t0.Add(time.Second + at); return j }

// idleFor is j, which may expire after limit unstarted, last changed ago
// before the events of ev.
func idleFor(j Job, limit, ago time.Duration) Job {
	j.ExpireAfter, j.ChangedAt = limit, t0.Add(time.Second-ago)
	return j
}

type stepCase struct {
	name    string
	job     Job
	event   Event
	wantJob JobState
	wantRSA RSAState
	wantDo  []ActionKind
	ignored bool
}

// cases are written from the thesis, not from the table: each names the
// App. A line or figure it checks.
var cases = []stepCase{
	// ONDECK (Figure 3.2, App. A l.122-165)
	{name: "new on-deck job is assigned (l.137)", job: io(OnDeck, Initial), event: ev(EvTick), wantJob: OnDeck, wantRSA: Initial, wantDo: []ActionKind{Assign}},
	{name: "assigned job boots (l.142)", job: io(OnDeck, Initial), event: ev(EvAssigned), wantJob: OnDeck, wantRSA: Booting, wantDo: []ActionKind{Construct}},
	{name: "no capacity free: the job waits, INITIAL", job: io(OnDeck, Initial), event: ev(EvWaitCapacity), wantJob: OnDeck, wantRSA: Initial},
	{name: "capacity wait over: the job runs from disk", job: waitedFor(io(OnDeck, Initial), time.Minute, 2*time.Minute), event: ev(EvTick), wantJob: OnDeck, wantRSA: Ineligible},
	{name: "stage-in time not come: the job waits, INITIAL", job: stageInAt(io(OnDeck, Initial), time.Minute), event: ev(EvTick), wantJob: OnDeck, wantRSA: Initial},
	{name: "stage-in time come: the job is assigned", job: stageInAt(io(OnDeck, Initial), 0), event: ev(EvTick), wantJob: OnDeck, wantRSA: Initial, wantDo: []ActionKind{Assign}},
	{name: "stage-in time moved to now: the job is assigned", job: stageInAt(io(OnDeck, Initial), time.Hour), event: Event{Kind: EvStageInTime, At: t0.Add(time.Second), NotBefore: t0}, wantJob: OnDeck, wantRSA: Initial, wantDo: []ActionKind{Assign}},
	{name: "stage-in time of an assigned job: too late to matter", job: io(OnDeck, Booting), event: ev(EvStageInTime), ignored: true, wantJob: OnDeck, wantRSA: Booting},
	{name: "unstarted job idle past its expiry ends", job: idleFor(io(OnDeck, Ready), time.Hour, time.Hour), event: ev(EvTick), wantJob: Finished, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "unstarted job idle within its expiry waits", job: idleFor(io(OnDeck, Ready), time.Hour, time.Hour-time.Millisecond), event: ev(EvTick), wantJob: OnDeck, wantRSA: Ready},
	{name: "unstarted job does not expire while it stages in", job: idleFor(io(OnDeck, StagingIn), time.Hour, 2*time.Hour), event: ev(EvTick), wantJob: OnDeck, wantRSA: StagingIn},
	{name: "job too small is ineligible (App. P l.12)", job: io(OnDeck, Initial), event: ev(EvIneligible), wantJob: OnDeck, wantRSA: Ineligible},
	{name: "ineligible job waits (l.161)", job: io(OnDeck, Ineligible), event: ev(EvTick), wantJob: OnDeck, wantRSA: Ineligible},
	{name: "booted job stages in (l.149)", job: io(OnDeck, Booting), event: ev(EvBooted), wantJob: OnDeck, wantRSA: StagingIn, wantDo: []ActionKind{StageIn}},
	{name: "output-only job is ready once booted", job: outOnly(OnDeck, Booting), event: ev(EvBooted), wantJob: OnDeck, wantRSA: Ready},
	{name: "staged job is ready (App. H l.42)", job: io(OnDeck, StagingIn), event: ev(EvStagedIn), wantJob: OnDeck, wantRSA: Ready},
	{name: "failed stage-in aborts", job: io(OnDeck, StagingIn), event: ev(EvStageInFailed), wantJob: OnDeck, wantRSA: Aborted},
	{name: "boot failure abandons", job: io(OnDeck, Booting), event: ev(EvBootFailed), wantJob: OnDeck, wantRSA: Abandoning, wantDo: []ActionKind{Destroy}},
	{name: "boot failure on a lost node rebuilds", job: io(OnDeck, Booting), event: Event{Kind: EvBootLost, Nodes: []string{"rsa2"}}, wantJob: OnDeck, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "boot failure on a lost node, running: rebuilds for output", job: io(Running, Booting), event: Event{Kind: EvBootLost, Nodes: []string{"rsa2"}}, wantJob: Running, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "abandoned RAMDISK destroyed: ineligible", job: io(OnDeck, Abandoning), event: ev(EvDestroyed), wantJob: OnDeck, wantRSA: Ineligible},
	{name: "ready job waits (l.158)", job: io(OnDeck, Ready), event: ev(EvTick), wantJob: OnDeck, wantRSA: Ready},
	{name: "destroyed on-deck job rebuilds", job: io(OnDeck, TeardownFailed), event: ev(EvRetry), wantJob: OnDeck, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "on-deck job destroyed rebuilds", job: io(OnDeck, Teardown), event: ev(EvDestroyed), wantJob: OnDeck, wantRSA: Booting, wantDo: []ActionKind{Construct}},

	// DEMOTED at every rsa-state (Figure 3.3, App. A l.72-120)
	{name: "demoted while booting waits (l.85)", job: io(OnDeck, Booting), event: ev(EvDemoted), wantJob: Demoted, wantRSA: Booting},
	{name: "demoted job booted: teardown", job: io(Demoted, Booting), event: ev(EvBooted), wantJob: Demoted, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "demoted in teardown waits (l.88)", job: io(Demoted, Teardown), event: ev(EvTick), wantJob: Demoted, wantRSA: Teardown},
	{name: "demoted when booted tears down (l.91)", job: io(OnDeck, Booted), event: ev(EvDemoted), wantJob: Demoted, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "demoted when ready tears down (l.91)", job: io(OnDeck, Ready), event: ev(EvDemoted), wantJob: Demoted, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "demoted when aborted tears down (l.91)", job: io(OnDeck, Aborted), event: ev(EvDemoted), wantJob: Demoted, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "demoted while staging stops it (l.97)", job: io(OnDeck, StagingIn), event: ev(EvDemoted), wantJob: Demoted, wantRSA: StoppingStagingIn, wantDo: []ActionKind{StopStageIn}},
	{name: "stopped stage-in of demoted job: teardown (App. I)", job: io(Demoted, StoppingStagingIn), event: ev(EvStageInStopped), wantJob: Demoted, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "demoted and destroyed: released (l.106)", job: io(Demoted, Teardown), event: ev(EvDestroyed), wantJob: Demoted, wantRSA: Released},
	{name: "demoted when assigned: released (l.106)", job: io(OnDeck, Assigned), event: ev(EvDemoted), wantJob: Demoted, wantRSA: Released},
	{name: "demoted when ineligible: released (l.114)", job: io(OnDeck, Ineligible), event: ev(EvDemoted), wantJob: Demoted, wantRSA: Released},
	{name: "demoted when initial: released (l.114)", job: io(OnDeck, Initial), event: ev(EvDemoted), wantJob: Demoted, wantRSA: Released},
	{name: "demoted while abandoning waits", job: io(OnDeck, Abandoning), event: ev(EvDemoted), wantJob: Demoted, wantRSA: Abandoning},
	{name: "demoted stays demoted until cleanup (l.30)", job: io(Demoted, Teardown), event: ev(EvOnDeck), ignored: true, wantJob: Demoted, wantRSA: Teardown},
	{name: "demoted and cleaned: on deck again", job: io(Demoted, Released), event: ev(EvOnDeck), wantJob: OnDeck, wantRSA: Initial, wantDo: []ActionKind{Assign}},
	{name: "running job cannot be demoted", job: io(Running, InUseIn), event: ev(EvDemoted), ignored: true, wantJob: Running, wantRSA: InUseIn},

	// RUNNING (Figure 3.4, App. A l.167-232; App. K)
	{name: "started with input ready: mount in (App. K l.20)", job: io(OnDeck, Ready), event: ev(EvStarted), wantJob: Running, wantRSA: MountingIn, wantDo: []ActionKind{MountIn}},
	{name: "output-only job mounts for output at start (App. L l.29)", job: outOnly(OnDeck, Ready), event: ev(EvStarted), wantJob: Running, wantRSA: Mounting, wantDo: []ActionKind{MountOut}},
	{name: "mounted for input", job: io(Running, MountingIn), event: ev(EvMounted), wantJob: Running, wantRSA: InUseIn},
	{name: "input mount failed: read from disk, rebuild for output", job: io(Running, MountingIn), event: ev(EvMountFailed), wantJob: Running, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "in use before the delay: wait (l.196)", job: io(Running, InUseIn), event: Event{Kind: EvTick, At: t0.Add(299 * time.Second)}, wantJob: Running, wantRSA: InUseIn},
	{name: "delay over: unmount (l.196-201)", job: io(Running, InUseIn), event: Event{Kind: EvTick, At: t0.Add(300 * time.Second)}, wantJob: Running, wantRSA: Unmounting, wantDo: []ActionKind{Unmount}},
	{name: "input-only job stays in use (l.192)", job: inOnly(Running, InUseIn), event: Event{Kind: EvTick, At: t0.Add(time.Hour)}, wantJob: Running, wantRSA: InUseIn},
	{name: "unmounted: rebuild (l.217)", job: io(Running, Unmounting), event: ev(EvUnmounted), wantJob: Running, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "input busy: stay on input (footnote 16)", job: io(Running, Unmounting), event: ev(EvUnmountBusy), wantJob: Running, wantRSA: UnmountBusy},
	{name: "destroyed: rebuild (l.179)", job: io(Running, Teardown), event: ev(EvDestroyed), wantJob: Running, wantRSA: Booting, wantDo: []ActionKind{Construct}},
	{name: "rebuilt: mount for output (l.226)", job: io(Running, Booting), event: ev(EvBooted), wantJob: Running, wantRSA: Mounting, wantDo: []ActionKind{MountOut}},
	{name: "mounted for output", job: io(Running, Mounting), event: ev(EvMounted), wantJob: Running, wantRSA: InUseOut},
	{name: "output mount failed: what reached RAM is staged out", job: io(Running, Mounting), event: ev(EvMountFailed), wantJob: Running, wantRSA: InUseOut},
	{name: "in use for output waits (l.206)", job: io(Running, InUseOut), event: ev(EvTick), wantJob: Running, wantRSA: InUseOut},
	{name: "started without state: assign (App. K l.27, l.174)", job: io(Demoted, Released), event: ev(EvStarted), wantJob: Running, wantRSA: Initial, wantDo: []ActionKind{Assign}},
	{name: "started while demoted and tearing down", job: io(Demoted, Teardown), event: ev(EvStarted), wantJob: Running, wantRSA: Teardown},
	{name: "started during stage-in: stop it (l.209)", job: io(OnDeck, StagingIn), event: ev(EvStarted), wantJob: Running, wantRSA: StoppingStagingIn, wantDo: []ActionKind{StopStageIn}},
	{name: "started while booting waits (App. K l.16)", job: io(OnDeck, Booting), event: ev(EvStarted), wantJob: Running, wantRSA: Booting},
	{name: "image job started while its image RAMDISK booted: rebuilt for output", job: imaged(io(Running, Booting)), event: ev(EvBooted), wantJob: Running, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "input-only job started while booting: teardown", job: inOnly(Running, Booting), event: ev(EvBooted), wantJob: Running, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "input-only job destroyed while running: released", job: inOnly(Running, Teardown), event: ev(EvDestroyed), wantJob: Running, wantRSA: Released},
	{name: "running, assigned (l.179)", job: io(Running, Initial), event: ev(EvAssigned), wantJob: Running, wantRSA: Booting, wantDo: []ActionKind{Construct}},
	{name: "running, assigned, no output: released", job: inOnly(Running, Initial), event: ev(EvAssigned), wantJob: Running, wantRSA: Released},
	{name: "running, ineligible (l.184)", job: io(Running, Initial), event: ev(EvIneligible), wantJob: Running, wantRSA: Ineligible},

	// FINISHED (Figure 3.5, App. A l.234-283; App. N)
	{name: "finished in use for output: stage out (l.249)", job: io(Running, InUseOut), event: ev(EvFinished), wantJob: Finished, wantRSA: StagingOut, wantDo: []ActionKind{StageOut}},
	{name: "staged out: teardown (l.265)", job: io(Finished, StagingOut), event: ev(EvStagedOut), wantJob: Finished, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "stage-out failed: keep output", job: io(Finished, StagingOut), event: ev(EvStageOutFailed), wantJob: Finished, wantRSA: StageOutFailed},
	{name: "failed stage-out waits for an administrator", job: io(Finished, StageOutFailed), event: ev(EvTick), wantJob: Finished, wantRSA: StageOutFailed},
	{name: "retry failed stage-out", job: io(Finished, StageOutFailed), event: ev(EvRetry), wantJob: Finished, wantRSA: StagingOut, wantDo: []ActionKind{StageOut}},
	{name: "discard failed stage-out", job: io(Finished, StageOutFailed), event: ev(EvDiscard), wantJob: Finished, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "discard needs a failed stage-out", job: io(Running, InUseOut), event: ev(EvDiscard), ignored: true, wantJob: Running, wantRSA: InUseOut},
	{name: "destroyed after job end: released (l.270)", job: io(Finished, Teardown), event: ev(EvDestroyed), wantJob: Finished, wantRSA: Released},
	{name: "teardown failed", job: io(Finished, Teardown), event: ev(EvDestroyFailed), wantJob: Finished, wantRSA: TeardownFailed},
	{name: "retry failed teardown", job: io(Finished, TeardownFailed), event: ev(EvRetry), wantJob: Finished, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "finished in use for input: teardown (l.265)", job: io(Running, InUseIn), event: ev(EvFinished), wantJob: Finished, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "finished while input busy: teardown", job: io(Running, UnmountBusy), event: ev(EvFinished), wantJob: Finished, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "finished while ready: teardown (l.265)", job: io(OnDeck, Ready), event: ev(EvFinished), wantJob: Finished, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "finished while booted: teardown (l.265)", job: io(OnDeck, Booted), event: ev(EvFinished), wantJob: Finished, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "finished when aborted: teardown (l.265)", job: io(OnDeck, Aborted), event: ev(EvFinished), wantJob: Finished, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "finished during stage-in: stop it (l.254)", job: io(OnDeck, StagingIn), event: ev(EvFinished), wantJob: Finished, wantRSA: StoppingStagingIn, wantDo: []ActionKind{StopStageIn}},
	{name: "finished stage-in stopped: teardown", job: io(Finished, StoppingStagingIn), event: ev(EvStageInStopped), wantJob: Finished, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "stage-in ended on its own while stopping", job: io(Finished, StoppingStagingIn), event: ev(EvStagedIn), wantJob: Finished, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "stage-in failed while stopping", job: io(Running, StoppingStagingIn), event: ev(EvStageInFailed), wantJob: Running, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "finished when assigned: released (l.270)", job: io(OnDeck, Assigned), event: ev(EvFinished), wantJob: Finished, wantRSA: Released},
	{name: "finished when initial: released (l.276)", job: io(OnDeck, Initial), event: ev(EvFinished), wantJob: Finished, wantRSA: Released},
	{name: "finished when ineligible: released (l.276)", job: io(Running, Ineligible), event: ev(EvFinished), wantJob: Finished, wantRSA: Released},
	{name: "finished while mounting in (App. L l.42)", job: io(Running, MountingIn), event: ev(EvFinished), wantJob: Finished, wantRSA: MountingIn},
	{name: "mounted in after finish: unmount (App. L l.45, l.244)", job: io(Finished, MountingIn), event: ev(EvMounted), wantJob: Finished, wantRSA: Unmounting, wantDo: []ActionKind{Unmount}},
	{name: "unmounted after finish: teardown", job: io(Finished, Unmounting), event: ev(EvUnmounted), wantJob: Finished, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "busy after finish: teardown detaches", job: io(Finished, Unmounting), event: ev(EvUnmountBusy), wantJob: Finished, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "mounted out after finish: stage out, never drop output", job: io(Finished, Mounting), event: ev(EvMounted), wantJob: Finished, wantRSA: StagingOut, wantDo: []ActionKind{StageOut}},
	{name: "finished job is done", job: io(Finished, Released), event: ev(EvTick), wantJob: Finished, wantRSA: Released},
	{name: "finished twice is ignored", job: io(Finished, StagingOut), event: ev(EvFinished), ignored: true, wantJob: Finished, wantRSA: StagingOut},
	{name: "cancelled while demoted", job: io(Demoted, Released), event: ev(EvFinished), wantJob: Finished, wantRSA: Released},

	// Stale or duplicate completions change nothing.
	{name: "stale booted", job: io(OnDeck, Ready), event: ev(EvBooted), ignored: true, wantJob: OnDeck, wantRSA: Ready},
	{name: "stale staged-out", job: io(Finished, Released), event: ev(EvStagedOut), ignored: true, wantJob: Finished, wantRSA: Released},

	// Recovery
	{name: "resume re-runs stage-out", job: io(Finished, StagingOut), event: ev(EvResume), wantJob: Finished, wantRSA: StagingOut, wantDo: []ActionKind{StageOut}},
	{name: "resume re-runs construct", job: io(OnDeck, Booting), event: ev(EvResume), wantJob: OnDeck, wantRSA: Booting, wantDo: []ActionKind{Construct}},
	{name: "resume re-runs stop of stage-in", job: io(Demoted, StoppingStagingIn), event: ev(EvResume), wantJob: Demoted, wantRSA: StoppingStagingIn, wantDo: []ActionKind{StopStageIn}},
	{name: "resume of a waiting job only re-evaluates", job: io(OnDeck, Ready), event: ev(EvResume), wantJob: OnDeck, wantRSA: Ready},
	// A RAMDISK gone after a reboot of the RSA host.
	{name: "lost with output in RAM: the output is lost, no RAM held", job: io(Finished, StageOutFailed), event: ev(EvRamdiskLost), wantJob: Finished, wantRSA: OutputLost},
	{name: "output lost, then the job ends: done", job: io(Running, OutputLost), event: ev(EvFinished), wantJob: Finished, wantRSA: OutputLost},
	{name: "lost while the job writes output: it waits without RAM", job: io(Running, InUseOut), event: ev(EvRamdiskLost), wantJob: Running, wantRSA: OutputLost},
	{name: "lost input RAMDISK on deck: rebuilt and staged again", job: io(OnDeck, Ready), event: ev(EvRamdiskLost), wantJob: OnDeck, wantRSA: Booting, wantDo: []ActionKind{Construct}},
	{name: "lost after a verified stage-out: released", job: io(Finished, TeardownFailed), event: ev(EvRamdiskLost), wantJob: Finished, wantRSA: Released},
	{name: "lost while being built: Construct runs again", job: io(OnDeck, Booting), event: ev(EvRamdiskLost), wantJob: OnDeck, wantRSA: Booting, ignored: true},

	// A job its prolog let go runs on disk: never mounted over.
	{name: "started without RSA, nothing built: runs without RSA", job: io(OnDeck, Initial), event: ev(EvStartedWithoutRSA), wantJob: Running, wantRSA: Ineligible},
	{name: "started without RSA, input ready: RAMDISK let go", job: io(OnDeck, Ready), event: ev(EvStartedWithoutRSA), wantJob: Running, wantRSA: Abandoning, wantDo: []ActionKind{Destroy}},
	{name: "started without RSA during stage-in: stopped", job: io(OnDeck, StagingIn), event: ev(EvStartedWithoutRSA), wantJob: OnDeck, wantRSA: StoppingStagingIn, wantDo: []ActionKind{StopStageIn}},
	{name: "started without RSA while built: reported again after", job: io(OnDeck, Booting), event: ev(EvStartedWithoutRSA), wantJob: OnDeck, wantRSA: Booting, ignored: true},

	// An RSA node lost: rebuilt elsewhere before the job runs, degraded
	// while it runs, never verified over a part. READY is a promise to the
	// scheduler: a loss there never tears down a RAMDISK that still serves
	// every file, and one that lost files is never mounted.
	{name: "node lost when ready, replicas serve every file: stays ready, degraded", job: io(OnDeck, Ready), event: Event{Kind: EvNodeLost, At: t0, Nodes: []string{"rsa2"}, Whole: true}, wantJob: OnDeck, wantRSA: Ready},
	{name: "node lost when ready with files: never mounted, rebuilt on deck", job: io(OnDeck, Ready), event: ev(EvNodeLost), wantJob: OnDeck, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "degraded ready job starts: its input is mounted", job: lost(io(OnDeck, Ready)), event: ev(EvStarted), wantJob: Running, wantRSA: MountingIn, wantDo: []ActionKind{MountIn}},
	{name: "degraded input switched: rebuilt on live nodes for output", job: lost(io(Running, Teardown)), event: ev(EvDestroyed), wantJob: Running, wantRSA: Initial, wantDo: []ActionKind{Assign}},
	{name: "node lost when built: torn down to rebuild", job: io(OnDeck, Booted), event: ev(EvNodeLost), wantJob: OnDeck, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "node lost when demoted and ready: torn down", job: io(Demoted, Ready), event: Event{Kind: EvNodeLost, At: t0, Whole: true}, wantJob: Demoted, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "stage-in whose check saw a part lost but every file served: ready, degraded", job: io(OnDeck, StagingIn), event: Event{Kind: EvStagedIn, At: t0, Nodes: []string{"rsa2"}}, wantJob: OnDeck, wantRSA: Ready},
	{name: "node lost during stage-in, replicas hold every file: goes on", job: io(OnDeck, StagingIn), event: Event{Kind: EvNodeLost, At: t0, Nodes: []string{"rsa2"}, Whole: true}, wantJob: OnDeck, wantRSA: StagingIn},
	{name: "node lost during stage-in: stopped", job: io(OnDeck, StagingIn), event: ev(EvNodeLost), wantJob: OnDeck, wantRSA: StoppingStagingIn, wantDo: []ActionKind{StopStageIn}},
	{name: "stage-in stopped after a lost node: rebuilt", job: lost(io(OnDeck, StoppingStagingIn)), event: ev(EvStageInFailed), wantJob: OnDeck, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "torn down after a lost node: assigned anew", job: lost(io(OnDeck, Teardown)), event: ev(EvDestroyed), wantJob: OnDeck, wantRSA: Initial, wantDo: []ActionKind{Assign}},
	{name: "assigned anew: built on the new nodes", job: lost(io(OnDeck, Initial)), event: ev(EvAssigned), wantJob: OnDeck, wantRSA: Booting, wantDo: []ActionKind{Construct}},
	{name: "stage-in that found a part lost: rebuilt", job: io(OnDeck, StagingIn), event: Event{Kind: EvStageInFailed, At: t0, Nodes: []string{"rsa2"}}, wantJob: OnDeck, wantRSA: Teardown, wantDo: []ActionKind{Destroy}},
	{name: "failed stage-in without a lost node waits", job: io(OnDeck, StoppingStagingIn), event: ev(EvStageInFailed), wantJob: OnDeck, wantRSA: Aborted},
	{name: "node lost while reading input: switched now, the input path back on disk", job: io(Running, InUseIn), event: ev(EvNodeLost), wantJob: Running, wantRSA: Unmounting, wantDo: []ActionKind{Unmount}},
	{name: "node lost while reading input, replicas serve every file: degraded, goes on", job: io(Running, InUseIn), event: Event{Kind: EvNodeLost, At: t0, Nodes: []string{"rsa2"}, Whole: true}, wantJob: Running, wantRSA: InUseIn},
	{name: "input-only job loses a node: unmounted now too", job: inOnly(Running, InUseIn), event: ev(EvNodeLost), wantJob: Running, wantRSA: Unmounting, wantDo: []ActionKind{Unmount}},
	{name: "input-only job whose lost RAMDISK is gone: released, nothing to rebuild", job: lost(inOnly(Running, Teardown)), event: ev(EvDestroyed), wantJob: Running, wantRSA: Released},
	{name: "job with output whose lost RAMDISK is gone: assigned anew", job: lost(io(Running, Teardown)), event: ev(EvDestroyed), wantJob: Running, wantRSA: Initial, wantDo: []ActionKind{Assign}},
	{name: "node lost while writing output: goes on", job: io(Running, InUseOut), event: ev(EvNodeLost), wantJob: Running, wantRSA: InUseOut},
	{name: "switch whose teardown missed a node: rebuilt on live nodes", job: io(Running, Teardown), event: Event{Kind: EvDestroyed, Nodes: []string{"rsa2"}}, wantJob: Running, wantRSA: Initial, wantDo: []ActionKind{Assign}},
	{name: "switch after a lost node: rebuilt on live nodes", job: lost(io(Running, Teardown)), event: ev(EvDestroyed), wantJob: Running, wantRSA: Initial, wantDo: []ActionKind{Assign}},
	{name: "node lost during stage-out: its check decides", job: io(Finished, StagingOut), event: ev(EvNodeLost), wantJob: Finished, wantRSA: StagingOut},
	{name: "node lost after the job: released as ever", job: lost(io(Finished, Teardown)), event: ev(EvDestroyed), wantJob: Finished, wantRSA: Released},
}

func actionKinds(as []Action) []ActionKind {
	var ks []ActionKind
	for _, a := range as {
		ks = append(ks, a.Kind)
	}
	return ks
}

func TestStep(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := Step(c.job, c.event)
			if out.Ignored != c.ignored {
				t.Errorf("ignored = %v, want %v", out.Ignored, c.ignored)
			}
			if out.Job.State != c.wantJob || out.Job.RSA != c.wantRSA {
				t.Errorf("got %s/%s, want %s/%s (changes %v)", out.Job.State, out.Job.RSA, c.wantJob, c.wantRSA, out.Changes)
			}
			if got := actionKinds(out.Actions); !slices.Equal(got, c.wantDo) {
				t.Errorf("actions = %v, want %v", got, c.wantDo)
			}
		})
	}
}

// TestEveryRowCovered: each row of both tables is taken by at least one of
// the hand-written cases above, so no row is untested. Step says which
// rows it took.
// The build an input image job enters BOOTING for before it starts is its
// image's; one for output after it started is not.
func TestImageBuild(t *testing.T) {
	for _, c := range []struct {
		name      string
		job       Job
		image     bool
		wantImage int
	}{
		{"on deck, image", io(OnDeck, Assigned), true, 1},
		{"on deck, files", io(OnDeck, Assigned), false, 0},
		{"running, for output", io(Running, Assigned), true, 0},
		{"output only", outOnly(OnDeck, Assigned), true, 0},
	} {
		j := c.job
		j.InputImage = c.image
		out := Step(j, ev(EvTick))
		if out.Job.RSA != Booting || out.Job.Build != 1 || out.Job.ImageBuild != c.wantImage {
			t.Errorf("%s: %s build %d image build %d, want BOOTING build 1 image build %d", c.name, out.Job.RSA, out.Job.Build, out.Job.ImageBuild, c.wantImage)
		}
		if out.Job.HoldsImage() != (c.wantImage != 0) {
			t.Errorf("%s: HoldsImage %v", c.name, out.Job.HoldsImage())
		}
	}
}

// The build made for a private-output job's output (the job running, or
// without input) is its private one; its input's build is not.
func TestPrivateBuild(t *testing.T) {
	for _, c := range []struct {
		name string
		job  Job
		want bool
	}{
		{"on deck, with input", io(OnDeck, Assigned), false},
		{"on deck, output only", outOnly(OnDeck, Assigned), true},
		{"running, rebuilt for output", io(Running, Assigned), true},
	} {
		j := c.job
		j.OutputPrivate = true
		out := Step(j, ev(EvTick))
		if out.Job.RSA != Booting || out.Job.HoldsPrivateOutput() != c.want || out.Job.HoldsImage() {
			t.Errorf("%s: %s, HoldsPrivateOutput %v (want %v), HoldsImage %v", c.name, out.Job.RSA, out.Job.HoldsPrivateOutput(), c.want, out.Job.HoldsImage())
		}
	}
}

// TestPrivateLost: a part of a private-output RAMDISK lost with no copy
// marks its images as never to be verified; a loss its replicas cover, or
// one of a RAMDISK that is no private output's, does not; a new build
// clears it.
func TestPrivateLost(t *testing.T) {
	private := Job{State: Running, RSA: InUseOut, HasOutput: true, OutputPrivate: true, Build: 2, PrivateBuild: 2}
	shared := private
	shared.OutputPrivate, shared.PrivateBuild = false, 0
	staging := private
	staging.State, staging.RSA = Finished, StagingOut
	for _, c := range []struct {
		name string
		job  Job
		ev   Event
		want bool
	}{
		{"lost while written", private, Event{Kind: EvNodeLost, Nodes: []string{"rsa2"}}, true},
		{"lost, replicas hold it", private, Event{Kind: EvNodeLost, Nodes: []string{"rsa2"}, Whole: true}, false},
		{"lost, shared output", shared, Event{Kind: EvNodeLost, Nodes: []string{"rsa2"}}, false},
		{"stage-out found it lost", staging, Event{Kind: EvStageOutFailed, Nodes: []string{"rsa2"}}, true},
		{"stage-out failed otherwise", staging, Event{Kind: EvStageOutFailed}, false},
	} {
		out := Step(c.job, c.ev)
		if out.Job.PrivateLost != c.want {
			t.Errorf("%s: PrivateLost %v, want %v (%s)", c.name, out.Job.PrivateLost, c.want, out.Job.RSA)
		}
	}
	lost := private
	lost.State, lost.RSA, lost.PrivateLost = OnDeck, Assigned, true
	if out := Step(lost, ev(EvTick)); out.Job.RSA != Booting || out.Job.PrivateLost {
		t.Errorf("a new build: %s, PrivateLost %v", out.Job.RSA, out.Job.PrivateLost)
	}
}

func TestEveryRowCovered(t *testing.T) {
	evHit := make([]bool, len(eventTable))
	passHit := make([]bool, len(passTable))
	for _, c := range cases {
		for _, row := range Step(c.job, c.event).Rows {
			var kind string
			var i int
			if _, err := fmt.Sscanf(row, "%s %d", &kind, &i); err != nil {
				t.Fatalf("row %q: %v", row, err)
			}
			switch kind {
			case "event":
				evHit[i] = true
			case "pass":
				passHit[i] = true
			}
		}
	}
	for i, hit := range evHit {
		if !hit {
			r := eventTable[i]
			t.Errorf("event row not covered: %s %v %v -> %s/%s", r.on, r.job, r.rsa, r.nextJob, r.nextRSA)
		}
	}
	for i, hit := range passHit {
		if !hit {
			r := passTable[i]
			t.Errorf("pass row not covered: %s %v -> %s (%s)", r.job, r.rsa, r.next, r.why)
		}
	}
}

// run feeds events one by one, completing actions as the daemon would.
func run(t *testing.T, j Job, events ...Event) Job {
	t.Helper()
	for _, e := range events {
		out := Step(j, e)
		if out.Ignored {
			t.Fatalf("%s/%s: event %s ignored", j.State, j.RSA, e.Kind)
		}
		j = out.Job
	}
	return j
}

func at(k EventKind, d time.Duration) Event { return Event{Kind: k, At: t0.Add(d)} }

// sec is an event n seconds after t0.
func sec(k EventKind, n int) Event { return at(k, time.Duration(n)*time.Second) }

func TestScenarios(t *testing.T) {
	want := func(t *testing.T, j Job, s JobState, r RSAState) {
		t.Helper()
		if j.State != s || j.RSA != r {
			t.Fatalf("got %s/%s, want %s/%s", j.State, j.RSA, s, r)
		}
	}
	t.Run("ideal life", func(t *testing.T) {
		j := Job{State: OnDeck, RSA: Initial, HasInput: true, HasOutput: true, Delay: 10 * time.Second}
		j = run(t, j, sec(EvAssigned, 0), sec(EvBooted, 1), sec(EvStagedIn, 2), sec(EvStarted, 3), sec(EvMounted, 4))
		want(t, j, Running, InUseIn)
		j = run(t, j, sec(EvTick, 13))
		want(t, j, Running, InUseIn) // the delay counts from the mount (4 s)
		j = run(t, j, sec(EvTick, 14), sec(EvUnmounted, 15), sec(EvDestroyed, 16), sec(EvBooted, 17), sec(EvMounted, 18))
		want(t, j, Running, InUseOut)
		j = run(t, j, sec(EvFinished, 20), sec(EvStagedOut, 30), sec(EvDestroyed, 31))
		want(t, j, Finished, Released)
		if !j.Done() {
			t.Fatal("not done")
		}
	})
	t.Run("mounts that outlast the delay: the job reads its input for the whole delay", func(t *testing.T) {
		j := io(OnDeck, Ready)
		j.Delay = 10 * time.Second
		j = run(t, j, sec(EvStarted, 0), sec(EvMounted, 15))
		want(t, j, Running, InUseIn)
		j = run(t, j, sec(EvTick, 24))
		want(t, j, Running, InUseIn)
		j = run(t, j, sec(EvTick, 25))
		want(t, j, Running, Unmounting)
	})
	t.Run("job starts before stage-in ends (App. K)", func(t *testing.T) {
		j := io(OnDeck, StagingIn)
		j = run(t, j, sec(EvStarted, 0), sec(EvStageInStopped, 1), sec(EvDestroyed, 2), sec(EvBooted, 3), sec(EvMounted, 4))
		want(t, j, Running, InUseOut)
	})
	t.Run("job finishes while mounting (App. L)", func(t *testing.T) {
		j := io(OnDeck, Ready)
		j = run(t, j, sec(EvStarted, 0), sec(EvFinished, 1), sec(EvMounted, 2), sec(EvUnmounted, 3), sec(EvDestroyed, 4))
		want(t, j, Finished, Released)
	})
	t.Run("job finishes during stage-in", func(t *testing.T) {
		j := io(OnDeck, StagingIn)
		j = run(t, j, sec(EvFinished, 0), sec(EvStageInStopped, 1), sec(EvDestroyed, 2))
		want(t, j, Finished, Released)
	})
	t.Run("demoted during stage-in, then on deck again", func(t *testing.T) {
		j := io(OnDeck, StagingIn)
		j = run(t, j, sec(EvDemoted, 0), sec(EvStageInStopped, 1), sec(EvDestroyed, 2), sec(EvOnDeck, 3))
		want(t, j, OnDeck, Initial)
	})
	t.Run("stage-out fails, retried, succeeds", func(t *testing.T) {
		j := io(Running, InUseOut)
		j = run(t, j, sec(EvFinished, 0), sec(EvStageOutFailed, 1), sec(EvRetry, 2), sec(EvStagedOut, 3), sec(EvDestroyed, 4))
		want(t, j, Finished, Released)
	})
}

// reachable explores every state the machine can reach from a new job under
// every event, for all four kinds of job.
func reachable(visit func(from Job, e Event, out Outcome)) {
	kinds := []Event{}
	for _, k := range []EventKind{EvOnDeck, EvDemoted, EvStarted, EvFinished, EvAssigned, EvIneligible, EvBooted,
		EvBootFailed, EvBootLost, EvStagedIn, EvStageInFailed, EvStageInStopped, EvMounted, EvMountFailed, EvUnmounted,
		EvUnmountBusy, EvStagedOut, EvStageOutFailed, EvDestroyed, EvDestroyFailed, EvResume, EvRetry, EvDiscard, EvRamdiskLost} {
		kinds = append(kinds, at(k, time.Second))
	}
	kinds = append(kinds, at(EvTick, time.Second), at(EvTick, time.Hour))
	type key struct {
		s      JobState
		r      RSAState
		in, ou bool
	}
	for _, start := range []Job{io(OnDeck, Initial), inOnly(OnDeck, Initial), outOnly(OnDeck, Initial), {State: OnDeck, RSA: Initial}} {
		start.StartedAt = time.Time{}
		seen := map[key]bool{}
		queue := []Job{start}
		for len(queue) > 0 {
			j := queue[0]
			queue = queue[1:]
			k := key{j.State, j.RSA, j.HasInput, j.HasOutput}
			if seen[k] {
				continue
			}
			seen[k] = true
			for _, e := range kinds {
				out := Step(j, e)
				visit(j, e, out)
				queue = append(queue, out.Job)
			}
		}
	}
}

// TestOutputNeverDropped: once the RAMDISK may hold output, the only way out
// without a verified stage-out is an administrator's Discard, or the
// RAMDISK's loss, which the job's state then says.
func TestOutputNeverDropped(t *testing.T) {
	reachable(func(from Job, e Event, out Outcome) {
		// The job may write into the output mount the moment it exists.
		if from.RSA == Mounting && e.Kind == EvMounted && !HoldsOutput(out.Job.RSA) {
			t.Errorf("%s/%s --%s--> %s/%s: output mount not kept for stage-out", from.State, from.RSA, e.Kind, out.Job.State, out.Job.RSA)
		}
		if !HoldsOutput(from.RSA) || HoldsOutput(out.Job.RSA) {
			return
		}
		if out.Job.RSA == DoneStagingOut || (out.Job.RSA == Teardown && e.Kind == EvDiscard) {
			return
		}
		// Lost is not dropped: the RAMDISK is already gone, and the job
		// says so (OUTPUT_LOST, then RELEASED once it ended).
		if e.Kind == EvRamdiskLost && slices.ContainsFunc(out.Changes, func(c Change) bool { return c.ToRSA == OutputLost }) {
			return
		}
		// DONE_STAGING_OUT moves on to TEARDOWN in the same step.
		if e.Kind == EvStagedOut && out.Job.RSA == Teardown {
			return
		}
		t.Errorf("%s/%s --%s--> %s/%s drops output", from.State, from.RSA, e.Kind, out.Job.State, out.Job.RSA)
	})
}

// TestNoSilentCycles: every step ends before the pass bound, and every entry
// into an in-progress state starts that state's work.
func TestNoSilentCycles(t *testing.T) {
	reachable(func(from Job, e Event, out Outcome) {
		if len(out.Changes) >= maxPasses {
			t.Errorf("%s/%s --%s--> %d changes", from.State, from.RSA, e.Kind, len(out.Changes))
		}
		if a, ok := work[out.Job.RSA]; ok && out.Job.RSA != from.RSA {
			if !slices.Contains(actionKinds(out.Actions), a) {
				t.Errorf("%s/%s --%s--> %s without %s", from.State, from.RSA, e.Kind, out.Job.RSA, a)
			}
		}
		if len(out.Actions) > 1 {
			t.Errorf("%s/%s --%s--> more than one action %v", from.State, from.RSA, e.Kind, out.Actions)
		}
	})
}

// TestEveryJobEnds: from every reachable state, finishing the job and
// completing actions successfully reaches FINISHED/RELEASED.
func TestEveryJobEnds(t *testing.T) {
	success := map[ActionKind]EventKind{
		Assign: EvAssigned, Construct: EvBooted, StageIn: EvStagedIn, StopStageIn: EvStageInStopped,
		MountIn: EvMounted, MountOut: EvMounted, Unmount: EvUnmounted, StageOut: EvStagedOut, Destroy: EvDestroyed,
	}
	reachable(func(_ Job, _ Event, out Outcome) {
		j := out.Job
		acts := out.Actions
		o := Step(j, at(EvFinished, time.Hour))
		if !o.Ignored {
			j, acts = o.Job, o.Actions
		}
		if j.RSA == StageOutFailed || j.RSA == TeardownFailed {
			o = Step(j, at(EvRetry, time.Hour))
			j, acts = o.Job, o.Actions
		}
		for range 20 {
			if j.Done() {
				return
			}
			if len(acts) == 0 {
				if a, ok := work[j.RSA]; ok {
					acts = []Action{{Kind: a}}
				} else {
					t.Errorf("stuck at %s/%s", j.State, j.RSA)
					return
				}
			}
			o = Step(j, at(success[acts[0].Kind], time.Hour))
			j, acts = o.Job, o.Actions
		}
		t.Errorf("did not end: %s/%s", j.State, j.RSA)
	})
}

func TestEveryStateReachable(t *testing.T) {
	seen := map[RSAState]bool{}
	reachable(func(_ Job, _ Event, out Outcome) {
		for _, c := range out.Changes {
			seen[c.ToRSA] = true
		}
	})
	for _, s := range AllRSAStates {
		if !seen[s] {
			t.Errorf("rsa-state %s unreachable", s)
		}
	}
}

// TestStartedBeforeInputInRAM: a job Slurm starts before its input is in
// RAM (stage-in running, or a RAMDISK being rebuilt after a lost node)
// reads its input from disk, and its log says so; a job with its input
// ready, or with none, is not told that.
func TestStartedBeforeInputInRAM(t *testing.T) {
	const disk = "the job reads its input from disk"
	for _, c := range []struct {
		name string
		job  Job
		want bool
	}{
		{"stage-in running", io(OnDeck, StagingIn), true},
		{"rebuilt after a lost node", lost(io(OnDeck, Teardown)), true},
		{"being built", io(OnDeck, Booting), true},
		{"not yet assigned", io(OnDeck, Initial), true},
		{"input ready", io(OnDeck, Ready), false},
		{"no input", outOnly(OnDeck, Teardown), false},
		{"not eligible", io(OnDeck, Ineligible), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := Step(c.job, ev(EvStarted))
			if out.Ignored || out.Job.State != Running {
				t.Fatalf("started: job-state %s (ignored %v), want RUNNING", out.Job.State, out.Ignored)
			}
			said := false
			for _, ch := range out.Changes {
				said = said || strings.Contains(ch.Why, disk)
			}
			if said != c.want {
				t.Errorf("log says %q: %v, want %v (%v)", disk, said, c.want, out.Changes)
			}
		})
	}
}

// The waits that end with time are the table's: what holds a job, and
// what ends the hold, are in the outcome.
func TestTimedWaits(t *testing.T) {
	held := Step(stageInAt(io(OnDeck, Initial), time.Minute), ev(EvTick))
	if held.Hold != HoldStageInTime || len(held.Actions) > 0 || len(held.Changes) > 0 {
		t.Errorf("before its stage-in time: hold %q, actions %v, changes %v; want held for the stage-in time, nothing else", held.Hold, held.Actions, held.Changes)
	}
	moved := Step(held.Job, Event{Kind: EvStageInTime, At: t0.Add(time.Second), NotBefore: t0.Add(time.Hour)})
	if !moved.Job.NotBefore.Equal(t0.Add(time.Hour)) || moved.Hold != HoldStageInTime {
		t.Errorf("stage-in time moved: not before %v, hold %q; want the new time, still held", moved.Job.NotBefore, moved.Hold)
	}
	if free := Step(io(OnDeck, Initial), ev(EvTick)); free.Hold != "" {
		t.Errorf("a job without a stage-in time is held for %q", free.Hold)
	}
	expired := Step(idleFor(io(OnDeck, Initial), time.Hour, time.Hour), ev(EvTick))
	if expired.Job.State != Finished || expired.Job.RSA != Released || expired.Failure != FailureExpired ||
		!strings.Contains(expired.Job.Error, "limits.unstarted_expiry") || !expired.Job.FinishedAt.Equal(t0.Add(time.Second)) {
		t.Errorf("expired: %s/%s, failure %q, error %q, finished %v; want FINISHED/RELEASED, expired, the setting named, the tick's time",
			expired.Job.State, expired.Job.RSA, expired.Failure, expired.Job.Error, expired.Job.FinishedAt)
	}
	if never := Step(idleFor(io(OnDeck, Ready), 0, 1000*time.Hour), ev(EvTick)); never.Job.State != OnDeck {
		t.Errorf("a job without an expiry expired: %s", never.Job.State)
	}
	if !TimeSensitive(idleFor(io(OnDeck, Ready), time.Hour, 0)) || TimeSensitive(io(OnDeck, Ready)) {
		t.Error("TimeSensitive: a job that may expire must be ticked, one ready without an expiry need not be")
	}
	over := Step(waitedFor(io(OnDeck, Initial), time.Minute, 2*time.Minute), ev(EvTick))
	if over.Failure != FailureIneligible {
		t.Errorf("capacity wait over: failure %q, want %q", over.Failure, FailureIneligible)
	}
}

// The record changes Step owns: the wait's clock, the build, the end.
func TestStepRecordChanges(t *testing.T) {
	j := io(OnDeck, Initial)
	j.CapacityWait = time.Minute
	out := Step(j, ev(EvWaitCapacity))
	if !out.Job.WaitingSince.Equal(t0.Add(time.Second)) || len(out.Actions) > 0 {
		t.Fatalf("a first wait: since %v, actions %v; want since the event, nothing started", out.Job.WaitingSince, out.Actions)
	}
	again := Step(out.Job, Event{Kind: EvWaitCapacity, At: t0.Add(time.Hour)})
	if !again.Ignored || !again.Job.WaitingSince.Equal(out.Job.WaitingSince) {
		t.Errorf("a second wait moved the clock: %v (ignored %v)", again.Job.WaitingSince, again.Ignored)
	}
	before := Step(out.Job, Event{Kind: EvTick, At: t0.Add(time.Second + time.Minute - time.Millisecond)})
	if before.Job.RSA != Initial || before.Error != "" {
		t.Errorf("a tick before the wait is over: %s (%q), want INITIAL, assigning", before.Job.RSA, before.Error)
	}
	over := Step(out.Job, Event{Kind: EvTick, At: t0.Add(time.Second + time.Minute)})
	if over.Job.RSA != Ineligible || !strings.Contains(over.Error, "capacity wait") || !over.Job.WaitingSince.IsZero() {
		t.Errorf("a tick when the wait is over: %s (%q, since %v), want INELIGIBLE with the reason, the clock stopped", over.Job.RSA, over.Error, over.Job.WaitingSince)
	}
	unbounded := out.Job
	unbounded.CapacityWait = 0
	if got := Step(unbounded, Event{Kind: EvTick, At: t0.Add(1000 * time.Hour)}); got.Job.RSA != Initial {
		t.Errorf("a job without a capacity wait gave up waiting: %s", got.Job.RSA)
	}
	assigned := Step(out.Job, ev(EvAssigned))
	if !assigned.Job.WaitingSince.IsZero() || assigned.Job.Build != 1 || assigned.Job.RSA != Booting {
		t.Errorf("assigned: %s, since %v, build %d; want BOOTING, the clock stopped, build 1", assigned.Job.RSA, assigned.Job.WaitingSince, assigned.Job.Build)
	}
	done := Step(io(Running, InUseOut), ev(EvFinished))
	if !done.Job.FinishedAt.Equal(t0.Add(time.Second)) {
		t.Errorf("finished at %v, want the event's time", done.Job.FinishedAt)
	}
	if again := Step(done.Job, Event{Kind: EvStagedOut, At: t0.Add(time.Hour)}); !again.Job.FinishedAt.Equal(done.Job.FinishedAt) {
		t.Errorf("the end moved to %v", again.Job.FinishedAt)
	}
}

// Lost nodes and the last failure are the record change of Step too.
func TestStepLostAndError(t *testing.T) {
	j := io(OnDeck, StagingIn)
	out := Step(j, Event{Kind: EvNodeLost, At: t0, Nodes: []string{"rsa2"}, Whole: true, Reason: "rsa2 silent"})
	if !slices.Equal(out.Job.Lost, []string{"rsa2"}) || out.Job.Error != "rsa2 silent" {
		t.Fatalf("a node lost: lost %v, error %q", out.Job.Lost, out.Job.Error)
	}
	again := Step(out.Job, Event{Kind: EvStagedIn, At: t0, Nodes: []string{"rsa2", "rsa3"}})
	if !slices.Equal(again.Job.Lost, []string{"rsa2", "rsa3"}) || again.Job.Error != "rsa2 silent" {
		t.Errorf("a stage-in that found another: lost %v (want each once), error %q (a success keeps it)", again.Job.Lost, again.Job.Error)
	}
	if len(out.Job.Lost) != 1 {
		t.Errorf("Step changed the Lost of the job it was given: %v", out.Job.Lost)
	}
	failed := Step(io(OnDeck, StagingIn), Event{Kind: EvStageInFailed, At: t0, Reason: "no such file"})
	if failed.Job.Error != "no such file" {
		t.Errorf("a failure's reason: error %q", failed.Job.Error)
	}
	reassigned := Step(Job{State: OnDeck, RSA: Initial, HasInput: true, NodeLost: true, Lost: []string{"rsa2"}}, Event{Kind: EvAssigned, At: t0})
	if reassigned.Job.Lost != nil || reassigned.Job.NodeLost {
		t.Errorf("assigned anew: lost %v", reassigned.Job.Lost)
	}
}
