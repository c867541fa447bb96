package mptio

import (
	"maps"
	"strconv"
	"strings"

	"github.com/rsa-hpc/rsa/internal/bench"
)

// SampleRef names the run the report's Appendix A.1 prints as its sample:
// 3 processes × 4 threads, 200 MB per process in 256 KB records, sequential
// write and read only, on the GUPFS testbed.
const SampleRef = "GUPFS A.1 sample"

// sample is the appendix sample's figure for a test and metric, if it has
// one.
func sample(t Test, metric string) (float64, bool) {
	type key struct {
		t      Test
		metric string
	}
	v, ok := map[key]float64{
		{SeqWrite, "rate"}: 9.17, {SeqWrite, "e_rate"}: 9.17, {SeqWrite, "e_time"}: 65.44, {SeqWrite, "dtvar"}: 1.09,
		{SeqRead, "rate"}: 88.43, {SeqRead, "e_rate"}: 88.43, {SeqRead, "e_time"}: 6.79, {SeqRead, "dtvar"}: 9.44,
	}[key{t, metric}]
	return v, ok
}

// Rows are the run's results for rsa-lab bench: four a test (rate, e_rate,
// e_time, dtvar), on the named target. A run of the sample's shape (3
// processes × 4 threads) carries the sample's rates and %DtVar beside its
// own; its E-Time only when the sizes are the sample's too, since a time
// grows with the bytes moved.
func Rows(r *Result, target string) []bench.Row {
	p := r.Plan
	c := &p.Config
	shape := c.Procs == 3 && c.Threads == 4
	sameSize := shape && p.ProcSize == 200<<20 && c.RecordSize == 256<<10
	params := rowParams(p)

	var rows []bench.Row
	for _, s := range r.Summaries() {
		for _, m := range []struct {
			metric, unit string
			value        float64
		}{
			{"rate", "MiB/s", s.Rate},
			{"e_rate", "MiB/s", s.ERate},
			{"e_time", "s", s.ETime},
			{"dtvar", "%", s.DtVar},
		} {
			row := bench.Row{Bench: "mptio", Case: s.Test.String(), Target: target, Params: maps.Clone(params),
				Metric: m.metric, Unit: m.unit, Value: m.value}
			if v, ok := sample(s.Test, m.metric); ok && shape && (m.metric != "e_time" || sameSize) {
				unit := m.unit
				if unit == "MiB/s" {
					unit = "MB/s"
					row.Note = "the source's MB are MiB (2^20 bytes)"
				}
				row.Source(SampleRef, v, unit)
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// rowParams are the parameters the rows of a run share: its shape always,
// its options when set.
func rowParams(p *Plan) map[string]string {
	c := &p.Config
	m := map[string]string{
		"mode":    c.Mode.String(),
		"procs":   strconv.Itoa(c.Procs),
		"threads": strconv.Itoa(c.Threads),
		"recsz":   SizeString(c.RecordSize),
		"size":    SizeString(p.ProcSize),
	}
	set := func(on bool, k, v string) {
		if on {
			m[k] = v
		}
	}
	set(c.Mode == Device, "devices", strings.Join(c.Devices, ","))
	set(c.NRand > 0, "nrand", strconv.FormatInt(c.NRand, 10))
	set(c.Rotate, "rotate", "true")
	set(c.Direct, "direct", "true")
	set(c.OverlapProcs || c.OverlapThreads, "overlap", overlapFlags(c))
	set(c.Offset > 0, "offset", SizeString(c.Offset))
	return m
}

func overlapFlags(c *Config) string {
	var s string
	if c.OverlapProcs {
		s += "p"
	}
	if c.OverlapThreads {
		s += "t"
	}
	return s
}
