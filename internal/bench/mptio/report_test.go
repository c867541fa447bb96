package mptio

import (
	"math"
	"strings"
	"testing"
	"time"
)

// The appendix sample's per-node times, in seconds, as it prints them.
func sampleWriteTimes() []float64 { return []float64{64.90, 65.44, 64.73} }
func sampleReadTimes() []float64  { return []float64{6.70, 6.14, 6.78} }

// near reports whether got rounds to want at the sample's two decimals.
func near(got, want float64) bool { return math.Abs(got-want) <= 0.005+1e-9 }

func TestReportMathSample(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want float64
		tolerance float64
	}{
		// (65.44 − 64.73) / 65.44 is 1.085: the sample prints 1.09 from
		// times it had to more decimals than it prints.
		{"write %DtVar", DtVar(sampleWriteTimes()), 1.09, 0.01},
		{"read %DtVar", DtVar(sampleReadTimes()), 9.44, 0.005},
		{"write Rate", Rate(600*mib, sampleWriteTimes()), 9.17, 0.005},
		{"write E-Rate", ERate(600*mib, 65.44), 9.17, 0.005},
		// 600 / 6.78 is 88.50: the sample's 88.43 says its longest
		// time was 6.785, printed as 6.78 and E-Time 6.79.
		{"read Rate", Rate(600*mib, []float64{6.70, 6.14, 6.785}), 88.43, 0.005},
		{"node 0 write rate", 200 / sampleWriteTimes()[0], 3.08, 0.005},
		{"node 1 write rate", perSecond(MiB(200*mib), sampleWriteTimes()[1]), 3.06, 0.005},
		{"node 2 write rate", perSecond(MiB(200*mib), sampleWriteTimes()[2]), 3.09, 0.005},
		{"%Sys", SysPercent(3.777, 64.90), 5.82, 0.005},
	} {
		if math.Abs(tc.got-tc.want) > tc.tolerance+1e-9 {
			t.Errorf("%s = %.4f, want %.2f", tc.name, tc.got, tc.want)
		}
	}
}

func TestReportMathEdges(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"no ranks, rate", Rate(mib, nil), 0},
		{"no ranks, dtvar", DtVar(nil), 0},
		{"zero time", Rate(mib, []float64{0}), 0},
		{"zero elapsed", ERate(mib, 0), 0},
		{"one rank", DtVar([]float64{3}), 0},
		{"MiB", MiB(3 * mib / 2), 1.5},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// sampleResult is the appendix sample as Run would have returned it.
func sampleResult(t *testing.T) *Result {
	t.Helper()
	p, err := NewPlan(Config{Procs: 3, ProcSize: 200 * mib, RecordSize: 256 * kib, Threads: 4,
		Skip: []Test{ReadModifyWrite, RandomWrite, RandomRead}})
	if err != nil {
		t.Fatal(err)
	}
	seconds := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	ranks := func(times, sys []float64) []RankResult {
		var rs []RankResult
		for i := range times {
			rs = append(rs, RankResult{Bytes: 200 * mib, Time: seconds(times[i]), Sys: seconds(sys[i] * times[i] / 100)})
		}
		return rs
	}
	return &Result{Plan: p, Tests: []TestResult{
		{Test: SeqWrite, Ranks: ranks(sampleWriteTimes(), []float64{5.82, 5.84, 5.81}), Elapsed: seconds(65.44)},
		{Test: SeqRead, Ranks: ranks([]float64{6.696, 6.137, 6.785}, []float64{33.60, 34.87, 28.59}), Elapsed: seconds(6.786)},
	}}
}

