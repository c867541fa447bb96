package lifecycle

import (
	"math"
	"time"
)

// The stage-in timing policy: when RSA begins to build and fill the RAMDISK
// of a job that waits on deck for its expected start. The daemon asks it
// with the start the batch system estimates, the simulator with the start
// its scheduler reserves; both pass the same configuration (the lead time,
// slurm.stage_in_lead, and the copy rate, slurm.stage_rate), so a simulated
// stage-in begins when the daemon's would.

// StageInSize is the number of bytes the policy budgets a job's stage-in
// for: the capacity the job asked for, when it asked (capacity > 0), else
// nodeCapacity, one RSA node's capacity. A RAMDISK sized by proportion
// spans whole nodes and each node's mover fills its own part at once, so
// filling it takes as long as filling one node. An explicit capacity is
// budgeted as one copy of its full size whatever nodes it spans: the
// estimate then errs towards beginning early, never late.
func StageInSize(capacity, nodeCapacity int64) int64 {
	if capacity > 0 {
		return capacity
	}
	return nodeCapacity
}

// StageInTime is when the stage-in of a job expected to start at start
// should begin, as seen at now: lead before the start, less the time one
// mover takes to copy size bytes at rate bytes per second, so that the
// input is in RAM lead ahead of the start.
//
// The zero time means at once. It is the answer when the start is unknown
// (zero), when there is no lead (lead <= 0: stage in as soon as the job is
// on deck), when the rate is not positive (the fill time cannot be
// estimated), and when the moment computed is not after now (the job is
// due sooner than its stage-in takes). Any other answer is after now.
//
// The fill time is rounded up to the nanosecond, so rounding never makes a
// stage-in begin later than the policy asks.
func StageInTime(start, now time.Time, lead time.Duration, size int64, rate float64) time.Time {
	if start.IsZero() || lead <= 0 || !(rate > 0) {
		return time.Time{}
	}
	at := start.Add(-lead).Add(-fillTime(size, rate))
	if !at.After(now) {
		return time.Time{}
	}
	return at
}

// maxFill bounds the fill time: a copy that long (146 years) begins at once
// anyway, and converting a longer one to a Duration would overflow.
const maxFill = time.Duration(math.MaxInt64 / 2)

// fillTime is how long copying size bytes at rate bytes per second (rate
// > 0) takes, rounded up to the nanosecond and at most maxFill.
func fillTime(size int64, rate float64) time.Duration {
	s := float64(size) / rate
	switch {
	case s <= 0:
		return 0
	case s > maxFill.Seconds():
		return maxFill
	}
	return time.Duration(math.Ceil(s * float64(time.Second)))
}
