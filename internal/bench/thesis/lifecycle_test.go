package thesis

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readLog(t *testing.T, file string) JobLog {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	l, err := ParseJobLog(b)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestJobLogPhases(t *testing.T) {
	for _, tc := range []struct {
		file string
		want map[string]float64
	}{
		// The ideal path with input: the switch rebuilds the RAMDISK for
		// output; the destroy is the last teardown's, not the switch's.
		{"rsa-log-input-job.json", map[string]float64{PhaseConstruct: 0.25, PhaseStageIn: 1.25, PhaseSwitch: 1,
			PhaseFinishOut: 0.25, PhaseStageOut: 2, PhaseGapOut: 0.25, PhaseDestroy: 0.5}},
		// A T52 job of rsa-lab bench thesis, as its daemon logged it: output
		// only, so no stage-in, and the switch is the mount for output.
		{"rsa-log-t52-job.json", map[string]float64{PhaseConstruct: 0.001968383, PhaseSwitch: 0.000848343,
			PhaseFinishOut: 0, PhaseStageOut: 235.713042244, PhaseGapOut: 0, PhaseDestroy: 0.316154247}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got := readLog(t, tc.file).Phases()
			if len(got) != len(tc.want) {
				t.Errorf("phases %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if g, ok := got[k]; !ok || !near(g, v) {
					t.Errorf("%s = %v (%v), want %v", k, g, ok, v)
				}
			}
		})
	}
}

func TestParseJobLogRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"not JSON":       "1795536052.326 16:00:52 job 1 submitted",
		"no transitions": `{"events": [{"job_id": 1, "at": "2026-11-24T16:00:00Z", "kind": "submit", "message": "submitted by x"}]}`,
	} {
		if _, err := ParseJobLog([]byte(in)); err == nil || !strings.Contains(err.Error(), "rsa log") {
			t.Errorf("%s: %v, want an error naming rsa log", name, err)
		}
	}
}

// The input job's phases and T52's, a group each, App. T beside.
func TestTLCRows(t *testing.T) {
	in := readLog(t, "rsa-log-input-job.json")
	t52 := readLog(t, "rsa-log-t52-job.json")
	t52.Label = "shared_latency=0s"
	rows := TLC{Files: 16, FileSize: 1 << 20, T52Jobs: []JobLog{t52}}.rows([]JobLog{in, in})
	var own, fromT52 int
	for _, r := range rows {
		if r.Case != "TLC" || r.Unit != "s" || r.Target != "ram" {
			t.Errorf("row %+v: want TLC, ram, seconds", r)
		}
		switch r.Params["job"] {
		case "input job":
			own++
			if len(r.Runs) != 2 {
				t.Errorf("input job %s: %d runs, want 2", r.Metric, len(r.Runs))
			}
		case "T52":
			fromT52++
			if r.Params["run"] != "shared_latency=0s" {
				t.Errorf("T52 %s: run %q", r.Metric, r.Params["run"])
			}
		}
	}
	if own != 7 || fromT52 != 6 {
		t.Errorf("%d rows of the input job and %d of T52's, want 7 and 6 (no stage-in)", own, fromT52)
	}
	for _, c := range []struct {
		metric string
		src    float64
	}{{PhaseConstruct, 12}, {PhaseDestroy, 2}, {PhaseGapOut, 14}, {PhaseStageOut, 1}} {
		r := rowOf(t, rows, "ram", c.metric) // the input job's come first
		if r.SourceValue == nil || *r.SourceValue != c.src || !strings.Contains(r.SourceRef, "App. T") {
			t.Errorf("%s beside %v (%s), want App. T's %v", c.metric, r.SourceValue, r.SourceRef, c.src)
		}
	}
	if r := rowOf(t, rows, "ram", PhaseConstruct); !strings.Contains(r.Note, "sleep 10") {
		t.Errorf("construct's note %q does not say the thesis' 12 s hold a fixed sleep", r.Note)
	}
}
