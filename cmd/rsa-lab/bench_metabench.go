package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/bench"
	"github.com/rsa-hpc/rsa/internal/bench/metabench"
	"github.com/rsa-hpc/rsa/internal/bench/target"
	"github.com/rsa-hpc/rsa/internal/units"
)

// metabenchProfile is what --profile sets when the flag itself is not given.
type metabenchProfile struct {
	nfile, freq int
	procs       []int
	tree        metabench.Tree
}

func metabenchProfileFor(full bool) metabenchProfile {
	if full {
		return metabenchProfile{nfile: 20000, freq: 1000, procs: []int{1, 2, 3, 4, 6, 8}, tree: metabench.GlibcTree()}
	}
	// The quick tree is a tenth of glibc 2.3's, so that Untar at three
	// processes stays within seconds on two cores.
	return metabenchProfile{nfile: 2000, freq: 500, procs: []int{1, 2, 3}, tree: metabench.GlibcTree().Scaled(10)}
}

// metabenchFlags are rsa-lab bench metabench's flags, METABENCH's own
// among them.
type metabenchFlags struct {
	bench   benchFlags
	c       metabench.Config
	nbyte   string
	dirs    []string
	procs   int
	counts  []int
	output  string
	noCheck bool
}

const metabenchLong = `rsa-lab bench metabench re-implements GUPFS METABENCH: it times zero-length file
creation (Create-A: one process filling one directory, batch by batch;
Create-B: a directory each; Create-C: one shared directory), stat, utime and
16K appends (-A: a directory each; -B: one directory, each process walking
to its share by readdir), and the unpacking of a source tree (Untar; the
work grows with the process count). Delete-A/B, timed unlinks, are ours, not
the source's. With no phase flag every phase runs.

Processes are goroutines on this host. Process 0 sets up each test and does
not take part unless there is one process or -0 is given, so N processes
make N-1 participants, as in the report. Table 1's N is this process count:
its N = 1 and N = 2 columns both have one worker, but at N = 1 it is the
process that made the files. That difference comes from client caches, so
it only shows with -w given once per client mount of one shared volume
(process i works through the (i mod count)-th -w); one directory means one
cache for all.

Untar unpacks a synthetic tree shaped like glibc 2.3's (9,188 files, 459
directories, 75,800,000 bytes; the quick profile uses a tenth), written to
a local directory per client, or --tarball.

With --target shared@1g (and no -w) the volume comes up with one client
mount per process, for the most processes of the run: process 0 sets up
through the first, process i works through the i-th.

Each phase is then cross-checked in the same run, on the same directories,
with the same files, participants and layout: fio's filecreate, filestat
and filedelete engines and appends (--file_append), touch -c for utime (no
packaged tool times it) and tar -xf for Untar, each set beside the phase's
rate as METABENCH counts it (all files over the time to the last one's
end). --mdtest PREFIX runs mdtest too and makes it the check of the create,
stat and delete phases (fio's rate then goes in the note); --no-crosscheck
skips them.

Profiles: quick is -c 2000 -f 500 -b 16K on 1, 2 and 3 processes; full is
-c 20000 -f 1000 -b 16K on 1, 2, 3, 4, 6 and 8, the report's runs.`

// benchMetabenchCmd is rsa-lab bench metabench: GUPFS METABENCH, flag for flag,
// with its results beside GUPFS Table 1.
func benchMetabenchCmd() *cobra.Command {
	var f metabenchFlags
	cmd := &cobra.Command{
		Use:   "metabench [-CSUATk0] [-c nfile] [-b nbyte] [-o name] [-w dir]... [-f freq]",
		Short: "Re-run GUPFS METABENCH (metadata rates) beside the report's Table 1",
		Long:  metabenchLong,
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return f.run(cmd) },
	}
	f.add(cmd)
	return cmd
}

func (m *metabenchFlags) add(cmd *cobra.Command) {
	c := &m.c
	f := cmd.Flags()
	f.BoolVarP(&c.Create, "create", "C", false, "run the file creation tests (Create-A, Create-B, Create-C)")
	f.BoolVarP(&c.Stat, "stat", "S", false, "run the stat tests (Stat-A, Stat-B)")
	f.BoolVarP(&c.Utime, "utime", "U", false, "run the utime tests (Utime-A, Utime-B)")
	f.BoolVarP(&c.Append, "append", "A", false, "run the append tests (Append-A, Append-B)")
	f.BoolVarP(&c.Untar, "untar", "T", false, "run the untar test")
	f.BoolVar(&c.Delete, "delete", false, "run the delete tests (Delete-A, Delete-B; not in the source)")
	f.BoolVarP(&c.Cleanup, "cleanup", "k", false, "remove each test's files after it (untimed)")
	f.BoolVarP(&c.Proc0, "proc0", "0", false, "let process 0 take part")
	f.IntVarP(&c.NFile, "files", "c", 0, "files per test (default: quick 2000, full 20000)")
	f.StringVarP(&m.nbyte, "bytes", "b", "16K", "bytes each append writes")
	f.IntVarP(&c.Freq, "freq", "f", 0, "files per Create-A batch (default: quick 500, full 1000)")
	f.StringVarP(&m.output, "output", "o", "", "write the text report to NAME_YYYYMMDD_HHMMSS")
	f.StringSliceVarP(&m.dirs, "workdir", "w", nil, "working directory, once per client mount of one volume (default: the target's directory)")
	f.IntVarP(&m.procs, "procs", "n", 0, "number of processes (MPI's -np) for a single run")
	f.IntSliceVar(&m.counts, "ranks", nil, "process counts to run in turn, as Table 1's N (default: quick 1,2,3; full 1,2,3,4,6,8)")
	f.StringVar(&c.Tarball, "tarball", "", "tar archive for Untar instead of the synthetic glibc 2.3 tree")
	f.BoolVar(&m.noCheck, "no-crosscheck", false, "skip the cross-checks (each phase again with fio's file engines, touch or tar)")
	f.StringVar(&c.Mdtest, "mdtest", "", "prefix of a build of IOR's mdtest (scripts/build-ior.sh prints it): the check of the create, stat and delete phases")
	f.StringVar(&c.LocalDir, "local-dir", "", "each client's local directory for the synthetic tarball, outside the target (default: the system temporary directory)")
	m.bench.add(cmd)
}

