package lifecycle

import (
	"slices"
	"testing"
)

// everyJob yields every job the gates may be asked about: each job-state ×
// rsa-state, with and without input, output and a lost node.
func everyJob(yield func(Job) bool) {
	for _, s := range AllJobStates {
		for _, r := range AllRSAStates {
			for bits := range 8 {
				j := Job{State: s, RSA: r, HasInput: bits&1 != 0, HasOutput: bits&2 != 0, NodeLost: bits&4 != 0}
				if !j.HasInput && !j.HasOutput {
					continue // RSA refuses a job without either
				}
				if !yield(j) {
					return
				}
			}
		}
	}
}

// Every gate answers every job from a row of its own: none falls through.
func TestEveryGateAnswers(t *testing.T) {
	for _, g := range AllGates {
		for j := range everyJob {
			if _, why := Verdict(g, j); why == WhyNoVerdict {
				t.Errorf("gate %s has no row for %s/%s (input %v, output %v, node lost %v)", g, j.State, j.RSA, j.HasInput, j.HasOutput, j.NodeLost)
			}
		}
	}
}

// Every row of the gate table is the verdict of some job: none is
// shadowed by the rows above it.
func TestEveryGateRowUsed(t *testing.T) {
	used := make([]bool, len(gateTable))
	for _, g := range AllGates {
		for j := range everyJob {
			for i, r := range gateTable {
				if r.gate == g && (len(r.job) == 0 || slices.Contains(r.job, j.State)) &&
					(len(r.rsa) == 0 || slices.Contains(r.rsa, j.RSA)) && (r.guard == nil || r.guard(j)) {
					used[i] = true
					break
				}
			}
		}
	}
	for i, u := range used {
		if !u {
			t.Errorf("gate row %d (%s: %s) is never the verdict", i, gateTable[i].gate, gateTable[i].why)
		}
	}
}

