package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/textsafe"
	"github.com/rsa-hpc/rsa/internal/units"
)

// settleCmd is `rsa settle NODE --reason R`.
func settleCmd(g *globals) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "settle NODE --reason TEXT",
		Short: "Forget what teardowns left on a node that will not answer again (root)",
		Long: `settle forgets the debts owed on NODE: RAMDISK parts (an RSA node) or
mounts (a compute node) that teardowns left while it was silent, which
RSA removes itself as soon as the node's agent answers again. Settle
only a node that will not: replaced, or gone for good. Its RAM there
then counts as free; each job owed for records who settled it and why
(rsa log JOB); should the node come back after all, RSA removes what it
still holds of ended jobs. A node that answers cannot be settled.`,
		Args: cobra.ExactArgs(1),
		RunE: g.clientRun(func(cmd *cobra.Command, c *api.Client, args []string) error {
			rep, err := c.Settle(cmd.Context(), args[0], api.SettleRequest{Reason: reason})
			if err != nil {
				return err
			}
			if g.json {
				return printJSON(os.Stdout, rep)
			}
			fmt.Printf("%s: %d debts settled (%s), of jobs %v\n", textsafe.Line(rep.Node), rep.Settled, units.FormatSize(rep.Bytes), rep.Jobs)
			return nil
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the node will not answer again (kept in each job's record; required)")
	addJSON(cmd, g)
	return cmd
}
