package lifecycle

import "testing"

func TestJobStatePredicates(t *testing.T) {
	for _, s := range AllJobStates {
		j := Job{State: s, RSA: Initial}
		want := map[JobState][3]bool{ // pending, runs, ended
			OnDeck: {true, false, false}, Demoted: {true, false, false},
			Running: {false, true, false}, Finished: {false, false, true},
		}[s]
		if got := [3]bool{j.Pending(), j.Runs(), j.Ended()}; got != want {
			t.Errorf("%s: pending, runs, ended = %v, want %v", s, got, want)
		}
		if j.AwaitsNodes() == j.Ended() {
			t.Errorf("%s/INITIAL: AwaitsNodes %v", s, j.AwaitsNodes())
		}
	}
	for _, r := range AllRSAStates {
		if r != Initial && (Job{State: OnDeck, RSA: r}).AwaitsNodes() {
			t.Errorf("ONDECK/%s awaits nodes", r)
		}
	}
}

func TestApplies(t *testing.T) {
	cases := []struct {
		job  Job
		kind EventKind
		want bool
	}{
		{io(Demoted, Released), EvOnDeck, true},
		{io(Demoted, Teardown), EvOnDeck, false}, // waits for its cleanup
		{io(OnDeck, Initial), EvOnDeck, false},
		{io(OnDeck, Ready), EvDemoted, true},
		{io(Demoted, Ready), EvDemoted, false},
		{io(Finished, Teardown), EvFinished, false},
		{io(Running, InUseIn), EvFinished, true},
		{io(Running, InUseIn), EvTick, false},
	}
	for _, c := range cases {
		if got := Applies(c.job, ev(c.kind)); got != c.want {
			t.Errorf("%s at %s/%s applies: %v, want %v", c.kind, c.job.State, c.job.RSA, got, c.want)
		}
		if out := Step(c.job, ev(c.kind)); c.kind != EvTick && out.Ignored == c.want {
			t.Errorf("%s at %s/%s: Applies %v but Step ignored %v", c.kind, c.job.State, c.job.RSA, c.want, out.Ignored)
		}
	}
}

func TestNewJob(t *testing.T) {
	for _, started := range []bool{false, true} {
		j := NewJob(started, t0)
		if !j.AwaitsNodes() || j.Runs() != started || j.Pending() == started || j.StartedAt.IsZero() == started {
			t.Errorf("NewJob(started %v) = %s/%s since %v", started, j.State, j.RSA, j.StartedAt)
		}
		// Its first tick asks for RSA nodes.
		j.HasInput, j.HasOutput = true, true
		if out := Step(j, ev(EvTick)); len(out.Actions) != 1 || out.Actions[0].Kind != Assign {
			t.Errorf("NewJob(started %v): a tick starts %v, want assign", started, out.Actions)
		}
	}
}