func TestGateVerdicts(t *testing.T) {
	inout := func(s JobState, r RSAState) Job { return Job{State: s, RSA: r, HasInput: true, HasOutput: true} }
	inOnly := func(s JobState, r RSAState) Job { return Job{State: s, RSA: r, HasInput: true} }
	lost := func(j Job) Job { j.NodeLost = true; return j }
	cases := []struct {
		name   string
		gate   Gate
		job    Job
		answer Answer
		why    Why
	}{
		{"stage-in waits for the copy", GateStageIn, inout(OnDeck, StagingIn), Wait, WhyStagingIn},
		{"stage-in waits for capacity", GateStageIn, inout(OnDeck, Initial), Wait, WhyStagingIn},
		{"stage-in done", GateStageIn, inout(OnDeck, Ready), Pass, WhyInputInRAM},
		{"stage-in: without RSA", GateStageIn, inout(OnDeck, Ineligible), Pass, WhyWithoutRSA},
		{"stage-in failed", GateStageIn, inout(OnDeck, Aborted), Refuse, WhyStageInFailed},
		{"stage-in of a cancelled job", GateStageIn, inout(Finished, StagingIn), Refuse, WhyEndedBeforeInput},
		{"stage-in: lost node, rebuilding", GateStageIn, lost(inout(OnDeck, Teardown)), Wait, WhyRebuilding},
		{"stage-in: lost node, job ended", GateStageIn, lost(inout(Finished, Teardown)), Refuse, WhyStageInFailed},
		{"stage-in: teardown waits for an admin, the job need not", GateStageIn, inout(OnDeck, TeardownFailed), Pass, WhyAdminTeardownWait},
		{"stage-in after the start", GateStageIn, inout(Running, InUseIn), Pass, WhyStarted},
		{"start waits for the mount", GateStart, inout(Running, MountingIn), Wait, WhyMounting},
		{"start: mounted", GateStart, inout(Running, InUseIn), Pass, WhyMountedIn},
		{"start: output mounted", GateStart, inout(Running, InUseOut), Pass, WhyMountedOut},
		{"start waits for the assignment", GateStart, inout(Running, Initial), Wait, WhyAssigning},
		{"start waits for a rebuild", GateStart, inout(Running, Teardown), Wait, WhyMounting},
		{"start: output lost, the job goes on", GateStart, inout(Running, OutputLost), Pass, WhyWithoutRSA},
		{"start: input lost, no output: reads from disk at once", GateStart, inOnly(Running, Teardown), Pass, WhyInputNotInRAM},
		{"start: input still staging, no output: reads from disk at once", GateStart, inOnly(Running, StoppingStagingIn), Pass, WhyInputNotInRAM},
		{"start: input ready, no output: waits for its mount", GateStart, inOnly(Running, MountingIn), Wait, WhyMounting},
		{"start: job ended", GateStart, inout(Finished, Teardown), Pass, WhyEnded},
		{"stage-out waits for the copy", GateStageOut, inout(Finished, StagingOut), Wait, WhyStagingOut},
		{"stage-out waits for unmounting", GateStageOut, inout(Finished, Unmounting), Wait, WhyUnmounting},
		{"stage-out failed, output kept", GateStageOut, inout(Finished, StageOutFailed), Refuse, WhyStageOutFailed},
		{"stage-out: output lost", GateStageOut, inout(Finished, OutputLost), Refuse, WhyOutputLost},
		{"stage-out done", GateStageOut, inout(Finished, Teardown), Pass, WhyOutputVerified},
		{"stage-out: no output", GateStageOut, inOnly(Finished, Teardown), Pass, WhyNoOutputInRAM},
		{"teardown waits", GateTeardown, inout(Finished, Teardown), Wait, WhyTearingDown},
		{"teardown done", GateTeardown, inout(Finished, Released), Pass, WhyReleased},
		{"teardown leaves output to the admin", GateTeardown, inout(Finished, StageOutFailed), Pass, WhyKeptForAdmin},
		{"epilog waits for unmounting", GateUnmount, inout(Finished, InUseOut), Wait, WhyUnmounting},
		{"epilog done", GateUnmount, inout(Finished, StagingOut), Pass, WhyUnmounted},
	}
	for _, c := range cases {
		if a, why := Verdict(c.gate, c.job); a != c.answer || why != c.why {
			t.Errorf("%s: %s at %s/%s gives %s (%s), want %s (%s)", c.name, c.gate, c.job.State, c.job.RSA, a, why, c.answer, c.why)
		}
	}
}

// What the gates promise, over every job.
func TestGatePromises(t *testing.T) {
	for _, g := range AllGates {
		for j := range everyJob {
			a, why := Verdict(g, j)
			where := string(g) + " at " + string(j.State) + "/" + string(j.RSA)
			// A job RSA is done with never holds its scheduler up.
			if j.Done() && a == Wait {
				t.Errorf("%s: a done job waits (%s)", where, why)
			}
			// Nothing says the input is in RAM unless it is.
			if why == WhyInputInRAM && j.RSA != Ready {
				t.Errorf("%s: says the input is in RAM", where)
			}
			if (why == WhyMountedIn || why == WhyMountedOut) && !slices.Contains([]RSAState{InUseIn, UnmountBusy, InUseOut}, j.RSA) {
				t.Errorf("%s: says the RAMDISK is mounted", where)
			}
			switch g {
			case GateUnmount, GateStageOut:
				// The compute nodes go free only when RSA's mounts are off them.
				if a == Pass && slices.Contains(mountsAtJobPaths, j.RSA) {
					t.Errorf("%s: passes with RSA's mounts on the job's nodes", where)
				}
			}
			// Output in RAM is never reported safe before it is verified.
			if g == GateStageOut && a == Pass && HoldsOutput(j.RSA) {
				t.Errorf("%s: passes while the RAMDISK holds unverified output", where)
			}
			// A job that will get a RAMDISK at its paths never starts before it.
			if g == GateStart && a == Pass && j.State == Running && j.HasOutput &&
				!slices.Contains([]RSAState{InUseIn, UnmountBusy, InUseOut, Ineligible, Released, OutputLost}, j.RSA) {
				t.Errorf("%s: a job with output starts before its mount (%s)", where, why)
			}
		}
	}
}
