package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/rsa-hpc/rsa/internal/bench/contention"
	"github.com/rsa-hpc/rsa/internal/bench/target"
	"github.com/rsa-hpc/rsa/internal/bench/thesis"
	"github.com/rsa-hpc/rsa/internal/units"
)

const contentionLong = `The thesis' mechanism (the evidence review's E4): GPFS made a create in a
directory dear when many client nodes created there at once (the
directory's token moving between them), and cheap from one writer. Here
shared@1g's brick loads a shim (internal/bench/contention) that serialises
the creates of each directory and makes each cost

    local + revoke x (1 - 1/n)

where n is how many creates are in flight for the directory when one arrives.
A Linux client holds a directory's lock for each create it sends, so n
counts client hosts: the job's writers spread over K compute hosts
contend K ways; RSA's stage-out, one mover on one RSA host, never does.
The defaults are the thesis' own (one writer ~0.08 s a file, the
2,048-rank storm from 1,024 nodes ~0.52 s).

At each --hosts K the same job (--ranks writers in all, a file each of
--size, in one directory) runs under Slurm on K compute hosts of the
emulated cluster (scripts/cluster-up), each behind its own 1 Gbit/s link:
straight to shared@1g; as one aggregated file; into each host's tmpfs and
tarred onto shared@1g inside the job; and through RSA, its output staged
out after the job. Each job's cells run in a random order each run.`

// benchContentionCmd is rsa-lab bench contention.
func benchContentionCmd() *cobra.Command {
	var (
		f      benchFlags
		hosts  []int
		ranks  int
		size   string
		runs   int
		user   string
		local  time.Duration
		revoke time.Duration
		repo   string
		rsa    string
	)
	cmd := &cobra.Command{
		Use:   "contention",
		Short: "E4: T52 over K compute hosts on a shared file system whose creates contend as GPFS's did",
		Long:  contentionLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			n, err := units.ParseSize(size)
			if err != nil || n < 1 {
				return fmt.Errorf("--size %q: give a size per file such as 1M", size)
			}
			if local < 0 || revoke < 0 {
				return fmt.Errorf("--local %s, --revoke %s: give durations of 0 or more", local, revoke)
			}
			cfg := target.Config{Size: 1 << 30}
			cl, err := labCluster(repo, rsa, user, cfg)
			if err != nil {
				return err
			}
			if _, err := target.Up(ctx, cfg, "shared@1g"); err != nil {
				return err
			}
			b, err := target.SharedBaseline(ctx, cfg, 2)
			if err != nil {
				return err
			}
			m := contention.Model{Local: local, Revoke: revoke}
			sc, err := target.SetSharedContention(ctx, cfg, m)
			if err != nil {
				return err
			}
			defer sc.Off()
			rows, err := thesis.ClusterContention{Cluster: cl, Hosts: hosts, Ranks: ranks, Size: n, Runs: runs, Model: m,
				Begin: sc.Begin, Stats: sc.Stats, LinkBps: b.ToServer}.Run(ctx)
			if err != nil {
				return err
			}
			return f.emit(cmd.OutOrStdout(), rows)
		},
	}
	f.addOutput(cmd)
	cmd.Flags().IntSliceVar(&hosts, "hosts", []int{1, 2, 4}, "compute hosts the writers spread over, each cell at each (1-9)")
	cmd.Flags().IntVar(&ranks, "ranks", 2048, "writers in all, split evenly over the hosts")
	cmd.Flags().StringVar(&size, "size", "1M", "bytes each writes")
	cmd.Flags().IntVar(&runs, "runs", 1, "repetitions of each host count's cells; the rows give the median and every run")
	cmd.Flags().StringVar(&user, "user", "rsabench", "the jobs' user (created and removed if missing)")
	cmd.Flags().DurationVar(&local, "local", contention.ThesisLocal, "a create's cost with no other client host contending")
	cmd.Flags().DurationVar(&revoke, "revoke", contention.ThesisRevoke, "what contention adds to a create, at most (x (1 - 1/n))")
	cmd.Flags().StringVar(&repo, "repo", "", "the checkout holding scripts/cluster-up (default: found from the rsa-lab binary's path)")
	cmd.Flags().StringVar(&rsa, "rsa", "", "the product's rsa binary (default: the rsa beside rsa-lab, else rsa on PATH)")
	return cmd
}
