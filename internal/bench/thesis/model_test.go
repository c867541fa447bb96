package thesis

import (
	"math"
	"slices"
	"testing"

	"github.com/rsa-hpc/rsa/internal/bench"
)

func TestStageLine(t *testing.T) {
	// A line of 3 s fixed, 20 ms a file and 100 MiB/s.
	at := func(files int, bytes float64) float64 { return 3 + float64(files)*0.02 + bytes/(100<<20) }
	fixed, perFile, rate, err := stageLine(at(smallFew, 0), at(smallMany, 0), at(streamFiles, streamFiles*streamSize))
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(fixed-3) > 1e-9 || math.Abs(perFile-0.02) > 1e-9 || math.Abs(rate-(100<<20)) > 1 {
		t.Errorf("fixed %g s, %g s a file, %g B/s; want 3, 0.02, %d", fixed, perFile, rate, 100<<20)
	}
	for _, tt := range []struct {
		name              string
		few, many, stream float64
	}{
		{"more files took less time", 5, 4, 10},
		{"the stream took less than its files' fixed cost", 3.64, 11.24, 2},
		{"a negative fixed cost", 0.1, 11, 20},
	} {
		if _, _, _, err := stageLine(tt.few, tt.many, tt.stream); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
}

// testCalibration is a calibration with round numbers: the direct side at
// 100 MiB/s and 5 ms a file, the RAMDISK at 150 MiB/s and 1 ms, the
// stage-out 2 s + 10 ms a file + bytes at 80 MiB/s, shared@1g's link
// 1 Gbit/s.
func testCalibration() ModelCalibration {
	return ModelCalibration{Rate: "1gbit", ComputeLink: 9e8, SharedLink: 1e9, DirectWrite: 100 << 20, RSAWrite: 150 << 20,
		DirectCreate: 0.005, RSACreate: 0.001, StageFixed: 2, StagePerFile: 0.01, StageRate: 80 << 20}
}

func TestTwoTerm(t *testing.T) {
	cal := testCalibration()
	tests := []struct {
		cell                   ModelCell
		direct, hold, verified float64
	}{
		// 2 GiB in 2,048 files: bytes bound both sides.
		{ModelCell{"1gbit", 2048, 1 << 20}, 20.48, 2048.0 / 150, 2048.0/150 + 2 + 20.48 + 25.6},
		// 2 MiB in 2,048 files of 1 KiB: creates bound both sides.
		{ModelCell{"1gbit", 2048, 1 << 10}, 10.24, 2.048, 2.048 + 2 + 20.48 + 2.0/80},
	}
	for _, tt := range tests {
		rows := cal.twoTerm(tt.cell)
		want := map[string]float64{"shared@1g hold": tt.direct, "ram@1g hold": tt.hold, "ram@1g verified": tt.verified}
		for _, r := range rows {
			w, ok := want[r.Target+" "+r.Metric]
			if !ok || math.Abs(r.Value-w) > 1e-6*w {
				t.Errorf("%v: %s %s = %g, want %g", tt.cell, r.Target, r.Metric, r.Value, w)
			}
			if r.Params["link"] != "1gbit" || r.Params["ranks"] != "2048" {
				t.Errorf("%v: params %v do not name E1's cell", tt.cell, r.Params)
			}
		}
	}
}

// The simulator, set from a calibration, adds what the two-term model
// overlaps: its creates, then its bytes; the mover's files, then its
// bytes. Its verify and unmount are the stage-out's fixed cost.
func TestSimPredict(t *testing.T) {
	cal := testCalibration()
	cell := ModelCell{"1gbit", 2048, 1 << 20}
	rows, err := SimPredict(t.Context(), cal, cell)
	if err != nil {
		t.Fatal(err)
	}
	n, b := 2048.0, float64(2<<30)
	hold := n*cal.RSACreate + b/cal.RSAWrite
	want := map[string]float64{
		"shared@1g hold":  n*cal.DirectCreate + b/min(cal.SharedLink/8, cal.RSAWrite),
		"ram@1g hold":     hold,
		"ram@1g verified": hold + cal.StageFixed + n*cal.StagePerFile + b/cal.StageRate,
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for _, r := range rows {
		if w := want[r.Target+" "+r.Metric]; math.Abs(r.Value-w) > 0.01*w {
			t.Errorf("%s %s = %.2f s, want %.2f (±1%%)", r.Target, r.Metric, r.Value, w)
		}
	}
}

func TestAgainstE1(t *testing.T) {
	cell := map[string]string{"link": "1gbit", "ranks": "2048", "size": "1048576"}
	e1 := func(first string, v float64, extra ...string) bench.Row {
		p := withParams(cell, "first", first, "shared_latency", "0s", "layout", "one directory")
		p = withParams(p, extra...)
		return bench.Row{Bench: "thesis", Case: "T52", Target: "ram@1g", Metric: "hold", Unit: "s", Value: v, Params: p}
	}
	pred := ModelCell{"1gbit", 2048, 1 << 20}.Row("E2 sim", "ram@1g", "hold", 17, "")
	other := ModelCell{"2gbit", 2048, 1 << 20}.Row("E2 sim", "ram@1g", "hold", 12, "")
	rows := []bench.Row{
		e1("", 99), // an undesigned run (no drawn order): not E1
		e1("direct/rsa", 30, "output", "private"), // another access mode
		e1("direct/rsa", 18.1),
		pred, other,
	}
	got := AgainstE1(rows)
	if p := got[3]; p.SourceValue == nil || *p.SourceValue != 18.1 || p.SourceRef != "E1, measured median" {
		t.Errorf("prediction's source %v %q, want E1's 18.1", p.SourceValue, p.SourceRef)
	}
	if got[4].SourceValue != nil {
		t.Errorf("a cell E1 did not run got a source: %v", *got[4].SourceValue)
	}
	if rows[3].SourceValue != nil {
		t.Error("AgainstE1 changed its input's rows")
	}
}

func TestAgainstE4(t *testing.T) {
	cal := testCalibration()
	cell := map[string]string{"hosts": "4", "ranks": "512", "size": "4194304"}
	model := func(target, metric string, v float64) bench.Row {
		return bench.Row{Bench: "contention", Case: "E4 model", Target: target, Metric: metric, Unit: "s", Value: v,
			Params: withParams(cell, "create_ms", "82.0", "link_Mbit", "956")}
	}
	measured := func(target, metric string, v float64) bench.Row {
		return bench.Row{Bench: "contention", Case: "E4", Target: target, Metric: metric, Unit: "s", Value: v,
			Params: withParams(cell, "local", "80ms", "revoke", "440ms")}
	}
	rows := []bench.Row{
		model("shared@1g", "hold", 211), model("ram@1g", "hold", 4.5), model("ram@1g", "verified", 46.6),
		measured("shared@1g", "hold", 210), measured("ram@1g", "hold", 6.2), measured("ram@1g", "verified", 53),
	}
	cal.raw = map[string][]float64{"compute_link": {cal.ComputeLink}, "shared_link": {cal.SharedLink}, "direct_write": {cal.DirectWrite},
		"rsa_write": {cal.RSAWrite}, "direct_create": {cal.DirectCreate}, "rsa_create": {cal.RSACreate}}
	e2 := cal.rows()
	if back, ok := e2At(e2, "1gbit"); !ok || math.Abs(back.RSACreate-cal.RSACreate) > 1e-12 || math.Abs(back.StageRate-cal.StageRate) > 1e-3 {
		t.Fatalf("E2's calibration read back from its rows: %+v, %v; want %+v", back, ok, cal)
	}
	got, err := AgainstE4(t.Context(), append(slices.Clone(rows), e2...))
	if err != nil {
		t.Fatal(err)
	}
	if src := got[0].SourceValue; src == nil || *src != 210 {
		t.Errorf("the two-term direct hold's source %v, want the measured 210", src)
	}
	var sims []bench.Row
	for _, r := range got {
		if r.Case == "E4 sim" {
			sims = append(sims, r)
		}
	}
	if len(sims) != 3 || got[3].Case != "E4 sim" {
		t.Fatalf("%d simulator rows, the first at %q; want 3 right after the model's", len(sims), got[3].Case)
	}
	// 512 creates, each 82 ms + 440 ms × 3/4, then 2 GiB over 956 Mbit/s.
	want := 512*(0.082+0.44*0.75) + float64(2<<30)/(956e6/8)
	if d := sims[0]; d.Target != "shared@1g" || math.Abs(d.Value-want) > 0.01*want || d.SourceValue == nil || *d.SourceValue != 210 {
		t.Errorf("simulator's direct hold %s %.1f s (source %v), want shared@1g %.1f s beside 210", d.Target, d.Value, d.SourceValue, want)
	}
	// The RAMDISK: 512 creates at 1 ms, then 2 GiB over four 956 Mbit/s links.
	if h, want := sims[1], 0.512+float64(2<<30)/(4*956e6/8); h.Target != "ram@1g" || h.Metric != "hold" || math.Abs(h.Value-want) > 0.01*want {
		t.Errorf("simulator's RSA hold %s %s %.2f s, want %.2f", h.Target, h.Metric, h.Value, want)
	}
	// Without E2's calibration: the model's rows sourced, no simulator.
	got, err = AgainstE4(t.Context(), rows)
	if err != nil || len(got) != len(rows) || got[1].SourceValue == nil {
		t.Errorf("without E2: %d rows (want %d), %v", len(got), len(rows), err)
	}
}
