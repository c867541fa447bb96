package thesis

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/rsa-hpc/rsa/internal/bench"
)

// Place is a target a case runs on: its name for the rows, and a
// directory on it.
type Place struct {
	Name string
	Dir  string
}

// T53 is the thesis' Table 5.3: the job's ranks write one shared file,
// each its own contiguous segment (the thesis: MPI-IO on GPFS, 2,048 ranks
// of 1 MiB). The thesis has no RSA cell (MPI-IO on PVFS did not run on
// BG/L); ram fills it.
type T53 struct {
	Targets []Place
	Ranks   int
	Size    int64 // bytes of each rank's segment
	Block   int64 // bytes per write (default Size: one pwrite per rank, as MPI-IO's collective did)
	Runs    int
	// T52Output is T52's output time (s) by target, from the same
	// invocation, for the file-per-process ratio; nil without T52.
	T52Output map[string]float64
	Fio       bool // fio's shared-file write on each target, once, beside the rate
}

// Run runs T53 on each target Runs times and returns its rows.
func (t T53) Run(ctx context.Context) ([]bench.Row, error) {
	times := map[string][]float64{}
	check := map[string]float64{}
	for i := range max(t.Runs, 1) {
		// Targets interleaved, run by run.
		for _, p := range t.Targets {
			s, err := t.once(ctx, p.Dir, i)
			if err != nil {
				return nil, fmt.Errorf("T53 on %s, run %d: %w", p.Name, i+1, err)
			}
			times[p.Name] = append(times[p.Name], s)
		}
	}
	if t.Fio {
		for _, p := range t.Targets {
			v, err := t.fio(ctx, p.Dir)
			if err != nil {
				return nil, err
			}
			check[p.Name] = v
		}
	}
	return t.rows(times, check), nil
}

func (t T53) block() int64 {
	if t.Block > 0 {
		return t.Block
	}
	return t.Size
}

func (t T53) once(ctx context.Context, dir string, run int) (float64, error) {
	d, err := os.MkdirTemp(dir, fmt.Sprintf("t53-%d-", run))
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(d)
	o := Output{Dir: d, Ranks: t.Ranks, Size: t.Size, Block: t.block(), Shared: true}
	if err := cleanStart(ctx); err != nil {
		return 0, err
	}
	took, err := o.Write(ctx)
	if err != nil {
		return 0, err
	}
	if _, err := o.Check(d); err != nil {
		return 0, err
	}
	return took.Seconds(), nil
}

// fio writes the same shared file with fio: numjobs threads, each its
// own segment (offset_increment), fsync'd at the end; MiB/s.
func (t T53) fio(ctx context.Context, dir string) (float64, error) {
	d, err := os.MkdirTemp(dir, "t53-fio-")
	if err != nil {
		return 0, fmt.Errorf("T53 fio: %w", err)
	}
	defer os.RemoveAll(d)
	size := strconv.FormatInt(t.Size, 10)
	if err := cleanStart(ctx); err != nil {
		return 0, err
	}
	_, w, err := runFio(ctx, "--name=t53", "--filename="+d+"/shared", "--rw=write", "--bs="+strconv.FormatInt(t.block(), 10),
		"--size="+size, "--offset_increment="+size, "--numjobs="+strconv.Itoa(t.Ranks), "--thread", "--end_fsync=1", "--group_reporting")
	if err != nil {
		return 0, fmt.Errorf("T53 fio on %s: %w", dir, err)
	}
	return w.MiBps, nil
}

// rows turns the output times (s, by target) into rows; check is fio's
// MiB/s by target.
func (t T53) rows(times map[string][]float64, check map[string]float64) []bench.Row {
	params := map[string]string{"ranks": strconv.Itoa(t.Ranks), "size": strconv.FormatInt(t.Size, 10),
		"block": strconv.FormatInt(t.block(), 10), "layout": "one shared file, a segment a rank"}
	mib := float64(t.Ranks) * float64(t.Size) / (1 << 20)
	row := func(target, metric, unit string, runs []float64) bench.Row {
		return bench.Row{Bench: "thesis", Case: "T53", Target: target, Params: params, Metric: metric, Unit: unit,
			Value: bench.Median(runs), Runs: runs}
	}
	scale := func(runs []float64, f func(float64) float64) []float64 {
		v := make([]float64, 0, len(runs))
		for _, x := range runs {
			v = append(v, f(x))
		}
		return v
	}
	var rows []bench.Row
	for _, p := range t.Targets {
		runs := times[p.Name]
		out := row(p.Name, "output", "s", runs)
		out.Note = "the writers' release to the last close; each pwrites its segment and fsyncs; " + cleanStartNote
		rate := row(p.Name, "output_rate", "MiB/s", scale(runs, func(s float64) float64 { return mib / s }))
		switch p.Name {
		case "shared@1g":
			out.Source("THESIS T5.3 No RSA MPI-IO Mean", 49.93, "s")
			rate.Source("THESIS T5.3 (derived: 2 GiB / 49.93 s)", 41.0, "MiB/s")
		case "ram":
			out.Note = joinNote(out.Note, "the thesis has no RSA cell (MPI-IO on PVFS did not run on BG/L): this fills it")
		}
		if v, ok := check[p.Name]; ok {
			rate.CrossCheck("fio", v)
			rate.Note = "fio --offset_increment --thread --end_fsync=1 --group_reporting " + fioNoFallocate + ", once; " + fioGroupNote
		}
		rows = append(rows, out, rate)
		if fpp, ok := t.T52Output[p.Name]; ok {
			r := row(p.Name, "t52_over_t53", "x", scale(runs, func(s float64) float64 { return fpp / s }))
			r.Note = fmt.Sprintf("T52's file-per-process output time (%.3g s, this invocation) over the shared file's", fpp)
			if p.Name == "shared@1g" {
				r.Source("THESIS T5.2/T5.3 (derived: 1109.86 / 49.93)", 22.2, "x")
			}
			rows = append(rows, r)
		}
	}
	// The thesis' "35% slower than writing as file-per-process to the
	// RAMDISK": the shared file on shared@1g against T52 through RSA.
	if rsa, ok := t.T52Output["ram"]; ok && len(times["shared@1g"]) > 0 {
		r := row("shared@1g vs ram", "t53_over_t52_rsa", "x", scale(times["shared@1g"], func(s float64) float64 { return s / rsa }))
		r.Source("THESIS T5.3 (derived: 49.93 / 37; 1.39 against 35.87)", 1.35, "x")
		r.Note = "T53's shared file on shared@1g over T52's file-per-process output time on ram"
		rows = append(rows, r)
	}
	return rows
}

// T52Outputs picks from T52's rows its output time by target, from the
// run without added latency (the first run of each target otherwise),
// for T53.
func T52Outputs(rows []bench.Row) map[string]float64 {
	out := map[string]float64{}
	zero := map[string]bool{}
	for _, r := range rows {
		if r.Bench != "thesis" || r.Case != "T52" || r.Metric != "output" {
			continue
		}
		lat0 := r.Params["shared_latency"] == "0" || r.Params["shared_latency"] == "0s"
		if _, seen := out[r.Target]; !seen || lat0 && !zero[r.Target] {
			out[r.Target] = r.Value
			zero[r.Target] = lat0
		}
	}
	return out
}
