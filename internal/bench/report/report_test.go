package report

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/bench"
)

func TestMarkdown(t *testing.T) {
	hold := bench.Row{Bench: "thesis", Case: "T52", Target: "ram@1g vs shared@1g", Metric: "hold_ratio", Unit: "x", Value: 61.8, Runs: []float64{50, 61.8, 70}}
	hold.Source("THESIS T5.2", 30.9, "x")
	local := bench.Row{Bench: "thesis", Case: "T52", Target: "ram vs shared@1g", Metric: "hold_ratio", Unit: "x", Value: 41.8}
	local.Source("THESIS T5.2", 30.9, "x")
	rate := bench.Row{Bench: "ior", Case: "Seq_Write", Target: "a|b", Metric: "rate", Unit: "MiB/s", Value: 100}
	rate.CrossCheck("fio", 150)
	rate.Note = "check: fio times its jobs\nby the longest one"
	read := bench.Row{Bench: "ior", Case: "Seq_Read", Target: "a", Metric: "rate", Unit: "MiB/s", Value: 90, Note: rate.Note}
	stat := bench.Row{Bench: "ior", Case: "Stat", Target: "a", Metric: "rate", Unit: "ops/s", Value: 9, Note: "cached"}
	withCI := bench.Row{Bench: "thesis", Case: "T52", Target: "ram@1g", Metric: "hold", Unit: "s", Value: 20, Runs: []float64{19, 20, 21, 20, 20}, CI: &[2]float64{19.5, 20.5}}
	here := bench.Provenance{Host: "box", Kernel: "6.1", CPU: "2 × x", Version: "v1", Steal: 1.25, Load: 0.5}
	read.Run, stat.Run = &here, &bench.Provenance{Host: "other"}
	var b strings.Builder
	if err := Markdown(&b, []bench.Row{hold, local, withCI, rate, read, stat}, Meta{Machine: "test box", Date: time.Unix(0, 0),
		Sections: map[string]Section{"ior": {Intro: "IOR's jobs.", Unmatched: []string{"Rd_Mod_Wrt: no counterpart"}}}}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, "ram vs shared@1g (): ours") {
		t.Errorf("a node-local ratio is set beside the source's:\n%s", page)
	}
	for _, want := range []string{
		"## thesis", "## ior\n\nIOR's jobs.\n\n| case |",
		"\nSeed tests no job stands in for:\n\n- Rd_Mod_Wrt: no counterpart\n",
		"| 61.8 x (50.0–70.0) | 30.9 x (THESIS T5.2) | 2.00× |",
		// With a confidence interval, the interval instead of the range.
		"| 20.0 s (95% CI 19.5–20.5, 5 runs) |",
		"fio 150 **disagree** | [1] |",
		// A disagreement is explained on the page: each note once,
		// numbered, and every row that has it names it.
		"| 90.0 MiB/s |  |  |  | [1] | m1 |",
		"| 9.00 ops/s |  |  |  | [2] | m2 |",
		"| fio 150 **disagree** | [1] | — |",
		"- m1: box, Linux 6.1, 2 × x, rsa-lab v1; steal 1.2%, load 0.50 at the start\n- m2: other",
		"Notes:\n\n1. check: fio times its jobs by the longest one\n2. cached\n",
		`a\|b`,
		"test box",
		// and summed up, with the note that explains it, before the tables
		"| ior | a\\|b | fio | 1 | 0 | 1 | 0 / 1 | 0 | 0 | [1] |",
		"- thesis T52 hold_ratio, ram@1g vs shared@1g (): ours 61.8× | THESIS T5.2 30.9×",
		// A node-local RAM disk is not RSA's design: listed apart, and
		// never beside the source's number.
		"## Ratios of a node-local RAM disk",
		"- thesis T52 hold_ratio, ram vs shared@1g (): 41.8×\n",
		"| T52 | ram vs shared@1g (node-local) | hold_ratio |  | 41.8 x |  |  |",
		"## What this machine can and cannot show", "## Related systems",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
}

func TestT52Curve(t *testing.T) {
	var rows []bench.Row
	for _, p := range []struct {
		lat   string
		ratio float64
	}{{"0s", 50}, {"5ms", 60}, {"20ms", 90}} {
		for _, m := range []string{"hold_ratio", "safe_ratio"} {
			rows = append(rows, bench.Row{Bench: "thesis", Case: "T52", Metric: m, Value: p.ratio, Params: map[string]string{"shared_latency": p.lat}})
		}
	}
	path := filepath.Join(t.TempDir(), "c.svg")
	if err := T52Curve(path, rows); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), "<svg") {
		t.Errorf("no SVG written: %v", err)
	}
	if err := T52Curve(path, rows[:0]); err == nil {
		t.Error("a curve of no rows: no error")
	}
}

// TestFigures: each plot draws from rows of its benchmark's shape, and
// says errNoRows, not a failure, when its benchmark did not run.
func TestFigures(t *testing.T) {
	p := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	rows := []bench.Row{
		{Bench: "thesis", Case: "T52", Target: "shared@1g", Metric: "hold", Value: 200, Params: p("shared_latency", "100ms")},
		{Bench: "thesis", Case: "T52", Target: "ram", Metric: "hold", Value: 0.3, Params: p("shared_latency", "100ms")},
		{Bench: "thesis", Case: "T52", Target: "ram", Metric: "safe", Value: 210, Params: p("shared_latency", "100ms")},
		{Bench: "thesis", Case: "T52", Target: "ram vs shared@1g", Metric: "hold_ratio", Value: 600, Params: p("shared_latency", "100ms")},
		{Bench: "fio", Case: "tms", Target: "ram", Metric: "write_rate", Value: 2000, Params: p("job", "tms", "bs", "64k", "qd", "1")},
		{Bench: "fio", Case: "tms", Target: "ram", Metric: "write_rate", Value: 2500, Params: p("job", "tms", "bs", "1m", "qd", "1")},
		{Bench: "fio", Case: "write", Target: "disk", Metric: "read_rate", Value: 90, Params: p("job", "tms", "bs", "16m", "qd", "8")},
	}
	dir := t.TempDir()
	written, left := Plots(dir, rows)
	if len(left) != 0 || len(written) != len(figures()) {
		t.Fatalf("Plots wrote %v, left out %v; want every figure", written, left)
	}
	for _, f := range written {
		if b, err := os.ReadFile(f.Path); err != nil || !strings.Contains(string(b), "<svg") || f.Caption == "" {
			t.Errorf("%s is no SVG, or has no caption: %v", f.Path, err)
		}
	}
	written, left = Plots(dir, nil)
	if len(written) != 0 || len(left) != len(figures()) {
		t.Fatalf("of no rows, Plots wrote %v and left out %v", written, left)
	}
	for _, err := range left {
		if !errors.Is(err, errNoRows) {
			t.Errorf("of no rows: %v, not errNoRows", err)
		}
	}
}

// TestTMSCurvesBad: a tms row whose block size or queue depth is not one
// fails the plot, naming it.
func TestTMSCurvesBad(t *testing.T) {
	for _, params := range []map[string]string{{"job": "tms", "bs": "4Q", "qd": "1"}, {"job": "tms", "bs": "4k", "qd": "x"}, {"job": "tms", "bs": "0", "qd": "1"}} {
		rows := []bench.Row{{Bench: "fio", Case: "tms", Target: "ram", Metric: "read_rate", Value: 1, Params: params}}
		if err := TMSCurves(filepath.Join(t.TempDir(), "bad.svg"), rows); err == nil || errors.Is(err, errNoRows) {
			t.Errorf("params %v: %v, want an error naming them", params, err)
		}
	}
}
