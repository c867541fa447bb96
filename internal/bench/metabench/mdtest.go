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
	"time"

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

// mdtestPaths are the directories mdtest's ranks work in for run, in
// rank order: one for all, or, with -u on several mounts, each rank's
// through its participant's mount.
func (r *runner) mdtestPaths(run mdtestRun) []string {
	rel := filepath.Join(checkDir, run.dir)
	switch {
	case run.ranks == 1:
		return []string{r.path(r.c.NProc-1, rel)}
	case run.unique && len(r.c.Dirs) > 1:
		paths := make([]string, run.ranks)
		for k := range paths {
			paths[k] = r.path(r.c.rank(k), rel)
		}
		return paths
	default:
		// mdtest refuses several paths for a shared directory: every
		// rank goes through the first participant's mount.
		return []string{r.path(r.c.rank(0), rel)}
	}
}

// mdtestArgs are mdtest's arguments for run in paths (mdtestPaths, with
// no '@' in them: crosscheck.NoAt): files only (-F), create, stat where
// a Stat phase wants it, and remove (-C -T -r), in directories process 0
// made. mdtest rank j works in the j-th of paths joined by @.
func (r *runner) mdtestArgs(run mdtestRun, paths []string) []string {
	args := []string{"-n", strconv.Itoa(run.n), "-F", "-C"}
	if _, ok := run.ops[StatA]; ok {
		args = append(args, "-T")
	} else if _, ok := run.ops[StatB]; ok {
		args = append(args, "-T")
	}
	args = append(args, "-r", "-d", strings.Join(paths, "@"))
	if run.unique {
		args = append(args, "-u")
	}
	return args
}

// mdtestRunIn runs mdtest for run in paths (mdtestPaths), made free of
// '@' for it.
func (r *runner) mdtestRunIn(ctx context.Context, run mdtestRun, paths []string) (*crosscheck.MdtestResult, error) {
	var at []string
	for _, p := range paths {
		a, done, err := crosscheck.NoAt(p)
		if err != nil {
			return nil, err
		}
		defer done()
		at = append(at, a)
	}
	return crosscheck.RunMdtest(ctx, r.c.Mdtest, run.ranks, r.mdtestArgs(run, at)...)
}

// mdtestChecks runs mdtest beside the phases and returns, for each phase
// it stands beside, a Check with mdtest's rate, or, where it has none, a
// Check without a Tool whose note says why. mdtest is optional: its
// absence or failure is a note, never an error, unless the context ended.
func (r *runner) mdtestChecks(ctx context.Context, phases []Phase) (map[Phase]Check, error) {
	checks := map[Phase]Check{}
	for _, run := range r.mdtestRuns(phases) {
		rel := filepath.Join(checkDir, run.dir)
		if err := os.MkdirAll(r.setupPath(rel), 0o755); err != nil {
			return nil, fmt.Errorf("set up mdtest: %w", err)
		}
		paths := r.mdtestPaths(run)
		res, err := r.mdtestRunIn(ctx, run, paths)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		for p, op := range run.ops {
			chk := Check{Phase: p}
			switch {
			case errors.Is(err, crosscheck.ErrNotBuilt):
				chk.Note = "mdtest not run: not built at " + r.c.Mdtest + " (scripts/build-ior.sh prints the prefix)"
			case err != nil:
				chk.Note = "mdtest failed: " + firstLine(err)
			default:
				rate, ok := res.Rate(op)
				if !ok || rate.Mean <= 0 {
					chk.Note = "mdtest reported no " + op + " rate"
					break
				}
				// mdtest reports a rate; as a Check it is the operations
				// over the time they took at that rate.
				chk.Tool = "mdtest"
				chk.Ops = run.ranks * run.n
				chk.Elapsed = time.Duration(float64(chk.Ops) / rate.Mean * float64(time.Second))
				chk.Note = fmt.Sprintf("mdtest: %s, %d ranks x %d files%s; %s", op, run.ranks, run.n, mdtestLayout(run), mdtestNaming(paths))
				if len(r.c.Dirs) > 1 && !run.unique && run.ranks > 1 {
					chk.Note = joinNotes(chk.Note, "every rank through the first mount (mdtest takes one path for a shared directory), where METABENCH's go through their own")
				}
			}
			checks[p] = chk
		}
	}
	return checks, nil
}

// preferMdtest is the check a phase is judged by: mdtest's where it has
// a rate (the metadata benchmark of the field, a C loop of the calls
// alone), with the other tool's rate in its note; else other, with why
// mdtest has none. fio's file engines count fio's own work between files
// in their rate: on a RAM file system 50 times the calls' own time.
func preferMdtest(md, other Check) Check {
	if md.Tool == "" {
		other.Note = joinNotes(other.Note, md.Note)
		return other
	}
	if other.Tool != "" {
		md.Note = joinNotes(md.Note, fmt.Sprintf("%s %.0f ops/s (%s)", other.Tool, other.Rate(), other.Note))
	} else {
		md.Note = joinNotes(md.Note, other.Note)
	}
	return md
}

// mdtestNaming says how mdtest names its files, against METABENCH: by
// the whole path, from / through its -d directory (paths[0] is one) and
// the two it makes in it (test-dir.0-0/mdtest_tree.0.0), where
// METABENCH's processes name a file in their open directory. Each
// directory of the path is a lookup; on a RAM file system, where a stat
// takes about a microsecond, they are a large part of it: about 55 ns a
// directory (docs/performance.md, "Measurements behind choices in the
// code").
func mdtestNaming(paths []string) string {
	depth := strings.Count(filepath.Clean(paths[0]), "/") + 2
	return fmt.Sprintf("mdtest names each file by its path from / (%d directories deep), METABENCH by its name in its open directory", depth)
}

func mdtestLayout(run mdtestRun) string {
	if run.unique {
		return ", -u"
	}
	return ""
}
