package thesis

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/rsa-hpc/rsa/internal/bench"
)

// T51 is the thesis' Table 5.1: one writer, one file, written straight to
// the shared file system, and written to RAM and then staged out to the
// shared file system. The thesis found both I/O-node bound (~50 MB/s) and
// RSA 13% faster; here nothing caps the writer but the link, so the gap
// is what RAM buys a single stream.
//
// T51 needs no daemon: the thesis' stage-out was rsync of the one file as
// the user, and RSA's mover is rsa copy; both are timed, as the user.
type T51 struct {
	RSA    string // the rsa binary, which the job's user can run
	Lab    string // the rsa-lab binary, which the job's user can run: the job's writes (bench write)
	User   string // the job's user (created, and removed after, if missing)
	Shared string // a directory on shared@1g
	RAM    string // a directory on ram
	Size   int64  // bytes of the one file (the thesis: 2 GiB)
	Block  int64  // bytes per write (the thesis: unstated; 1 MiB)
	Runs   int
	// Fio runs fio's single-stream write on each target, once, for the
	// output rates' cross-checks.
	Fio bool
}

// T51Result is one run's measurements, in seconds.
type T51Result struct {
	Direct   float64            // the writer's release to its close (fsync'd), on Shared
	RAM      float64            // the same, on RAM
	StageOut map[string]float64 // method → seconds, RAM → Shared, as the user
}

// Run runs T51 Runs times and returns its rows.
func (t T51) Run(ctx context.Context) ([]bench.Row, error) {
	cred, cleanupUser, err := ensureUser(t.User)
	if err != nil {
		return nil, err
	}
	defer cleanupUser()
	var rs []T51Result
	for i := range max(t.Runs, 1) {
		r, err := t.once(ctx, cred, i)
		if err != nil {
			return nil, fmt.Errorf("T51 run %d: %w", i+1, err)
		}
		rs = append(rs, r)
	}
	var check map[string]float64
	if t.Fio {
		check = map[string]float64{}
		for target, dir := range map[string]string{"shared@1g": t.Shared, "ram": t.RAM} {
			v, err := t.fio(ctx, dir)
			if err != nil {
				return nil, err
			}
			check[target] = v
		}
	}
	return t.rows(rs, check), nil
}

func (t T51) block() int64 { return cmp.Or(t.Block, 1<<20) }

func (t T51) once(ctx context.Context, cred *syscall.Credential, run int) (T51Result, error) {
	r := T51Result{StageOut: map[string]float64{}}
	base := filepath.Join(t.Shared, fmt.Sprintf("t51-%d-%d", os.Getpid(), run))
	src := filepath.Join(t.RAM, fmt.Sprintf("t51-src-%d-%d", os.Getpid(), run))
	defer os.RemoveAll(base)
	defer os.RemoveAll(src)
	dirs := map[string]string{"direct": filepath.Join(base, "direct"), "rsync": filepath.Join(base, "rsync"), "rsa copy": filepath.Join(base, "copy")}
	for _, dir := range append(mapValues(dirs), src) {
		if err := mkdirOwned(dir, cred); err != nil {
			return r, err
		}
	}
	out := Output{Ranks: 1, Size: t.Size, Block: t.block()}
	write := func(dir string) (float64, error) {
		if err := cleanStart(ctx); err != nil {
			return 0, err
		}
		stdout, err := runAs(ctx, cred, t.Lab, "bench", "write", "--dir", dir, "--ranks", "1",
			"--size", strconv.FormatInt(t.Size, 10), "--block", strconv.FormatInt(t.block(), 10), "--json")
		if err != nil {
			return 0, err
		}
		var w JobReport
		if err := json.Unmarshal(stdout, &w); err != nil {
			return 0, fmt.Errorf("the writer's report %q: %w", stdout, err)
		}
		if _, err := out.Check(dir); err != nil {
			return 0, err
		}
		return w.Output, nil
	}
	var err error
	if r.Direct, err = write(dirs["direct"]); err != nil {
		return r, fmt.Errorf("straight to shared@1g: %w", err)
	}
	if r.RAM, err = write(src); err != nil {
		return r, fmt.Errorf("to RAM: %w", err)
	}
	// The thesis' stage-out first, then RSA's.
	for _, m := range []string{"rsync", "rsa copy"} {
		argv := []string{"rsync", "-a", src + "/", dirs[m] + "/"}
		if m == "rsa copy" {
			argv = []string{t.RSA, "copy", src, dirs[m]}
		}
		if err := cleanStart(ctx); err != nil {
			return r, err
		}
		start := time.Now()
		if _, err := runAs(ctx, cred, argv...); err != nil {
			return r, fmt.Errorf("stage-out by %s: %w", m, err)
		}
		r.StageOut[m] = time.Since(start).Seconds()
		if _, err := out.Check(dirs[m]); err != nil {
			return r, fmt.Errorf("stage-out by %s: %w", m, err)
		}
	}
	return r, nil
}

