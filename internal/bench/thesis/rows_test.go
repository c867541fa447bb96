package thesis

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/bench"
)

// rowOf returns the row of target and metric, failing the test without one.
func rowOf(t *testing.T, rows []bench.Row, target, metric string) bench.Row {
	t.Helper()
	for _, r := range rows {
		if r.Target == target && r.Metric == metric {
			return r
		}
	}
	t.Fatalf("no row %s %s in %d rows", target, metric, len(rows))
	return bench.Row{}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }

// wantRow checks a row's value and the thesis' number beside it (0: none).
func wantRow(t *testing.T, rows []bench.Row, target, metric string, value, src float64) {
	t.Helper()
	r := rowOf(t, rows, target, metric)
	if !near(r.Value, value) {
		t.Errorf("%s %s = %v, want %v", target, metric, r.Value, value)
	}
	switch {
	case src == 0 && r.SourceValue != nil:
		t.Errorf("%s %s beside %v (%s), want nothing beside it", target, metric, *r.SourceValue, r.SourceRef)
	case src != 0 && (r.SourceValue == nil || *r.SourceValue != src):
		t.Errorf("%s %s beside %v, want the thesis' %v", target, metric, r.SourceValue, src)
	}
}

func TestT51Rows(t *testing.T) {
	rs := []T51Result{
		{Direct: 8, RAM: 2, StageOut: map[string]float64{"rsync": 4, "rsa copy": 2}},
		{Direct: 6, RAM: 3, StageOut: map[string]float64{"rsync": 5, "rsa copy": 2}},
		{Direct: 9, RAM: 1, StageOut: map[string]float64{"rsync": 3, "rsa copy": 4}},
	}
	rows := T51{Size: 256 << 20}.rows(rs, map[string]float64{"shared@1g": 33, "ram": 50})
	wantRow(t, rows, "shared@1g", "output", 8, 46.88)
	wantRow(t, rows, "ram", "output", 2, 41.30)
	wantRow(t, rows, "shared@1g", "output_rate", 32, 43.7) // 256 MiB / 8, 6, 9 s
	wantRow(t, rows, "ram", "output_rate", 128, 49.6)
	wantRow(t, rows, "ram vs shared@1g", "output_ratio", 4, 1.135) // 4, 2, 9
	wantRow(t, rows, "ram -> shared@1g", "stage_out rsync", 4, 52)
	wantRow(t, rows, "ram -> shared@1g", "stage_out rsa copy", 2, 0)
	wantRow(t, rows, "ram -> shared@1g", "stage_out_rate rsync", 64, 39.4)
	wantRow(t, rows, "ram -> shared@1g", "safe", 6, 93.3) // 6, 8, 4
	if r := rowOf(t, rows, "shared@1g", "output_rate"); r.CheckValue == nil || *r.CheckValue != 33 || !*r.Agree {
		t.Errorf("shared@1g output_rate: fio %v, want 33, agreeing with 32", r.CheckValue)
	}
	if r := rowOf(t, rows, "ram", "output_rate"); r.CheckValue == nil || *r.CheckValue != 50 || *r.Agree {
		t.Errorf("ram output_rate: fio %v, want 50, disagreeing with 128", r.CheckValue)
	}
	// Without fio, no check.
	for _, r := range (T51{Size: 1 << 20}).rows(rs, nil) {
		if r.CheckValue != nil {
			t.Errorf("%s %s has a check without fio", r.Target, r.Metric)
		}
	}
}

func TestT53Rows(t *testing.T) {
	tt := T53{Targets: []Place{{"shared@1g", "/s"}, {"ram", "/r"}, {"disk", "/d"}}, Ranks: 256, Size: 1 << 20,
		T52Output: map[string]float64{"shared@1g": 40, "ram": 1}}
	rows := tt.rows(map[string][]float64{"shared@1g": {4, 2, 8}, "ram": {0.5, 0.25, 1}, "disk": {1}}, map[string]float64{"ram": 500})
	wantRow(t, rows, "shared@1g", "output", 4, 49.93)
	wantRow(t, rows, "shared@1g", "output_rate", 64, 41.0) // 256 MiB / 4 s
	wantRow(t, rows, "ram", "output", 0.5, 0)
	wantRow(t, rows, "ram", "output_rate", 512, 0)
	wantRow(t, rows, "disk", "output_rate", 256, 0)
	wantRow(t, rows, "shared@1g", "t52_over_t53", 10, 22.2) // 40 / 4, 2, 8
	wantRow(t, rows, "ram", "t52_over_t53", 2, 0)
	wantRow(t, rows, "shared@1g vs ram", "t53_over_t52_rsa", 4, 1.35)
	if r := rowOf(t, rows, "ram", "output_rate"); r.CheckValue == nil || *r.CheckValue != 500 {
		t.Errorf("ram output_rate: fio %v, want 500", r.CheckValue)
	}
	for _, r := range rows {
		if r.Target == "disk" && strings.HasPrefix(r.Metric, "t52") {
			t.Errorf("disk has %s without a T52 output time on disk", r.Metric)
		}
	}
	// Without T52 in the invocation, no ratio to it.
	tt.T52Output = nil
	for _, r := range tt.rows(map[string][]float64{"shared@1g": {4}, "ram": {1}, "disk": {1}}, nil) {
		if strings.Contains(r.Metric, "t52") {
			t.Errorf("row %s %s without T52", r.Target, r.Metric)
		}
	}
}

