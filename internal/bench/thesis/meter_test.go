package thesis

import (
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rsa-hpc/rsa/internal/bench"
)

func TestParseCPU(t *testing.T) {
	for _, tc := range []struct {
		stat string
		want cpuTicks
	}{
		{"cpu  10 1 5 100 2 0 3 4 7 0\ncpu0 1 2 3", cpuTicks{total: 125, softirq: 3, steal: 4}},
		{"cpu  10 1 5 100 2 0 3 4\n", cpuTicks{total: 125, softirq: 3, steal: 4}},
		{"intr 1 2 3 4 5 6 7 8 9\n", cpuTicks{}},
		{"cpu 1 2\n", cpuTicks{}},
	} {
		if got := parseCPU(tc.stat); got != tc.want {
			t.Errorf("parseCPU(%q) = %+v, want %+v", tc.stat, got, tc.want)
		}
	}
}

// Runs fold into one row each: the median, every run's value, an
// interval from five runs on, and a param that differs between runs
// (which job went first) given run by run.
func TestMediansFold(t *testing.T) {
	var runs [][]bench.Row
	for i, v := range []float64{5, 1, 4, 2, 3} {
		first := "direct"
		if i%2 == 1 {
			first = "rsa"
		}
		runs = append(runs, []bench.Row{{Target: "ram@1g", Metric: "hold", Value: v, Params: map[string]string{"ranks": "8", "first": first}}})
	}
	got := medians(runs)
	if len(got) != 1 || got[0].Value != 3 || len(got[0].Runs) != 5 {
		t.Fatalf("folded %+v: want one row, median 3 of 5 runs", got)
	}
	if got[0].CI == nil || got[0].CI[0] > 3 || got[0].CI[1] < 3 {
		t.Errorf("interval %v: want one around the median 3", got[0].CI)
	}
	if p := got[0].Params; p["ranks"] != "8" || p["first"] != "direct/rsa/direct/rsa/direct" {
		t.Errorf("params %v: want ranks 8 and every run's first job", p)
	}
	if runs[0][0].Params["first"] != "direct" {
		t.Error("folding changed the first run's params")
	}
	if got := medians(runs[:2]); got[0].CI != nil {
		t.Errorf("two runs gave an interval %v", got[0].CI)
	}
}

// Each host's CPU time over a job is its cpuacct.usage's growth, in
// seconds; a host that appeared meanwhile has no start and is left out.
func TestMeterHostCPU(t *testing.T) {
	acct := t.TempDir()
	set := func(host string, ns int64) {
		if err := os.MkdirAll(filepath.Join(acct, host), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(acct, host, "cpuacct.usage"), []byte(strconv.FormatInt(ns, 10)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set("c1", 5e9)
	set("rsa1", 1e9)
	m := &meter{acct: acct}
	m.at = m.now()
	set("c1", 7.5e9)
	set("rsa1", 1e9)
	set("rsa2", 3e9)
	got := m.read().hostCPU
	want := map[string]float64{"c1": 2.5, "rsa1": 0}
	if !maps.Equal(got, want) {
		t.Errorf("host CPU %v, want %v", got, want)
	}
}
