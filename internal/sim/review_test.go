package sim

import (
	"math"
	"strings"
	"testing"
	"time"
)

// Three jobs on 4 nodes without I/O, the metrics worked out by hand:
// job 1 (4 nodes, 0-100 s), then at 100 s job 2 (2 nodes, 50 s, submitted
// at 10) and job 3 (2 nodes, 5 s, submitted at 20) side by side.
func TestMetricsByHand(t *testing.T) {
	trace := swf(4, line(1, 0, 100, 4, -1), line(2, 10, 50, 2, -1), line(3, 20, 5, 2, -1))
	r := run(t, trace, noIO())
	tests := []struct {
		name      string
		got, want float64
	}{
		{"mean wait", r.MeanWait, (0 + 90 + 80) / 3.0},
		// max(1, (wait+run)/max(run, 10 s)): 100/100, 140/50, 85/10.
		{"mean bounded slowdown", r.MeanBoundedSlowdown, (1 + 2.8 + 8.5) / 3},
		{"makespan", r.Makespan, 150},
		// (4·100 + 2·50 + 2·5) node-s of 4 nodes × 150 s.
		{"utilisation", r.Utilisation, 510.0 / 600},
	}
	for _, tt := range tests {
		if math.Abs(tt.got-tt.want) > 1e-9 {
			t.Errorf("%s %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

// Bounded slowdown divides by the time a job held its nodes, I/O
// included: a lone job is never slowed down, however long its I/O.
func TestBoundedSlowdownCountsIO(t *testing.T) {
	c := noIO()
	c.Workload = Workload{Input: Fixed(100 * mib), Output: Fixed(100 * mib), FilesPerNode: 2}
	r := run(t, swf(4, line(1, 0, 20, 4, -1)), c)
	g := r.Gantt[0]
	if g.End-g.Start < 30 {
		t.Fatalf("the job held its nodes %v s; the test needs I/O well above its 20 s run", g.End-g.Start)
	}
	if r.MeanBoundedSlowdown != 1 {
		t.Errorf("bounded slowdown %v, want 1 (no wait)", r.MeanBoundedSlowdown)
	}
}

func TestTraceTimeLimits(t *testing.T) {
	tests := []struct {
		name, line, want string
	}{
		{"submit", "1 2e9 -1 10 1 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1\n", "field 2 (submit time) is 2e9 s, more than 1e9 s"},
		{"run", "1 0 -1 1e12 1 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1\n", "field 4 (run time) is 1e12 s, more than 1e9 s"},
		{"requested", "1 0 -1 10 1 -1 -1 -1 5e9 -1 1 -1 -1 -1 0 -1 -1 -1\n", "field 9 (requested time) is 5e9 s, more than 1e9 s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Run(t.Context(), strings.NewReader(swf(4, tt.line)), noIO())
			if err == nil || !strings.HasPrefix(err.Error(), "trace line 2: "+tt.want) {
				t.Errorf("error %v, want trace line 2: %s...", err, tt.want)
			}
		})
	}
}

func TestEstimateDoesNotOverflow(t *testing.T) {
	tests := []struct {
		name   string
		job    TraceJob
		factor float64
		want   time.Duration
	}{
		{"run time", TraceJob{Run: 100 * time.Second}, 2, 200 * time.Second},
		{"requested", TraceJob{Run: 100 * time.Second, ReqTime: 50 * time.Second}, 1, 50 * time.Second},
		{"at least a second", TraceJob{Run: 100 * time.Second}, 1e-6, time.Second},
		{"huge factor", TraceJob{Run: 100 * time.Second}, 1e9, maxEstimate},
		{"huge both", TraceJob{Run: 1e9 * time.Second}, 1e300, maxEstimate},
	}
	for _, tt := range tests {
		if got := estimate(tt.job, tt.factor); got != tt.want {
			t.Errorf("%s: estimate %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestSweepYMaxShowsEveryRun(t *testing.T) {
	runs := []SweepRun{{Result: &Result{IONodeHours: 50}}, {Result: &Result{IONodeHours: 300}}}
	if got := sweepYMax(100, runs); got != 330 {
		t.Errorf("top %v, want 330 (1.1 × the highest run)", got)
	}
	if got := sweepYMax(100, runs[:1]); got != 130 {
		t.Errorf("top %v, want 130 (1.3 × without RSA)", got)
	}
}

// With --alloc capacity the stage-in begins the lead plus the job's own
// fill time before its expected start, not a whole node's RAM's.
func TestStageInTimeByCapacity(t *testing.T) {
	c := noIO()
	c.Workload = Workload{Input: Fixed(2 * mib), Output: Fixed(2 * mib), FilesPerNode: 2}
	c.RSA.Nodes, c.RSA.Proportion, c.RSA.MinJobNodes = 1, 1, 1
	c.RSA.ByCapacity = true
	c.RSA.StageInLead = 600 * time.Second // the default 32 GiB would take another 832 s
	r := run(t, swf(4, line(1, 0, 10000, 4, -1), line(2, 10, 100, 4, -1)), c)
	var from float64 = -1
	for _, g := range r.Gantt {
		if g.ID == 2 && len(g.StageIn) > 0 {
			from = g.StageIn[0].From
		}
	}
	// 8 MiB at 39.38 MiB/s is under a second; job 1's I/O moves its
	// reservation by seconds. A whole node's RAM would start it near 8568 s.
	if from < 10000-600-60 || from > 10000-600+60 {
		t.Errorf("stage-in began at %v s, want about 9400 s", from)
	}
}

func TestRunErrors(t *testing.T) {
	ppn := noIO()
	ppn.ProcsPerNode = 64
	tests := []struct {
		name, trace string
		cfg         Config
		want        string
	}{
		{"empty", "", noIO(), "the trace has no job lines"},
		{"header only", "; MaxNodes: 4\n", noIO(), "the trace has no job lines"},
		{"all skipped", swf(4, line(1, 0, 0, 1, -1), line(2, 5, 10, 8, -1)), noIO(),
			"no job of the trace could be simulated: 2 skipped (run time <= 0: 1, processors unknown: 0, more nodes than the machine's 4: 1)"},
		{"procs per node", "; MaxProcs: 32\n" + line(1, 0, 10, 1, -1), ppn,
			"64 processors per node is more than the trace's MaxProcs of 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Run(t.Context(), strings.NewReader(tt.trace), tt.cfg)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %v, want %q...", err, tt.want)
			}
		})
	}
}

func TestCalibrationErrorNamesCause(t *testing.T) {
	tests := []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"ineligible", func(c *Config) { c.RSA.Proportion = 2048 }, "--proportion and --min-job-nodes"},
		{"too small", func(c *Config) { c.RSA.RAM = mib }, "raise --ram"},
		{"slow boot", func(c *Config) { c.RSA.Boot = Linear{Base: time.Hour} }, "--boot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Testbed("thesis")
			if err != nil {
				t.Fatal(err)
			}
			tt.edit(&c)
			_, err = Calibrate(t.Context(), c)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one naming %s", err, tt.want)
			}
		})
	}
}

func TestHasJob(t *testing.T) {
	trace := swf(4, line(7, 0, 10, 1, -1), line(9, 5, 10, 1, -1))
	for id, want := range map[int64]bool{7: true, 9: true, 8: false} {
		got, err := HasJob(strings.NewReader(trace), id)
		if err != nil || got != want {
			t.Errorf("HasJob(%d) = %v, %v; want %v", id, got, err, want)
		}
	}
}
