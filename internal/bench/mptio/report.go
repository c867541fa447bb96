package mptio

import "slices"

// MPTIO's report counts in MB that are binary: the sample's "Size (MB) 200"
// is 800 records of 256 KiB. The functions here take bytes and seconds and
// return MB/s of 2^20 bytes, seconds and percentages, as the report prints
// them.

// mebibyte is MPTIO's MB.
const mebibyte = 1 << 20

// MiB is bytes in MPTIO's MB (2^20 bytes).
func MiB(bytes int64) float64 { return float64(bytes) / mebibyte }

// Rate is MPTIO's aggregate Rate: the bytes of all ranks over the longest
// rank time (each rank timed from the start barrier to the end of its last
// thread), in MiB/s. In the sample, 600 MiB over 65.44 s is 9.17.
func Rate(bytes int64, rankSeconds []float64) float64 {
	if len(rankSeconds) == 0 {
		return 0
	}
	return perSecond(MiB(bytes), slices.Max(rankSeconds))
}

// ERate is MPTIO's E-Rate: the bytes of all ranks over the elapsed time
// between the barrier that starts the test and the barrier that ends it,
// in MiB/s. It is at most Rate; the difference is the barriers' cost.
func ERate(bytes int64, elapsedSeconds float64) float64 {
	return perSecond(MiB(bytes), elapsedSeconds)
}

// DtVar is MPTIO's %DtVar, the spread of the ranks' times: (max − min) /
// max × 100. The appendix calls it the variation of the individual timings
// against the elapsed time; this formula reproduces its sample (per-node
// times 64.90, 65.44, 64.73 give 1.09; 6.70, 6.14, 6.78 give 9.44).
func DtVar(rankSeconds []float64) float64 {
	if len(rankSeconds) == 0 {
		return 0
	}
	hi, lo := slices.Max(rankSeconds), slices.Min(rankSeconds)
	if hi <= 0 {
		return 0
	}
	return (hi - lo) / hi * 100
}

// SysPercent is a rank's %Sys: the system CPU time of its threads over its
// time, in percent of one CPU (so a rank of several threads on several
// CPUs may pass 100, as top counts).
func SysPercent(sysSeconds, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return sysSeconds / seconds * 100
}

func perSecond(x, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return x / seconds
}

// Summary is one test's line of the report and its column of the node
// details.
type Summary struct {
	Test    Test
	Threads int     // Tot_thrd
	Bytes   int64   // moved by all ranks
	Rate    float64 // MiB/s
	ERate   float64 // MiB/s
	ETime   float64 // seconds
	DtVar   float64 // percent
	Nodes   []NodeSummary
}

// NodeSummary is one rank's figures of a test.
type NodeSummary struct {
	Rate float64 // MiB/s
	Time float64 // seconds
	Sys  float64 // percent of one CPU
}

// Summarize computes what the report prints of a test.
func (tr *TestResult) Summarize(threads int) Summary {
	s := Summary{Test: tr.Test, Threads: threads, ETime: tr.Elapsed.Seconds()}
	times := make([]float64, len(tr.Ranks))
	for i, r := range tr.Ranks {
		t := r.Time.Seconds()
		times[i] = t
		s.Bytes += r.Bytes
		s.Nodes = append(s.Nodes, NodeSummary{
			Rate: perSecond(MiB(r.Bytes), t),
			Time: t,
			Sys:  SysPercent(r.Sys.Seconds(), t),
		})
	}
	s.Rate = Rate(s.Bytes, times)
	s.ERate = ERate(s.Bytes, s.ETime)
	s.DtVar = DtVar(times)
	return s
}

// Summaries summarizes every test of the run, in the order they ran.
func (r *Result) Summaries() []Summary {
	threads := r.Plan.Config.Procs * r.Plan.Config.Threads
	out := make([]Summary, len(r.Tests))
	for i := range r.Tests {
		out[i] = r.Tests[i].Summarize(threads)
	}
	return out
}
