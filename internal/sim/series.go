package sim

import "time"

// maxBins bounds a series' memory whatever the trace's length.
const maxBins = 1024

// series records a quantity that changes in steps (busy nodes, RAM held)
// as its time average over fixed-width bins, doubling the width when it
// runs out of bins, and keeps its exact peak and time integral.
type series struct {
	width time.Duration
	bins  []float64 // ∫ value dt over each bin, in value·seconds
	last  time.Duration
	value float64
	peak  float64
	total float64 // ∫ value dt since 0
}

func newSeries() *series { return &series{width: time.Minute} }

// set changes the value at now.
func (s *series) set(now time.Duration, v float64) {
	s.integrate(now)
	s.value = v
	s.peak = max(s.peak, v)
}

// integrate adds the current value from the last change up to now.
func (s *series) integrate(now time.Duration) {
	for now >= time.Duration(maxBins)*s.width {
		s.coarsen()
	}
	s.total += s.value * (now - s.last).Seconds()
	for t := s.last; t < now; {
		i := int(t / s.width)
		end := min(now, time.Duration(i+1)*s.width)
		for len(s.bins) <= i {
			s.bins = append(s.bins, 0)
		}
		s.bins[i] += s.value * (end - t).Seconds()
		t = end
	}
	s.last = now
}

// coarsen halves the resolution.
func (s *series) coarsen() {
	n := (len(s.bins) + 1) / 2
	for i := range n {
		v := s.bins[2*i]
		if 2*i+1 < len(s.bins) {
			v += s.bins[2*i+1]
		}
		s.bins[i] = v
	}
	s.bins = s.bins[:n]
	s.width *= 2
}

// Points is a series as plotted: the mean value over each bin, at the
// bin's middle, in seconds.
type Points struct {
	X, Y []float64
}

func (s *series) points(end time.Duration) Points {
	s.integrate(end)
	var p Points
	for i, v := range s.bins {
		from := time.Duration(i) * s.width
		w := min(s.width, end-from)
		if w <= 0 {
			break
		}
		p.X = append(p.X, (from + w/2).Seconds())
		p.Y = append(p.Y, v/w.Seconds())
	}
	return p
}
