package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/rsa-hpc/rsa/internal/bench/io500"
	"github.com/rsa-hpc/rsa/internal/bench/target"
	"github.com/rsa-hpc/rsa/internal/bench/thesis"
)

const io500Long = `IO500's phases (the evidence review's E3) on RSA's RAMDISK, as Slurm jobs
of the emulated cluster (scripts/cluster-up) with Open MPI ranks over
--hosts compute hosts, each behind its own 1 Gbit/s link: ior-easy,
ior-hard, mdtest-easy and mdtest-hard (write, then read, stat and delete)
and find, with the parameters the IO500 harness gives IOR and mdtest, on

  ram@1g          the job's output directory a RAMDISK on the RSA hosts
                  (RSA's design; output mode shared, the default)
  ram@1g private  output=private: an ext4 image in the RAMDISK, one compute
                  host's own, with that host's ranks
  ram@1g image    input=image: the write phases straight on shared@1g as a
                  job, then, as an RSA job with their directory as its
                  input, the phases a read-only file system allows on the
                  image RSA built of it (no score: IO500 scores every phase)
  shared@1g       the emulated shared file system, straight
  tmpfs           one compute host's own tmpfs with one host's ranks: the
                  per-node ceiling

and each cell's rate per host over tmpfs' (the per-node efficiency). The
cells run in a drawn order each run; every row is the median of --runs.

IOR and mdtest are third_party/ior, the commit the IO500 harness pins
(make build-ior; --ior). The harness itself and its pfind are not built
here: find is rsa-lab's own walker, from one host, counting as the
harness' external-script mode does. A stonewall below 300 s, and the caps
that keep a fast target from filling RAM, make the run not a valid IO500
submission; every row says so.`

// benchIO500Cmd is rsa-lab bench io500.
func benchIO500Cmd() *cobra.Command {
	var (
		f            benchFlags
		hosts, ranks int
		runs         int
		user         string
		ior          string
		repo, rsa    string
		cfg          io500.Config
		cells        []string
	)
	cmd := &cobra.Command{
		Use:   "io500",
		Short: "E3: IO500's phases on RSA's RAMDISK, shared@1g and a host's tmpfs, over the emulated cluster's compute hosts",
		Long:  io500Long,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if ior == "" {
				return errors.New("--ior PREFIX is needed: make build-ior (scripts/build-ior.sh) prints it")
			}
			tc := target.Config{Size: 1 << 30}
			cl, err := labCluster(repo, rsa, user, tc)
			if err != nil {
				return err
			}
			// Placeholders: each job gives its own directories.
			cfg.Data, cfg.Results = "/data", "/results"
			if err := cfg.Check(); err != nil {
				return err
			}
			if _, err := target.Up(ctx, tc, "shared@1g"); err != nil {
				return err
			}
			rows, err := thesis.ClusterIO500{Cluster: cl, Hosts: hosts, RanksPerHost: ranks, IOR: ior, Phases: cfg, Runs: runs, Cells: cells}.Run(ctx)
			if err != nil {
				return err
			}
			return f.emit(cmd.OutOrStdout(), rows)
		},
	}
	f.addOutput(cmd)
	cmd.Flags().IntVar(&hosts, "hosts", 2, "compute hosts the ranks spread over (1-9)")
	cmd.Flags().IntVar(&ranks, "ranks-per-host", 2, "MPI ranks on each compute host")
	cmd.Flags().IntVar(&runs, "runs", 5, "repetitions of every cell; rows give the median, every run and a 95% interval from 5")
	cmd.Flags().StringSliceVar(&cells, "cells", nil, "the cells to run (default all): ram@1g, \"ram@1g private\", \"ram@1g image\", shared@1g, tmpfs; the efficiencies need tmpfs")
	cmd.Flags().StringVar(&user, "user", "rsabench", "the jobs' user (created and removed if missing)")
	cmd.Flags().StringVar(&ior, "ior", "", "IOR's prefix, as scripts/build-ior.sh prints it (holds bin/ior and bin/mdtest)")
	cmd.Flags().StringVar(&repo, "repo", "", "the checkout holding scripts/cluster-up (default: found from the rsa-lab binary's path)")
	cmd.Flags().StringVar(&rsa, "rsa", "", "the product's rsa binary (default: the rsa beside rsa-lab, else rsa on PATH)")
	addIO500Caps(cmd, &cfg)
	return cmd
}

