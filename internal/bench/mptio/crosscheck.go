package mptio

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/rsa-hpc/rsa/internal/bench"
	"github.com/rsa-hpc/rsa/internal/bench/crosscheck"
)

// CheckConfig says which tools CrossCheck runs beside a finished run.
type CheckConfig struct {
	// Fio runs fio, from PATH, for every test it can express.
	Fio bool
	// IOR is the prefix scripts/build-ior.sh printed, holding bin/ior;
	// "" runs no IOR.
	IOR string
}

// TestCheck is what the cross-checks found of one test of a run.
type TestCheck struct {
	Test Test
	Fio  *FioResult // nil when fio did not run the test
	IOR  *float64   // IOR's MiB/s; nil when IOR did not run the test

	// Notes go into the test's rate row in any case: why a tool did not
	// run, and IOR's number, since a row has room for one cross-check.
	Notes []string
	// Differs goes into the row when MPTIO and fio disagree: how the two
	// measured otherwise, for the evidence page to explain the disagree.
	Differs []string
}

// Checks are the cross-checks of a run, one a test it ran, in its order.
type Checks struct {
	Tests []TestCheck
}

// CrossCheck runs fio, and IOR when asked, for the tests res ran, the
// same way and on the same target, one tool and one test after another.
// The files are fio's and IOR's own, in new subdirectories of the run's
// directory (see runFioChecks); on -R devices fio uses MPTIO's devices.
//
// A tool that fails leaves its tests without a check and says why in
// their notes. CrossCheck returns the Checks it has, and with them the
// fio failures joined (IOR's never fail it: IOR is optional), or the
// context's error once ctx is done.
func CrossCheck(ctx context.Context, res *Result, cfg CheckConfig) (*Checks, error) {
	ch := &Checks{}
	for _, tr := range res.Tests {
		ch.Tests = append(ch.Tests, TestCheck{Test: tr.Test})
	}
	var errs []error
	if cfg.Fio {
		if err := runFioChecks(ctx, res, ch); err != nil {
			if ctx.Err() != nil {
				return ch, err
			}
			errs = append(errs, err)
		}
	}
	if cfg.IOR != "" {
		if err := runIORChecks(ctx, res, cfg.IOR, ch); err != nil {
			return ch, err
		}
	}
	return ch, errors.Join(errs...)
}

// checkDir is where a tool's files go: the run's directory, or the one
// -U made its subdirectory in (which the run removed, unless -K).
func checkDir(c *Config) string {
	if c.Unique {
		return filepath.Dir(c.Dir)
	}
	return c.Dir
}

// runFioChecks runs fio for each test of res that fio can do.
//
// fio works on files of its own, with MPTIO's names, in a new
// subdirectory of the run's directory: the same target, but never MPTIO's
// files, which -K keeps for a later run and whose stamps -C checks. Fresh
// files also let fio's sequential write create and extend them as
// MPTIO's test 0 does. When test 0 did not run (its files were kept from
// an earlier run), fio's sequential write first lays out fio's files,
// unmeasured. On -R, fio works MPTIO's devices: it writes them only in
// the write tests MPTIO ran, that is only where MPTIO's run wrote them.
//
// Between fio's tests nothing drops or flushes a cache, as nothing does
// between MPTIO's: both measure what the page cache holds after the test
// before.
func runFioChecks(ctx context.Context, res *Result, ch *Checks) error {
	c := res.Plan.Config
	if !slices.ContainsFunc(ch.Tests, func(tc TestCheck) bool { return fioRW(tc.Test) != "" }) {
		for i := range ch.Tests {
			ch.Tests[i].Notes = append(ch.Tests[i].Notes, noFioRMW)
		}
		return nil
	}
	jobs, err := os.MkdirTemp("", "rsa-mptio-fio-")
	if err != nil {
		return fmt.Errorf("mptio: fio cross-check: %w", err)
	}
	defer os.RemoveAll(jobs)

	plan := res.Plan
	if c.Mode != Device {
		dir, err := os.MkdirTemp(checkDir(&c), "mptio_fio_")
		if err != nil {
			return fmt.Errorf("mptio: fio cross-check: %w", err)
		}
		defer os.RemoveAll(dir)
		c.Dir, c.Unique = dir, false
		if plan, err = NewPlan(c); err != nil {
			return fmt.Errorf("mptio: fio cross-check: %w", err)
		}
		if !c.Runs(SeqWrite) {
			job, _ := FioJobFile(plan, SeqWrite)
			if _, err := runFio(ctx, jobs, "layout", job, fioRW(SeqWrite)); err != nil {
				err = fmt.Errorf("mptio: fio cross-check: lay out fio's files: %w", err)
				for i := range ch.Tests {
					ch.Tests[i].Notes = append(ch.Tests[i].Notes, "fio failed, so no cross-check: "+err.Error())
				}
				return err
			}
		}
	}

	var errs []error
	for i := range ch.Tests {
		tc := &ch.Tests[i]
		job, ok := FioJobFile(plan, tc.Test)
		if !ok {
			tc.Notes = append(tc.Notes, noFioRMW)
			continue
		}
		r, err := runFio(ctx, jobs, tc.Test.String(), job, fioRW(tc.Test))
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("mptio: fio cross-check of %s: %w", tc.Test, ctx.Err())
			}
			tc.Notes = append(tc.Notes, "fio failed, so no cross-check: "+err.Error())
			errs = append(errs, fmt.Errorf("mptio: fio cross-check of %s: %w", tc.Test, err))
			continue
		}
		tc.Fio = &r
		tc.Differs = fioDiffers(res, i, r)
	}
	return errors.Join(errs...)
}

