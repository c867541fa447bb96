package mptio

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Result is a finished run: the plan it ran and each test's timings.
type Result struct {
	Plan  *Plan
	Start time.Time // when the run began; -N names the report after it
	Tests []TestResult
}

// TestResult is one test as rank 0 collects it.
type TestResult struct {
	Test    Test
	Ranks   []RankResult
	Elapsed time.Duration // E-Time: from the start barrier to the end barrier
}

// RankResult is what one rank reports of a test.
type RankResult struct {
	Bytes int64
	Time  time.Duration // from the start barrier to the end of its last thread
	Sys   time.Duration // system CPU time of its threads during the test
}

// Run runs the five tests of c (less those skipped) in order. The files
// are made in c.Dir, or in a new subdirectory of it with -U, and removed at
// the end unless -K, also when a test fails. A cancelled ctx stops every
// thread at its next record.
func Run(ctx context.Context, c Config) (res *Result, err error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	if c.Mode != Device {
		if c.Dir == "" {
			c.Dir = "."
		}
		if fi, err := os.Stat(c.Dir); err != nil {
			return nil, fmt.Errorf("-d: %w", err)
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("-d %s: not a directory", c.Dir)
		}
		if c.Unique {
			dir, err := os.MkdirTemp(c.Dir, "mptio_"+start.Format("20060102_150405")+"_")
			if err != nil {
				return nil, fmt.Errorf("-U: make a unique directory: %w", err)
			}
			c.Dir = dir
		}
	}
	plan, err := NewPlan(c)
	if err != nil {
		return nil, err
	}
	if c.Mode == Device {
		if err := CheckDevices(plan); err != nil {
			return nil, err
		}
	} else if !c.Keep {
		defer func() { err = errors.Join(err, removeFiles(plan)) }()
	}

	r, err := startRanks(ctx, plan)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, r.stop()) }()

	res = &Result{Plan: plan, Start: start}
	rotations := 0
	for _, t := range Tests() {
		if !c.Runs(t) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("mptio: before %s: %w", t, err)
		}
		tr, err := r.test(t, rotations)
		if err != nil {
			return res, fmt.Errorf("mptio: test %d (%s): %w", t, t, err)
		}
		res.Tests = append(res.Tests, tr)
		if c.Check {
			if err := checkSegments(ctx, plan, rotations); err != nil {
				return res, fmt.Errorf("mptio: check after %s (-C): %w", t, err)
			}
		}
		// MPTIO rotates after each test it runs; a skipped test is not
		// run, so it does not rotate.
		if c.Rotate {
			rotations++
		}
	}
	return res, nil
}

// removeFiles unlinks the run's files, and the -U directory they are in.
func removeFiles(p *Plan) error {
	var errs []error
	for _, f := range p.Files {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("mptio: remove test file: %w", err))
		}
	}
	if p.Config.Unique {
		if err := os.Remove(p.Config.Dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("mptio: remove -U directory: %w", err))
		}
	}
	return errors.Join(errs...)
}

// ranks are the run's worker threads, rank by rank, and the channel they
// report on: MPI's result collection at rank 0.
type ranks struct {
	plan    *Plan
	workers []*worker // rank-major: rank r's thread k is workers[r*Threads+k]
	results chan threadResult
	done    sync.WaitGroup
}

// startRanks starts every rank's threads, each with its record buffer.
func startRanks(ctx context.Context, p *Plan) (*ranks, error) {
	c := &p.Config
	r := &ranks{plan: p, results: make(chan threadResult, c.Procs*c.Threads)}
	for rank := range c.Procs {
		for thread := range c.Threads {
			buf, err := newAlignedBuffer(c.RecordSize)
			if err != nil {
				return nil, errors.Join(err, r.stop())
			}
			w := &worker{rank: rank, thread: thread, buf: buf, jobs: make(chan threadJob, 1)}
			r.workers = append(r.workers, w)
			r.done.Go(func() { w.serve(ctx, r.results) })
		}
	}
	return r, nil
}

// stop ends the threads and frees their buffers.
func (r *ranks) stop() error {
	for _, w := range r.workers {
		close(w.jobs)
	}
	r.done.Wait()
	var errs []error
	for _, w := range r.workers {
		errs = append(errs, w.buf.free())
	}
	return errors.Join(errs...)
}

// test runs test t on every thread between a start and an end barrier.
func (r *ranks) test(t Test, rotations int) (TestResult, error) {
	c := &r.plan.Config
	g := &gate{open: make(chan struct{})}
	var ready sync.WaitGroup
	ready.Add(len(r.workers))
	for _, w := range r.workers {
		w.jobs <- threadJob{
			test:     t,
			seg:      r.plan.Segment(w.rank, w.thread, rotations),
			recsz:    c.RecordSize,
			ops:      r.plan.Ops(t),
			create:   t == SeqWrite && c.Mode != Device,
			direct:   c.Direct,
			fillSeed: c.Seed,
			randSeed: c.Seed ^ uint64(w.rank)<<32 ^ uint64(w.thread),
			ready:    &ready,
			gate:     g,
		}
	}
	ready.Wait()
	g.t0 = time.Now()
	close(g.open)

	tr := TestResult{Test: t, Ranks: make([]RankResult, c.Procs)}
	var errs []error
	for range r.workers {
		res := <-r.results
		if res.err != nil {
			errs = append(errs, fmt.Errorf("process %d thread %d: %w", res.rank, res.thread, res.err))
		}
		rank := &tr.Ranks[res.rank]
		rank.Bytes += res.bytes
		rank.Time = max(rank.Time, res.end)
		rank.Sys += res.sys
	}
	tr.Elapsed = time.Since(g.t0)
	return tr, errors.Join(errs...)
}
