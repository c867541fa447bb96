package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/textsafe"
	"github.com/rsa-hpc/rsa/internal/units"
)

func configCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Work with RSA's config file",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "check",
		Short: "Check the config file as rsa serve reads it, and print what it sets",
		Long: `Check the config file (--config, $RSA_CONFIG or ` + config.DefaultPath + `) as 'rsa serve'
reads it, every engine's keys included, without starting anything, and print
what it sets. A file with an error exits 1 naming the key and the fix: run it
before restarting the daemon after an edit. Without a file at the default path
it says so and prints the defaults 'rsa serve' would run with.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, explicit := config.Resolve(g.config)
			cfg, err := loadConfig(g.config)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) && !explicit {
				fmt.Fprintf(w, "no config file at %s: rsa serve runs with the defaults below\n", path)
			} else {
				fmt.Fprintf(w, "%s: ok\n", textsafe.Line(path))
			}
			printConfig(w, cfg)
			return nil
		},
	})
	return cmd
}

// printConfig prints the settings an admin checks first.
func printConfig(w io.Writer, c *config.Config) {
	var nodes []string
	var total int64
	for _, n := range c.Nodes {
		nodes = append(nodes, fmt.Sprintf("%s (%s, %s)", n.Name, n.Engine, units.FormatSize(n.Capacity)))
		total += n.Capacity
	}
	rows := [][2]string{
		{"scheduler", c.Scheduler},
		{"engine", c.Engine},
		{"rsa nodes", fmt.Sprintf("%d, %s of RAM: %s", len(c.Nodes), units.FormatSize(total), strings.Join(nodes, ", "))},
		{"input mode", c.InputMode},
		{"socket", c.Socket},
		{"ramdisk root", c.RamdiskRoot},
		{"state dir", c.StateDir},
	}
	for _, r := range rows {
		fmt.Fprintf(w, "  %-13s %s\n", r[0]+":", textsafe.Line(r[1]))
	}
}
