package api

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// TestNewJobView: a view says what its states mean, and its JSON carries
// that next to the raw states (which stay: JSON is a public interface).
func TestNewJobView(t *testing.T) {
	for _, tc := range []struct {
		state    lifecycle.JobState
		rsa      lifecycle.RSAState
		json     string
		phase    lifecycle.Phase
		inRAM    bool
		terminal bool
	}{
		{lifecycle.OnDeck, lifecycle.Initial, `"phase":"waiting","in_ram":false,"terminal":false`, lifecycle.PhaseWaiting, false, false},
		{lifecycle.OnDeck, lifecycle.Ready, `"phase":"ready","in_ram":false,"terminal":false`, lifecycle.PhaseReady, false, false},
		{lifecycle.Running, lifecycle.InUseIn, `"phase":"inuse-in","in_ram":true,"terminal":false`, lifecycle.PhaseInUseIn, true, false},
		{lifecycle.Running, lifecycle.InUseOut, `"phase":"inuse-out","in_ram":true,"terminal":false`, lifecycle.PhaseInUseOut, true, false},
		{lifecycle.Finished, lifecycle.StageOutFailed, `"phase":"stage-out","in_ram":false,"terminal":false`, lifecycle.PhaseStageOut, false, false},
		{lifecycle.Finished, lifecycle.OutputLost, `"phase":"output-lost","in_ram":false,"terminal":true`, lifecycle.PhaseOutputLost, false, true},
		{lifecycle.Demoted, lifecycle.Released, `"phase":"released","in_ram":false,"terminal":false`, lifecycle.PhaseReleased, false, false},
		{lifecycle.Finished, lifecycle.Released, `"phase":"released","in_ram":false,"terminal":true`, lifecycle.PhaseReleased, false, true},
	} {
		v := NewJobView(job.Job{ID: 7, State: tc.state, RSA: tc.rsa})
		if v.Phase != tc.phase || v.InRAM != tc.inRAM || v.Terminal != tc.terminal {
			t.Errorf("%s/%s: phase %q, in RAM %v, terminal %v; want %q, %v, %v", tc.state, tc.rsa, v.Phase, v.InRAM, v.Terminal, tc.phase, tc.inRAM, tc.terminal)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{tc.json, `"job_state":"` + string(tc.state) + `"`, `"rsa_state":"` + string(tc.rsa) + `"`} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s/%s: JSON %s lacks %s", tc.state, tc.rsa, b, want)
			}
		}
	}
}

// TestProgressLine: a job's progress is shown while a stage copies, and
// what it waits for before anything else.
func TestProgressLine(t *testing.T) {
	p := &job.Progress{Phase: "stage-in", Files: 3, Bytes: 2048, TotalFiles: 10, Started: time.Unix(0, 0), Updated: time.Unix(0, 0)}
	for _, tc := range []struct {
		name    string
		rsa     lifecycle.RSAState
		waiting string
		want    string
	}{
		{"staging in", lifecycle.StagingIn, "", "stage-in 3/10 files 2.0K"},
		{"staging out", lifecycle.StagingOut, "", "stage-in 3/10 files 2.0K"},
		{"a stage-in being stopped reports no copy", lifecycle.StoppingStagingIn, "", ""},
		{"ready: the copy is over", lifecycle.Ready, "", ""},
		{"waiting says why", lifecycle.Initial, "for capacity", "for capacity"},
	} {
		v := NewJobView(job.Job{RSA: tc.rsa})
		v.Progress, v.Waiting = p, tc.waiting
		if got := v.ProgressLine(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A node's state: its agent's when the agent is silent (suspect before
// it is taken for lost), else its drain's.
func TestNodeViewState(t *testing.T) {
	for _, c := range []struct {
		name string
		n    NodeView
		want string
	}{
		{"no agent, no drain", NodeView{}, "up"},
		{"agent up", NodeView{Agent: &AgentView{State: "up", Up: true}}, "up"},
		{"agent suspect", NodeView{Agent: &AgentView{State: "suspect"}, Drain: &DrainView{}}, "suspect"},
		{"agent down", NodeView{Agent: &AgentView{State: "down"}}, "down"},
		{"agent silent, state unknown", NodeView{Agent: &AgentView{}}, "down"},
		{"drained, jobs on it", NodeView{Drain: &DrainView{}, Jobs: []int64{1}}, "draining"},
		{"drained, empty", NodeView{Drain: &DrainView{}}, "drained"},
	} {
		if got := c.n.State(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