// addIO500Caps adds the phases' stonewall and caps to cmd.
func addIO500Caps(cmd *cobra.Command, cfg *io500.Config) {
	cmd.Flags().DurationVar(&cfg.Stonewall, "stonewall", 10*time.Second, "how long each write phase writes (IO500 asks 300s)")
	cmd.Flags().StringVar(&cfg.EasyBlock, "easy-block", "1g", "ior-easy: each rank's file at most this (IOR's -b)")
	cmd.Flags().IntVar(&cfg.HardSegments, "hard-segments", 10000, "ior-hard: each rank's segments of 47,008 bytes at most")
	cmd.Flags().IntVar(&cfg.EasyFiles, "easy-files", 50000, "mdtest-easy: files per rank at most")
	cmd.Flags().IntVar(&cfg.HardFiles, "hard-files", 20000, "mdtest-hard: files per rank at most")
}

// benchIO500JobCmd is the phases as a job runs them: rsa-lab bench io500
// starts it as each job's command, under the job's mpirun environment.
func benchIO500JobCmd() *cobra.Command {
	var (
		cfg    io500.Config
		r      io500.Runner
		part   string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:    "io500-job",
		Short:  "Run IO500's phases once in --data, as a job of rsa-lab bench io500 does",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if cfg.Data, err = filepath.Abs(cfg.Data); err != nil {
				return err
			}
			if cfg.Results, err = filepath.Abs(cfg.Results); err != nil {
				return err
			}
			if r.Part, err = io500.ParsePart(part); err != nil {
				return err
			}
			r.Log = cmd.ErrOrStderr()
			res, err := r.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			// IO500 scores only a run of every phase.
			var score io500.Score
			if r.Part == io500.All {
				if score, err = io500.ScoreOf(res); err != nil {
					return err
				}
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(thesis.IO500Report{Results: res, Score: score, Ranks: r.Ranks})
			}
			if r.Part != io500.All {
				fmt.Fprintf(cmd.OutOrStdout(), "%d phases of part %s (stonewall %s); no score\n", len(res), r.Part, cfg.Stonewall)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "bw %.3f GiB/s, md %.3f kIOPS, score %.3f (stonewall %s)\n", score.Bandwidth, score.Metadata, score.Total, cfg.Stonewall)
			return nil
		},
	}
	cmd.Flags().StringVar(&cfg.Data, "data", "", "the data directory, on the file system under test")
	cmd.Flags().StringVar(&cfg.Results, "results", "", "where the stonewall files and the timestamp go")
	cmd.Flags().StringVar(&r.IOR, "ior", "", "IOR's prefix, as scripts/build-ior.sh prints it")
	cmd.Flags().IntVar(&r.Ranks, "ranks", 2, "MPI ranks")
	cmd.Flags().IntVar(&r.FindWorkers, "find-workers", 8, "directories find reads at once")
	cmd.Flags().StringVar(&part, "part", string(io500.All), "which phases: all; write (the writes, their files kept); read (the phases a read-only file system allows, on what a write run left in --data and --results)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the results as JSON")
	addIO500Caps(cmd, &cfg)
	_ = cmd.MarkFlagRequired("data")
	_ = cmd.MarkFlagRequired("results")
	_ = cmd.MarkFlagRequired("ior")
	return cmd
}

// benchWaitMountCmd waits until a directory is a mount point: a job's
// hosts run it before writing into RSA's output directory.
func benchWaitMountCmd() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:    "wait-mount DIR",
		Short:  "Wait until DIR is a mount point (RSA's output switch on this host)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			return waitForMount(cmd, dir, timeout)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "how long to wait")
	return cmd
}
