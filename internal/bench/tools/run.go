package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/bench"
	"github.com/rsa-hpc/rsa/internal/bench/crosscheck"
	"github.com/rsa-hpc/rsa/internal/bench/fio"
)

// Env is where and how a run goes.
type Env struct {
	IOR     string   // IOR's prefix, as scripts/build-ior.sh prints it
	Target  string   // the target's name, for the rows
	Mounts  []string // the target's client mounts (one for most targets)
	Profile string   // the seeds named for a profile apply in it only
	Log     io.Writer
}

// workDir is the run's directory under each client mount, removed when
// the run ends.
const workDir = "rsa-tools"

// Mounts is how many client mounts the jobs can use: a rank each for
// {each:...}, and a second one for {m1}.
func Mounts(jobs []Job) int {
	n := 1
	for _, j := range jobs {
		for _, a := range j.Args {
			if strings.Contains(a, "{each:") {
				n = max(n, j.Ranks)
			}
			if strings.Contains(a, "{m1}") {
				n = max(n, 2)
			}
		}
	}
	return n
}

// Run runs the jobs in turn and returns their rows. A job that fails
// leaves its rows out and the run goes on: the error names every job
// that failed.
func Run(ctx context.Context, s *Set, jobs []Job, env Env) ([]bench.Row, error) {
	if len(env.Mounts) == 0 {
		return nil, errors.New("tools: no directory to run in")
	}
	log := env.Log
	if log == nil {
		log = io.Discard
	}
	// IOR and mdtest split paths on '@' (one a rank), which shared@1g's
	// mount points hold.
	work := make([]string, len(env.Mounts))
	for i, m := range env.Mounts {
		d, undo, err := crosscheck.NoAt(m)
		if err != nil {
			return nil, err
		}
		defer undo()
		work[i] = filepath.Join(d, workDir)
	}
	for _, d := range work {
		defer os.RemoveAll(d)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("tools: %w", err)
		}
	}
	direct := takesDirect(work[0])

	var (
		rows []bench.Row
		errs []error
	)
	for _, j := range jobs {
		if err := ctx.Err(); err != nil {
			return rows, errors.Join(append(errs, err)...)
		}
		var (
			r   []bench.Row
			err error
		)
		switch j.Tool {
		case IOR, Mdtest:
			args := expand(j.Args, work, j.Ranks)
			fmt.Fprintf(log, "tools: %s (%d ranks) %s\n", j.Tool, j.Ranks, strings.Join(args, " "))
			r, err = runMPI(ctx, env, j, args)
		case Fio:
			r, err = runFio(ctx, s.fsys, env, j, work[0], direct, log)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("job %s: %w", j.Name, err))
			continue
		}
		rows = append(rows, r...)
	}
	return rows, errors.Join(errs...)
}

// eachRE is the placeholder of a path a rank: {each:SUB}.
var eachRE = regexp.MustCompile(`\{each:([^}]*)\}`)

// expand replaces the placeholders of args: {m0} and {m1} are the work
// directory through the first and the second client mount (the first
// where there is one), {each:SUB} a directory a rank, SUB-K under the
// K-th mount's work directory, joined by @, through as many mounts as
// there are up to the ranks (SUB alone where there is one mount).
func expand(args, work []string, ranks int) []string {
	m1 := work[0]
	if len(work) > 1 {
		m1 = work[1]
	}
	r := strings.NewReplacer("{m0}", work[0], "{m1}", m1)
	out := make([]string, len(args))
	for i, a := range args {
		a = eachRE.ReplaceAllStringFunc(a, func(m string) string {
			sub := eachRE.FindStringSubmatch(m)[1]
			n := min(ranks, len(work))
			paths := make([]string, n)
			for k := range paths {
				paths[k] = filepath.Join(work[k], sub)
				if n > 1 {
					// The mounts may be of one volume, and each of
					// mdtest's paths must be a directory of its own.
					paths[k] += "-" + strconv.Itoa(k)
				}
			}
			return strings.Join(paths, "@")
		})
		out[i] = r.Replace(a)
	}
	return out
}

// takesDirect reports whether files in dir open with O_DIRECT (tmpfs
// refuses it on older kernels).
func takesDirect(dir string) bool {
	p := filepath.Join(dir, ".direct-probe")
	fd, err := unix.Open(p, unix.O_CREAT|unix.O_WRONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return false
	}
	unix.Close(fd)
	os.Remove(p)
	return true
}

// runMPI runs an IOR or mdtest job and returns its rows.
func runMPI(ctx context.Context, env Env, j Job, args []string) ([]bench.Row, error) {
	params := map[string]string{"ranks": strconv.Itoa(j.Ranks)}
	var vals []value
	switch j.Tool {
	case IOR:
		res, err := crosscheck.RunIOR(ctx, env.IOR, j.Ranks, args...)
		if err != nil {
			return nil, err
		}
		t := res.Tests[0]
		params["block"] = units(t.BlockSize)
		params["transfer"] = units(t.TransferSize)
		if t.FilePerProc {
			params["layout"] = "file per rank"
		} else {
			params["layout"] = "shared file"
		}
		for _, op := range t.Summary {
			vals = append(vals,
				value{op.Op + "_rate", "MiB/s", op.MeanMiBps},
				value{op.Op + "_time", "s", op.MeanTime})
		}
	case Mdtest:
		// mdtest makes its -d directories; a job of one phase (-T
		// alone) finds the files an earlier job left in them.
		res, err := crosscheck.RunMdtest(ctx, env.IOR, j.Ranks, args...)
		if err != nil {
			return nil, err
		}
		params["files"] = strconv.Itoa(mdtestFiles(args) * j.Ranks)
		for _, op := range res.Rates {
			// mdtest prints every phase, those it did not run as zeros.
			if op.Max == 0 && op.Mean == 0 {
				continue
			}
			if m, ok := mdtestMetric(op.Name); ok {
				vals = append(vals, value{m, "ops/s", op.Mean})
			}
		}
	}
	if len(vals) == 0 {
		return nil, fmt.Errorf("%s reported nothing", j.Tool)
	}
	return rowsOf(j, env, params, vals), nil
}