// config sets the run's configuration from the flags and the profile,
// and returns the process counts to run in turn: -n's one, --ranks' or
// the profile's.
func (m *metabenchFlags) config(cmd *cobra.Command) ([]int, error) {
	full, err := m.bench.full()
	if err != nil {
		return nil, err
	}
	prof := metabenchProfileFor(full)
	flags := cmd.Flags()
	if !flags.Changed("files") {
		m.c.NFile = prof.nfile
	}
	if !flags.Changed("freq") {
		m.c.Freq = prof.freq
	}
	m.c.Tree = prof.tree
	n, err := units.ParseSize(m.nbyte)
	if err != nil {
		return nil, fmt.Errorf("-b: %w", err)
	}
	m.c.NByte = int(n)
	m.c.CrossCheck = !m.noCheck

	runs := prof.procs
	switch {
	case flags.Changed("procs") && flags.Changed("ranks"):
		return nil, fmt.Errorf("-n and --ranks both given: use -n for one run or --ranks for several")
	case flags.Changed("procs"):
		runs = []int{m.procs}
	case flags.Changed("ranks"):
		runs = m.counts
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("--ranks: give at least one process count")
	}
	return runs, nil
}

func (m *metabenchFlags) run(cmd *cobra.Command) error {
	runs, err := m.config(cmd)
	if err != nil {
		return err
	}
	c := &m.c
	target, err := metabenchDirs(cmd, &m.bench, m.dirs, slices.Max(runs), c)
	if err != nil {
		return err
	}

	// With --json stdout carries only JSON lines.
	var text io.Writer = cmd.OutOrStdout()
	if m.bench.json {
		text = cmd.ErrOrStderr()
	}
	var report *os.File // -o's file
	if m.output != "" {
		report, err = os.Create(m.output + "_" + time.Now().Format("20060102_150405"))
		if err != nil {
			return fmt.Errorf("-o: %w", err)
		}
		defer report.Close() // on error paths; closed below otherwise
		text = report
	}

	var rows []bench.Row
	for _, nproc := range runs {
		c.NProc = nproc
		rep, err := metabench.Run(cmd.Context(), *c)
		if errors.Is(err, unix.ENOSPC) && !c.Cleanup {
			return fmt.Errorf("%w (each test's files stay until the target goes down, as without the source's -k: add -k to remove them after each test)", err)
		}
		if err != nil {
			return err
		}
		if err := rep.WriteText(text); err != nil {
			return err
		}
		fmt.Fprintln(text)
		rows = append(rows, rep.Rows(target)...)
	}
	if report != nil {
		if err := report.Close(); err != nil {
			return fmt.Errorf("-o: %w", err)
		}
	}
	return m.bench.emit(cmd.OutOrStdout(), rows)
}

// metabenchDirs sets c.Dirs from -w, or brings the target up and uses its
// directory, and returns the name the rows give the target. shared@1g
// comes up with a client mount for each of nproc processes, the most of
// the run: each process then works through a glusterfs client, and a
// cache, of its own, as each of METABENCH's processes had a node of its
// own, which is what makes Table 1's N = 1 against N = 2 cliff.
func metabenchDirs(cmd *cobra.Command, bf *benchFlags, dirs []string, nproc int, c *metabench.Config) (string, error) {
	if len(dirs) == 0 && bf.target == "shared@1g" {
		t, err := target.Up(cmd.Context(), target.Config{Clients: nproc}, bf.target)
		if err != nil {
			return "", err
		}
		c.Dirs = t.Dirs
		return t.Name, nil
	}
	if len(dirs) == 0 {
		name, dir, err := bf.dir(cmd)
		if err != nil {
			return "", err
		}
		if strings.HasPrefix(bf.target, "/") {
			// A directory target is made if missing, as the named ones are.
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return "", fmt.Errorf("--target: %w", err)
			}
		}
		c.Dirs = []string{dir}
		return name, nil
	}
	c.Dirs = c.Dirs[:0]
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return "", fmt.Errorf("-w %s: %w", d, err)
		}
		c.Dirs = append(c.Dirs, abs)
	}
	if cmd.Flags().Changed("target") {
		return bf.target, nil
	}
	return strings.Join(c.Dirs, ","), nil
}
