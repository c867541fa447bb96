package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rsa-hpc/rsa/internal/bench"
	"github.com/rsa-hpc/rsa/internal/bench/target"
	"github.com/rsa-hpc/rsa/internal/bench/thesis"
	"github.com/rsa-hpc/rsa/internal/units"
	"github.com/rsa-hpc/rsa/internal/version"
)

// benchCmd is rsa-lab bench: the seeds' experiments, re-run here and
// reported beside the seeds' own numbers (docs/bench.md). It runs as root,
// on targets it brings up itself; it does not need the daemon.
func benchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Re-run the seeds' storage experiments and print them beside the seeds' numbers",
		Long: `rsa-lab bench re-runs the experiments of the reports RSA's design comes from
(the thesis; GUPFS' MPTIO and METABENCH and the TMS sweep through IOR, mdtest
and fio jobs) on named storage targets, and prints each result beside the
number the report gives for it.

Targets: ram (a tmpfs), ram-blk (ext2 on a loop device over a tmpfs file),
disk (local ext4), or any directory. 'rsa-lab bench target up NAME' brings one
up; each benchmark brings up the target it is given and leaves it up.`,
	}
	// Everything but what a job runs (write, probe, io500-job, wait-mount) and
	// report (a page from files) mounts, makes devices or namespaces, or
	// runs jobs as a user.
	asUser := func(c *cobra.Command) bool {
		switch c.Name() {
		case "write", "probe", "io500-job", "wait-mount", "report":
			return true
		}
		return false
	}
	cmd.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		if os.Geteuid() != 0 && !asUser(c) {
			return fmt.Errorf("rsa-lab bench %s needs root: it mounts its targets, makes loop devices and namespaces, and runs jobs as a user of its own (run it with sudo)", c.Name())
		}
		return nil
	}
	// Each part removes its own directory under the benchmarks' homes;
	// the last one out cannot know it is the last.
	cmd.PersistentPostRunE = func(c *cobra.Command, _ []string) error {
		if asUser(c) {
			return nil
		}
		return bench.Tidy()
	}
	cmd.AddCommand(benchTargetCmd(), benchThesisCmd(), benchWriteCmd(), benchToolsCmd(), benchContentionCmd(), benchModelCmd(), benchProbeCmd(), benchIO500Cmd(), benchIO500JobCmd(), benchWaitMountCmd(), benchReportCmd())
	return cmd
}

// benchFlags are the flags every benchmark takes.
type benchFlags struct {
	profile string // quick or full
	target  string // a target name or a directory
	json    bool
	size    string // size of a RAM target
	// clock measures the run's provenance, from the command's start to
	// its rows.
	clock *bench.RunClock
}

// add adds every flag to cmd (addOutput's, --profile, --target and
// --target-size): for the benchmarks that run on one target at a size.
func (f *benchFlags) add(cmd *cobra.Command) {
	f.addOutput(cmd)
	cmd.Flags().StringVar(&f.profile, "profile", "quick", "quick (minutes, CI) or full (the source's sizes)")
	cmd.Flags().StringVar(&f.target, "target", "ram", "where to run: "+strings.Join(target.Names, ", ")+", or a directory")
	cmd.Flags().StringVar(&f.size, "target-size", "4G", "size of a ram or ram-blk target the benchmark brings up")
}

// addOutput adds --json to cmd and starts the run's clock when cmd
// starts: for the benchmarks on the emulated cluster, which bring up
// their own targets at their own sizes.
func (f *benchFlags) addOutput(cmd *cobra.Command) {
	cmd.PreRun = func(*cobra.Command, []string) { f.clock = bench.Begin(version.String()) }
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON lines (one result a line) instead of a table")
}

// full reports whether the full profile was asked for; another value than
// quick or full is an error.
func (f *benchFlags) full() (bool, error) {
	switch f.profile {
	case "quick":
		return false, nil
	case "full":
		return true, nil
	}
	return false, fmt.Errorf("--profile %q: use quick or full", f.profile)
}