// noFioRMW is the note of a read-modify-write row.
const noFioRMW = "no cross-check: fio cannot read a record, change it and write it back in place (its mixed rw= modes read and write different blocks)"

// fioDiffers says, for the row of test i of res, how fio's measure of it
// differs from MPTIO's: what a disagree comes from.
func fioDiffers(res *Result, i int, r FioResult) []string {
	c := &res.Plan.Config
	tr := &res.Tests[i]
	s := tr.Summarize(c.Procs * c.Threads)
	var longest float64
	for _, n := range s.Nodes {
		longest = max(longest, n.Time)
	}
	d := []string{
		fmt.Sprintf("MPTIO: %.1f MiB over the longest process time, %.3f s, from one start barrier to the close of its last thread's file, opens and closes included (E-Rate %.1f, %%DtVar %.1f)",
			MiB(s.Bytes), longest, s.ERate, s.DtVar),
		fmt.Sprintf("fio: %.1f MiB over the longest job's runtime, %d ms, each of %d jobs timed from its own start to its last I/O in whole milliseconds, opens and closes left out",
			MiB(r.Bytes), r.Runtime.Milliseconds(), c.Procs*c.Threads),
	}
	if jobs, cpus := c.Procs*c.Threads, runtime.NumCPU(); jobs > cpus {
		d = append(d, fmt.Sprintf("%d jobs on %d CPUs: a fio job that gets a CPU may finish before others start, and fio's longest runtime is then shorter than the span of all jobs, which MPTIO's barrier-to-close time is; fio's aggregate then counts CPU time more than once", jobs, cpus))
	}
	if r.Runtime.Milliseconds() < 200 {
		d = append(d, "fio's runtime is too short for its millisecond clock and the start of its threads: a larger -f evens that out")
	}
	if tr.Test.random() {
		d = append(d, "both draw records with repeats, from different generators: they hit different records, and different ones twice")
	}
	if c.Check {
		d = append(d, "MPTIO's -C read every file after each test, which fio does not")
	}
	if c.Runs(ReadModifyWrite) && tr.Test > ReadModifyWrite {
		d = append(d, "MPTIO ran Rd_Mod_Wrt before this test and fio did not, which may leave other pages in the page cache")
	}
	return d
}

