package metabench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Config is one METABENCH run: the source's flags, the process count MPI
// would have been given, and where each rank works.
type Config struct {
	// The phase groups, as -C -S -U -A -T. When none of these nor Delete
	// is set, every phase runs, Delete included.
	Create, Stat, Utime, Append, Untar bool
	// Delete runs Delete-A and Delete-B, which are not in the source.
	Delete bool

	Cleanup bool // -k: process 0 removes each phase's files after it, untimed
	Proc0   bool // -0: process 0 takes part in the tests

	NFile int // -c: files per test
	NByte int // -b: bytes each append writes
	Freq  int // -f: files per Create-A batch

	NProc int // the process count (mpirun -np)

	// Dirs are the working directories (-w), one per client: rank i works
	// in Dirs[i%len(Dirs)], and process 0 sets up through Dirs[0]. For
	// separate client caches they must be mounts of the same volume.
	Dirs []string

	// Tarball is the archive Untar unpacks. Empty means the synthetic
	// tree Tree, written once per client under LocalDir.
	Tarball  string
	Tree     Tree   // the synthetic tree; the zero Tree means GlibcTree()
	LocalDir string // a client's fast local directory (the source's /tmp); empty means os.TempDir()

	// CrossCheck runs, once the phases are done, each phase's
	// counterpart in another tool (fio's file engines, touch, tar) on the
	// same directories with the same files, participants and layout;
	// Report.Checks holds their rates.
	CrossCheck bool
	// Mdtest is the prefix scripts/build-ior.sh printed: with CrossCheck,
	// mdtest runs too and its rates go in the checks' notes. Empty: no
	// mdtest.
	Mdtest string
}

// Participants is the number of processes that take part in the tests:
// all of them when there is one or with -0, else all but process 0.
func (c Config) Participants() int {
	if c.NProc == 1 || c.Proc0 {
		return c.NProc
	}
	return c.NProc - 1
}

// rank is the process number of participant k (its relative rank).
func (c Config) rank(k int) int {
	if c.NProc == 1 || c.Proc0 {
		return k
	}
	return k + 1
}

// workDir is the working directory rank works through.
func (c Config) workDir(rank int) string {
	return c.Dirs[rank%len(c.Dirs)]
}

// allPhases reports whether no phase was chosen, which means every phase.
func (c Config) allPhases() bool {
	return !c.Create && !c.Stat && !c.Utime && !c.Append && !c.Untar && !c.Delete
}

// Phases lists the phases c runs, in the order they run.
func (c Config) Phases() []Phase {
	all := c.allPhases()
	var ps []Phase
	add := func(on bool, p ...Phase) {
		if on || all {
			ps = append(ps, p...)
		}
	}
	add(c.Create, CreateA, CreateB, CreateC)
	add(c.Stat, StatA, StatB)
	add(c.Utime, UtimeA, UtimeB)
	add(c.Append, AppendA, AppendB)
	add(c.Untar, Untar)
	add(c.Delete, DeleteA, DeleteB)
	return ps
}

func (c Config) withDefaults() Config {
	if c.Tree == (Tree{}) {
		c.Tree = GlibcTree()
	}
	if c.LocalDir == "" {
		c.LocalDir = os.TempDir()
	}
	return c
}

// Validate reports every problem with c, each with what to change.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.NProc < 1 {
		bad("%d processes: give at least 1 (-n)", c.NProc)
	}
	if c.NFile < 1 {
		bad("-c %d: give at least one file per test", c.NFile)
	} else if n := c.Participants(); c.NProc >= 1 && c.NFile < n {
		bad("-c %d is fewer files than the %d participants: raise -c to at least %d or use fewer processes", c.NFile, n, n)
	}
	if c.Freq < 1 {
		bad("-f %d: a Create-A batch needs at least one file", c.Freq)
	}
	if c.NByte < 1 && (c.Append || c.allPhases()) {
		bad("-b %d: an append must write at least one byte", c.NByte)
	}
	if len(c.Dirs) == 0 {
		bad("no working directory: give one with -w (one per client for separate mounts)")
	}
	for _, d := range c.Dirs {
		if err := isDir(d); err != nil {
			bad("-w %s: %w", d, err)
		}
	}
	if c.Tarball != "" {
		if fi, err := os.Stat(c.Tarball); err != nil {
			bad("--tarball: %w", err)
		} else if !fi.Mode().IsRegular() {
			bad("--tarball %s is not a regular file: give a tar archive", c.Tarball)
		}
	} else if err := c.Tree.Validate(); c.Tree != (Tree{}) && err != nil {
		bad("synthetic tree: %w", err)
	}
	if c.LocalDir != "" {
		if err := isDir(c.LocalDir); err != nil {
			bad("local directory for the tarball: %w", err)
		}
	}
	return errors.Join(errs...)
}

func isDir(path string) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("%s is relative: give an absolute path", path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", path)
	}
	return nil
}
