package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/bench"
	"github.com/rsa-hpc/rsa/internal/bench/target"
	"github.com/rsa-hpc/rsa/internal/bench/thesis"
	"github.com/rsa-hpc/rsa/internal/units"
)

// thesisFlags are rsa-lab bench thesis' flags.
type thesisFlags struct {
	bench     benchFlags
	ranks     int
	size      string
	runs      int
	user      string
	latencies []time.Duration
	cases     []string
	disk      bool
	ior       string
	fio       bool
	atGbit    bool
	repo      string
	local     bool
	output    string
	rate      string
	rsa       string
}

const thesisLong = `Re-runs the thesis' experiments (ch. 5), each beside the thesis' numbers:

  t51  one writer, one file (2 GiB; quick 256 MiB), straight to shared@1g, and
       to ram then staged out to shared@1g by rsync and by rsa copy (Table 5.1)
  t52  RANKS writers, one file each, in one directory: straight to shared@1g,
       and through RSA (rsa run with the output directory a RAMDISK from the
       job's start, staged out to shared@1g after); how long the job held its
       compute nodes each way, the time until its output was verified on
       shared@1g, and the stage-out of the same files by rsync, tar and rsa
       copy (Table 5.2)
  t53  RANKS writers, each its own segment of one shared file, on shared@1g
       and ram (and disk with --disk), against t52's output time (Table 5.3)
  t54  IOR-style file per process, the open (create) phase timed apart, write
       then read with the caches dropped between (a fresh Gluster client for
       shared@1g's reads), on ram and shared@1g (and disk with --disk): full
       1024 ranks x 10 MiB, 4 iterations; quick RANKS x SIZE, 1 (Table 5.4)
  t55  bonnie++ on ram-blk (the thesis' ext2 RAMDISK), ram and disk: full
       -s 8192 -n 128, quick -s 1024 -n 8 (Table 5.5; bonnie++ prints +++++
       for a test done in under 500 ms, as tmpfs' are at the quick size)
  tlc  the lifecycle's phases (construct, stage-in, switch, stage-out,
       destroy) from the daemon's log of t52's RSA jobs and of a small job
       with input of its own, beside Appendix T

shared@1g is a Gluster volume behind a 1 Gbit/s link, standing for the site's
GPFS. t52 and tlc start an rsa serve of their own (state under
/var/tmp/rsa-bench/daemon); t51, t52 and tlc run their jobs as --user (created
and removed if missing). The targets are brought up and left up, but ram-blk,
which holds its RAM whether used or not: t55 takes it down after. --target is
where RSA's RAMDISK is: ram (the local engine on this host). fio cross-checks
t51, t53, t54 and t55; IOR cross-checks t54 when built (--ior).`

// benchThesisCmd is rsa-lab bench thesis: the thesis' experiments (ch. 5).
func benchThesisCmd() *cobra.Command {
	var f thesisFlags
	cmd := &cobra.Command{
		Use:   "thesis",
		Short: "The thesis' tables 5.1-5.5 and its lifecycle timings, beside its numbers",
		Long:  thesisLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := f.thesisRun(cmd)
			if err != nil {
				return err
			}
			return runThesis(cmd, r)
		},
	}
	f.add(cmd)
	return cmd
}

