package metabench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rsa-hpc/rsa/internal/bench/crosscheck"
)

// mdtestRun is one mdtest run and the phases its rates stand beside.
type mdtestRun struct {
	dir    string           // its directory in the check directory
	ranks  int              // MPI ranks
	n      int              // files a rank (-n)
	unique bool             // -u: a directory a rank
	ops    map[Phase]string // phase -> mdtest's operation
}

// mdtestRuns are the mdtest runs that stand beside the phases: one rank
// creating every file (Create-A), a directory a rank (-u: Create-B,
// Stat-A, Delete-A) and one directory shared (Create-C, Stat-B,
// Delete-B). mdtest gives each rank -n files, so nfile mod N files are
// left out where METABENCH shares them out.
func (r *runner) mdtestRuns(phases []Phase) []mdtestRun {
	runs := []mdtestRun{
		{dir: "mdtest-a", ranks: 1, n: r.c.NFile, ops: map[Phase]string{CreateA: "File creation"}},
		{dir: "mdtest-u", ranks: r.n, n: r.c.NFile / r.n, unique: true,
			ops: map[Phase]string{CreateB: "File creation", StatA: "File stat", DeleteA: "File removal"}},
		{dir: "mdtest-s", ranks: r.n, n: r.c.NFile / r.n,
			ops: map[Phase]string{CreateC: "File creation", StatB: "File stat", DeleteB: "File removal"}},
	}
	var keep []mdtestRun
	for _, run := range runs {
		for p := range run.ops {
			if !slices.Contains(phases, p) {
				delete(run.ops, p)
			}
		}
		if len(run.ops) > 0 {
			keep = append(keep, run)
		}
	}
	return keep
}

// mdtestArgs are mdtest's arguments for run: files only (-F), create,
// stat where a Stat phase wants it, and remove (-C -T -r), in
// directories process 0 made.
func (r *runner) mdtestArgs(run mdtestRun) []string {
	args := []string{"-n", strconv.Itoa(run.n), "-F", "-C"}
	if _, ok := run.ops[StatA]; ok {
		args = append(args, "-T")
	} else if _, ok := run.ops[StatB]; ok {
		args = append(args, "-T")
	}
	args = append(args, "-r")
	rel := filepath.Join(checkDir, run.dir)
	var paths []string
	switch {
	case run.ranks == 1:
		paths = []string{r.path(r.c.NProc-1, rel)}
	case run.unique && len(r.c.Dirs) > 1:
		// mdtest rank j works in the j-th of paths joined by @: each
		// rank through its participant's mount.
		for k := range run.ranks {
			paths = append(paths, r.path(r.c.rank(k), rel))
		}
	default:
		// mdtest refuses several paths for a shared directory: every
		// rank goes through the first participant's mount.
		paths = []string{r.path(r.c.rank(0), rel)}
	}
	args = append(args, "-d", strings.Join(paths, "@"))
	if run.unique {
		args = append(args, "-u")
	}
	return args
}

// mdtestNotes runs mdtest beside the phases and returns, for each phase
// it has a rate for, a note with that rate, or with why there is none.
// mdtest is optional: its absence or failure is a note, never an error,
// unless the context ended.
func (r *runner) mdtestNotes(ctx context.Context, phases []Phase) (map[Phase]string, error) {
	notes := map[Phase]string{}
	for _, run := range r.mdtestRuns(phases) {
		rel := filepath.Join(checkDir, run.dir)
		if err := os.MkdirAll(r.setupPath(rel), 0o755); err != nil {
			return nil, fmt.Errorf("set up mdtest: %w", err)
		}
		res, err := crosscheck.RunMdtest(ctx, r.c.Mdtest, run.ranks, r.mdtestArgs(run)...)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		for p, op := range run.ops {
			switch {
			case errors.Is(err, crosscheck.ErrNotBuilt):
				notes[p] = "mdtest not run: not built at " + r.c.Mdtest + " (scripts/build-ior.sh prints the prefix)"
			case err != nil:
				notes[p] = "mdtest failed: " + firstLine(err)
			default:
				if rate, ok := res.Rate(op); ok {
					notes[p] = fmt.Sprintf("mdtest %.0f ops/s (%s, %d ranks x %d files%s)",
						rate.Mean, op, run.ranks, run.n, mdtestLayout(run))
				} else {
					notes[p] = "mdtest reported no " + op + " rate"
				}
			}
		}
	}
	return notes, nil
}

func mdtestLayout(run mdtestRun) string {
	if run.unique {
		return ", -u"
	}
	return ""
}
