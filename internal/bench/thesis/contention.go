package thesis

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rsa-hpc/rsa/internal/bench"
	"github.com/rsa-hpc/rsa/internal/bench/contention"
)

// ClusterContention is the thesis' mechanism (the evidence review's E4):
// T52's writers spread over K compute hosts of the emulated cluster, into
// one directory of shared@1g whose creates cost what contention.Model
// says (the brick's shim: serialised per directory, dearer the more
// client hosts contend), against RSA's stage-out by one mover, which
// creates one file at a time from one host, and the two competitors a
// user has without RSA: the job writing one aggregated file (a segment
// per rank), and the job writing to its hosts' own tmpfs and packing it
// into one tar file per host on shared@1g inside its allocation.
//
// Every cell is a real Slurm batch job of -N K (srun starts one writer per
// host, each its share of the ranks); each job's hold is from the first
// writer's start to the last host's end of work, durable (every file
// fsync'd; the tar files too).
type ClusterContention struct {
	// Cluster holds the emulated cluster's settings and binaries; its
	// Ranks, Size, Runs, Output and Latencies are not used.
	Cluster ClusterT52
	Hosts   []int // K: how many compute hosts the writers spread over, each cell at each
	Ranks   int   // writers in all, split evenly over the K hosts
	Size    int64 // bytes each writes
	Runs    int   // each K's cells this many times (1 when 0)
	Model   contention.Model
	// Begin starts a new count of shared@1g's creates (a new generation of
	// the shim's counters); Stats reads it.
	Begin func(context.Context) error
	Stats func() (contention.Stats, error)
	// LinkBps is shared@1g's link as iperf3 measured it before the run
	// (bits/s), for the model's predictions (0: none).
	LinkBps float64
}

// contentionCell is one way of writing the job's output.
type contentionCell struct {
	name   string // the row's target
	note   string
	rsa    bool // through RSA: #RSA lines, the writers wait for the RAMDISK
	shared bool // one aggregated file
	tar    bool // node-local tmpfs, then a tar per host onto shared@1g
}

var contentionCells = []contentionCell{
	{name: "shared@1g", note: "file per rank, straight to the contended shared file system"},
	{name: "shared@1g aggregate", shared: true, note: "one shared file, a segment per rank (T53's layout)"},
	{name: "tmpfs+tar", tar: true, note: "file per rank into each host's own tmpfs, then one tar per host onto shared@1g, fsync'd, inside the job"},
	{name: "ram@1g", rsa: true, note: "file per rank into RSA's RAMDISK on the RSA hosts; RSA's mover stages it out after the job"},
}

