package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/bench"
)

func TestMarkdown(t *testing.T) {
	hold := bench.Row{Bench: "thesis", Case: "T52", Target: "ram vs shared@1g", Metric: "hold_ratio", Unit: "x", Value: 61.8, Runs: []float64{50, 61.8, 70}}
	hold.Source("THESIS T5.2", 30.9, "x")
	rate := bench.Row{Bench: "mptio", Case: "Seq_Write", Target: "a|b", Metric: "rate", Unit: "MiB/s", Value: 100}
	rate.CrossCheck("fio", 150)
	var b strings.Builder
	if err := Markdown(&b, []bench.Row{hold, rate}, Meta{Machine: "test box", Date: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		"## thesis", "## mptio",
		"| 61.8 x (50.0–70.0) | 30.9 x (THESIS T5.2) | 2.00× |",
		"fio 150 **disagree**",
		`a\|b`,
		"test box",
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
