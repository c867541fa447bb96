package thesis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rsa-hpc/rsa/internal/bench"
	"github.com/rsa-hpc/rsa/internal/bench/crosscheck"
	"github.com/rsa-hpc/rsa/internal/mount"
)

// T54 is the thesis' Table 5.4, IOR's file-per-process test: Ranks files
// of Block bytes in Transfer-sized calls, written (fsync'd) then read,
// Iterations times, the caches dropped between write and read, with the
// open (create) phase timed apart. The thesis' text says 1 MB a process,
// but its times and rates give 20 GiB a pass: 10 MiB a process
// (seed-experiments §1.5), which the full profile uses.
type T54 struct {
	Targets    []Place
	Ranks      int
	Block      int64
	Transfer   int64
	Iterations int
	// IOR is the prefix scripts/build-ior.sh printed; IOR is the
	// cross-check when it is built there, fio otherwise.
	IOR string
	// Fio runs fio's write then read of the same layout when IOR does not
	// run, once a target.
	Fio bool
	// Cold drops the caches between a write and its read (root): sync,
	// then 3 to /proc/sys/vm/drop_caches; on a Gluster target the read
	// goes through a fresh client mount as well, since the client process
	// caches what the kernel's drop does not reach.
	Cold bool
}

// T54Result is one iteration on one target.
type T54Result struct {
	Write, Read PhaseTimes
}

// t54Volume is what one pass of the thesis moved: 2,048 ranks × 10 MiB.
const t54Volume = 2048 * 10 << 20

// Run runs T54 and returns its rows.
func (t T54) Run(ctx context.Context) ([]bench.Row, error) {
	res := map[string][]T54Result{}
	for i := range max(t.Iterations, 1) {
		for _, p := range t.Targets {
			r, err := t.once(ctx, p.Dir)
			if err != nil {
				return nil, fmt.Errorf("T54 on %s, iteration %d: %w", p.Name, i+1, err)
			}
			res[p.Name] = append(res[p.Name], r)
		}
	}
	checks := map[string]t54Check{}
	for _, p := range t.Targets {
		c, err := t.crossCheck(ctx, p.Dir)
		if err != nil {
			return nil, fmt.Errorf("T54 cross-check on %s: %w", p.Name, err)
		}
		checks[p.Name] = c
	}
	return t.rows(res, checks), nil
}

func (t T54) layout(dir string) FilePerProcess {
	return FilePerProcess{Dir: dir, Ranks: t.Ranks, Block: t.Block, Transfer: t.Transfer}
}

