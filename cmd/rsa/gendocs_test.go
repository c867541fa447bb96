package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// genDocs runs `rsa gen-docs` as make man does, into a fresh directory, and
// returns the root command it ran (with cobra's completion command added,
// as at run time) and the two output directories.
func genDocs(t *testing.T) (root *cobra.Command, man, compl string) {
	t.Helper()
	dir := t.TempDir()
	man, compl = filepath.Join(dir, "man"), filepath.Join(dir, "completions")
	root = newRoot(&globals{})
	root.SetArgs([]string{"gen-docs", "--man", man, "--completions", compl})
	if err := root.Execute(); err != nil {
		t.Fatalf("rsa gen-docs: %v", err)
	}
	return root, man, compl
}

// unroff undoes the escapes a man page may write for plain characters, so
// that a page can be compared with the cobra text it came from.
var unroff = strings.NewReplacer(`\-`, "-", `\(aq`, "'", `\[aq]`, "'", `\(cq`, "'", `\[cq]`, "'",
	`\(dq`, `"`, `\[dq]`, `"`, `\&`, "", `\e`, `\`, `\(rs`, `\`)

// Each command a user can see has its man page, and the page's NAME line
// says what `rsa help` says: both come from the same cobra Short.
func TestGenDocsManPages(t *testing.T) {
	root, man, _ := genDocs(t)
	cmds := append([]*cobra.Command{root}, root.Commands()...)
	seen := 0
	for _, c := range cmds {
		page := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
		b, err := os.ReadFile(filepath.Join(man, page))
		if !c.IsAvailableCommand() && c != root {
			// Hidden plumbing (rsa node, rsa gen-docs) and cobra's help
			// command are not for users: no page.
			if err == nil {
				t.Errorf("%s: a page for a command rsa help does not list", page)
			}
			continue
		}
		if err != nil {
			t.Errorf("no man page for %q: %v", c.CommandPath(), err)
			continue
		}
		seen++
		text := unroff.Replace(string(b))
		name := strings.TrimSuffix(page, ".1") + " - " + c.Short
		if !strings.Contains(text, ".SH NAME\n"+name+"\n") {
			t.Errorf("%s: NAME is not %q:\n%s", page, name, text)
		}
		if title := strings.ToUpper(strings.TrimSuffix(page, ".1")); !strings.Contains(text, ".TH \""+title+"\" \"1\"") {
			t.Errorf("%s: no title line for %s in section 1:\n%s", page, title, text)
		}
	}
	// rsa, serve, run, status, version, ...: a walk that found almost
	// nothing checked almost nothing.
	if seen < 15 {
		t.Errorf("only %d man pages checked", seen)
	}
	// The lab's commands are rsa-lab's, not the product's.
	for _, page := range []string{"rsa-bench.1", "rsa-sim.1"} {
		if _, err := os.Stat(filepath.Join(man, page)); err == nil {
			t.Errorf("%s: rsa documents a command of rsa-lab", page)
		}
	}
}

// The completion scripts are written under the names the shells load
// them by, and name the commands; bash's at least parses.
func TestGenDocsCompletions(t *testing.T) {
	_, _, compl := genDocs(t)
	for _, f := range []string{"rsa.bash", "_rsa", "rsa.fish"} {
		b, err := os.ReadFile(filepath.Join(compl, f))
		if err != nil {
			t.Errorf("no %s completion: %v", f, err)
			continue
		}
		if !strings.Contains(string(b), "rsa") {
			t.Errorf("%s does not mention rsa:\n%s", f, b)
		}
	}
	if bash, err := exec.LookPath("bash"); err == nil {
		if out, err := exec.Command(bash, "-n", filepath.Join(compl, "rsa.bash")).CombinedOutput(); err != nil {
			t.Errorf("bash -n rsa.bash: %v\n%s", err, out)
		}
	}
}

// gen-docs with nothing to write is an error, not a silent success that
// leaves a build without pages.
func TestGenDocsNeedsADirectory(t *testing.T) {
	root := newRoot(&globals{})
	root.SetArgs([]string{"gen-docs"})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "--man") {
		t.Fatalf("gen-docs without directories: %v, want an error naming --man", err)
	}
}