// fio writes the same file with fio in a directory of its own under dir,
// and returns its rate in MiB/s.
func (t T51) fio(ctx context.Context, dir string) (float64, error) {
	d, err := os.MkdirTemp(dir, "t51-fio-")
	if err != nil {
		return 0, fmt.Errorf("T51 fio: %w", err)
	}
	defer os.RemoveAll(d)
	if err := cleanStart(ctx); err != nil {
		return 0, err
	}
	_, w, err := runFio(ctx, "--name=t51", "--rw=write", "--bs="+strconv.FormatInt(t.block(), 10),
		"--size="+strconv.FormatInt(t.Size, 10), "--numjobs=1", "--end_fsync=1", "--directory="+d)
	if err != nil {
		return 0, fmt.Errorf("T51 fio on %s: %w", dir, err)
	}
	return w.MiBps, nil
}

// rows turns runs into rows, the thesis beside; check holds fio's MiB/s
// by target (nil when fio did not run).
func (t T51) rows(rs []T51Result, check map[string]float64) []bench.Row {
	params := map[string]string{"size": strconv.FormatInt(t.Size, 10), "block": strconv.FormatInt(t.block(), 10), "writers": "1"}
	col := func(f func(T51Result) float64) []float64 {
		v := make([]float64, 0, len(rs))
		for _, r := range rs {
			v = append(v, f(r))
		}
		return v
	}
	mib := float64(t.Size) / (1 << 20)
	rate := func(f func(T51Result) float64) func(T51Result) float64 {
		return func(r T51Result) float64 { return mib / f(r) }
	}
	direct := func(r T51Result) float64 { return r.Direct }
	ram := func(r T51Result) float64 { return r.RAM }
	rsync := func(r T51Result) float64 { return r.StageOut["rsync"] }
	copyOut := func(r T51Result) float64 { return r.StageOut["rsa copy"] }
	row := func(target, metric, unit string, runs []float64, ref string, src float64, note string) bench.Row {
		r := bench.Row{Bench: "thesis", Case: "T51", Target: target, Params: params, Metric: metric, Unit: unit,
			Value: bench.Median(runs), Runs: runs, Note: note}
		if ref != "" {
			r.Source(ref, src, unit)
		}
		return r
	}
	const ramNote = "the thesis' RSA was PVFS on RAMDISKs behind its 1 GbE link and a BG/L I/O node (~50 MB/s); ram here is a local tmpfs"
	rows := []bench.Row{
		row("shared@1g", "output", "s", col(direct), "THESIS T5.1 No RSA Output Time Mean", 46.88, "the writer's release to its close, fsync'd; "+cleanStartNote),
		row("ram", "output", "s", col(ram), "THESIS T5.1 With RSA Output Time Mean", 41.30, ramNote),
		row("shared@1g", "output_rate", "MiB/s", col(rate(direct)), "THESIS T5.1 (derived: 2 GiB / 46.88 s)", 43.7, ""),
		row("ram", "output_rate", "MiB/s", col(rate(ram)), "THESIS T5.1 (derived: 2 GiB / 41.30 s)", 49.6, ""),
		row("ram vs shared@1g", "output_ratio", "x", col(func(r T51Result) float64 { return r.Direct / r.RAM }),
			"THESIS T5.1 (derived: 46.88 / 41.30; \"13% speedup\")", 1.135, "output time: shared / RAM"),
		row("ram -> shared@1g", "stage_out rsync", "s", col(rsync), "THESIS T5.1 With RSA Stage-Out Time Mean", 52, "rsync -a of the one file, as the user (the thesis' default stage-out)"),
		row("ram -> shared@1g", "stage_out rsa copy", "s", col(copyOut), "", 0, "RSA's mover, as the user"),
		row("ram -> shared@1g", "stage_out_rate rsync", "MiB/s", col(rate(rsync)), "THESIS T5.1 (derived: 2 GiB / 52 s)", 39.4, ""),
		row("ram -> shared@1g", "stage_out_rate rsa copy", "MiB/s", col(rate(copyOut)), "", 0, ""),
		row("ram -> shared@1g", "safe", "s", col(func(r T51Result) float64 { return r.RAM + r.StageOut["rsync"] }),
			"THESIS T5.1 (derived: 41.30 + 52)", 93.3, "output to RAM, then the rsync stage-out: until the file is on the shared file system"),
	}
	for i, target := range []string{"shared@1g", "ram"} {
		if v, ok := check[target]; ok {
			r := &rows[2+i]
			r.CrossCheck("fio", v)
			r.Note = joinNote(r.Note, "fio --rw=write --numjobs=1 --end_fsync=1 "+fioNoFallocate+", same size and block, once")
		}
	}
	return rows
}
