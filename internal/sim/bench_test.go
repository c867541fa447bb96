package sim

import (
	"bytes"
	"os"
	"runtime"
	"testing"
)

// BenchmarkSimLublin simulates the bundled trace (10,000 jobs on 256
// nodes) with RSA at the defaults. Besides the time per run it reports
// simulated jobs per second and bytes allocated per job (garbage
// included: what a job costs over its life, not what a run keeps).
func BenchmarkSimLublin(b *testing.B) {
	trace, err := os.ReadFile("testdata/lublin_256.swf")
	if err != nil {
		b.Fatal(err)
	}
	c := Defaults()
	b.ReportAllocs()
	var jobs int
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		r, err := Run(b.Context(), bytes.NewReader(trace), c)
		if err != nil {
			b.Fatal(err)
		}
		jobs += r.Jobs
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(jobs)/b.Elapsed().Seconds(), "jobs/s")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(jobs), "B/job")
}