func (f *thesisFlags) add(cmd *cobra.Command) {
	f.bench.add(cmd)
	cmd.Flags().IntVar(&f.ranks, "ranks", 256, "writer processes (full: 2048; t54 full: 1024 unless given)")
	cmd.Flags().StringVar(&f.size, "size", "1M", "bytes each writes (t52, t53; t54 quick)")
	cmd.Flags().IntVar(&f.runs, "runs", 1, "repetitions; the rows give the median and every run (full: 3)")
	cmd.Flags().StringVar(&f.user, "user", "rsabench", "the job's user")
	cmd.Flags().DurationSliceVar(&f.latencies, "latency", []time.Duration{0}, "per-create/open latency added to shared@1g (Gluster delay-gen), T52 at each (--runs times): e.g. 0,1ms,5ms,20ms,100ms; the other cases run without")
	cmd.Flags().StringSliceVar(&f.cases, "case", thesisCaseNames(), "cases to run: "+strings.Join(thesisCaseNames(), ", "))
	cmd.Flags().BoolVar(&f.disk, "disk", false, "also run t53 and t54 on disk (local ext4)")
	cmd.Flags().StringVar(&f.ior, "ior", "", "prefix of a build of IOR (scripts/build-ior.sh prints it): t54's cross-check, instead of fio")
	cmd.Flags().BoolVar(&f.fio, "fio", true, "cross-check t51, t53, t54 and t55 with fio")
	cmd.Flags().BoolVar(&f.atGbit, "ram-at-1g", false, "t52 also with RSA's RAMDISK on RSA hosts of the emulated cluster (scripts/cluster-up), the job under Slurm on a compute host behind a 1 Gbit/s link, as in the thesis")
	cmd.Flags().StringVar(&f.output, "ram-at-1g-output", "shared", "with --ram-at-1g: how the RSA job's output is caught (#RSA output=shared or private)")
	cmd.Flags().StringVar(&f.rate, "ram-at-1g-rate", "1gbit", "with --ram-at-1g: the compute host's link, each way (tc tbf rate: 500mbit, 1gbit, 2gbit)")
	cmd.Flags().BoolVar(&f.local, "local", true, "t52 on ram, the local engine on this host (--local=false with --ram-at-1g: only the cluster)")
	cmd.Flags().StringVar(&f.repo, "repo", "", "with --ram-at-1g: the checkout holding scripts/cluster-up (default: found from the rsa-lab binary's path)")
	cmd.Flags().StringVar(&f.rsa, "rsa", "", "the product's rsa binary, which runs the jobs through RSA (default: the rsa beside rsa-lab, else rsa on PATH)")
}

// thesisRun checks the flags and returns the run they ask for, at the
// profile's sizes where a flag is not given.
func (f *thesisFlags) thesisRun(cmd *cobra.Command) (thesisRun, error) {
	full, err := f.bench.full()
	if err != nil {
		return thesisRun{}, err
	}
	if f.bench.target != "ram" {
		return thesisRun{}, fmt.Errorf("--target %q: the thesis runs RSA's RAMDISK on ram (the local engine); for RSA hosts behind a 1 Gbit/s link add --ram-at-1g", f.bench.target)
	}
	repo := f.repo
	if f.atGbit && repo == "" {
		repo = repoOf(os.Args[0])
		if repo == "" {
			return thesisRun{}, errors.New("--ram-at-1g needs the checkout's scripts/cluster-up: give --repo DIR")
		}
	}
	want, err := thesisCases(f.cases)
	if err != nil {
		return thesisRun{}, err
	}
	ranks, runs := f.ranks, f.runs
	if !cmd.Flags().Changed("ranks") && full {
		ranks = 2048
	}
	if !cmd.Flags().Changed("runs") && full {
		runs = 3
	}
	n, err := units.ParseSize(f.size)
	if err != nil || n < 1 {
		return thesisRun{}, fmt.Errorf("--size %q: give a size per file such as 1M", f.size)
	}
	if ranks < 1 {
		return thesisRun{}, fmt.Errorf("--ranks %d: at least 1", ranks)
	}
	self, err := os.Executable()
	if err != nil {
		return thesisRun{}, err
	}
	rsaBin, err := productBinary(f.rsa, self)
	if err != nil {
		return thesisRun{}, err
	}
	p := thesisSizes(full, ranks, n, cmd.Flags().Changed("ranks"))
	return thesisRun{want: want, p: p, rsa: rsaBin, lab: self, user: f.user, runs: runs, latencies: f.latencies,
		disk: f.disk, ior: f.ior, fio: f.fio, emit: f.bench.emit, repo: repo, atGbit: f.atGbit, local: f.local, output: f.output, rate: f.rate}, nil
}

