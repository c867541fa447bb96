package sim

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Priority orders the queue.
type Priority int

const (
	// FCFS is first come, first served: Slurm's priority/basic. An arriving
	// job is never ahead of the queued ones, so the head only changes by
	// starting and no job is ever demoted.
	FCFS Priority = iota
	// SJF puts the shortest requested time first (ties: first come), as a
	// Slurm site weighting job time heavily would. An arriving short job
	// overtakes the head, which is then demoted: the thesis' "preempted by
	// a higher-priority job" (§3.1).
	SJF
)

func (p Priority) String() string {
	if p == SJF {
		return "sjf"
	}
	return "fcfs"
}

// ParsePriority reads a --priority value.
func ParsePriority(s string) (Priority, error) {
	switch s {
	case "fcfs":
		return FCFS, nil
	case "sjf":
		return SJF, nil
	}
	return 0, fmt.Errorf("priority %q: want fcfs (first come, first served) or sjf (shortest requested time first)", s)
}

// scheduler is the batch system: a priority queue with EASY backfill
// (Lifka 1995; Slurm's sched/backfill with one reservation). It decides on
// requested times only; what jobs really do is the simulator's business.
type scheduler struct {
	free    int
	prio    Priority
	queue   []*simJob // pending, in priority order
	running []*simJob
	byEnd   []*simJob // scratch for the reservation
}

func (s *scheduler) ahead(a, b *simJob) bool {
	if s.prio == SJF && a.est != b.est {
		return a.est < b.est
	}
	return a.seq < b.seq
}

// submit queues j in priority order.
func (s *scheduler) submit(j *simJob) {
	i, _ := slices.BinarySearchFunc(s.queue, j, func(q, j *simJob) int {
		if s.ahead(q, j) {
			return -1
		}
		return 1
	})
	s.queue = slices.Insert(s.queue, i, j)
}

// end frees a running job's nodes.
func (s *scheduler) end(j *simJob) {
	s.free += j.nodes
	if i := slices.Index(s.running, j); i >= 0 {
		s.running = slices.Delete(s.running, i, i+1)
	}
}

// expectedEnd is when the scheduler believes j ends: its start plus its
// requested time, or now for a job already past it (the scheduler expects
// it to end any moment; no job is killed at its limit, see docs).
func expectedEnd(j *simJob, now time.Duration) time.Duration {
	return max(j.start+j.est, now)
}

// pass starts every job that priority order and EASY backfill allow at
// now, calling start for each, and returns the head of the queue that is
// left (the job on deck: Slurm's reason "Resources") with its reservation.
func (s *scheduler) pass(now time.Duration, start func(*simJob)) (head *simJob, shadow time.Duration) {
	run := func(j *simJob) {
		s.free -= j.nodes
		j.start = now
		s.running = append(s.running, j)
		start(j)
	}
	n := 0
	for n < len(s.queue) && s.queue[n].nodes <= s.free {
		run(s.queue[n])
		n++
	}
	s.queue = s.queue[n:]
	if len(s.queue) == 0 {
		return nil, 0
	}
	head = s.queue[0]
	shadow, extra := s.reservation(head, now)
	// Backfill: a later job may start now if it fits and either ends (by
	// its request) before the head's reservation or uses only nodes the
	// head will not need then.
	kept := s.queue[:1]
	for _, j := range s.queue[1:] {
		switch {
		case j.nodes > s.free:
		case now+j.est <= shadow:
			run(j)
			continue
		case j.nodes <= extra:
			extra -= j.nodes
			run(j)
			continue
		}
		kept = append(kept, j)
	}
	clear(s.queue[len(kept):])
	s.queue = kept
	return head, shadow
}

// reservation is when head can start if every running job ends as
// requested, and how many nodes will be spare at that moment.
func (s *scheduler) reservation(head *simJob, now time.Duration) (shadow time.Duration, extra int) {
	s.byEnd = append(s.byEnd[:0], s.running...)
	slices.SortFunc(s.byEnd, func(a, b *simJob) int {
		return cmp.Or(cmp.Compare(expectedEnd(a, now), expectedEnd(b, now)), cmp.Compare(a.seq, b.seq))
	})
	defer clear(s.byEnd)
	avail := s.free
	for i, r := range s.byEnd {
		avail += r.nodes
		if avail < head.nodes {
			continue
		}
		shadow = expectedEnd(r, now)
		// Jobs due at the same moment free their nodes then too.
		for _, o := range s.byEnd[i+1:] {
			if expectedEnd(o, now) != shadow {
				break
			}
			avail += o.nodes
		}
		return shadow, avail - head.nodes
	}
	return now, 0 // cannot happen: no job is larger than the machine
}
