package thesis

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rsa-hpc/rsa/internal/bench"
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
