package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rsa-hpc/rsa/internal/bench/mptio"
	"github.com/rsa-hpc/rsa/internal/units"
)

// mptioFlags are MPTIO's flags, under its own letters, and the process
// count mpirun gave it.
type mptioFlags struct {
	bench benchFlags

	global, perProcess, perThread bool
	devices                       []string
	size, globalSize, recsz       string
	offset                        string
	threads, procs                int
	nrand                         int64
	skip                          []int
	overlap                       []string
	rotate, direct                bool
	keep, check, unique           bool
	dir, name                     string
	seed                          uint64

	noFio bool   // skip fio's cross-check
	ior   string // build-ior.sh's prefix; "" runs no IOR
}

// mptioProfile is the run --profile stands for, where no flag says
// otherwise. full is the appendix sample; quick keeps its shape (3
// processes × 4 threads, 256 KiB records) at a size a tmpfs runs through in
// a few seconds, with all five tests.
type mptioProfile struct {
	procs, threads int
	size, recsz    string
	skip           []int
}

func mptioProfileFor(full bool) mptioProfile {
	if full {
		return mptioProfile{procs: 3, threads: 4, size: "200M", recsz: "256K", skip: []int{1, 2, 4}}
	}
	return mptioProfile{procs: 3, threads: 4, size: "512M", recsz: "256K"}
}