// mdtestFiles is a rank's -n.
func mdtestFiles(args []string) int {
	if i := slices.Index(args, "-n"); i >= 0 && i+1 < len(args) {
		n, _ := strconv.Atoi(args[i+1])
		return n
	}
	return 0
}

// mdtestMetric is the row's metric for an operation of mdtest's SUMMARY
// table; the tree's creation and removal are mdtest's setup.
func mdtestMetric(name string) (string, bool) {
	n := strings.ToLower(name)
	if strings.HasPrefix(n, "tree ") {
		return "", false
	}
	m := map[string]string{"file creation": "create", "file stat": "stat", "file read": "read", "file removal": "remove"}[n]
	if m == "" {
		m = strings.ReplaceAll(n, " ", "_")
	}
	return m + "_rate", true
}

// runFio runs a fio job once a point of its grid and returns its rows: a
// section's rate (MiB/s, all its jobs) in the direction it moved bytes.
func runFio(ctx context.Context, fsys fs.FS, env Env, j Job, dir string, direct bool, log io.Writer) ([]bench.Row, error) {
	text, err := fs.ReadFile(fsys, j.FioFile)
	if err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	var rows []bench.Row
	for _, point := range grid(j.Grid) {
		vars := maps.Clone(point)
		vars["DIR"] = dir
		vars["DIRECT"] = "0"
		if direct {
			vars["DIRECT"] = "1"
		}
		job, err := substitute(string(text), vars)
		if err != nil {
			return rows, fmt.Errorf("%s: %w", j.FioFile, err)
		}
		params := map[string]string{}
		if strings.Contains(string(text), "${DIRECT}") {
			params["direct"] = vars["DIRECT"]
		}
		for k, v := range point {
			params[strings.ToLower(k)] = v
		}
		fmt.Fprintf(log, "tools: fio %s %v\n", j.FioFile, point)
		rep, err := fio.Run(ctx, fio.Cmd{Args: []string{"-"}, Stdin: job, Dir: dir})
		if err != nil {
			return rows, err
		}
		var vals []value
		for _, jb := range rep.Jobs {
			s := jb.Write
			if jb.Read.IOBytes > 0 {
				s = jb.Read
			}
			vals = append(vals, value{jb.Name + "_rate", "MiB/s", float64(s.BWBytes) / (1 << 20)})
		}
		rows = append(rows, rowsOf(j, env, params, vals)...)
	}
	return rows, nil
}

// grid is every combination of the variables' values, the first
// variable's changing slowest.
func grid(vars []Var) []map[string]string {
	points := []map[string]string{{}}
	for _, v := range vars {
		var next []map[string]string
		for _, p := range points {
			for _, val := range v.Values {
				q := maps.Clone(p)
				q[v.Name] = val
				next = append(next, q)
			}
		}
		points = next
	}
	return points
}

// varRE is a variable of a fio job file, as fio writes it.
var varRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// substitute replaces ${VAR} in a fio job file with vars' values, as fio
// does from its environment; a variable without a value is an error
// rather than fio's empty string.
func substitute(text string, vars map[string]string) (string, error) {
	var missing []string
	out := varRE.ReplaceAllStringFunc(text, func(m string) string {
		name := varRE.FindStringSubmatch(m)[1]
		v, ok := vars[name]
		if !ok && !slices.Contains(missing, name) {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("no value for %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// value is one metric a tool reported.
type value struct {
	metric, unit string
	v            float64
}

// rowsOf makes the job's rows: a row a value, or, where seeds give
// numbers for it, a row a seed, under the seed's name of the test.
func rowsOf(j Job, env Env, params map[string]string, vals []value) []bench.Row {
	var rows []bench.Row
	for _, val := range vals {
		base := bench.Row{Bench: string(j.Tool), Case: j.Name, Target: env.Target, Params: map[string]string{"job": j.Name},
			Metric: val.metric, Unit: val.unit, Value: val.v, Note: j.Differs}
		maps.Copy(base.Params, params)
		seeded := false
		for _, s := range j.Seeds {
			if !s.applies(env, val.metric, params) {
				continue
			}
			r := base
			r.Params = maps.Clone(base.Params)
			r.Case = s.Case
			r.Source(s.Ref, s.Value, s.Unit)
			rows = append(rows, r)
			seeded = true
		}
		if !seeded {
			rows = append(rows, base)
		}
	}
	return rows
}

// applies reports whether the seed stands beside a row of metric with
// params, on env's target in env's profile.
func (s Seed) applies(env Env, metric string, params map[string]string) bool {
	if s.Metric != metric || s.Profile != "" && s.Profile != env.Profile {
		return false
	}
	for k, v := range s.Where {
		got := params[k]
		if k == "target" {
			got = env.Target
		}
		if got != v {
			return false
		}
	}
	return true
}

// units writes a byte count as IOR takes it: 16m, 256k.
func units(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
