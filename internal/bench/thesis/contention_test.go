package thesis

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/bench"
	"github.com/rsa-hpc/rsa/internal/bench/contention"
)

// Each run's order of cells is a permutation drawn from its seed: the
// same seed the same order, and the seeds of a run's host counts and
// runs do not all give one order.
func TestShuffle(t *testing.T) {
	names := func(cs []contentionCell) []string {
		var n []string
		for _, c := range cs {
			n = append(n, c.name)
		}
		return n
	}
	orders := map[string]bool{}
	for seed := range int64(20) {
		a, b := slices.Clone(contentionCells), slices.Clone(contentionCells)
		shuffle(a, seed)
		shuffle(b, seed)
		if !slices.Equal(names(a), names(b)) {
			t.Fatalf("seed %d: two orders %v and %v", seed, names(a), names(b))
		}
		sorted := slices.Sorted(slices.Values(names(a)))
		if !slices.Equal(sorted, slices.Sorted(slices.Values(names(contentionCells)))) {
			t.Fatalf("seed %d: %v is not a permutation of the cells", seed, names(a))
		}
		orders[fmt.Sprint(names(a))] = true
	}
	if len(orders) < 4 {
		t.Errorf("20 seeds gave %d orders of 4 cells", len(orders))
	}
}

// A job's span is its first writer's start to its last host's end: the
// writers' own ends, or with tar each host's end stamp.
func TestSpanOf(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("w-0.json", `{"start_unix_nano": 100, "end_unix_nano": 500}`)
	write("w-1.json", `{"start_unix_nano": 80, "end_unix_nano": 400}`)
	write("end-0", "900\n")
	write("end-1", "1200\n")
	for _, tc := range []struct {
		tar        bool
		start, end int64
	}{{false, 80, 500}, {true, 80, 1200}} {
		s, e, err := spanOf(dir, 2, tc.tar)
		if err != nil || s != tc.start || e != tc.end {
			t.Errorf("tar %v: span %d..%d, %v; want %d..%d", tc.tar, s, e, err, tc.start, tc.end)
		}
	}
	if _, _, err := spanOf(dir, 3, false); err == nil {
		t.Error("a third host without a report: no error")
	}
}

// The ratios are the direct job's hold over RSA's hold and safe, and each
// competitor's hold over RSA's, of the same host count only.
func TestContentionRatios(t *testing.T) {
	row := func(target, metric string, hosts string, v float64) bench.Row {
		return bench.Row{Bench: "contention", Case: "E4", Target: target, Metric: metric, Value: v, Params: map[string]string{"hosts": hosts, "creates": "9", "mean_contenders": "2.00"}}
	}
	rows := []bench.Row{
		row("shared@1g", "hold", "2", 300), row("shared@1g aggregate", "hold", "2", 30), row("tmpfs+tar", "hold", "2", 40),
		row("ram@1g", "hold", "2", 20), row("ram@1g", "safe", "2", 100),
		row("ram@1g", "hold", "4", 1), row("ram@1g", "safe", "4", 1),
	}
	got := map[string]float64{}
	for _, r := range contentionRatios(rows, 2) {
		got[r.Target+" "+r.Metric] = r.Value
		if _, ok := r.Params["creates"]; ok {
			t.Errorf("ratio %s carries a job's create count", r.Target)
		}
	}
	want := map[string]float64{"ram@1g vs shared@1g hold_ratio": 15, "ram@1g vs shared@1g safe_ratio": 3,
		"ram@1g vs shared@1g aggregate hold_ratio": 1.5, "ram@1g vs tmpfs+tar hold_ratio": 2}
	if len(got) != len(want) {
		t.Errorf("ratios %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if r := contentionRatios(rows[:3], 2); r != nil {
		t.Errorf("without RSA's rows: %v, want none", r)
	}
}

// The model's predictions: the direct job bound by its contended
// creates, RSA's by its hosts' links, its verification by the
// uncontended stage-out.
func TestPredictions(t *testing.T) {
	tc := ClusterContention{Ranks: 100, Size: 1 << 20, Model: contention.Model{Local: 80 * time.Millisecond, Revoke: 440 * time.Millisecond}}
	cal := Calibration{LinkBps: 100 << 20 * 8, Create: 90 * time.Millisecond} // 100 MiB/s: the data takes 1 s
	got := map[string]float64{}
	for _, r := range tc.predictions(2, cal) {
		got[r.Target+" "+r.Metric] = r.Value
	}
	for k, want := range map[string]float64{
		"shared@1g hold":           100 * (0.09 + 0.22), // create + revoke × (1 − 1/2)
		"shared@1g aggregate hold": 1,
		"ram@1g hold":              0.5,       // two hosts' links
		"ram@1g verified":          0.5 + 9.0, // + 100 uncontended creates
	} {
		if math.Abs(got[k]-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	if tc.predictions(2, Calibration{}) != nil {
		t.Error("no calibration: predictions")
	}
}
