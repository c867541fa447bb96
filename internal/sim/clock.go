package sim

import "time"

// The discrete-event clock. Events run in time order; events due at the
// same instant run in the order they were scheduled, so an instant's causes
// come before their effects (a job's end frees its nodes before the
// scheduling pass that end asked for). Nothing here knows what an event
// means: each carries the function to run.

type event struct {
	at  time.Duration
	seq uint64
	fn  func()
}

type clock struct {
	now time.Duration
	seq uint64
	h   []event // a binary min-heap on (at, seq)
	ran int64   // events run, for speed reports
}

func (c *clock) less(i, j int) bool {
	if c.h[i].at != c.h[j].at {
		return c.h[i].at < c.h[j].at
	}
	return c.h[i].seq < c.h[j].seq
}

// at schedules e for time t; a time in the past means now (the clock never
// runs backwards).
func (c *clock) at(t time.Duration, e event) {
	e.at = max(t, c.now)
	e.seq = c.seq
	c.seq++
	c.h = append(c.h, e)
	for i := len(c.h) - 1; i > 0; {
		p := (i - 1) / 2
		if !c.less(i, p) {
			break
		}
		c.h[i], c.h[p] = c.h[p], c.h[i]
		i = p
	}
}

// after schedules fn d from now.
func (c *clock) after(d time.Duration, fn func()) { c.at(c.now+d, event{fn: fn}) }

// pop removes the next event and advances the clock to it.
func (c *clock) pop() (event, bool) {
	if len(c.h) == 0 {
		return event{}, false
	}
	e := c.h[0]
	last := len(c.h) - 1
	c.h[0] = c.h[last]
	c.h[last] = event{} // drop references for the collector
	c.h = c.h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(c.h) && c.less(l, m) {
			m = l
		}
		if r < len(c.h) && c.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		c.h[i], c.h[m] = c.h[m], c.h[i]
		i = m
	}
	c.now = e.at
	c.ran++
	return e, true
}