// benchWriteCmd is the thesis job's output phase, as the job itself runs
// it: rsa-lab bench thesis starts it as the job's command.
func benchWriteCmd() *cobra.Command {
	var (
		o         thesis.Output
		size      string
		asJSON    bool
		waitMount bool
	)
	cmd := &cobra.Command{
		Use:   "write",
		Short: "Write like the thesis' test job: RANKS writers released together, a file each (or one shared file), fsync'd",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			start := time.Now()
			n, err := units.ParseSize(size)
			if err != nil {
				return fmt.Errorf("--size: %w", err)
			}
			o.Size = n
			if o.Dir, err = jobDir(cmd, o.Dir, waitMount); err != nil {
				return err
			}
			took, err := o.Write(cmd.Context())
			if err != nil {
				return err
			}
			end := time.Now()
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(thesis.JobReport{Start: start.UnixNano(), End: end.UnixNano(), Output: took.Seconds()})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d ranks wrote %d bytes each in %.3fs (output time); %.3fs in all\n", o.Ranks, o.Size, took.Seconds(), end.Sub(start).Seconds())
			return nil
		},
	}
	cmd.Flags().StringVar(&o.Dir, "dir", "", "the output directory")
	cmd.Flags().IntVar(&o.Ranks, "ranks", 2048, "writers")
	cmd.Flags().IntVar(&o.First, "first-rank", 0, "the first writer's rank: writers on several hosts write ranks FIRST..FIRST+RANKS-1 each")
	cmd.Flags().StringVar(&size, "size", "1M", "bytes each writes")
	cmd.Flags().Int64Var(&o.Block, "block", 1<<20, "bytes per write")
	cmd.Flags().BoolVar(&o.Shared, "shared", false, "one shared file, each writer its own segment (Table 5.3), instead of a file each")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the timings as JSON")
	cmd.Flags().BoolVar(&waitMount, "wait-mount", false, "first wait until --dir is a mount point (RSA's output switch)")
	_ = cmd.MarkFlagRequired("dir")
	return cmd
}

