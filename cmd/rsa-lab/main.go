// Command rsa-lab is RSA's lab: `rsa-lab sim`, the trace-driven simulator
// that sizes a site's RSA, and `rsa-lab bench`, the seeds' experiments
// re-run beside the seeds' numbers. It is a binary of its own so that the
// product, rsa, links neither the benchmarks nor the plotting libraries;
// the benchmarks that run RSA's lifecycle run that rsa binary.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/rsa-hpc/rsa/internal/textsafe"
	"github.com/rsa-hpc/rsa/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := newRoot().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "rsa-lab:", textsafe.Text(err.Error()))
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "rsa-lab",
		Short: "RSA's lab: the simulator and the seeds' benchmarks",
		Long: `rsa-lab holds what studies RSA rather than runs it: 'rsa-lab sim' replays a
workload on a simulated machine with and without RSA, 'rsa-lab bench' re-runs
the experiments of the reports RSA comes from. The benchmarks that run jobs
through RSA run the product's rsa binary (by default the one beside rsa-lab).`,
		Version:       version.String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(simCmd(), benchCmd())
	return root
}

// printJSON prints v as indented JSON, safe on a terminal
// (textsafe.WriteJSON).
func printJSON(w io.Writer, v any) error { return textsafe.WriteJSON(w, v) }
