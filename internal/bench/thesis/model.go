package thesis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rsa-hpc/rsa/internal/bench"
)

// ClusterModel is E2's calibration: micro-benchmarks on the emulated
// cluster E1 runs on (one compute host behind a link of each of Rates,
// two RSA hosts, shared@1g behind its own 1 Gbit/s link), from which the
// two-term model and the simulator predict E1's cells. None of them runs
// T52's job or is fitted to its times: bandwidth comes from IOR writing 16
// files of 32 MiB, creates from mdtest making files of 4 KiB, the
// stage-out's cost per file and fixed cost from two mdtest jobs of such
// files and its rate from IOR's 32 MiB files, each straight to shared@1g
// and through RSA as real Slurm jobs, every file fsync'd.
type ClusterModel struct {
	// Cluster holds the emulated cluster's settings and binaries; its
	// Rate, Ranks, Size, Runs, Output and Latencies are not used.
	Cluster ClusterT52
	IOR     string      // IOR's and mdtest's prefix, as scripts/build-ior.sh prints it
	Rates   []string    // the compute host's link rates to calibrate at (tbf rates: 500mbit, 1gbit)
	Cells   []ModelCell // the E1 cells to predict, each from the calibration at its rate
	Runs    int         // each rate's micro-benchmarks this many times (1 when 0); the model takes medians
	// Link is iperf3's rate to shared@1g's server (bits/s) from a host of
	// the cluster, where run runs a command.
	Link func(ctx context.Context, run func(args ...string) (string, error)) (float64, error)
}

// ModelCell is one of E1's cells: its compute link's rate and its job's
// ranks and bytes per rank.
type ModelCell struct {
	Rate  string
	Ranks int
	Size  int64
}

// The micro-benchmarks' shapes: every probe runs probeRanks MPI ranks on
// the compute host.
const (
	probeRanks  = 16                       // IOR's and mdtest's ranks
	streamFiles = probeRanks               // the bandwidth probes' files, IOR's one a rank
	streamSize  = 32 << 20                 // and their size
	smallSize   = 4096                     // the create and stage-out probes' file size
	smallFew    = probeRanks * fewPerRank  // files of the stage-out's short probe
	smallMany   = probeRanks * manyPerRank // files of the create probes and the stage-out's long probe
	fewPerRank  = 4                        // mdtest's files a rank in the stage-out's short probe
	manyPerRank = 32                       // and in the create probes and the stage-out's long probe
)

// probes are the calibration's three jobs' shapes.
func (t ClusterModel) probes() (stream, few, many Probe) {
	stream = Probe{Tool: ProbeIOR, IOR: t.IOR, Ranks: probeRanks, Size: streamSize}
	few = Probe{Tool: ProbeMdtest, IOR: t.IOR, Ranks: probeRanks, PerRank: fewPerRank, Size: smallSize}
	many = Probe{Tool: ProbeMdtest, IOR: t.IOR, Ranks: probeRanks, PerRank: manyPerRank, Size: smallSize}
	return stream, few, many
}

// ModelCalibration is what the micro-benchmarks measured at one compute
// link rate: medians over the runs, the stage-out's line fitted to them.
type ModelCalibration struct {
	Rate         string
	ComputeLink  float64              // bits/s, iperf3 from the compute host to shared@1g's server
	SharedLink   float64              // bits/s, iperf3 from an RSA host to shared@1g's server
	DirectWrite  float64              // bytes/s, IOR on the compute host writing the stream files straight to shared@1g
	RSAWrite     float64              // bytes/s, the same into its RAMDISK
	DirectCreate float64              // seconds per file, one over mdtest's file creation rate on shared@1g
	RSACreate    float64              // the same into its RAMDISK
	StageFixed   float64              // seconds, the stage-out's cost of none (job end to its first file)
	StagePerFile float64              // seconds per file
	StageRate    float64              // bytes/s
	raw          map[string][]float64 // every run's value by probe, for the rows
}

