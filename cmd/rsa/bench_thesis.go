package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/bench"
	"github.com/rsa-hpc/rsa/internal/bench/target"
	"github.com/rsa-hpc/rsa/internal/bench/thesis"
	"github.com/rsa-hpc/rsa/internal/units"
)

// benchThesisCmd is rsa bench thesis: the thesis' experiments (ch. 5).
func benchThesisCmd() *cobra.Command {
	var (
		f         benchFlags
		ranks     int
		size      string
		runs      int
		userNm    string
		latencies []time.Duration
	)
	cmd := &cobra.Command{
		Use:   "thesis",
		Short: "The thesis' Table 5.2: a 2,048-process job's output through RSA and straight to a shared file system",
		Long: `Runs the thesis' file-per-process job (Table 5.2): RANKS writers, one file
each, in one directory. Once with its output straight on shared@1g (a Gluster
volume behind a 1 Gbit/s link, standing for the site's GPFS), once through
RSA (rsa run with the output directory a RAMDISK from the job's start, staged
out to shared@1g after). Reports how long the job held its compute nodes each
way, the time until its output was verified on shared@1g, and the stage-out
of the same files by rsync, tar and rsa copy, each beside the thesis' number.

It starts an rsa serve of its own (state under /var/tmp/rsa-bench/daemon),
runs the job as --user (created and removed if missing), and brings up the
targets ram and shared@1g. --target is where RSA's RAMDISK is: ram (the local
engine on this host).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			full, err := f.full()
			if err != nil {
				return err
			}
			if f.target != "ram" {
				return fmt.Errorf("--target %q: the thesis runs RSA's RAMDISK on ram (the local engine); ram@1g needs the emulated cluster and is not built yet", f.target)
			}
			if !cmd.Flags().Changed("ranks") && full {
				ranks = 2048
			}
			if !cmd.Flags().Changed("runs") && full {
				runs = 3
			}
			n, err := units.ParseSize(size)
			if err != nil || n < 1 {
				return fmt.Errorf("--size %q: give a size per file such as 1M", size)
			}
			if ranks < 1 {
				return fmt.Errorf("--ranks %d: at least 1", ranks)
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			cfg := target.Config{Size: int64(ranks)*n*3/2 + (256 << 20)}
			ram, err := target.Up(ctx, cfg, "ram")
			if err != nil {
				return err
			}
			shared, err := target.Up(ctx, cfg, "shared@1g")
			if err != nil {
				return err
			}
			b, err := target.SharedBaseline(ctx, cfg, 2)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "shared@1g: iperf3 %.0f Mbit/s to the server, %.0f from it (thesis: 943)\n", b.ToServer/1e6, b.FromServer/1e6)
			var rows []bench.Row
			for _, lat := range latencies {
				if err := target.SetSharedLatency(ctx, cfg, lat); err != nil {
					return err
				}
				r, err := thesis.T52{RSA: self, User: userNm, Shared: shared.Dir, RAM: ram.Dir, Placement: "ram",
					Ranks: ranks, Size: n, Runs: runs, Latency: lat.String()}.Run(ctx)
				if err != nil {
					return err
				}
				rows = append(rows, r...)
			}
			if err := target.SetSharedLatency(ctx, cfg, 0); err != nil {
				return err
			}
			return f.emit(cmd.OutOrStdout(), rows)
		},
	}
	f.add(cmd)
	cmd.Flags().IntVar(&ranks, "ranks", 256, "writer processes, one file each (full: 2048)")
	cmd.Flags().StringVar(&size, "size", "1M", "bytes each writes")
	cmd.Flags().IntVar(&runs, "runs", 1, "repetitions; the rows give the median and every run (full: 3)")
	cmd.Flags().StringVar(&userNm, "user", "rsabench", "the job's user")
	cmd.Flags().DurationSliceVar(&latencies, "latency", []time.Duration{0}, "per-create/open latency added to shared@1g (Gluster delay-gen), one run of T52 each: e.g. 0,1ms,5ms,20ms,100ms")
	return cmd
}

// benchWriteCmd is the thesis job's output phase, as the job itself runs
// it: rsa bench thesis starts it as the job's command.
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
			if o.Dir, err = filepath.Abs(o.Dir); err != nil {
				return err
			}
			if waitMount {
				// Under rsa run the output directory becomes a RAMDISK at
				// the switch; a job that wrote before it would write to disk.
				if err := waitForMount(cmd, o.Dir, 60*time.Second); err != nil {
					return err
				}
			}
			took, err := o.Write(cmd.Context())
			if err != nil {
				return err
			}
			end := time.Now()
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{
					"start_unix_nano": start.UnixNano(), "end_unix_nano": end.UnixNano(), "output_seconds": took.Seconds()})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d ranks wrote %d bytes each in %.3fs (output time); %.3fs in all\n", o.Ranks, o.Size, took.Seconds(), end.Sub(start).Seconds())
			return nil
		},
	}
	cmd.Flags().StringVar(&o.Dir, "dir", "", "the output directory")
	cmd.Flags().IntVar(&o.Ranks, "ranks", 2048, "writers")
	cmd.Flags().StringVar(&size, "size", "1M", "bytes each writes")
	cmd.Flags().Int64Var(&o.Block, "block", 1<<20, "bytes per write")
	cmd.Flags().BoolVar(&o.Shared, "shared", false, "one shared file, each writer its own segment (Table 5.3), instead of a file each")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the timings as JSON")
	cmd.Flags().BoolVar(&waitMount, "wait-mount", false, "first wait until --dir is a mount point (RSA's output switch)")
	_ = cmd.MarkFlagRequired("dir")
	return cmd
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
