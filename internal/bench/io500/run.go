package io500

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/rsa-hpc/rsa/internal/bench/crosscheck"
)

// Part is which of the phases a run runs.
type Part string

const (
	// All is every phase, in IO500's order; what the phases leave is
	// removed at the end.
	All Part = "all"
	// Writes is the four write phases and the timestamp between them;
	// their files, stonewall files and timestamp are kept for a Reads.
	Writes Part = "write"
	// Reads is the phases that a read-only file system allows (find, the
	// IOR reads and the stats), on what a Writes left with the same
	// Config, whose data directory may since have become read-only (an
	// input image of it); nothing is removed. mdtest-hard-read is not
	// among them: this mdtest opens the files it reads read-write (its
	// read passes O_RDONLY, 0, where its POSIX backend wants IOR_RDONLY,
	// and takes 0 for read-write), which a read-only file system refuses.
	Reads Part = "read"
)

// ParsePart reads a Part by its name.
func ParsePart(s string) (Part, error) {
	switch p := Part(s); p {
	case All, Writes, Reads:
		return p, nil
	}
	return "", fmt.Errorf("io500: part %q: give %s, %s or %s", s, All, Writes, Reads)
}

// Has reports whether the part runs phase p.
func (part Part) Has(p Phase) bool {
	switch part {
	case Writes:
		return p.Writes()
	case Reads:
		return !p.Writes() && !p.Deletes() && p.Name != "mdtest-hard-read"
	}
	return true
}

// Runner runs the phases.
type Runner struct {
	IOR   string // IOR's prefix, as scripts/build-ior.sh prints it
	Ranks int    // MPI ranks for IOR and mdtest, placed as mpirun's environment says
	// FindWorkers is how many directories find reads at once.
	FindWorkers int
	Part        Part      // which phases run; All when empty
	Log         io.Writer // a line per phase; nil for none
}

// Run runs the phases of r.Part in IO500's order on c's directories and
// returns each phase's result. A run of All removes what the phases left,
// also after a phase's failure, when it returns the results so far and
// the error.
func (r Runner) Run(ctx context.Context, c Config) (results []Result, err error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	part := cmp.Or(r.Part, All)
	if _, err := ParsePart(string(part)); err != nil {
		return nil, err
	}
	log := r.Log
	if log == nil {
		log = io.Discard
	}
	dirs := []string{c.Results}
	if part != Reads {
		dirs = append(dirs, c.Dirs()...)
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("io500: %w", err)
		}
	}
	if part == All {
		defer func() {
			if rerr := c.remove(); rerr != nil && err == nil {
				err = rerr
			}
		}()
	}
	var newer time.Time
	if part == Reads {
		// find's -newer is the timestamp the write phases took.
		fi, err := os.Stat(c.TimestampFile())
		if err != nil {
			return nil, fmt.Errorf("io500: the read phases need the write phases' timestamp (run part %s first, with the same results directory): %w", Writes, err)
		}
		newer = fi.ModTime()
	}
	for _, p := range Phases {
		if !part.Has(p) {
			continue
		}
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