func benchMptioCmd() *cobra.Command {
	var f mptioFlags
	cmd := &cobra.Command{
		Use:   "mptio",
		Short: "GUPFS MPTIO: parallel multi-threaded POSIX I/O to shared, per-process or per-thread files, or devices",
		Long: `MPTIO (GUPFS report, Appendix A.1) times five tests, in this order:
  0 sequential write (creates the files)   1 read-modify-write
  2 random write   3 sequential read   4 random read
Each of -n processes runs -t threads; each thread opens its file or device,
does the test on its own contiguous segment (P0T0, P0T1, P1T0, ...) and
closes it. The size per process (-f) or of all processes (-F) is adjusted to
threads x records x record size, with the number of records nearest the
size asked.

The report gives, for each test, Rate (bytes over the longest process time),
E-Rate and E-Time (over the time between the start and end barriers) and
%DtVar ((longest - shortest) / longest process time), then each process'
rate, time and %Sys. MB are MiB. Here the processes are groups of threads
of this one program: they share this host's kernel and page cache.

--profile quick (default) runs 3 processes x 4 threads, 512M each, all tests;
--profile full runs the appendix sample: -n 3 -f 200M -b 256K -t 4 -k 1 -k 2 -k 4.
Flags given override the profile.

After MPTIO's tests, fio does the same I/O on the same target, in files of
its own beside MPTIO's (on -R, the same devices): a job a thread, at the
same offsets, in the same records. Each sequential and random Rate is set
beside fio's; one more than 10% off is marked disagree, and its note says
how the two measured otherwise. Read-modify-write has no fio counterpart.
--ior PREFIX (scripts/build-ior.sh prints it) runs IOR's sequential write
and read too, and puts its rates in the notes.

  rsa-lab bench mptio --target ram
  rsa-lab bench mptio --profile full --target disk -I
  rsa-lab bench mptio -n 2 -P -F 512M -b 64K -t 4 -r -k 1 -k 2 -k 4 -d /mnt/test
  rsa-lab bench mptio -R /dev/loop0 -R /dev/loop1 -F 512M -b 64K -t 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runMptio(cmd, &f) },
	}
	f.bench.add(cmd)
	fl := cmd.Flags()
	fl.IntVarP(&f.procs, "procs", "n", 0, "processes, as mpirun -np (default: the profile's)")
	fl.BoolVarP(&f.global, "global", "G", false, "one file for all threads of all processes (the default mode)")
	fl.BoolVarP(&f.perProcess, "per-process", "P", false, "one file per process, shared by its threads")
	fl.BoolVarP(&f.perThread, "per-thread", "T", false, "one file per thread")
	fl.StringArrayVarP(&f.devices, "device", "R", nil, "do the I/O on this block device instead of files; repeat for several (OVERWRITES IT)")
	fl.StringVarP(&f.size, "size", "f", "", "approximate size per process, e.g. 200M (default: the profile's)")
	fl.StringVarP(&f.globalSize, "global-size", "F", "", "approximate size of all processes together, instead of -f")
	fl.StringVarP(&f.recsz, "recsz", "b", "", "bytes of each read or write, e.g. 256K (default: the profile's)")
	fl.IntVarP(&f.threads, "threads", "t", 0, "threads per process (default: the profile's)")
	fl.IntSliceVarP(&f.skip, "skip", "k", nil, "skip test NUM (0-4); repeat for several")
	fl.Int64VarP(&f.nrand, "nrand", "a", 0, "operations of each random test (default: one per record)")
	fl.BoolVarP(&f.rotate, "rotate", "r", false, "after each test, each thread takes the segment of its peer in the next process")
	fl.BoolVarP(&f.direct, "direct", "I", false, "open with O_DIRECT (sizes and offsets must be multiples of 512)")
	fl.StringArrayVarP(&f.overlap, "overlap", "O", nil, "p: all processes work the same region; t: all threads of a process do")
	fl.StringVarP(&f.offset, "offset", "s", "0", "add this many bytes to every thread's start offset")
	fl.BoolVarP(&f.keep, "keep", "K", false, "keep the files at the end")
	fl.BoolVarP(&f.check, "check", "C", false, "check the files' contents after each test")
	fl.BoolVarP(&f.unique, "unique", "U", false, "make the files in a new subdirectory of -d")
	fl.StringVarP(&f.dir, "dir", "d", "", "directory of the files (default: the --target's)")
	fl.StringVarP(&f.name, "name", "N", "", "write the report to NAME_YYYYMMDD_HHMMSS instead of the terminal")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the random tests and of the data written")
	fl.BoolVar(&f.noFio, "no-fio", false, "skip the fio cross-check (rows then carry no check)")
	fl.StringVar(&f.ior, "ior", "", "IOR's prefix, as scripts/build-ior.sh prints it: cross-check the sequential tests with IOR as well")
	return cmd
}

func runMptio(cmd *cobra.Command, f *mptioFlags) error {
	c, err := f.config(cmd)
	if err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return err
	}
	// The rows name where the run went: the devices, the -d directory,
	// or the target that provides the directory.
	target := c.Dir
	switch {
	case c.Mode == mptio.Device:
		target = strings.Join(c.Devices, ",")
	case c.Dir == "":
		if target, c.Dir, err = f.bench.dir(cmd); err != nil {
			return err
		}
	}

	// Before the run, not after it: a missing fio would otherwise be
	// found only once MPTIO's minutes are spent.
	if !f.noFio {
		if _, err := exec.LookPath("fio"); err != nil {
			return errors.New("fio is not installed: apt-get install fio, or run with --no-fio")
		}
	}

	res, err := mptio.Run(cmd.Context(), c)
	if err != nil {
		return err
	}

	report := cmd.OutOrStdout()
	if f.bench.json {
		report = cmd.ErrOrStderr()
	}
	if f.name != "" {
		path := mptio.ReportName(f.name, res.Start)
		if err := writeReportFile(path, res); err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "mptio: report written to %s\n", path)
	} else if err := mptio.WriteReport(report, res); err != nil {
		return err
	}
	if !f.bench.json {
		fmt.Fprintln(report)
	}

	rows := mptio.Rows(res, target)
	var checkErr error
	if !f.noFio || f.ior != "" {
		var checks *mptio.Checks
		checks, checkErr = mptio.CrossCheck(cmd.Context(), res, mptio.CheckConfig{Fio: !f.noFio, IOR: f.ior})
		checks.Apply(rows)
	}
	// The rows go out even when a cross-check failed: each says in its
	// note why it has no check, and the command then fails with it.
	return errors.Join(f.bench.emit(cmd.OutOrStdout(), rows), checkErr)
}

func writeReportFile(path string, res *mptio.Result) (err error) {
	file, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("-N: %w", err)
	}
	defer func() {
		if cerr := file.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("-N: %w", cerr)
		}
	}()
	return mptio.WriteReport(file, res)
}

// config turns the flags, and the profile where they are silent, into an
// MPTIO configuration.
func (f *mptioFlags) config(cmd *cobra.Command) (mptio.Config, error) {
	full, err := f.bench.full()
	if err != nil {
		return mptio.Config{}, err
	}
	prof := mptioProfileFor(full)
	fl := cmd.Flags()
	c := mptio.Config{
		Procs:   pick(fl.Changed("procs"), f.procs, prof.procs),
		Threads: pick(fl.Changed("threads"), f.threads, prof.threads),
		Devices: f.devices,
		NRand:   f.nrand,
		Rotate:  f.rotate,
		Direct:  f.direct,
		Keep:    f.keep,
		Check:   f.check,
		Unique:  f.unique,
		Dir:     f.dir,
		Seed:    f.seed,
	}

	modes := 0
	for _, m := range []struct {
		on   bool
		mode mptio.Mode
	}{{f.global, mptio.Global}, {f.perProcess, mptio.PerProcess}, {f.perThread, mptio.PerThread}, {len(f.devices) > 0, mptio.Device}} {
		if m.on {
			c.Mode = m.mode
			modes++
		}
	}
	if modes > 1 {
		return c, errors.New("use only one of -G, -P, -T and -R")
	}

	var errs []error
	size := func(flag, s string) int64 {
		n, err := units.ParseSize(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("-%s: %w", flag, err))
		}
		return n
	}
	switch {
	case fl.Changed("size") || fl.Changed("global-size"):
		if f.size != "" {
			c.ProcSize = size("f", f.size)
		}
		if f.globalSize != "" {
			c.GlobalSize = size("F", f.globalSize)
		}
	default:
		c.ProcSize = size("f", prof.size)
	}
	c.RecordSize = size("b", pick(fl.Changed("recsz"), f.recsz, prof.recsz))
	c.Offset = size("s", f.offset)

	for _, k := range pick(fl.Changed("skip"), f.skip, prof.skip) {
		c.Skip = append(c.Skip, mptio.Test(k))
	}
	for _, o := range f.overlap {
		if strings.Trim(o, "pt") != "" || o == "" {
			errs = append(errs, fmt.Errorf("-O %q: use -O p (processes overlap), -O t (threads overlap) or both", o))
		}
		c.OverlapProcs = c.OverlapProcs || strings.Contains(o, "p")
		c.OverlapThreads = c.OverlapThreads || strings.Contains(o, "t")
	}
	return c, errors.Join(errs...)
}

// pick is the flag's value if it was given, else the profile's.
func pick[T any](given bool, flag, profile T) T {
	if given {
		return flag
	}
	return profile
}