// Run brings the cluster up with max(Hosts) compute hosts, runs every cell
// at each K (Runs times, the cells in a new random order each run), takes
// the cluster down and returns the rows.
func (t ClusterContention) Run(ctx context.Context) (rows []bench.Row, err error) {
	c := t.Cluster
	if len(t.Hosts) == 0 || slices.Min(t.Hosts) < 1 || slices.Max(t.Hosts) > 9 {
		return nil, fmt.Errorf("hosts %v: give compute host counts of 1 to 9", t.Hosts)
	}
	for _, k := range t.Hosts {
		if t.Ranks%k != 0 {
			return nil, fmt.Errorf("%d ranks do not split evenly over %d hosts: give ranks a multiple of every host count", t.Ranks, k)
		}
	}
	kmax := slices.Max(t.Hosts)
	s, closeCluster, err := c.open(ctx, kmax, int64(t.Ranks)*t.Size, c.Rate)
	defer func() {
		if cerr := closeCluster(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err != nil {
		return nil, err
	}
	cred, script := s.cred, s.script
	cal := Calibration{LinkBps: t.LinkBps}
	if cal.Create, err = measureCreate(c.localShared(), calibrationCreates); err != nil {
		return nil, fmt.Errorf("E4's calibration: timing creates on shared@1g: %w", err)
	}
	for _, k := range t.Hosts {
		rows = append(rows, t.predictions(k, cal)...)
		// Each run's rows in the cells' order, then its ratios: a ratio is
		// of jobs of the same run, which ran beside each other.
		var runs [][]bench.Row
		for run := range max(t.Runs, 1) {
			order := slices.Clone(contentionCells)
			shuffle(order, int64(k*1000+run))
			byCell := map[string][]bench.Row{}
			for _, cell := range order {
				r, err := t.once(ctx, cred, script, k, cell)
				if err != nil {
					return nil, fmt.Errorf("E4, %d hosts, %s, run %d: %w", k, cell.name, run+1, err)
				}
				byCell[cell.name] = r
			}
			var these []bench.Row
			for _, cell := range contentionCells {
				these = append(these, byCell[cell.name]...)
			}
			runs = append(runs, append(these, contentionRatios(these, k)...))
		}
		rows = append(rows, medians(runs)...)
	}
	return rows, nil
}

// shuffle puts cells in an order drawn from seed (a linear congruential
// sequence: reproducible from the row's params, and no shared source of
// randomness).
func shuffle[T any](cells []T, seed int64) {
	x := uint64(seed)*6364136223846793005 + 1442695040888963407
	for i := len(cells) - 1; i > 0; i-- {
		x = x*6364136223846793005 + 1442695040888963407
		j := int((x >> 33) % uint64(i+1))
		cells[i], cells[j] = cells[j], cells[i]
	}
}

// once runs one cell at k hosts and returns its rows: hold (and, through
// RSA, safe), with the shared file system's creates during the job (and,
// through RSA, its stage-out) and how many contended for the directory.
func (t ClusterContention) once(ctx context.Context, cred *syscall.Credential, script func(time.Duration, ...string) (string, error), k int, cell contentionCell) ([]bench.Row, error) {
	c := t.Cluster
	slug := strings.NewReplacer("@", "", " ", "-", "+", "-").Replace(cell.name)
	work := filepath.Join(c.SharedPath, fmt.Sprintf("e4-%d-%d-%s", os.Getpid(), k, slug))
	local := filepath.Join(c.Dir, "bench", fmt.Sprintf("e4-%d-%s", k, slug))
	if err := mkdirOwned(local, cred); err != nil {
		return nil, err
	}
	if _, err := script(time.Minute, "cluster-up", "exec", "c1", "setpriv", "--reuid", strconv.Itoa(int(cred.Uid)), "--regid", strconv.Itoa(int(cred.Gid)),
		"--clear-groups", "mkdir", "-p", work); err != nil {
		return nil, err
	}
	per := t.Ranks / k
	writer := fmt.Sprintf("%s bench write --ranks %d --first-rank $((SLURM_NODEID*%d)) --size %d --json", c.Lab, per, per, t.Size)
	var body, head string
	switch {
	case cell.rsa:
		capacity := int64(t.Ranks)*t.Size*5/4>>20 + 64
		head = fmt.Sprintf("#RSA capacity=%dM pool=rsa\n#RSA_DATA_OUT=%s\n#RSA_DELAY=0\n", capacity, work)
		body = fmt.Sprintf("%s --dir %s --wait-mount > %s/w-$SLURM_NODEID.json", writer, work, local)
	case cell.shared:
		body = fmt.Sprintf("%s --shared --dir %s > %s/w-$SLURM_NODEID.json", writer, work, local)
	case cell.tar:
		// The tar file is fsync'd (sync FILE) as the writers' files are.
		body = fmt.Sprintf(`d=$(mktemp -d /dev/shm/rsa-e4.XXXXXX) && %[1]s --dir "$d" > %[2]s/w-$SLURM_NODEID.json && tar cf %[3]s/node-$SLURM_NODEID.tar -C "$d" . && sync %[3]s/node-$SLURM_NODEID.tar && date +%%s%%N > %[2]s/end-$SLURM_NODEID; s=$?; rm -rf "$d"; exit $s`,
			writer, local, work)
	default:
		body = fmt.Sprintf("%s --dir %s > %s/w-$SLURM_NODEID.json", writer, work, local)
	}
	job := fmt.Sprintf("#!/bin/bash\n#SBATCH -N %[1]d\n#SBATCH -o %[2]s/job.out\n%[3]ssrun -N %[1]d --ntasks-per-node=1 bash -c '%[4]s'\n", k, local, head, body)
	if err := t.Begin(ctx); err != nil {
		return nil, err
	}
	// The direct cells' creates cost up to Local+Revoke each, one at a
	// time: the bound below is that, doubled, plus the data's time.
	bound := 2*time.Duration(t.Ranks)*(t.Model.Local+t.Model.Revoke) + 15*time.Minute
	id, err := c.sbatch(ctx, cred, c.slurmConf(), filepath.Join(local, "job.sh"), job)
	if err != nil {
		return nil, err
	}
	if err := c.waitSlurm(ctx, c.slurmConf(), id, bound); err != nil {
		// The job's output goes with the cluster: what it said, now.
		out, _ := os.ReadFile(filepath.Join(local, "job.out"))
		return nil, fmt.Errorf("job %s: %w: %s", id, err, jobWhy(string(out)))
	}
	start, end, err := spanOf(local, k, cell.tar)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", id, err)
	}
	jobStats, err := t.Stats()
	if err != nil {
		return nil, err
	}
	var safe, verified float64
	if cell.rsa {
		// Under burst_buffer/lua Slurm calls the job COMPLETED after its
		// stage-out (data_out): the counts above are the stage-out's
		// creates (the job's own went to the RAMDISK).
		if err := c.waitReleased(ctx, id, bound); err != nil {
			return nil, fmt.Errorf("RSA job %s: %w", id, err)
		}
		safe = float64(time.Now().UnixNano()-start) / 1e9
		l, err := c.rsaLog(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("RSA job %s: %w", id, err)
		}
		at, err := l.verifiedAt()
		if err != nil {
			return nil, fmt.Errorf("RSA job %s: %w", id, err)
		}
		verified = float64(at.UnixNano()-start) / 1e9
	}
	if err := t.check(work, k, cell); err != nil {
		return nil, fmt.Errorf("job %s: %w", id, err)
	}
	os.RemoveAll(filepath.Join(c.localShared(), filepath.Base(work)))
	os.RemoveAll(local)

	params := map[string]string{"hosts": strconv.Itoa(k), "ranks": strconv.Itoa(t.Ranks), "size": strconv.FormatInt(t.Size, 10),
		"local": t.Model.Local.String(), "revoke": t.Model.Revoke.String(), "layout": "one directory", "via": "Slurm, emulated cluster"}
	row := func(metric, unit string, v float64, st contention.Stats, ref string, src float64, note string) bench.Row {
		p := withParams(params, "creates", strconv.FormatInt(st.Creates, 10), "mean_contenders", strconv.FormatFloat(st.MeanInflight(), 'f', 2, 64))
		r := bench.Row{Bench: "contention", Case: "E4", Target: cell.name, Params: p, Metric: metric, Unit: unit, Value: v, Runs: []float64{v}, Note: note}
		if ref != "" {
			r.Source(ref, src, unit)
		}
		return r
	}
	hold := float64(end-start) / 1e9
	switch {
	case cell.rsa:
		return []bench.Row{
			row("hold", "s", hold, jobStats, "THESIS T5.2 RSA default Output Mean", 35.87, cell.note+"; its creates are the stage-out's"),
			row("verified", "s", verified, jobStats, "", 0, "the first writer's start until RSA's DONE_STAGING_OUT: output staged out (each file fsync'd, rsa copy --durable) and verified on shared@1g"),
			row("safe", "s", safe, jobStats, "THESIS T5.2 (derived: 35.87 + 224)", 260, "the first writer's start until RSA released the job: output verified on shared@1g, RAMDISK gone; its creates are the stage-out's"),
		}, nil
	case cell.name == "shared@1g":
		return []bench.Row{row("hold", "s", hold, jobStats, "THESIS T5.2 No RSA Output Mean", 1109.86, cell.note)}, nil
	case cell.shared:
		return []bench.Row{row("hold", "s", hold, jobStats, "THESIS T5.3 No RSA MPI-IO Mean", 49.93, cell.note)}, nil
	default:
		return []bench.Row{row("hold", "s", hold, jobStats, "", 0, cell.note)}, nil
	}
}

// withParams is a copy of m with the key-value pairs kv added, m
// unchanged.
func withParams(m map[string]string, kv ...string) map[string]string {
	out := make(map[string]string, len(m)+len(kv)/2)
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// spanOf is the span of a job's work over its k hosts, from the writers'
// reports in local (and, for the tar cell, each host's end stamp): the
// first start and the last end, in Unix nanoseconds.
func spanOf(local string, k int, tar bool) (start, end int64, err error) {
	for i := range k {
		w, err := readWriter(filepath.Join(local, fmt.Sprintf("w-%d.json", i)))
		if err != nil {
			return 0, 0, fmt.Errorf("host %d's writer: %w", i, err)
		}
		e := w.End
		if tar {
			b, err := os.ReadFile(filepath.Join(local, fmt.Sprintf("end-%d", i)))
			if err != nil {
				return 0, 0, fmt.Errorf("host %d's tar: %w", i, err)
			}
			if e, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err != nil {
				return 0, 0, fmt.Errorf("host %d's tar end stamp: %w", i, err)
			}
		}
		if start == 0 || w.Start < start {
			start = w.Start
		}
		end = max(end, e)
	}
	if end <= start {
		return 0, 0, fmt.Errorf("no time between the first start and the last end")
	}
	return start, end, nil
}

// check verifies the cell's output on shared@1g through this host's own
// mount: every rank's file, the aggregated file, or a tar file per host
// of at least the data.
func (t ClusterContention) check(work string, k int, cell contentionCell) error {
	dir := filepath.Join(t.Cluster.localShared(), filepath.Base(work))
	if !cell.tar {
		_, err := (Output{Ranks: t.Ranks, Size: t.Size, Shared: cell.shared}).Check(dir)
		return err
	}
	for i := range k {
		st, err := os.Stat(filepath.Join(dir, fmt.Sprintf("node-%d.tar", i)))
		if err != nil {
			return fmt.Errorf("output check: %w", err)
		}
		if want := int64(t.Ranks/k) * t.Size; st.Size() < want {
			return fmt.Errorf("output check: node-%d.tar is %d bytes, below the %d its host wrote", i, st.Size(), want)
		}
	}
	return nil
}

// contentionRatios are k hosts' ratios from the medians in rows: the
// direct job's hold over RSA's hold and over its time to safe output, and
// each competitor's hold over RSA's.
func contentionRatios(rows []bench.Row, k int) []bench.Row {
	val := func(target, metric string) (bench.Row, bool) {
		for _, r := range rows {
			if r.Case == "E4" && r.Target == target && r.Metric == metric && r.Params["hosts"] == strconv.Itoa(k) {
				return r, true
			}
		}
		return bench.Row{}, false
	}
	rsaHold, ok1 := val("ram@1g", "hold")
	rsaSafe, ok2 := val("ram@1g", "safe")
	if !ok1 || !ok2 || rsaHold.Value <= 0 || rsaSafe.Value <= 0 {
		return nil
	}
	var out []bench.Row
	add := func(target, metric string, num bench.Row, den float64, ref string, src float64, note string) {
		r := bench.Row{Bench: "contention", Case: "E4", Target: target, Params: maps.Clone(num.Params), Metric: metric, Unit: "x", Value: num.Value / den, Note: note}
		delete(r.Params, "creates")
		delete(r.Params, "mean_contenders")
		r.Runs = []float64{r.Value}
		if ref != "" {
			r.Source(ref, src, "x")
		}
		out = append(out, r)
	}
	if d, ok := val("shared@1g", "hold"); ok {
		add("ram@1g vs shared@1g", "hold_ratio", d, rsaHold.Value, "THESIS T5.2 (derived)", 30.9, "compute-hold ratio: direct / RSA")
		add("ram@1g vs shared@1g", "safe_ratio", d, rsaSafe.Value, "THESIS T5.2 (derived: 1109.86 / 260)", 4.3, "time to safe output: direct / RSA")
	}
	if a, ok := val("shared@1g aggregate", "hold"); ok {
		add("ram@1g vs shared@1g aggregate", "hold_ratio", a, rsaHold.Value, "", 0, "compute-hold ratio: one aggregated file / RSA (above 1: RSA holds the nodes less)")
	}
	if tt, ok := val("tmpfs+tar", "hold"); ok {
		add("ram@1g vs tmpfs+tar", "hold_ratio", tt, rsaHold.Value, "", 0, "compute-hold ratio: node-local tmpfs and tar in the job / RSA")
	}
	return out
}
