package sim

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// swf builds a trace with a MaxNodes header from job lines.
func swf(nodes int, jobs ...string) string {
	return fmt.Sprintf("; MaxNodes: %d\n", nodes) + strings.Join(jobs, "")
}

// line is one SWF job line: id, submit, run time, processors, requested time
// (-1: unknown).
func line(id, submit, run, procs, req int) string {
	return fmt.Sprintf("%d %d -1 %d %d -1 -1 -1 %d -1 1 -1 -1 -1 0 -1 -1 -1\n", id, submit, run, procs, req)
}

// noIO is a config whose jobs do no I/O: only the scheduler matters.
func noIO() Config {
	c := Defaults()
	c.Workload = Workload{Input: Fixed(0), Output: Fixed(0), FilesPerNode: 2}
	c.RSA.Nodes = 0
	c.Gantt = GanttWindow{Count: 100}
	return c
}

// run simulates trace under c and fails the test on error.
func run(t *testing.T, trace string, c Config) *Result {
	t.Helper()
	r, err := Run(context.Background(), strings.NewReader(trace), c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// starts maps job id to start time in seconds.
func starts(r *Result) map[int64]float64 {
	m := map[int64]float64{}
	for _, g := range r.Gantt {
		m[g.ID] = g.Start
	}
	return m
}

// stepRec is one lifecycle.Step the simulator took.
type stepRec struct {
	before lifecycle.Job
	ev     lifecycle.Event
	out    lifecycle.Outcome
}

// recorder collects every Step per job.
type recorder map[int64][]stepRec

func (r recorder) observe(id int64, before lifecycle.Job, ev lifecycle.Event, out lifecycle.Outcome, _ []job.Part) {
	r[id] = append(r[id], stepRec{before, ev, out})
}

// path is a job's applied events with the rsa-state each left it in.
func (r recorder) path(id int64) []string {
	var p []string
	for _, s := range r[id] {
		if !s.out.Ignored {
			p = append(p, fmt.Sprintf("%s>%s/%s", s.ev.Kind, s.out.Job.State, s.out.Job.RSA))
		}
	}
	return p
}

func secsOf(at time.Time) float64 {
	return at.Sub(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).Seconds()
}

func secondsD(n int) time.Duration { return time.Duration(n) * time.Second }

// checkWarnings fails t unless got are as many warnings as want, each
// containing its want.
func checkWarnings(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d warnings, want %d: %q", len(got), len(want), got)
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("warning %d is %q, want it to contain %q", i, got[i], w)
		}
	}
}