// jobDir is a job command's --dir made absolute, waited for first until
// it is a mount point when waitMount is set: under RSA the output
// directory becomes a RAMDISK at the switch, and a job that wrote before
// it would write to the shared file system.
func jobDir(cmd *cobra.Command, dir string, waitMount bool) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if waitMount {
		if err := waitForMount(cmd, dir, 60*time.Second); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// waitForMount waits until dir is the root of a mount.
func waitForMount(cmd *cobra.Command, dir string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var st, parent unix.Stat_t
		if unix.Stat(dir, &st) == nil && unix.Stat(filepath.Dir(dir), &parent) == nil && st.Dev != parent.Dev {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not become a mount point within %s: is this running under rsa run --out %s?", dir, timeout, dir)
		}
		select {
		case <-cmd.Context().Done():
			return cmd.Context().Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// thesisCaseNames are rsa-lab bench thesis' cases. t52 runs first: t53 takes
// its output times and tlc its jobs' logs.
func thesisCaseNames() []string { return []string{"t51", "t52", "t53", "t54", "t55", "tlc"} }

// thesisCases checks --case and returns the set asked for.
func thesisCases(names []string) (map[string]bool, error) {
	want := map[string]bool{}
	for _, c := range names {
		c = strings.ToLower(strings.TrimSpace(c))
		if !slices.Contains(thesisCaseNames(), c) {
			return nil, fmt.Errorf("--case %q: use some of %s", c, strings.Join(thesisCaseNames(), ", "))
		}
		want[c] = true
	}
	if len(want) == 0 {
		return nil, fmt.Errorf("--case: name at least one of %s", strings.Join(thesisCaseNames(), ", "))
	}
	return want, nil
}

// thesisProfile is each case's sizes.
type thesisProfile struct {
	ranks int   // t52, t53
	size  int64 // t52, t53: bytes a rank

	t51Size int64

	t54Ranks      int
	t54Block      int64
	t54Iterations int

	t55SizeMiB, t55RAMMiB, t55Files int

	tlcFiles int
	tlcSize  int64
	tlcDelay time.Duration
}

// thesisSizes are the thesis' sizes (full) or ones that keep the whole
// quick run to about a minute.
func thesisSizes(full bool, ranks int, size int64, ranksGiven bool) thesisProfile {
	p := thesisProfile{ranks: ranks, size: size,
		t51Size: 256 << 20, t54Ranks: ranks, t54Block: size, t54Iterations: 1,
		// bonnie++ will not time a test done in under 500 ms ("+++++"):
		// quick times disk's; tmpfs' are too quick for it at this size.
		t55SizeMiB: 1024, t55RAMMiB: 512, t55Files: 8,
		tlcFiles: 16, tlcSize: 1 << 20, tlcDelay: time.Second}
	if full {
		p.t51Size = 2 << 30
		// The thesis' IOR moved 20 GiB a pass (2,048 × 10 MiB); half the
		// ranks keep a pass in this host's RAM beside the rest.
		if !ranksGiven {
			p.t54Ranks = 1024
		}
		p.t54Block, p.t54Iterations = 10<<20, 4
		// 8 GiB and 128 Ki files time the block tests and the creates on
		// tmpfs too (docs/performance.md, "Measurements behind choices in
		// the code").
		p.t55SizeMiB, p.t55RAMMiB, p.t55Files = 8192, 4096, 128
	}
	return p
}

// thesisRun is one invocation of rsa-lab bench thesis.
type thesisRun struct {
	want      map[string]bool
	p         thesisProfile
	rsa       string // the product's binary: rsa serve, run, wait, copy
	lab       string // this binary: the job's writes (bench write)
	user      string
	runs      int
	latencies []time.Duration
	disk      bool
	ior       string
	fio       bool
	emit      func(io.Writer, []bench.Row) error
	repo      string // with atGbit: the checkout of scripts/cluster-up
	atGbit    bool   // t52 also on ram@1g
	local     bool   // t52 on ram (the local engine)
	output    string // with atGbit: the RSA job's output mode
	rate      string // with atGbit: the compute host's link, each way
}

// productBinary is the rsa binary the thesis' jobs run through: flag if
// given, else the rsa beside the lab binary self (make builds both into
// bin/), else rsa on PATH. The job's user runs it, so it is made absolute.
func productBinary(flag, self string) (string, error) {
	if flag == "" {
		flag = filepath.Join(filepath.Dir(self), "rsa")
		if _, err := os.Stat(flag); err != nil {
			if flag, err = exec.LookPath("rsa"); err != nil {
				return "", errors.New("no rsa binary beside rsa-lab nor on PATH: build it (make build) or give --rsa PATH")
			}
		}
	}
	abs, err := filepath.Abs(flag)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("--rsa: %w", err)
	}
	return abs, nil
}

// repoOf is the checkout that holds the lab binary at bin (bin/rsa-lab),
// if it has scripts/cluster-up; "" otherwise.
func repoOf(bin string) string {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return ""
	}
	repo := filepath.Dir(filepath.Dir(abs))
	if _, err := os.Stat(filepath.Join(repo, "scripts", "cluster-up")); err != nil {
		return ""
	}
	return repo
}

// thesisTargets are the targets a run brought up (a zero Target for one
// its cases do not use), and the configuration they came up with.
type thesisTargets struct {
	cfg               target.Config
	ram, shared, disk target.Target
}

// targetsUp brings up ram, and shared@1g and disk for the cases that use
// them; ram is sized for the largest case's data, one case at a time.
func (r thesisRun) targetsUp(cmd *cobra.Command) (thesisTargets, error) {
	ctx := cmd.Context()
	p := r.p
	ramSize := max(int64(p.ranks)*p.size*3/2, p.t51Size*3/2, int64(p.t54Ranks)*p.t54Block*5/4, int64(p.t55SizeMiB)<<20*5/4) + (256 << 20)
	ts := thesisTargets{cfg: target.Config{Size: ramSize}}
	var err error
	if ts.ram, err = target.Up(ctx, ts.cfg, "ram"); err != nil {
		return ts, err
	}
	if r.want["t51"] || r.want["t52"] || r.want["t53"] || r.want["t54"] || r.want["tlc"] {
		if ts.shared, err = target.Up(ctx, ts.cfg, "shared@1g"); err != nil {
			return ts, err
		}
		b, err := target.SharedBaseline(ctx, ts.cfg, 2)
		if err != nil {
			return ts, err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "shared@1g: iperf3 %.0f Mbit/s to the server, %.0f from it (thesis: 943)\n", b.ToServer/1e6, b.FromServer/1e6)
	}
	if r.disk || r.want["t55"] {
		if ts.disk, err = target.Up(ctx, ts.cfg, "disk"); err != nil {
			return ts, err
		}
	}
	return ts, nil
}

// places are the named targets' directories, and disk after them with
// --disk.
func (r thesisRun) places(ts thesisTargets, names ...string) []thesis.Place {
	dirs := map[string]string{"ram": ts.ram.Dir, "shared@1g": ts.shared.Dir, "disk": ts.disk.Dir}
	var ps []thesis.Place
	for _, n := range names {
		ps = append(ps, thesis.Place{Name: n, Dir: dirs[n]})
	}
	if r.disk {
		ps = append(ps, thesis.Place{Name: "disk", Dir: ts.disk.Dir})
	}
	return ps
}

// runT52 runs t52 on ram at each latency (unless --local=false), then on
// ram@1g with --ram-at-1g, and leaves shared@1g without added latency. It
// returns the rows and the daemon's logs of the RSA jobs on ram.
func (r thesisRun) runT52(ctx context.Context, ts thesisTargets, progress func(string)) ([]bench.Row, []thesis.JobLog, error) {
	var rows []bench.Row
	var jobs []thesis.JobLog
	p := r.p
	for _, lat := range r.latencies {
		if !r.local {
			break
		}
		progress("t52, shared@1g latency " + lat.String())
		if err := target.SetSharedLatency(ctx, ts.cfg, lat); err != nil {
			return rows, jobs, err
		}
		start := time.Now()
		label := "shared_latency=" + lat.String()
		rs, err := thesis.T52{RSA: r.rsa, Lab: r.lab, User: r.user, Shared: ts.shared.Dir, RAM: ts.ram.Dir, Placement: "ram",
			Ranks: p.ranks, Size: p.size, Runs: r.runs, Latency: lat.String(),
			AfterJob: func(ctx context.Context, socket, job string) error {
				l, err := thesis.ReadJobLog(ctx, r.rsa, socket, job)
				l.Label = label
				jobs = append(jobs, l)
				return err
			}}.Run(ctx)
		if err != nil {
			return rows, jobs, err
		}
		rows = append(rows, rs...)
		progress(fmt.Sprintf("t52 done in %.1fs", time.Since(start).Seconds()))
	}
	if r.atGbit {
		progress("t52 on ram@1g: the emulated cluster")
		start := time.Now()
		// Each job's file operations at shared@1g's brick go into its
		// rows (gluster volume profile), and the RSA job's at its
		// RAMDISK's bricks (RSA's cluster.profile): both volumes
		// profiled alike.
		interval, stop, err := target.SharedProfile(ctx, ts.cfg)
		if err != nil {
			return rows, jobs, err
		}
		defer func() {
			if err := stop(); err != nil {
				progress("shared@1g's profile left on: " + err.Error())
			}
		}()
		// Cluster id 9: a bridge and links of its own, beside the
		// clusters of scripts/cluster-up's default id 0 and test/cluster's.
		rs, err := thesis.ClusterT52{Repo: r.repo, RSA: r.rsa, Lab: r.lab, User: r.user, Dir: filepath.Join(bench.StateHome, "cluster"), ID: 9, Net: "10.77.5",
			SharedNet: ts.cfg.SharedNetOrDefault(), SharedPath: "/mnt/rsa-bench-shared", Rate: r.rate, Ranks: p.ranks, Size: p.size, Output: r.output, Runs: r.runs,
			Latencies: r.latencies, SetLatency: func(ctx context.Context, d time.Duration) error { return target.SetSharedLatency(ctx, ts.cfg, d) },
			Profile: interval, ProfileRAMDISK: true}.Run(ctx)
		if err != nil {
			return rows, jobs, err
		}
		rows = append(rows, rs...)
		progress(fmt.Sprintf("t52 on ram@1g done in %.1fs", time.Since(start).Seconds()))
	}
	return rows, jobs, target.SetSharedLatency(ctx, ts.cfg, 0)
}

func runThesis(cmd *cobra.Command, r thesisRun) error {
	ctx := cmd.Context()
	p := r.p
	ts, err := r.targetsUp(cmd)
	if err != nil {
		return err
	}
	ram, shared, disk := ts.ram, ts.shared, ts.disk
	progress := func(c string) { fmt.Fprintf(cmd.ErrOrStderr(), "thesis: %s\n", c) }
	var rows []bench.Row
	var t52Jobs []thesis.JobLog
	if r.want["t52"] {
		if rows, t52Jobs, err = r.runT52(ctx, ts, progress); err != nil {
			return err
		}
	}
	run := func(c string, f func() ([]bench.Row, error)) error {
		if !r.want[c] {
			return nil
		}
		start := time.Now()
		progress(c)
		rs, err := f()
		rows = append(rows, rs...)
		progress(fmt.Sprintf("%s done in %.1fs", c, time.Since(start).Seconds()))
		return err
	}
	steps := []struct {
		name string
		f    func() ([]bench.Row, error)
	}{
		{"t51", func() ([]bench.Row, error) {
			return thesis.T51{RSA: r.rsa, Lab: r.lab, User: r.user, Shared: shared.Dir, RAM: ram.Dir, Size: p.t51Size, Block: 1 << 20,
				Runs: r.runs, Fio: r.fio}.Run(ctx)
		}},
		{"t53", func() ([]bench.Row, error) {
			return thesis.T53{Targets: r.places(ts, "shared@1g", "ram"), Ranks: p.ranks, Size: p.size, Runs: r.runs,
				T52Output: thesis.T52Outputs(rows), Fio: r.fio}.Run(ctx)
		}},
		{"t54", func() ([]bench.Row, error) {
			return thesis.T54{Targets: r.places(ts, "ram", "shared@1g"), Ranks: p.t54Ranks, Block: p.t54Block, Transfer: 1 << 20,
				Iterations: p.t54Iterations, IOR: r.ior, Fio: r.fio, Cold: true}.Run(ctx)
		}},
		{"t55", func() ([]bench.Row, error) {
			// The RAM disk holds bonnie++'s file, its create test's files and ext2's own.
			blkCfg := target.Config{Size: int64(p.t55SizeMiB)<<20 + (512 << 20)}
			blk, err := target.Up(ctx, blkCfg, "ram-blk")
			if err != nil {
				return nil, err
			}
			// Unlike the others, ram-blk holds its RAM whether used or not.
			defer func() { _ = target.Down(context.WithoutCancel(ctx), blkCfg, "ram-blk") }()
			return thesis.T55{Targets: []thesis.Place{{Name: "ram-blk", Dir: blk.Dir}, {Name: "ram", Dir: ram.Dir}, {Name: "disk", Dir: disk.Dir}},
				SizeMiB: p.t55SizeMiB, RAMMiB: p.t55RAMMiB, Files: p.t55Files, Runs: r.runs, Fio: r.fio}.Run(ctx)
		}},
		{"tlc", func() ([]bench.Row, error) {
			return thesis.TLC{RSA: r.rsa, Lab: r.lab, User: r.user, Shared: shared.Dir, Files: p.tlcFiles, FileSize: p.tlcSize,
				Delay: p.tlcDelay, Runs: r.runs, T52Jobs: t52Jobs}.Run(ctx)
		}},
	}
	for _, s := range steps {
		if err := run(s.name, s.f); err != nil {
			return err
		}
	}
	return r.emit(cmd.OutOrStdout(), rows)
}
