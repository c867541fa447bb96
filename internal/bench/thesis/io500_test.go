package thesis

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/bench/io500"
)

// E3's rows: every cell's phases and scores, and each distributed cell's
// rate per host over one host's tmpfs.
func TestIO500Rows(t *testing.T) {
	cfg := io500.Config{Data: "/d", Results: "/r", Stonewall: 10 * time.Second, EasyBlock: "1g", HardSegments: 10, EasyFiles: 10, HardFiles: 10}
	c := ClusterIO500{Hosts: 2, RanksPerHost: 2, Phases: cfg}
	results := func(v float64) []io500.Result {
		var out []io500.Result
		for _, p := range io500.Phases {
			out = append(out, io500.Result{Phase: p.Name, Group: p.Group, Unit: p.Group.Unit(), Value: v})
		}
		return out
	}
	// The input image runs the phases a read-only file system allows.
	reads := func(v float64) []io500.Result {
		var out []io500.Result
		for _, r := range results(v) {
			if io500.Reads.Has(io500.Phase{Name: r.Phase}) {
				out = append(out, r)
			}
		}
		return out
	}
	// ram@1g over two hosts gives 4 in all, 2 per host; tmpfs on one host
	// 8: an efficiency of 0.25; the input image the same. shared@1g 1 in
	// all: 0.0625. Private output runs on one host: 4 on it, 0.5.
	rows, err := c.rows(io500Cells, map[string][]io500.Result{"ram@1g": results(4), "ram@1g private": results(4), "ram@1g image": reads(4),
		"shared@1g": results(1), "tmpfs": results(8)}, "tmpfs")
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, r := range rows {
		count[r.Target]++
		if r.Metric != "efficiency" {
			continue
		}
		want := 0.25
		switch {
		case strings.HasPrefix(r.Target, "shared@1g"):
			want = 0.0625
		case strings.HasPrefix(r.Target, "ram@1g private"):
			want = 0.5 // one host's: 4 over 8
		}
		if math.Abs(r.Value-want) > 1e-9 {
			t.Errorf("%s %s: efficiency %g, want %g", r.Target, r.Case, r.Value, want)
		}
	}
	// Five phases and no score on the image.
	for target, want := range map[string]int{"ram@1g": 15, "ram@1g private": 15, "ram@1g image": 5, "shared@1g": 15, "tmpfs": 15,
		"ram@1g per node vs tmpfs": 15, "ram@1g private per node vs tmpfs": 15, "ram@1g image per node vs tmpfs": 5, "shared@1g per node vs tmpfs": 15} {
		if count[target] != want {
			t.Errorf("%d rows of %s, want %d (all: %v)", count[target], target, want, count)
		}
	}
	for _, r := range rows {
		if !strings.HasPrefix(r.Params["compliant"], "no") {
			t.Errorf("row %s %s: compliant %q, want a no for a 10 s stonewall", r.Target, r.Case, r.Params["compliant"])
		}
	}
	// A cell without a phase has no score: the run fails rather than
	// print a score IO500 would not give.
	if _, err := c.rows(io500Cells, map[string][]io500.Result{"ram@1g": results(4)[1:], "ram@1g private": results(4), "ram@1g image": reads(4),
		"shared@1g": results(1), "tmpfs": results(8)}, "tmpfs"); err == nil {
		t.Error("ram@1g without ior-easy-write: no error")
	}
}
