package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rsa-hpc/rsa/internal/bench"
	"github.com/rsa-hpc/rsa/internal/bench/target"
	"github.com/rsa-hpc/rsa/internal/bench/thesis"
	"github.com/rsa-hpc/rsa/internal/units"
)

const modelLong = `E2, a model a site can use: the two-term model and rsa-lab sim, set from
micro-benchmarks on the emulated cluster E1 runs on, predict E1's cells
(T52 on ram@1g at each compute link rate) without anything of T52 fitted.

At each --rates rate (the compute host's link, each way) it measures,
--runs times in a drawn order: iperf3 from the compute host and from an
RSA host to shared@1g's server; a Slurm job of IOR on the compute host, 16
ranks writing a file of 32 MiB each, straight to shared@1g and into its
RAMDISK through RSA (IOR's write bandwidth); mdtest's create phase the
same ways, 16 ranks making 32 files of 4 KiB each in one directory (one
over its file creation rate: the cost of a small file); and RSA's
stage-out of 64 and 512 such small files and of IOR's files, from the
job's end until RSA's DONE_STAGING_OUT (a fixed cost, a cost per file and
a rate). Every file is fsync'd (IOR -e, mdtest -y), as T52's writer does. Then each --cells cell is predicted from its rate's medians. The
report sets each prediction beside E1's measured median.`

// benchModelCmd is rsa-lab bench model.
func benchModelCmd() *cobra.Command {
	var (
		f     benchFlags
		rates []string
		cells []string
		runs  int
		user  string
		repo  string
		rsa   string
		ior   string
	)
	cmd := &cobra.Command{
		Use:   "model",
		Short: "E2: calibrate the two-term model and the simulator from micro-benchmarks, and predict E1's cells",
		Long:  modelLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			var want []thesis.ModelCell
			for _, c := range cells {
				cell, err := parseModelCell(c)
				if err != nil {
					return err
				}
				want = append(want, cell)
			}
			cfg := target.Config{Size: 1 << 30}
			cl, err := labCluster(repo, rsa, user, cfg)
			if err != nil {
				return err
			}
			if _, err := target.Up(ctx, cfg, "shared@1g"); err != nil {
				return err
			}
			// E1 ran at no injected delay.
			if err := target.SetSharedLatency(ctx, cfg, 0); err != nil {
				return err
			}
			link := func(ctx context.Context, run func(args ...string) (string, error)) (float64, error) {
				return target.SharedLinkFrom(ctx, cfg, 3, run)
			}
			rows, err := thesis.ClusterModel{Cluster: cl, IOR: ior, Rates: rates, Cells: want, Runs: runs, Link: link}.Run(ctx,
				func(cal thesis.ModelCalibration, cell thesis.ModelCell) ([]bench.Row, error) {
					return thesis.SimPredict(ctx, cal, cell)
				})
			if err != nil {
				return err
			}
			return f.emit(cmd.OutOrStdout(), rows)
		},
	}
	f.addOutput(cmd)
	cmd.Flags().StringSliceVar(&rates, "rates", []string{"500mbit", "1gbit", "2gbit"}, "the compute host's link rates to calibrate at (tc rates)")
	cmd.Flags().StringSliceVar(&cells, "cells", []string{"500mbit:2048x1M", "1gbit:2048x1M", "2gbit:2048x1M", "1gbit:512x4M"},
		"the cells to predict, each RATE:RANKSxSIZE (E1's by default)")
	cmd.Flags().IntVar(&runs, "runs", 3, "repetitions of each rate's micro-benchmarks; the model takes their medians")
	cmd.Flags().StringVar(&user, "user", "rsabench", "the jobs' user (created and removed if missing)")
	cmd.Flags().StringVar(&repo, "repo", "", "the checkout holding scripts/cluster-up (default: found from the rsa-lab binary's path)")
	cmd.Flags().StringVar(&rsa, "rsa", "", "the product's rsa binary (default: the rsa beside rsa-lab, else rsa on PATH)")
	cmd.Flags().StringVar(&ior, "ior", "", "IOR's and mdtest's prefix, as scripts/build-ior.sh prints it")
	_ = cmd.MarkFlagRequired("ior")
	return cmd
}

// parseModelCell reads RATE:RANKSxSIZE, such as 1gbit:2048x1M.
func parseModelCell(s string) (thesis.ModelCell, error) {
	bad := fmt.Errorf("--cells %q: give RATE:RANKSxSIZE, such as 1gbit:2048x1M", s)
	rate, job, ok := strings.Cut(s, ":")
	if !ok || rate == "" {
		return thesis.ModelCell{}, bad
	}
	r, sz, ok := strings.Cut(job, "x")
	if !ok {
		return thesis.ModelCell{}, bad
	}
	ranks, err := strconv.Atoi(r)
	if err != nil || ranks < 1 {
		return thesis.ModelCell{}, bad
	}
	size, err := units.ParseSize(sz)
	if err != nil || size < 1 {
		return thesis.ModelCell{}, bad
	}
	return thesis.ModelCell{Rate: rate, Ranks: ranks, Size: size}, nil
}

// benchProbeCmd is one of E2's micro-benchmarks, as its job runs it:
// rsa-lab bench model starts it as the job's command.
func benchProbeCmd() *cobra.Command {
	var (
		p         thesis.Probe
		dir, size string
		asJSON    bool
		waitMount bool
	)
	cmd := &cobra.Command{
		Use:    "probe",
		Short:  "Run one of E2's micro-benchmarks (IOR or mdtest on this host's ranks) into --dir",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			start := time.Now()
			n, err := units.ParseSize(size)
			if err != nil {
				return fmt.Errorf("--size: %w", err)
			}
			p.Size = n
			if err := p.Check(); err != nil {
				return err
			}
			if dir, err = jobDir(cmd, dir, waitMount); err != nil {
				return err
			}
			rate, err := p.Run(cmd.Context(), dir)
			if err != nil {
				return err
			}
			end := time.Now()
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(thesis.JobReport{Start: start.UnixNano(), End: end.UnixNano(), Rate: rate})
			}
			unit := "files/s"
			if p.Tool == thesis.ProbeIOR {
				rate, unit = rate/(1<<20), "MiB/s"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %.1f %s; %.3fs in all\n", p.Tool, rate, unit, end.Sub(start).Seconds())
			return nil
		},
	}
	cmd.Flags().StringVar(&p.Tool, "tool", thesis.ProbeIOR, "ior (a file per rank) or mdtest (its create phase)")
	cmd.Flags().StringVar(&p.IOR, "ior", "", "IOR's and mdtest's prefix, as scripts/build-ior.sh prints it")
	cmd.Flags().IntVar(&p.Ranks, "ranks", 16, "MPI ranks")
	cmd.Flags().IntVar(&p.PerRank, "per-rank", 32, "files each rank makes (mdtest)")
	cmd.Flags().StringVar(&size, "size", "4K", "bytes per file")
	cmd.Flags().StringVar(&dir, "dir", "", "the output directory")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the timings and the tool's rate as JSON")
	cmd.Flags().BoolVar(&waitMount, "wait-mount", false, "first wait until --dir is a mount point (RSA's output switch)")
	_ = cmd.MarkFlagRequired("dir")
	_ = cmd.MarkFlagRequired("ior")
	return cmd
}