func TestSummarizeSample(t *testing.T) {
	sums := sampleResult(t).Summaries()
	for i, want := range []struct {
		rate, erate, etime, dtvar float64
		nodeRates                 []float64
	}{
		{9.17, 9.17, 65.44, 1.09, []float64{3.08, 3.06, 3.09}},
		{88.43, 88.42, 6.79, 9.55, []float64{29.87, 32.59, 29.48}},
	} {
		s := sums[i]
		if s.Threads != 12 || s.Bytes != 600*mib {
			t.Errorf("%s: %d threads, %d bytes", s.Test, s.Threads, s.Bytes)
		}
		if !near(s.Rate, want.rate) || !near(s.ERate, want.erate) || !near(s.ETime, want.etime) || math.Abs(s.DtVar-want.dtvar) > 0.01 {
			t.Errorf("%s: rate %.3f e-rate %.3f e-time %.3f dtvar %.3f; want %v", s.Test, s.Rate, s.ERate, s.ETime, s.DtVar, want)
		}
		for n, r := range want.nodeRates {
			if !near(s.Nodes[n].Rate, r) {
				t.Errorf("%s node %d: rate %.3f, want %.2f", s.Test, n, s.Nodes[n].Rate, r)
			}
		}
	}
	if got := sums[1].Nodes[1].Sys; !near(got, 34.87) {
		t.Errorf("read node 1 %%Sys %.3f, want 34.87", got)
	}
}

func TestWriteReportLayout(t *testing.T) {
	var b strings.Builder
	if err := WriteReport(&b, sampleResult(t)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"# mptio -n 3 -G -f 200M -b 256K -t 4 -k 1 -k 2 -k 4\n",
		"      200        256        3         4       12      800    200\n",
		"Seq_Write    256       12        9.17       9.17    65.44     1.08\n", // 1.085 at the printed times
		"Seq_Read     256       12       88.43      88.42     6.79     9.55\n",
		"| Node | Seq_Write                  | Seq_Read                   |\n",
		"|    1 |      3.06    65.44    5.84 |     32.59     6.14   34.87 |\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestRowsSample(t *testing.T) {
	res := sampleResult(t)
	rows := Rows(res, "ram")
	if len(rows) != 8 {
		t.Fatalf("%d rows, want 4 per test", len(rows))
	}
	want := map[string]float64{
		"Seq_Write rate": 9.17, "Seq_Write e_rate": 9.17, "Seq_Write e_time": 65.44, "Seq_Write dtvar": 1.09,
		"Seq_Read rate": 88.43, "Seq_Read e_rate": 88.43, "Seq_Read e_time": 6.79, "Seq_Read dtvar": 9.44,
	}
	for _, r := range rows {
		k := r.Case + " " + r.Metric
		if r.Bench != "mptio" || r.Target != "ram" || r.Params["procs"] != "3" || r.Params["size"] != "200M" || r.Params["recsz"] != "256K" {
			t.Errorf("%s: %+v", k, r)
		}
		if r.SourceValue == nil || *r.SourceValue != want[k] || r.SourceRef != SampleRef {
			t.Errorf("%s: source %v, want %v", k, r.SourceValue, want[k])
		}
	}

	// A smaller run of the same shape is set beside the sample's rates,
	// not beside its times.
	small, err := NewPlan(Config{Procs: 3, ProcSize: 8 * mib, RecordSize: 256 * kib, Threads: 4})
	if err != nil {
		t.Fatal(err)
	}
	res.Plan = small
	for _, r := range Rows(res, "ram") {
		if has := r.SourceValue != nil; has != (r.Metric != "e_time") {
			t.Errorf("%s %s of a smaller run: source %v", r.Case, r.Metric, r.SourceValue)
		}
	}

	// Another shape has no counterpart.
	other, err := NewPlan(Config{Procs: 2, ProcSize: 200 * mib, RecordSize: 256 * kib, Threads: 4})
	if err != nil {
		t.Fatal(err)
	}
	res.Plan = other
	for _, r := range Rows(res, "ram") {
		if r.SourceValue != nil {
			t.Errorf("%s %s of 2 processes: source %v", r.Case, r.Metric, *r.SourceValue)
		}
	}
}

func TestReportName(t *testing.T) {
	at := time.Date(2002, 11, 5, 9, 3, 7, 0, time.UTC)
	if got := ReportName("gfs", at); got != "gfs_20021105_090307" {
		t.Errorf("ReportName = %q", got)
	}
}

func TestSizeString(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 512: "512", 256 * kib: "256K", 200 * mib: "200M", gib: "1G", 1536 * mib: "1536M", 1365 * 64 * kib: "87360K"} {
		if got := SizeString(n); got != want {
			t.Errorf("SizeString(%d) = %q, want %q", n, got, want)
		}
	}
}
