package io500

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/rsa-hpc/rsa/internal/bench/crosscheck"
)

// Runner runs the phases.
type Runner struct {
	IOR   string // IOR's prefix, as scripts/build-ior.sh prints it
	Ranks int    // MPI ranks for IOR and mdtest, placed as mpirun's environment says
	// FindWorkers is how many directories find reads at once.
	FindWorkers int
	Log         io.Writer // a line per phase; nil for none
}

// Run runs every phase of Phases in order on c's directories and returns
// each phase's result, and what the phases left removed. On a phase's
// failure it returns the results so far and the error, after the same
// removal.
func (r Runner) Run(ctx context.Context, c Config) (results []Result, err error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	log := r.Log
	if log == nil {
		log = io.Discard
	}
	for _, d := range append(c.Dirs(), c.Results) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("io500: %w", err)
		}
	}
	defer func() {
		if rerr := c.remove(); rerr != nil && err == nil {
			err = rerr
		}
	}()
	var newer time.Time
	for _, p := range Phases {
		res, err := r.phase(ctx, c, p, newer)
		if err != nil && p.Tool == "ior" && ctx.Err() == nil {
			// Every rank of ior-hard creates the one shared file at once
			// (IOR's create is O_CREAT without O_EXCL on each rank), and
			// Gluster's clients on two hosts can refuse one such create
			// with EACCES (seen here once in several runs). An IOR phase
			// starts anew (its write removes the file first), so it runs
			// once more, and its result says so; mdtest's phases build on
			// each other's files and are not retried.
			fmt.Fprintf(log, "io500: %s failed (%v); once more\n", p.Name, err)
			first := err
			if res, err = r.phase(ctx, c, p, newer); err == nil {
				res.Retried = first.Error()
			}
		}
		if err != nil {
			return results, fmt.Errorf("io500: %s: %w", p.Name, err)
		}
		results = append(results, res)
		fmt.Fprintf(log, "io500: %-20s %10.3f %s (%.1f s)\n", p.Name, res.Value, res.Unit, res.Seconds)
		if p.Name == TimestampAfter {
			if newer, err = c.stamp(); err != nil {
				return results, err
			}
		}
	}
	return results, nil
}

// phase runs one phase.
func (r Runner) phase(ctx context.Context, c Config, p Phase, newer time.Time) (Result, error) {
	res := Result{Phase: p.Name, Group: p.Group, Unit: p.Group.Unit()}
	switch p.Tool {
	case "find":
		f, err := Find(ctx, c.Data, Query{Name: "01", Size: 3901, Newer: newer}, r.FindWorkers)
		if err != nil {
			return res, err
		}
		if f.Matched == 0 {
			// IO500 calls such a run invalid: the query found none of
			// mdtest-hard's files.
			return res, fmt.Errorf("find matched none of %d files", f.Scanned)
		}
		res.Seconds, res.Scanned, res.Matched = f.Took.Seconds(), f.Scanned, f.Matched
		res.Value = float64(f.Scanned) / f.Took.Seconds() / 1000
		return res, nil
	case "ior":
		args, err := c.Args(p)
		if err != nil {
			return res, err
		}
		out, err := crosscheck.RunIOR(ctx, r.IOR, r.Ranks, args...)
		if err != nil {
			return res, err
		}
		op, ok := out.Tests[0].Op(p.Op)
		if !ok {
			return res, fmt.Errorf("IOR reported no %s", p.Op)
		}
		res.Value, res.Seconds = op.MeanMiBps/1024, op.MeanTime
		return res, nil
	case "mdtest":
		args, err := c.Args(p)
		if err != nil {
			return res, err
		}
		out, err := crosscheck.RunMdtest(ctx, r.IOR, r.Ranks, args...)
		if err != nil {
			return res, err
		}
		op, ok := out.Rate(p.Op)
		if !ok {
			return res, fmt.Errorf("mdtest reported no %q rate", p.Op)
		}
		res.Value = op.Mean / 1000
		for _, t := range out.Times {
			if t.Name == p.Op {
				res.Seconds = t.Mean
			}
		}
		return res, nil
	}
	return res, fmt.Errorf("unknown tool %q", p.Tool)
}

// stamp writes the timestamp file and returns its modification time.
func (c Config) stamp() (time.Time, error) {
	f := c.TimestampFile()
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		return time.Time{}, fmt.Errorf("io500: timestamp: %w", err)
	}
	now := time.Now()
	if err := os.Chtimes(f, now, now); err != nil {
		return time.Time{}, fmt.Errorf("io500: timestamp: %w", err)
	}
	fi, err := os.Stat(f)
	if err != nil {
		return time.Time{}, fmt.Errorf("io500: timestamp: %w", err)
	}
	return fi.ModTime(), nil
}

// remove removes what the phases left in the data directories (IOR's
// files, kept with -k; a failed phase's files) and the stonewall files.
func (c Config) remove() error {
	var errs []error
	for _, d := range c.Dirs() {
		errs = append(errs, os.RemoveAll(d))
	}
	for _, f := range []string{"ior-easy.stonewall", "ior-hard.stonewall", "mdtest-easy.stonewall", "mdtest-hard.stonewall", "timestampfile"} {
		if err := os.Remove(filepath.Join(c.Results, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("io500: removing the run's files: %w", err)
	}
	return nil
}
