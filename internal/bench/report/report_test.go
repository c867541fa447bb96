package report

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"

	"github.com/rsa-hpc/rsa/internal/bench"
)

func TestMarkdown(t *testing.T) {
	hold := bench.Row{Bench: "thesis", Case: "T52", Target: "ram vs shared@1g", Metric: "hold_ratio", Unit: "x", Value: 61.8, Runs: []float64{50, 61.8, 70}}
	hold.Source("THESIS T5.2", 30.9, "x")
	rate := bench.Row{Bench: "mptio", Case: "Seq_Write", Target: "a|b", Metric: "rate", Unit: "MiB/s", Value: 100}
	rate.CrossCheck("fio", 150)
	rate.Note = "check: fio times its jobs\nby the longest one"
	read := bench.Row{Bench: "mptio", Case: "Seq_Read", Target: "a", Metric: "rate", Unit: "MiB/s", Value: 90, Note: rate.Note}
	stat := bench.Row{Bench: "mptio", Case: "Stat", Target: "a", Metric: "rate", Unit: "ops/s", Value: 9, Note: "cached"}
	var b strings.Builder
	if err := Markdown(&b, []bench.Row{hold, rate, read, stat}, Meta{Machine: "test box", Date: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		"## thesis", "## mptio",
		"| 61.8 x (50.0–70.0) | 30.9 x (THESIS T5.2) | 2.00× |",
		"fio 150 **disagree** | [1] |",
		// A disagreement is explained on the page: each note once,
		// numbered, and every row that has it names it.
		"| 90.0 MiB/s |  |  |  | [1] |",
		"| 9.00 ops/s |  |  |  | [2] |",
		"Notes:\n\n1. check: fio times its jobs by the longest one\n2. cached\n",
		`a\|b`,
		"test box",
		// and summed up, with the note that explains it, before the tables
		"| mptio | a\\|b | fio | 1 | 0 | 1 | 0 / 1 | 0 | 0 | [1] |",
		"- thesis T52 hold_ratio, ram vs shared@1g (): ours 61.8× | THESIS T5.2 30.9×",
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
		{Bench: "mptio", Case: "Seq_Write", Target: "ram", Metric: "rate", Value: 3000},
		{Bench: "mptio", Case: "Seq_Read", Target: "ram", Metric: "e_rate", Value: 9000},
		{Bench: "metabench", Case: "Create-A", Target: "ram", Metric: "ops_per_s", Value: 1e5, Params: p("nproc", "1")},
		{Bench: "metabench", Case: "Create-A", Target: "ram", Metric: "ops_per_s", Value: 2e5, Params: p("nproc", "2")},
		{Bench: "sweep", Case: "write", Target: "ram-dev", Metric: "rate", Value: 140, Params: p("bs", "4K", "qd", "1")},
		{Bench: "sweep", Case: "write", Target: "ram-dev", Metric: "rate", Value: 9000, Params: p("bs", "1M", "qd", "16")},
		{Bench: "sweep", Case: "read", Target: "disk-dev", Metric: "rate", Value: 80, Params: p("bs", "4K", "qd", "4")},
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
	bad := []bench.Row{{Bench: "sweep", Case: "read", Target: "ram-dev", Metric: "rate", Value: 1, Params: p("bs", "4Q", "qd", "1")}}
	if err := SweepHeatMaps(filepath.Join(dir, "bad.svg"), bad); err == nil || errors.Is(err, errNoRows) {
		t.Errorf("a sweep row of block size 4Q: %v, want an error naming it", err)
	}
}

// TestSweepBlockSizes: a sweep row's block size is read as the sweep
// writes it, and one that is no size fails the plot, naming it.
func TestSweepBlockSizes(t *testing.T) {
	row := func(bs string) []bench.Row {
		return []bench.Row{{Bench: "sweep", Case: "read", Target: "ram-dev", Metric: "rate", Value: 1, Params: map[string]string{"bs": bs, "qd": "1"}}}
	}
	dir := t.TempDir()
	for _, bs := range []string{"512", "4K", "1M", "32M", "1G"} {
		if err := SweepHeatMaps(filepath.Join(dir, "ok.svg"), row(bs)); err != nil {
			t.Errorf("block size %q: %v", bs, err)
		}
	}
	for _, bs := range []string{"", "K", "-4K", "4Q", "0"} {
		if err := SweepHeatMaps(filepath.Join(dir, "bad.svg"), row(bs)); err == nil || errors.Is(err, errNoRows) {
			t.Errorf("block size %q: %v, want an error naming it", bs, err)
		}
	}
}

func TestRowsOf(t *testing.T) {
	ps := []*plot.Plot{plot.New(), plot.New(), plot.New(), plot.New()}
	for _, tc := range []struct{ n, rows int }{{3, 2}, {4, 1}, {1, 4}} {
		g := rowsOf(ps, tc.n)
		if len(g) != tc.rows {
			t.Errorf("4 panels %d to a row: %d rows, want %d", tc.n, len(g), tc.rows)
		}
		for _, r := range g {
			if len(r) != tc.n {
				t.Errorf("4 panels %d to a row: a row of %d", tc.n, len(r))
			}
		}
		if g[0][0] != ps[0] || g[len(g)-1][(len(ps)-1)%tc.n] != ps[3] {
			t.Errorf("4 panels %d to a row: out of order", tc.n)
		}
	}
}
