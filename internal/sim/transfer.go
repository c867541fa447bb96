package sim

import "time"

// A transfer is one piece of timed work: a job's reads or writes, its
// compute phase, an RSA action. Its steps run one after another; each is a
// fixed delay or work on a pool, which other transfers may be sharing.
type transfer struct {
	steps   []step
	i       int
	f       *flow // the current step's flow, while on a pool
	done    func()
	stopped bool
}

type step struct {
	pool   *pool // nil: a fixed delay
	delay  time.Duration
	work   float64 // units of the pool's capacity
	weight float64
	cap    float64
}

func delayStep(d time.Duration) step { return step{delay: d} }

// poolStep is work on p; nil p (a resource the model leaves out) costs
// nothing.
func poolStep(p *pool, work, weight, cap float64) step {
	return step{pool: p, work: work, weight: max(weight, 1), cap: cap}
}

// start runs t from its first step and calls done when it ends, never
// before the caller returns (so that a transfer with nothing to do still
// ends through the clock, as every action's completion must).
func (s *sim) start(t *transfer) *transfer {
	t.i = -1
	s.clock.after(0, func() { s.advanceTransfer(t) })
	return t
}

// advanceTransfer moves t to its next step with work to do.
func (s *sim) advanceTransfer(t *transfer) {
	if t.stopped {
		return
	}
	for t.i++; t.i < len(t.steps); t.i++ {
		st := t.steps[t.i]
		switch {
		case st.pool == nil && st.delay > 0:
			i := t.i
			s.clock.after(st.delay, func() {
				if t.i == i {
					s.advanceTransfer(t)
				}
			})
			return
		case st.pool != nil && st.work > 0:
			t.f = &flow{left: st.work, weight: st.weight, cap: st.cap, tr: t}
			s.join(st.pool, t.f)
			return
		}
	}
	t.f = nil
	if t.done != nil {
		t.done()
	}
}

// stop abandons t: its flow leaves its pool, its pending delay is ignored.
func (s *sim) stop(t *transfer) {
	if t == nil || t.stopped {
		return
	}
	t.stopped = true
	if t.f != nil {
		s.leave(t.steps[t.i].pool, t.f)
		t.f = nil
	}
}

// join adds f to p and shares p anew.
func (s *sim) join(p *pool, f *flow) {
	p.advance(s.clock.now)
	p.flows = append(p.flows, f)
	s.reshare(p)
}

// leave removes f from p before it is done.
func (s *sim) leave(p *pool, f *flow) {
	p.advance(s.clock.now)
	for i, g := range p.flows {
		if g == f {
			p.flows = append(p.flows[:i], p.flows[i+1:]...)
			break
		}
	}
	s.reshare(p)
}

func (s *sim) reshare(p *pool) {
	p.share()
	p.ver++
	if t, ok := p.next(s.clock.now); ok {
		ver := p.ver
		s.clock.at(t, event{fn: func() { s.poolDue(p, ver) }})
	}
}

// poolDue ends the flows that are done and moves their transfers on.
func (s *sim) poolDue(p *pool, ver uint64) {
	if ver != p.ver {
		return // the pool changed since; a newer event stands
	}
	p.advance(s.clock.now)
	var done []*transfer
	kept := p.flows[:0]
	for _, f := range p.flows {
		if f.done() {
			done = append(done, f.tr)
		} else {
			kept = append(kept, f)
		}
	}
	clear(p.flows[len(kept):])
	p.flows = kept
	s.reshare(p)
	for _, t := range done {
		t.f = nil
		s.advanceTransfer(t)
	}
}