// dir brings up the target and returns its name (for the rows) and the
// directory to run in. A path is used as it is.
func (f *benchFlags) dir(cmd *cobra.Command) (name, dir string, err error) {
	if strings.HasPrefix(f.target, "/") {
		return f.target, f.target, nil
	}
	size, err := units.ParseSize(f.size)
	if err != nil {
		return "", "", fmt.Errorf("--target-size: %w", err)
	}
	t, err := target.Up(cmd.Context(), target.Config{Size: size}, f.target)
	if err != nil {
		return "", "", err
	}
	return t.Name, t.Dir, nil
}

// emit prints rows as --json asks, each with where it was measured.
func (f *benchFlags) emit(w io.Writer, rows []bench.Row) error {
	if f.clock != nil {
		bench.Stamp(rows, f.clock.End())
	}
	if f.json {
		return bench.WriteJSON(w, rows)
	}
	return bench.WriteTable(w, rows)
}

func benchTargetCmd() *cobra.Command {
	var (
		size    string
		clients int
	)
	cmd := &cobra.Command{
		Use:   "target",
		Short: "Bring benchmark targets up or down (root)",
	}
	up := &cobra.Command{
		Use:       "up NAME...",
		Short:     "Bring targets up and print where each is",
		Args:      cobra.MinimumNArgs(1),
		ValidArgs: target.Names,
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := units.ParseSize(size)
			if err != nil {
				return fmt.Errorf("--size: %w", err)
			}
			cfg := target.Config{Size: n, Clients: clients}
			for _, name := range args {
				t, err := target.Up(cmd.Context(), cfg, name)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s\t%s\t%s\n", t.Name, t.Dir, t.Device)
				if t.Name == "shared@1g" {
					b, err := target.SharedBaseline(cmd.Context(), cfg, 2)
					if err != nil {
						return err
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s\tiperf3 baseline: %.0f Mbit/s to the server, %.0f Mbit/s from it (thesis: 943 Mbit/s)\n",
						t.Name, b.ToServer/1e6, b.FromServer/1e6)
				}
			}
			return nil
		},
	}
	up.Flags().StringVar(&size, "size", "4G", "size of a ram or ram-blk target")
	up.Flags().IntVar(&clients, "clients", 1, "shared@1g: client mounts, each with caches of its own")
	down := &cobra.Command{
		Use:       "down NAME...",
		Short:     "Take targets down, with what benchmarks left in them",
		Args:      cobra.MinimumNArgs(1),
		ValidArgs: target.Names,
		RunE: func(cmd *cobra.Command, args []string) error {
			var errs []error
			for _, name := range args {
				if err := target.Down(cmd.Context(), target.Config{}, name); err != nil {
					errs = append(errs, err)
				}
			}
			return errors.Join(errs...)
		},
	}
	cmd.AddCommand(up, down)
	return cmd
}

// labCluster is the emulated cluster rsa-lab's cluster benchmarks run on
// (scripts/cluster-up): id 9, a bridge and links of its own beside the
// clusters of cluster-up's default id 0 and test/cluster's, its compute
// links at 1 Gbit/s. repo and rsa are the --repo and --rsa flags (empty:
// found from the rsa-lab binary's path); cfg is shared@1g's.
func labCluster(repo, rsa, user string, cfg target.Config) (thesis.ClusterT52, error) {
	if repo == "" {
		if repo = repoOf(os.Args[0]); repo == "" {
			return thesis.ClusterT52{}, errors.New("the checkout's scripts/cluster-up is needed: give --repo DIR")
		}
	}
	self, err := os.Executable()
	if err != nil {
		return thesis.ClusterT52{}, err
	}
	rsaBin, err := productBinary(rsa, self)
	if err != nil {
		return thesis.ClusterT52{}, err
	}
	return thesis.ClusterT52{Repo: repo, RSA: rsaBin, Lab: self, User: user, Dir: filepath.Join(bench.StateHome, "cluster"), ID: 9, Net: "10.77.5",
		SharedNet: cfg.SharedNetOrDefault(), SharedPath: "/mnt/rsa-bench-shared", Rate: "1gbit"}, nil
}
