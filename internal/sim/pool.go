package sim

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// A pool is a resource that the flows using it at the moment share: the
// shared file system's bandwidth, its metadata service, the RSA uplink.
// Sharing is weighted max-min fair (a job on more nodes opens more client
// streams), each flow capped by its own limit (its nodes' links, a mover's
// speed), which is how a parallel file system under load behaves to first
// order. Rates change only when a flow joins or leaves, so the pool needs
// one pending event: its next completion; a version number retires the
// events that a later change made stale.
type pool struct {
	capacity float64 // units per second
	flows    []*flow
	last     time.Duration // when the flows' progress was last brought up to date
	ver      uint64
}

type flow struct {
	left   float64 // units still to serve
	weight float64
	cap    float64 // units per second; 0: no cap of its own
	rate   float64
	tr     *transfer
}

// advance brings every flow's progress up to now at the current rates.
func (p *pool) advance(now time.Duration) {
	dt := (now - p.last).Seconds()
	p.last = now
	if dt <= 0 {
		return
	}
	for _, f := range p.flows {
		f.left -= f.rate * dt
	}
}

// share sets each flow's rate: water-filling in order of cap per weight,
// so flows limited below their fair share leave the rest to the others.
func (p *pool) share() {
	limit := func(f *flow) float64 {
		if f.cap <= 0 {
			return math.Inf(1)
		}
		return f.cap / f.weight
	}
	// Stable, so that equal flows keep their arrival order and runs repeat.
	slices.SortStableFunc(p.flows, func(a, b *flow) int { return cmp.Compare(limit(a), limit(b)) })
	left, w := p.capacity, 0.0
	for _, f := range p.flows {
		w += f.weight
	}
	for _, f := range p.flows {
		r := left * f.weight / w
		if f.cap > 0 && f.cap < r {
			r = f.cap
		}
		f.rate = r
		left -= r
		w -= f.weight
	}
}

// next is when the first flow will be done at the current rates.
func (p *pool) next(now time.Duration) (time.Duration, bool) {
	best := math.Inf(1)
	for _, f := range p.flows {
		if f.rate > 0 {
			best = min(best, f.left/f.rate)
		}
	}
	if math.IsInf(best, 1) {
		return 0, false
	}
	return now + durationCeil(best), true
}

// done reports whether f has no work left worth an event: rounding the
// completion time to whole nanoseconds leaves at most a nanosecond's work.
func (f *flow) done() bool { return f.left <= f.rate*1e-6 || f.left <= 1e-9 }

// durationCeil converts seconds to a Duration, rounding up so that a flow
// is never woken before it is done.
func durationCeil(s float64) time.Duration {
	if s <= 0 {
		return 0
	}
	if s > float64(math.MaxInt64/2)/float64(time.Second) {
		return math.MaxInt64 / 2
	}
	return time.Duration(math.Ceil(s * float64(time.Second)))
}
