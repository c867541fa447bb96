package main

import (
	"cmp"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/textsafe"
	"github.com/rsa-hpc/rsa/internal/units"
)

// drainCmd is `rsa drain NODE --reason R` and `rsa undrain NODE`.
func drainCmd(g *globals, drain bool) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "drain NODE --reason TEXT",
		Short: "Give an RSA node no new jobs; those on it finish (root)",
		Long: `Drain an RSA node: no new job is given RAM on it, jobs that hold RAM on it
finish as usual. rsa nodes shows it "draining" while jobs hold it and
"drained" when it is empty and may be taken down. The drain outlives a
restart of the daemon; rsa undrain ends it.`,
		Args: cobra.ExactArgs(1),
	}
	if !drain {
		cmd.Use, cmd.Short, cmd.Long = "undrain NODE", "Return a drained RSA node to service (root)", ""
	} else {
		cmd.Flags().StringVar(&reason, "reason", "", "why (shown by rsa nodes; required)")
	}
	cmd.RunE = g.clientRun(func(cmd *cobra.Command, c *api.Client, args []string) error {
		n, err := c.Drain(cmd.Context(), args[0], api.DrainRequest{Drain: drain, Reason: reason})
		if err != nil {
			return err
		}
		if g.json {
			return printJSON(os.Stdout, n)
		}
		fmt.Printf("%s: %s\n", textsafe.Line(n.Name), nodeState(*n))
		return nil
	})
	addJSON(cmd, g)
	return cmd
}

// nodeState is a node's state with, when drained, why and since when.
func nodeState(n api.NodeView) string {
	if n.Agent != nil && !n.Agent.Up {
		seen := "never answered"
		if !n.Agent.Seen.IsZero() {
			seen = "last seen " + n.Agent.Seen.Format("2006-01-02 15:04:05")
		}
		return fmt.Sprintf("%s (agent: %s; %s)", cmp.Or(textsafe.Line(n.Agent.State), "down"), textsafe.Line(n.Agent.Error), seen)
	}
	notes := ""
	if n.Owed > 0 {
		notes = fmt.Sprintf(" (%s left by teardowns while it was silent)", units.FormatSize(n.Owed))
	}
	if n.Agent != nil && n.Agent.Unpooled != "" {
		notes += "; no new RAMDISKs: " + textsafe.Line(n.Agent.Unpooled)
	}
	if n.Drain == nil {
		return n.State() + notes
	}
	return fmt.Sprintf("%s (%s, by %s since %s)%s", n.State(), textsafe.Line(n.Drain.Reason), textsafe.Line(n.Drain.By), n.Drain.Since.Format("2006-01-02 15:04"), notes)
}