func (t T54) once(ctx context.Context, dir string) (T54Result, error) {
	var r T54Result
	d, err := os.MkdirTemp(dir, "t54-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(d)
	l := t.layout(d)
	if err := cleanStart(ctx); err != nil {
		return r, err
	}
	if r.Write, err = l.Write(ctx); err != nil {
		return r, fmt.Errorf("write: %w", err)
	}
	readDir, done, err := t.coldRead(ctx, d)
	if err != nil {
		return r, err
	}
	defer done()
	if r.Read, err = l.Read(ctx, readDir); err != nil {
		return r, fmt.Errorf("read: %w", err)
	}
	return r, nil
}

// coldRead drops the caches, when Cold, and returns where to read dir
// from: through a fresh client when dir is on Gluster, and a func that
// unmounts it.
func (t T54) coldRead(ctx context.Context, dir string) (string, func(), error) {
	noop := func() {}
	if !t.Cold {
		return dir, noop, nil
	}
	if err := dropCaches(ctx); err != nil {
		return "", noop, err
	}
	return freshClient(ctx, dir)
}

// cleanStart drops the caches (dropCaches) before a timed write, so
// that every write, ours or a cross-check's, starts from the same memory:
// none of it held by the page cache of what an earlier write left. On a
// virtual machine whose host takes back the memory the guest frees
// (free page reporting), memory not touched lately costs a fault in the
// host on first touch: a tmpfs write after a cached one ran 5-8x slower
// than with the caches dropped (docs/performance.md, "Measurements behind
// choices in the code").
func cleanStart(ctx context.Context) error {
	if err := dropCaches(ctx); err != nil {
		return fmt.Errorf("before a timed write: %w", err)
	}
	return nil
}

// cleanStartNote says in a row's note that its write began clean.
const cleanStartNote = "the page cache dropped before it, as before every timed write (ours and fio's)"

// dropCaches writes back dirty pages and drops the page, dentry and
// inode caches: the read that follows comes from the storage.
func dropCaches(ctx context.Context) error {
	if err := exec.CommandContext(ctx, "sync").Run(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0); err != nil {
		return fmt.Errorf("drop caches: %w", err)
	}
	return nil
}

// freshClient mounts the Gluster volume dir is on once more, at a
// directory of its own, and returns dir's path through it: a client
// process with empty caches, as a read from another compute node would
// have. For a directory not on Gluster it returns dir.
func freshClient(ctx context.Context, dir string) (string, func(), error) {
	noop := func() {}
	m, err := mountOf(dir)
	if err != nil || m.FSType != "fuse.glusterfs" {
		return dir, noop, err
	}
	rel, err := filepath.Rel(m.Point, dir)
	if err != nil {
		return "", noop, err
	}
	at, err := os.MkdirTemp("/run", "rsab-t54-client-")
	if err != nil {
		return "", noop, err
	}
	if out, err := exec.CommandContext(ctx, "mount", "-t", "glusterfs", m.Source, at).CombinedOutput(); err != nil {
		os.Remove(at)
		return "", noop, fmt.Errorf("a fresh client of %s: mount: %w: %s", m.Source, err, strings.TrimSpace(string(out)))
	}
	return filepath.Join(at, rel), func() {
		if exec.Command("umount", at).Run() != nil {
			_ = exec.Command("umount", "-l", at).Run()
		}
		os.Remove(at)
	}, nil
}

// mountOf returns the mount dir is on: the longest mount point that
// holds it (the top one, when mounts are stacked).
func mountOf(dir string) (mount.Info, error) {
	ms, err := mount.List()
	if err != nil {
		return mount.Info{}, err
	}
	return mountHolding(ms, dir)
}

func mountHolding(ms []mount.Info, dir string) (mount.Info, error) {
	var best mount.Info
	for _, m := range ms {
		if m.Point == "" || dir != m.Point && !strings.HasPrefix(dir, strings.TrimSuffix(m.Point, "/")+"/") || len(m.Point) < len(best.Point) {
			continue
		}
		best = m
	}
	if best.Point == "" {
		return best, fmt.Errorf("no mount holds %s", dir)
	}
	return best, nil
}

// t54Check is a cross-check's write and read rates, or why there are none.
type t54Check struct {
	tool        string
	write, read float64
	note        string
}

// crossCheck runs IOR with the same layout when it is built, fio's write
// then read otherwise (when Fio), the caches dropped between as for T54.
func (t T54) crossCheck(ctx context.Context, dir string) (t54Check, error) {
	d, err := os.MkdirTemp(dir, "t54-check-")
	if err != nil {
		return t54Check{}, err
	}
	defer os.RemoveAll(d)
	c, err := t.iorCheck(ctx, d)
	switch {
	case err == nil:
		return c, nil
	case ctx.Err() != nil:
		return t54Check{}, ctx.Err()
	case !errors.Is(err, crosscheck.ErrNotBuilt):
		return t54Check{}, err
	}
	note := "IOR not built (scripts/build-ior.sh, then --ior PREFIX)"
	if t.IOR == "" {
		// make evidence leaves IOR out of T54 on purpose (scripts/evidence.sh).
		note = "IOR not run (no --ior: IOR starts an MPI process a rank, " + strconv.Itoa(t.Ranks) + " here)"
	}
	if !t.Fio {
		return t54Check{note: note}, nil
	}
	base := []string{"--name=t54", "--directory=" + d, "--bs=" + strconv.FormatInt(t.layout("").transfer(), 10), "--size=" + strconv.FormatInt(t.Block, 10),
		"--numjobs=" + strconv.Itoa(t.Ranks), "--thread", "--group_reporting"}
	if err := cleanStart(ctx); err != nil {
		return t54Check{}, err
	}
	_, w, err := runFio(ctx, append(base, "--rw=write", "--end_fsync=1")...)
	if err != nil {
		return t54Check{}, err
	}
	readDir, done, err := t.coldRead(ctx, d)
	if err != nil {
		return t54Check{}, err
	}
	defer done()
	base[1] = "--directory=" + readDir
	r, _, err := runFio(ctx, append(base, "--rw=read")...)
	if err != nil {
		return t54Check{}, err
	}
	return t54Check{tool: "fio", write: w.MiBps, read: r.MiBps,
		note: note + "; fio write (--end_fsync=1 " + fioNoFallocate + ") then read, --numjobs --thread, the caches dropped between as for T54, once; " + fioGroupNote}, nil
}

// iorCheck runs IOR as T54 runs: each iteration a write of its own (-w
// -k, fsync'd), started clean, then the caches dropped (and on Gluster a
// fresh client) and a read of its own (-r), so that IOR's reads come from
// the storage as T54's do rather than from the page cache its write
// filled. Its rates are the iterations' medians, as T54's own.
func (t T54) iorCheck(ctx context.Context, d string) (t54Check, error) {
	common := []string{"-a", "POSIX", "-F", "-t", strconv.FormatInt(t.layout("").transfer(), 10), "-b", strconv.FormatInt(t.Block, 10), "-i", "1"}
	run := func(dir string, op ...string) (*crosscheck.IORResult, error) {
		at, done, err := crosscheck.NoAt(dir)
		if err != nil {
			return nil, err
		}
		defer done()
		args := append(append(slices.Clone(common), op...), "-o", filepath.Join(at, "testFile"))
		return crosscheck.RunIOR(ctx, t.IOR, t.Ranks, args...)
	}
	var (
		writes, reads []float64
		version       string
	)
	for range max(t.Iterations, 1) {
		if err := cleanStart(ctx); err != nil {
			return t54Check{}, err
		}
		w, err := run(d, "-w", "-e", "-k")
		if err != nil {
			return t54Check{}, err
		}
		readDir, done, err := t.coldRead(ctx, d)
		if err != nil {
			return t54Check{}, err
		}
		r, err := run(readDir, "-r")
		done()
		if err != nil {
			return t54Check{}, err
		}
		version = w.Version
		wr, ok := iorOp(w, "write")
		if !ok {
			return t54Check{}, errors.New("IOR reported no write rate")
		}
		rd, ok := iorOp(r, "read")
		if !ok {
			return t54Check{}, errors.New("IOR reported no read rate")
		}
		writes, reads = append(writes, wr), append(reads, rd)
	}
	return t54Check{tool: "IOR " + version, write: bench.Median(writes), read: bench.Median(reads),
		note: fmt.Sprintf("IOR %s, each of %d iterations a write (-w -e -k) started clean, then the caches dropped as for T54, then a read (-r); its rates count open and close",
			strings.Join(common[:len(common)-2], " "), max(t.Iterations, 1))}, nil
}

// iorOp is the mean MiB/s of op in IOR's first test, if it reported one.
func iorOp(res *crosscheck.IORResult, op string) (float64, bool) {
	if len(res.Tests) == 0 {
		return 0, false
	}
	o, ok := res.Tests[0].Op(op)
	return o.MeanMiBps, ok
}

// rows turns iterations (by target) into rows, each target beside its
// column of the thesis: ram beside RSA, shared@1g beside GPFS.
func (t T54) rows(res map[string][]T54Result, checks map[string]t54Check) []bench.Row {
	params := map[string]string{"ranks": strconv.Itoa(t.Ranks), "block": strconv.FormatInt(t.Block, 10),
		"transfer": strconv.FormatInt(t.layout("").transfer(), 10), "iterations": strconv.Itoa(max(t.Iterations, 1)),
		"layout": "file per process", "cold": strconv.FormatBool(t.Cold)}
	mib := float64(t.Ranks) * float64(t.Block) / (1 << 20)
	col := func(rs []T54Result, f func(T54Result) float64) []float64 {
		v := make([]float64, 0, len(rs))
		for _, r := range rs {
			v = append(v, f(r))
		}
		return v
	}
	write := func(r T54Result) float64 { return r.Write.Total().Seconds() }
	open := func(r T54Result) float64 { return r.Write.Open.Seconds() }
	read := func(r T54Result) float64 { return r.Read.Total().Seconds() }
	withOpen := func(r T54Result) float64 { return write(r) + open(r) }
	writeRate := func(r T54Result) float64 { return mib / write(r) }
	readRate := func(r T54Result) float64 { return mib / read(r) }
	// The thesis' columns. Its times hold for its volume (20 GiB a pass)
	// and its open for its 2,048 ranks; its rates stand beside any.
	type column struct {
		name                               string
		write, open, read, wRate, rRate, w float64
	}
	columns := map[string]column{
		"ram":       {"RSA", 204.16, 0.43, 187.48, 100.31, 109.24, 204.16 + 0.43},
		"shared@1g": {"GPFS", 573.28, 83.27, 289.12, 36.18, 70.89, 573.28 + 83.27},
	}
	sameVolume := int64(t.Ranks)*t.Block == t54Volume
	var rows []bench.Row
	for _, p := range t.Targets {
		rs := res[p.Name]
		c, thesis := columns[p.Name]
		add := func(metric, unit string, f func(T54Result) float64, src float64, withSrc bool, note string) int {
			r := bench.Row{Bench: "thesis", Case: "T54", Target: p.Name, Params: params, Metric: metric, Unit: unit,
				Value: bench.Median(col(rs, f)), Runs: col(rs, f), Note: note}
			if thesis && withSrc {
				r.Source("THESIS T5.4 "+c.name+" "+metric, src, unit)
			}
			rows = append(rows, r)
			return len(rows) - 1
		}
		timeNote := ""
		if thesis && !sameVolume {
			timeNote = "the thesis' times are for 20 GiB a pass (2,048 × 10 MiB): set beside its rates instead"
		}
		add("open", "s", open, c.open, t.Ranks == 2048, "every rank's create, barrier to barrier (IOR's File Open Delay)")
		add("write", "s", write, c.write, sameVolume, joinNote("the writes, fsync and close, barrier to barrier; the open apart; "+cleanStartNote, timeNote))
		add("read", "s", read, c.read, sameVolume, joinNote("the reads and close, barrier to barrier; the open apart", timeNote))
		add("read_open", "s", func(r T54Result) float64 { return r.Read.Open.Seconds() }, 0, false, "every rank's open for the read")
		add("write_with_open", "s", withOpen, c.w, sameVolume, "")
		wi := add("write_rate", "MiB/s", writeRate, c.wRate, true, "")
		ri := add("read_rate", "MiB/s", readRate, c.rRate, true, "")
		wr, rr := &rows[wi], &rows[ri]
		if p.Name == "ram" {
			wr.Note = "the thesis' RSA was PVFS on RAMDISKs behind one 1 GbE link (iperf 943 Mbit/s); ram here is a local tmpfs, no link"
		}
		if ch, ok := checks[p.Name]; ok {
			if ch.tool != "" {
				wr.CrossCheck(ch.tool, ch.write)
				rr.CrossCheck(ch.tool, ch.read)
			}
			wr.Note = joinNote(wr.Note, ch.note)
			rr.Note = joinNote(rr.Note, ch.note)
		}
	}
	// RSA against GPFS, iteration by iteration: ram over shared@1g.
	ram, shared := res["ram"], res["shared@1g"]
	if len(ram) > 0 && len(ram) == len(shared) {
		ratio := func(metric string, f func(T54Result) float64, src float64, ref string, note string) {
			v := make([]float64, len(ram))
			for i := range ram {
				v[i] = f(ram[i]) / f(shared[i])
			}
			r := bench.Row{Bench: "thesis", Case: "T54", Target: "ram vs shared@1g", Params: params, Metric: metric, Unit: "x",
				Value: bench.Median(v), Runs: v, Note: note}
			r.Source(ref, src, "x")
			rows = append(rows, r)
		}
		inv := func(f func(T54Result) float64) func(T54Result) float64 {
			return func(r T54Result) float64 { return 1 / f(r) }
		}
		ratio("write_rate_ratio", writeRate, 2.77, "THESIS T5.4 (derived: 100.31 / 36.18)", "write rate: RAM / shared")
		ratio("read_rate_ratio", readRate, 1.54, "THESIS T5.4 (derived: 109.24 / 70.89)", "read rate: RAM / shared")
		ratio("with_open_ratio", inv(withOpen), 3.21, "THESIS T5.4 (derived: (573.28 + 83.27) / (204.16 + 0.43))", "write time with the open: shared / RAM")
		ratio("open_ratio", inv(open), 194, "THESIS T5.4 (derived: 83.27 / 0.43)", "open phase: shared / RAM")
	}
	return rows
}
