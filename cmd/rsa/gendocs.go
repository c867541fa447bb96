package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/rsa-hpc/rsa/internal/version"
)

// genDocsCmd is `rsa gen-docs`: man pages and shell completions written from
// the commands themselves at build time (make man, make deb), so that
// `rsa help X`, `man rsa-X` and what the shell completes never drift apart.
// Hidden: it is for the build, not for users.
func genDocsCmd() *cobra.Command {
	var manDir, complDir string
	cmd := &cobra.Command{
		Use:    "gen-docs --man DIR --completions DIR",
		Short:  "Write man pages and shell completions (build time)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if manDir == "" && complDir == "" {
				return errors.New("nothing to do: give --man DIR, --completions DIR or both")
			}
			root := cmd.Root()
			if manDir != "" {
				if err := writeManPages(root, manDir); err != nil {
					return err
				}
			}
			if complDir != "" {
				if err := writeCompletions(root, complDir); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&manDir, "man", "", "write rsa.1 and one page per subcommand (rsa-serve.1, ...) here")
	cmd.Flags().StringVar(&complDir, "completions", "", "write rsa.bash, _rsa (zsh) and rsa.fish here")
	return cmd
}

// writeManPages writes section 1 pages for root and every visible
// subcommand. The date comes from SOURCE_DATE_EPOCH when it is set (cobra
// reads it; make sets it to the commit's time), so a rebuild of the same
// commit writes the same pages.
func writeManPages(root *cobra.Command, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating the man page directory: %w", err)
	}
	// Cobra's tag would add a HISTORY section saying the page was
	// generated, with the build date: noise to a reader of the page.
	disableAutoGenTag(root)
	// No Title: cobra then titles each page by its command (RSA-SERVE).
	header := &doc.GenManHeader{
		Section: "1",
		Source:  "rsa " + version.String(),
		Manual:  "RSA Manual",
	}
	if err := doc.GenManTree(root, header, dir); err != nil {
		return fmt.Errorf("writing man pages to %s: %w", dir, err)
	}
	return nil
}

func disableAutoGenTag(c *cobra.Command) {
	c.DisableAutoGenTag = true
	for _, s := range c.Commands() {
		disableAutoGenTag(s)
	}
}

// writeCompletions writes the completion scripts under the names each
// shell loads them by (bash-completion wants the command's name, which
// the package gives it on install; zsh an underscore; fish .fish), with
// the commands' descriptions shown where the shell can.
func writeCompletions(root *cobra.Command, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating the completion directory: %w", err)
	}
	for _, c := range []struct {
		name string
		gen  func(io.Writer) error
	}{
		{"rsa.bash", func(w io.Writer) error { return root.GenBashCompletionV2(w, true) }},
		{"_rsa", root.GenZshCompletion},
		{"rsa.fish", func(w io.Writer) error { return root.GenFishCompletion(w, true) }},
	} {
		if err := writeFile(filepath.Join(dir, c.name), c.gen); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes what gen produces to path, reporting a failed close
// too: a full disk must not leave a truncated script behind unnoticed.
func writeFile(path string, gen func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := gen(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