// runIORChecks runs IOR's sequential write and read the way MPTIO ran
// its sequential tests, if it ran either: a task a thread, each a region
// of numrec records, in one shared file for -G and a file a task (-F) for
// -P and -T. Its number goes into the rows' notes; a failure, an IOR that
// is not built, a layout IOR cannot make, only into a note. Only a done
// ctx is an error.
func runIORChecks(ctx context.Context, res *Result, prefix string, ch *Checks) error {
	c := &res.Plan.Config
	var seq []*TestCheck
	rate := map[Test]float64{} // MPTIO's
	for i := range ch.Tests {
		if t := ch.Tests[i].Test; t == SeqWrite || t == SeqRead {
			seq = append(seq, &ch.Tests[i])
			rate[t] = res.Tests[i].Summarize(c.Procs * c.Threads).Rate
		}
	}
	note := func(s string) {
		for _, tc := range seq {
			tc.Notes = append(tc.Notes, s)
		}
	}
	if len(seq) == 0 {
		return nil
	}
	switch {
	case c.Mode == Device:
		note("IOR not run: it has no layout over several block devices (-R)")
		return nil
	case c.OverlapProcs || c.OverlapThreads:
		note("IOR not run: its tasks cannot share a region (-O)")
		return nil
	}

	dir, err := os.MkdirTemp(checkDir(c), "mptio_ior_")
	if err != nil {
		note("IOR not run: " + err.Error())
		return nil
	}
	defer os.RemoveAll(dir)
	region := res.Plan.Records * c.RecordSize
	args := []string{"-a", "POSIX", "-w", "-r", "-i", "1", "-s", "1",
		"-b", strconv.FormatInt(region, 10), "-t", strconv.FormatInt(c.RecordSize, 10),
		"-o", filepath.Join(dir, "mptio_ior")}
	layout := "one shared file"
	var caveats []string
	if c.Mode != Global {
		args = append(args, "-F")
		layout = "a file a task (-F)"
		if c.Mode == PerProcess {
			caveats = append(caveats, "IOR has no file a process: -F is MPTIO's -T")
		}
	}
	if c.Direct {
		args = append(args, "--posix.odirect")
	}
	if c.Offset > 0 {
		caveats = append(caveats, "IOR starts at offset 0, without -s")
	}
	if c.Rotate {
		caveats = append(caveats, "IOR reads what each task wrote: its -C shifts tasks by whole nodes, and this is one node")
	}
	ranks := c.Procs * c.Threads
	ior, err := crosscheck.RunIOR(ctx, prefix, ranks, args...)
	if ctx.Err() != nil {
		return fmt.Errorf("mptio: IOR cross-check: %w", ctx.Err())
	}
	if err != nil {
		note("IOR not run: " + err.Error())
		return nil
	}
	for _, tc := range seq {
		op := "write"
		if tc.Test == SeqRead {
			op = "read"
		}
		s, ok := ior.Tests[0].Op(op)
		if !ok {
			tc.Notes = append(tc.Notes, "IOR reported no "+op)
			continue
		}
		v := s.MeanMiBps
		tc.IOR = &v
		agree := "within 10% of MPTIO's"
		if !bench.Agrees(rate[tc.Test], v) {
			agree = "more than 10% from MPTIO's"
		}
		n := fmt.Sprintf("IOR %s (POSIX, %d tasks, %s, -b %s -t %s): %.1f MiB/s, %s", ior.Version, ranks, layout,
			SizeString(region), SizeString(c.RecordSize), v, agree)
		if len(caveats) > 0 {
			n += " (" + strings.Join(caveats, "; ") + ")"
		}
		tc.Notes = append(tc.Notes, n)
	}
	return nil
}

// Apply sets each rate row of rows beside its cross-check: fio's rate as
// the row's check, the notes, and when the two disagree, what differs.
// Rows of other metrics are left as they are: MPTIO's Rate is the rate
// fio's aggregate bandwidth measures.
func (ch *Checks) Apply(rows []bench.Row) {
	if ch == nil {
		return
	}
	for i := range rows {
		r := &rows[i]
		if r.Bench != "mptio" || r.Metric != "rate" {
			continue
		}
		for _, tc := range ch.Tests {
			if tc.Test.String() != r.Case {
				continue
			}
			notes := tc.Notes
			if tc.Fio != nil {
				r.CrossCheck("fio", tc.Fio.MiBPerSec())
				if r.Agree != nil && !*r.Agree {
					notes = append(append([]string{fmt.Sprintf("disagree: fio %.1f MiB/s against MPTIO's %.1f", tc.Fio.MiBPerSec(), r.Value)}, tc.Differs...), notes...)
				}
			}
			for _, n := range notes {
				r.Note = joinNote(r.Note, n)
			}
		}
	}
}

func joinNote(note, s string) string {
	if note == "" {
		return s
	}
	return note + "; " + s
}
