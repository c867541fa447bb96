package metabench

import "time"

// Phase is a test by the name GUPFS Table 1 gives it.
type Phase string

// The phases, in the order they run. The suffix A means a directory per
// participant, B (and Create-C) one directory shared by all; Create-A is
// one process filling one directory.
const (
	CreateA Phase = "Create-A"
	CreateB Phase = "Create-B"
	CreateC Phase = "Create-C"
	StatA   Phase = "Stat-A"
	StatB   Phase = "Stat-B"
	UtimeA  Phase = "Utime-A"
	UtimeB  Phase = "Utime-B"
	AppendA Phase = "Append-A"
	AppendB Phase = "Append-B"
	Untar   Phase = "Untar"
	DeleteA Phase = "Delete-A" // not in the source
	DeleteB Phase = "Delete-B" // not in the source
)

// InSource reports whether the source has the phase; the Delete phases
// are ours.
func (p Phase) InSource() bool { return p != DeleteA && p != DeleteB }

// Result is one phase's timing.
type Result struct {
	Phase   Phase
	Ops     int           // operations done by all participants (files for Untar)
	Elapsed time.Duration // from the barrier to the last participant's end
	Ranks   []RankResult  // one per process that worked, in rank order
	Batches []Batch       // Create-A only: one per -f files
}

// RankResult is one process's part of a phase.
type RankResult struct {
	Rank    int
	Ops     int
	Elapsed time.Duration // from the barrier to this process's end
}

// Batch is one -f batch of Create-A, timed by the creating process.
type Batch struct {
	Files   int // fewer than -f for a last, partial batch
	Elapsed time.Duration
}

// Rate is the aggregate rate: all operations over the elapsed time.
func (r Result) Rate() float64 { return rate(r.Ops, r.Elapsed) }

// Rate is the process's own rate.
func (r RankResult) Rate() float64 { return rate(r.Ops, r.Elapsed) }

// Rate is the batch's creation rate.
func (b Batch) Rate() float64 { return rate(b.Files, b.Elapsed) }

func rate(ops int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(ops) / d.Seconds()
}