// Run brings the cluster up, runs the micro-benchmarks at each rate, takes
// the cluster down and returns the calibration rows and each cell's
// predictions: the two-term model's here, the simulator's by predict
// (nil: none).
func (t ClusterModel) Run(ctx context.Context, predict func(ModelCalibration, ModelCell) ([]bench.Row, error)) (rows []bench.Row, err error) {
	if len(t.Rates) == 0 {
		return nil, errors.New("no link rates to calibrate at: give --rates")
	}
	if t.IOR == "" {
		return nil, errors.New("no IOR prefix: give --ior, the prefix scripts/build-ior.sh prints")
	}
	for _, c := range t.Cells {
		if !slices.Contains(t.Rates, c.Rate) {
			return nil, fmt.Errorf("cell %d × %d at %s: no calibration at that rate: add it to --rates", c.Ranks, c.Size, c.Rate)
		}
	}
	c := t.Cluster
	var most int64
	for _, cell := range t.Cells {
		most = max(most, int64(cell.Ranks)*cell.Size)
	}
	s, closeCluster, err := c.open(ctx, 1, max(most, streamFiles*streamSize), t.Rates[0])
	defer func() {
		if cerr := closeCluster(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err != nil {
		return nil, err
	}
	cred, script := s.cred, s.script
	for i, rate := range t.Rates {
		if i > 0 {
			if err := shape(ctx, c.ID, rate, script, []string{"c1"}); err != nil {
				return nil, err
			}
		}
		cal, err := t.calibrate(ctx, cred, script, rate)
		if err != nil {
			return nil, fmt.Errorf("E2's calibration at %s: %w", rate, err)
		}
		rows = append(rows, cal.rows()...)
		for _, cell := range t.Cells {
			if cell.Rate != rate {
				continue
			}
			rows = append(rows, cal.twoTerm(cell)...)
			if predict != nil {
				r, err := predict(cal, cell)
				if err != nil {
					return nil, fmt.Errorf("E2's simulator, %d × %d at %s: %w", cell.Ranks, cell.Size, rate, err)
				}
				rows = append(rows, r...)
			}
		}
	}
	return rows, nil
}

// calibrate runs the micro-benchmarks at rate, Runs times, each run's in
// a drawn order.
func (t ClusterModel) calibrate(ctx context.Context, cred *syscall.Credential, script func(time.Duration, ...string) (string, error), rate string) (ModelCalibration, error) {
	cal := ModelCalibration{Rate: rate, raw: map[string][]float64{}}
	on := func(host string) func(args ...string) (string, error) {
		return func(args ...string) (string, error) {
			return script(time.Minute, append([]string{"cluster-up", "exec", host}, args...)...)
		}
	}
	stream, few, many := t.probes()
	type probe struct {
		name string
		run  func() error
	}
	var stageFew, stageMany, stageStream []float64
	probes := []probe{
		{"iperf3 compute", func() error {
			v, err := t.Link(ctx, on("c1"))
			cal.raw["compute_link"] = append(cal.raw["compute_link"], v)
			return err
		}},
		{"iperf3 RSA host", func() error {
			v, err := t.Link(ctx, on("rsa1"))
			cal.raw["shared_link"] = append(cal.raw["shared_link"], v)
			return err
		}},
		{"direct IOR", func() error {
			j, err := t.job(ctx, cred, script, stream, false)
			cal.raw["direct_write"] = append(cal.raw["direct_write"], j.toolRate)
			return err
		}},
		{"RSA IOR", func() error {
			j, err := t.job(ctx, cred, script, stream, true)
			cal.raw["rsa_write"] = append(cal.raw["rsa_write"], j.toolRate)
			stageStream = append(stageStream, j.verified-j.hold)
			return err
		}},
		{"direct mdtest", func() error {
			j, err := t.job(ctx, cred, script, many, false)
			cal.raw["direct_create"] = append(cal.raw["direct_create"], 1/j.toolRate)
			return err
		}},
		{"RSA mdtest", func() error {
			j, err := t.job(ctx, cred, script, many, true)
			cal.raw["rsa_create"] = append(cal.raw["rsa_create"], 1/j.toolRate)
			stageMany = append(stageMany, j.verified-j.hold)
			return err
		}},
		{"RSA mdtest few", func() error {
			j, err := t.job(ctx, cred, script, few, true)
			stageFew = append(stageFew, j.verified-j.hold)
			return err
		}},
	}
	for run := range max(t.Runs, 1) {
		order := slices.Clone(probes)
		shuffle(order, int64(run)+int64(len(rate))*7919)
		for _, p := range order {
			if err := p.run(); err != nil {
				return cal, fmt.Errorf("%s, run %d: %w", p.name, run+1, err)
			}
		}
	}
	med := func(k string) float64 { return bench.Median(cal.raw[k]) }
	cal.ComputeLink, cal.SharedLink = med("compute_link"), med("shared_link")
	cal.DirectWrite, cal.RSAWrite = med("direct_write"), med("rsa_write")
	cal.DirectCreate, cal.RSACreate = med("direct_create"), med("rsa_create")
	cal.raw["stage_few"], cal.raw["stage_many"], cal.raw["stage_stream"] = stageFew, stageMany, stageStream
	var err error
	cal.StageFixed, cal.StagePerFile, cal.StageRate, err = stageLine(bench.Median(stageFew), bench.Median(stageMany), bench.Median(stageStream))
	return cal, err
}

// stageLine fits the stage-out's time as fixed + files × perFile + bytes
// / rate from its three probes' median times: few and many small files
// (their bytes negligible) and the stream files.
func stageLine(few, many, stream float64) (fixed, perFile, rate float64, err error) {
	perFile = (many - few) / (smallMany - smallFew)
	fixed = few - smallFew*perFile
	left := stream - fixed - streamFiles*perFile
	if perFile <= 0 || fixed < 0 || left <= 0 {
		return fixed, perFile, 0, fmt.Errorf("the stage-out's probes (%.2f s for %d files, %.2f s for %d, %.2f s for %d of %d MiB) fit no line of a fixed cost, a cost per file and a rate: the machine was busy; run again with nothing else on it",
			few, smallFew, many, smallMany, stream, streamFiles, streamSize>>20)
	}
	return fixed, perFile, streamFiles * streamSize / left, nil
}

// job runs one micro-benchmark job, p, straight to shared@1g or through
// RSA, and removes its output.
func (t ClusterModel) job(ctx context.Context, cred *syscall.Credential, script func(time.Duration, ...string) (string, error), p Probe, viaRSA bool) (t52Job, error) {
	c := t.Cluster
	c.Ranks, c.Size, c.Output, c.probe = p.Files(), p.Size, "", &p
	work := filepath.Join(c.SharedPath, fmt.Sprintf("e2-%d-%d", os.Getpid(), time.Now().UnixNano()))
	local := filepath.Join(c.Dir, "bench")
	if err := mkdirOwned(local, cred); err != nil {
		return t52Job{}, err
	}
	if _, err := script(time.Minute, "cluster-up", "exec", "c1", "setpriv", "--reuid", strconv.Itoa(int(cred.Uid)), "--regid", strconv.Itoa(int(cred.Gid)),
		"--clear-groups", "mkdir", "-p", work+"/direct", work+"/rsa"); err != nil {
		return t52Job{}, err
	}
	defer os.RemoveAll(filepath.Join(c.localShared(), filepath.Base(work)))
	if viaRSA {
		return c.viaRSA(ctx, cred, local, work)
	}
	return c.direct(ctx, cred, local, work)
}

// twoTerm is the two-term model's prediction of cell: each side the
// longer of its creates (the small-file probe's time per file, for every
// file) and its bytes (at the stream probe's rate); RSA's output verified
// after its hold and the stage-out's line.
func (m ModelCalibration) twoTerm(cell ModelCell) []bench.Row {
	n, bytes := float64(cell.Ranks), float64(int64(cell.Ranks)*cell.Size)
	direct := max(n*m.DirectCreate, bytes/m.DirectWrite)
	hold := max(n*m.RSACreate, bytes/m.RSAWrite)
	verified := hold + m.StageFixed + n*m.StagePerFile + bytes/m.StageRate
	why := "the two-term model, from E2's micro-benchmarks at this link rate (nothing of T52): "
	return []bench.Row{
		cell.Row("E2 two-term", "shared@1g", "hold", direct, why+"max(files × a small file's time, bytes / the stream's rate), straight to shared@1g"),
		cell.Row("E2 two-term", "ram@1g", "hold", hold, why+"the same into the RAMDISK"),
		cell.Row("E2 two-term", "ram@1g", "verified", verified, why+"RSA's hold + the stage-out's fixed cost + files × its cost per file + bytes / its rate"),
	}
}

// Row is a prediction of cell by the model kase, with E1's params to find
// the cell by.
func (cell ModelCell) Row(kase, target, metric string, v float64, note string) bench.Row {
	p := map[string]string{"link": cell.Rate, "ranks": strconv.Itoa(cell.Ranks), "size": strconv.FormatInt(cell.Size, 10)}
	return bench.Row{Bench: "model", Case: kase, Target: target, Params: p, Metric: metric, Unit: "s", Value: v, Runs: []float64{v}, Note: note}
}

// rows are the calibration's own: every probe's runs and the median.
func (m ModelCalibration) rows() []bench.Row {
	mbit := func(v float64) float64 { return v / 1e6 }
	mibs := func(v float64) float64 { return v / (1 << 20) }
	ms := func(v float64) float64 { return v * 1e3 }
	secs := func(v float64) float64 { return v }
	stream := fmt.Sprintf("IOR: %d ranks, a file of %d MiB each", probeRanks, streamSize>>20)
	small := fmt.Sprintf("mdtest: %d ranks, %d files of %d bytes each", probeRanks, manyPerRank, smallSize)
	var rows []bench.Row
	add := func(target, metric, unit, key, shape, note string, conv func(float64) float64) {
		vs := make([]float64, len(m.raw[key]))
		for i, v := range m.raw[key] {
			vs[i] = conv(v)
		}
		r := bench.Row{Bench: "model", Case: "E2 calibration", Target: target, Metric: metric, Unit: unit, Value: bench.Median(vs), Runs: vs,
			Params: map[string]string{"link": m.Rate, "probe": shape}, Note: note}
		r.CI = bench.Bootstrap(vs, bench.Median, 10000, uint64(len(rows)+1))
		rows = append(rows, r)
	}
	add("c1 → shared@1g", "iperf3", "Mbit/s", "compute_link", "3 s", "iperf3 from the compute host, through its link and shared@1g's", mbit)
	add("rsa1 → shared@1g", "iperf3", "Mbit/s", "shared_link", "3 s", "iperf3 from an RSA host, through shared@1g's link (the stage-out's path)", mbit)
	add("shared@1g", "write", "MiB/s", "direct_write", stream, "a Slurm job on the compute host: IOR, a file per rank in one directory, each fsync'd at its close (-F -e): IOR's write bandwidth", mibs)
	add("ram@1g", "write", "MiB/s", "rsa_write", stream, "the same job into its RAMDISK through RSA", mibs)
	add("shared@1g", "per file", "ms", "direct_create", small, "a Slurm job on the compute host: mdtest's create phase (-C -F -w 4096 -y), the ranks' files in one directory, each written and fsync'd: one over its file creation rate", ms)
	add("ram@1g", "per file", "ms", "rsa_create", small, "the same into its RAMDISK", ms)
	add("stage-out", "time", "s", "stage_few", fmt.Sprintf("mdtest: %d ranks, %d files of %d bytes each", probeRanks, fewPerRank, smallSize), "RSA's job end until DONE_STAGING_OUT: stage-out and verify", secs)
	add("stage-out", "time", "s", "stage_many", small, "RSA's job end until DONE_STAGING_OUT: stage-out and verify", secs)
	add("stage-out", "time", "s", "stage_stream", stream, "RSA's job end until DONE_STAGING_OUT: stage-out and verify", secs)
	line := "the stage-out's line through the medians of its three probes"
	fit := func(metric, unit string, v float64) {
		rows = append(rows, bench.Row{Bench: "model", Case: "E2 calibration", Target: "stage-out", Metric: metric, Unit: unit, Value: v, Runs: []float64{v},
			Params: map[string]string{"link": m.Rate, "probe": "fit"}, Note: line})
	}
	fit("fixed", "s", m.StageFixed)
	fit("per file", "ms", m.StagePerFile*1e3)
	fit("rate", "MiB/s", m.StageRate/(1<<20))
	return rows
}

// AgainstE1 sets each of E2's predictions in rows beside E1's measured
// median of the same cell (T52 on ram@1g at no injected delay, in E1's
// designed runs: the rows with a drawn pair order), as its source, and
// returns rows. A prediction whose cell E1 has not run stays alone.
func AgainstE1(rows []bench.Row) []bench.Row {
	key := func(r bench.Row) string {
		p := r.Params
		return strings.Join([]string{r.Target, r.Metric, p["link"], p["ranks"], p["size"]}, "|")
	}
	measured := map[string]float64{}
	for _, r := range rows {
		p := r.Params
		if r.Bench == "thesis" && r.Case == "T52" && p["first"] != "" && p["shared_latency"] == "0s" && p["output"] == "" && p["link"] != "" {
			if _, dup := measured[key(r)]; !dup {
				measured[key(r)] = r.Value
			}
		}
	}
	out := slices.Clone(rows)
	for i, r := range out {
		if r.Bench != "model" || !strings.HasPrefix(r.Case, "E2 ") || r.Case == "E2 calibration" {
			continue
		}
		if v, ok := measured[key(r)]; ok {
			out[i].Source("E1, measured median", v, r.Unit)
		}
	}
	return out
}