// T53 takes T52's output time from the run without added latency.
func TestT52Outputs(t *testing.T) {
	row := func(target, lat string, v float64) bench.Row {
		return bench.Row{Bench: "thesis", Case: "T52", Target: target, Metric: "output", Value: v, Params: map[string]string{"shared_latency": lat}}
	}
	got := T52Outputs([]bench.Row{
		row("shared@1g", "5ms", 90), row("ram", "5ms", 3),
		row("shared@1g", "0s", 40), row("ram", "0s", 1),
		row("shared@1g", "100ms", 900),
		{Bench: "thesis", Case: "T52", Target: "ram", Metric: "hold", Value: 7},
		{Bench: "thesis", Case: "T53", Target: "ram", Metric: "output", Value: 8},
	})
	if len(got) != 2 || got["shared@1g"] != 40 || got["ram"] != 1 {
		t.Errorf("T52Outputs = %v, want shared@1g 40, ram 1", got)
	}
	if got := T52Outputs([]bench.Row{row("ram", "1ms", 2), row("ram", "5ms", 3)}); got["ram"] != 2 {
		t.Errorf("without a latency-0 run: %v, want the first (2)", got)
	}
}

func TestT54Rows(t *testing.T) {
	s := func(open, move, close float64) PhaseTimes {
		return PhaseTimes{Open: secs(open), Move: secs(move), Close: secs(close)}
	}
	res := map[string][]T54Result{
		"ram":       {{Write: s(0.5, 1.5, 0.5), Read: s(0.1, 1, 0)}, {Write: s(1, 3, 1), Read: s(0.1, 2, 0)}},
		"shared@1g": {{Write: s(10, 5, 1), Read: s(1, 4, 0)}, {Write: s(20, 7, 1), Read: s(1, 4, 0)}},
	}
	tt := T54{Targets: []Place{{"ram", "/r"}, {"shared@1g", "/s"}}, Ranks: 256, Block: 1 << 20, Transfer: 1 << 20, Iterations: 2}
	rows := tt.rows(res, map[string]t54Check{"ram": {tool: "fio", write: 100, read: 200, note: "fio note"}, "shared@1g": {note: "IOR not built"}})
	// 256 MiB a pass. ram writes 2 s and 4 s; shared@1g 6 s and 8 s.
	wantRow(t, rows, "ram", "open", 0.75, 0) // 256 ranks: not the thesis' 2,048
	wantRow(t, rows, "ram", "write", 3, 0)   // 256 MiB: not its 20 GiB
	wantRow(t, rows, "ram", "write_with_open", 3.75, 0)
	wantRow(t, rows, "ram", "write_rate", 96, 100.31) // 128, 64
	wantRow(t, rows, "ram", "read_rate", 192, 109.24) // 256, 128
	wantRow(t, rows, "ram", "read_open", 0.1, 0)
	wantRow(t, rows, "shared@1g", "write_rate", (256.0/6+32)/2, 36.18)
	wantRow(t, rows, "shared@1g", "read_rate", 64, 70.89)
	wantRow(t, rows, "ram vs shared@1g", "write_rate_ratio", 2.5, 2.77) // 3, 2
	wantRow(t, rows, "ram vs shared@1g", "read_rate_ratio", 3, 1.54)    // 4, 2
	wantRow(t, rows, "ram vs shared@1g", "with_open_ratio", 6, 3.21)    // 16 / 2.5 and 28 / 5
	wantRow(t, rows, "ram vs shared@1g", "open_ratio", 20, 194)         // 20, 20
	if r := rowOf(t, rows, "ram", "write_rate"); r.CheckValue == nil || *r.CheckValue != 100 || !strings.Contains(r.Note, "fio note") {
		t.Errorf("ram write_rate: check %v note %q", r.CheckValue, r.Note)
	}
	if r := rowOf(t, rows, "shared@1g", "read_rate"); r.CheckValue != nil || !strings.Contains(r.Note, "IOR not built") {
		t.Errorf("shared@1g read_rate: check %v note %q, want none and why", r.CheckValue, r.Note)
	}
	// At the thesis' scale its times stand beside ours too.
	tt.Ranks, tt.Block = 2048, 10<<20
	rows = tt.rows(res, nil)
	wantRow(t, rows, "shared@1g", "open", 15, 83.27)
	wantRow(t, rows, "shared@1g", "write", 7, 573.28)
	wantRow(t, rows, "ram", "read", 1.5, 187.48)
	wantRow(t, rows, "ram", "write_with_open", 3.75, 204.59)
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
