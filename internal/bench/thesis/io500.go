package thesis

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rsa-hpc/rsa/internal/bench"
	"github.com/rsa-hpc/rsa/internal/bench/io500"
)

// ClusterIO500 is IO500's phases (the evidence review's E3) on the
// emulated cluster, as real Slurm jobs of a real user with Open MPI ranks
// spread over Hosts compute hosts: on RSA's RAMDISK (ram@1g, the job's
// output directory a Gluster volume on the RSA hosts), straight on
// shared@1g, and on one compute host's own tmpfs with that host's share of
// the ranks, the per-node ceiling the other two are set against.
type ClusterIO500 struct {
	// Cluster holds the emulated cluster's settings and binaries; its
	// Ranks, Size, Output and Latencies are not used.
	Cluster      ClusterT52
	Hosts        int // compute hosts the ranks spread over (the tmpfs cell uses one)
	RanksPerHost int
	IOR          string // IOR's prefix, as scripts/build-ior.sh prints it
	Phases       io500.Config
	Runs         int // each cell this many times, in a new random order each run (1 when 0)
	// Cells are the cells to run, by name (all when empty); the
	// efficiencies need tmpfs among them.
	Cells []string
}

// cells are the cells t runs, in io500Cells' order.
func (t ClusterIO500) cells() ([]io500Cell, error) {
	if len(t.Cells) == 0 {
		return io500Cells, nil
	}
	var out []io500Cell
	for _, c := range io500Cells {
		if slices.Contains(t.Cells, c.name) {
			out = append(out, c)
		}
	}
	if len(out) != len(t.Cells) {
		var names []string
		for _, c := range io500Cells {
			names = append(names, c.name)
		}
		return nil, fmt.Errorf("E3: cells %q: give some of %q", t.Cells, names)
	}
	return out, nil
}

// io500Cell is one file system the phases run on.
type io500Cell struct {
	name    string
	rsa     bool // the job's output directory through RSA
	private bool // RSA's output=private: a file system of each compute host's own
	// image: RSA's input=image. The write phases run straight on
	// shared@1g first, as a job of their own; then an RSA job with their
	// directory as its input runs, on the read-only image of it, the
	// phases a read-only file system allows. No score: IO500 scores only
	// a run of every phase.
	image bool
	local bool // one host's tmpfs
	note  string
}

// oneHost reports whether the cell runs on one compute host: tmpfs, the
// ceiling, and private output, whose file system is one host's (IO500's
// phases read what another rank wrote, from another host when there are
// two, which a host's private file system does not show).
func (c io500Cell) oneHost() bool { return c.local || c.private }

var io500Cells = []io500Cell{
	{name: "ram@1g", rsa: true, note: "RSA's RAMDISK: a Gluster volume in the RSA hosts' RAM, each compute host's client behind its own 1 Gbit/s link"},
	{name: "ram@1g private", rsa: true, private: true, note: "RSA's output=private: an ext4 image of the compute host's own, in the RAMDISK, mounted read-write on that host alone; one host, its ranks"},
	{name: "ram@1g image", rsa: true, image: true, note: "RSA's input=image: what the write phases left on shared@1g staged into a read-only erofs image in the RAMDISK before the job started, mounted at the same path on each compute host; the phases a read-only file system allows (mdtest-hard-read's mdtest opens read-write)"},
	{name: "shared@1g", note: "the emulated shared file system (Gluster on one server behind one 1 Gbit/s link), no contention shim"},
	{name: "tmpfs", local: true, note: "one compute host's own tmpfs, that host's share of the ranks: the per-node ceiling"},
}

// mpiEnv is Open MPI's settings for the emulated hosts: TCP over each
// host's eth0 (the namespaces' other interfaces do not reach each other),
// shared memory within a host, and ranks dealt round-robin over the hosts,
// so that IO500's rank shift (-C -Q 1, -N 1) reads what another host wrote.
const mpiEnv = "export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=eth0 OMPI_MCA_oob_tcp_if_include=eth0 OMPI_MCA_rmaps_base_mapping_policy=node\n"

// Run brings the cluster up with Hosts compute hosts, runs every cell
// Runs times (the cells in a drawn order each run), takes the cluster down
// and returns the rows: each phase's rate and the scores per cell, and
// each of ram@1g's and shared@1g's per node over tmpfs' (the per-node
// efficiency), each the median of the runs with its interval.
func (t ClusterIO500) Run(ctx context.Context) (rows []bench.Row, err error) {
	c := t.Cluster
	if t.Hosts < 1 || t.Hosts > 9 || t.RanksPerHost < 1 {
		return nil, fmt.Errorf("E3: %d hosts of %d ranks: give 1-9 hosts and a rank or more each", t.Hosts, t.RanksPerHost)
	}
	if err := t.Phases.Check(); err != nil {
		return nil, err
	}
	cells, err := t.cells()
	if err != nil {
		return nil, err
	}
	// The RAMDISK holds at most the phases' caps over every rank.
	s, closeCluster, err := c.open(ctx, t.Hosts, t.capacity(), c.Rate)
	defer func() {
		if cerr := closeCluster(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err != nil {
		return nil, err
	}
	cred, script := s.cred, s.script
	var runs [][]bench.Row
	for run := range max(t.Runs, 1) {
		order := slices.Clone(cells)
		shuffle(order, int64(run+1))
		byCell := map[string][]io500.Result{}
		for _, cell := range order {
			res, err := t.once(ctx, cred, script, cell, run)
			if err != nil {
				return nil, fmt.Errorf("E3, %s, run %d: %w", cell.name, run+1, err)
			}
			byCell[cell.name] = res
		}
		these, err := t.rows(cells, byCell, order[0].name)
		if err != nil {
			return nil, err
		}
		runs = append(runs, these)
	}
	return medians(runs), nil
}

// capacity is what the RAMDISK must hold: every rank's caps.
func (t ClusterIO500) capacity() int64 {
	easy, err := parseSizeSuffix(t.Phases.EasyBlock)
	if err != nil {
		easy = 1 << 30
	}
	per := easy + int64(t.Phases.HardSegments)*47008 + int64(t.Phases.HardFiles)*3901 + int64(t.Phases.EasyFiles+t.Phases.HardFiles)*4096
	return per * int64(t.Hosts*t.RanksPerHost)
}

// parseSizeSuffix reads IOR's sizes: a number with k, m or g (powers of
// 1,024).
func parseSizeSuffix(s string) (int64, error) {
	mult := int64(1)
	switch strings.ToLower(s[len(s)-1:]) {
	case "k":
		mult = 1 << 10
	case "m":
		mult = 1 << 20
	case "g":
		mult = 1 << 30
	}
	if mult > 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("size %q: give a number with k, m or g", s)
	}
	return n * mult, nil
}

// once runs the phases on one cell as one Slurm job and returns their
// results.
func (t ClusterIO500) once(ctx context.Context, cred *syscall.Credential, script func(time.Duration, ...string) (string, error), cell io500Cell, run int) ([]io500.Result, error) {
	c := t.Cluster
	slug := strings.NewReplacer("@", "", " ", "-").Replace(cell.name)
	work := filepath.Join(c.SharedPath, fmt.Sprintf("e3-%d-%d-%s", os.Getpid(), run, slug))
	local := filepath.Join(c.Dir, "bench", "e3-"+slug)
	if err := mkdirOwned(local, cred); err != nil {
		return nil, err
	}
	defer os.RemoveAll(local)
	hosts, ranks := t.Hosts, t.Hosts*t.RanksPerHost
	if cell.oneHost() {
		hosts, ranks = 1, t.RanksPerHost
	}
	p := t.Phases
	driver := func(part io500.Part) string {
		return fmt.Sprintf("%s bench io500-job --ior %s --ranks %d --results %s/res --part %s --stonewall %s --easy-block %s --hard-segments %d --easy-files %d --hard-files %d --json",
			c.Lab, t.IOR, ranks, local, part, p.Stonewall, p.EasyBlock, p.HardSegments, p.EasyFiles, p.HardFiles)
	}
	defer os.RemoveAll(filepath.Join(c.localShared(), filepath.Base(work)))
	if !cell.local {
		// The job's directory on the shared file system, made through a
		// host's mount as the user: RSA's output directory must exist.
		if _, err := script(time.Minute, "cluster-up", "exec", "c1", "setpriv", "--reuid", strconv.Itoa(int(cred.Uid)), "--regid", strconv.Itoa(int(cred.Gid)),
			"--clear-groups", "mkdir", "-p", work); err != nil {
			return nil, err
		}
	}
	bound := 12*t.Phases.Stonewall + 20*time.Minute
	// submit runs a job and waits for its end (and for RSA's release of
	// it, when RSA's).
	submit := func(name, head, body string) error {
		out := filepath.Join(local, name+".out")
		job := fmt.Sprintf("#!/bin/bash\n#SBATCH -N %d\n#SBATCH -o %s\n%s%s%s", hosts, out, head, mpiEnv, body)
		id, err := c.sbatch(ctx, cred, c.slurmConf(), filepath.Join(local, name+".sh"), job)
		if err != nil {
			return err
		}
		if err := c.waitSlurm(ctx, c.slurmConf(), id, bound); err != nil {
			b, _ := os.ReadFile(out)
			return fmt.Errorf("job %s: %w: %s", id, err, jobWhy(string(b)))
		}
		if head != "" {
			if err := c.waitReleased(ctx, id, bound); err != nil {
				return fmt.Errorf("RSA job %s: %w", id, err)
			}
		}
		return nil
	}
	report := filepath.Join(local, "io500.json")
	capacity := t.capacity()*5/4>>20 + 64
	// Every host's ranks use the RAMDISK: each host waits for it at the
	// job's path before any rank starts.
	waitMount := fmt.Sprintf("srun -N %d --ntasks-per-node=1 %s bench wait-mount %s\n", hosts, c.Lab, work)
	var err error
	switch {
	case cell.image:
		// What the reads read: the write phases, straight on shared@1g.
		if err = submit("write", "", fmt.Sprintf("%s --data %s > %s/io500-write.json\n", driver(io500.Writes), work, local)); err != nil {
			return nil, fmt.Errorf("the write phases for %s: %w", cell.name, err)
		}
		head := fmt.Sprintf("#RSA capacity=%dM pool=rsa input=image\n#RSA_DATA_IN=%s\n", capacity, work)
		err = submit("job", head, waitMount+fmt.Sprintf("%s --data %s > %s\n", driver(io500.Reads), work, report))
	case cell.rsa:
		output := "shared"
		if cell.private {
			output = "private"
		}
		head := fmt.Sprintf("#RSA capacity=%dM pool=rsa output=%s\n#RSA_DATA_OUT=%s\n#RSA_DELAY=0\n", capacity, output, work)
		err = submit("job", head, waitMount+fmt.Sprintf("%s --data %s > %s\n", driver(io500.All), work, report))
	case cell.local:
		err = submit("job", "", fmt.Sprintf("d=$(mktemp -d /dev/shm/rsa-e3.XXXXXX) && { %s --data \"$d\" > %s; s=$?; rm -rf \"$d\"; exit $s; }\n", driver(io500.All), report))
	default:
		err = submit("job", "", fmt.Sprintf("%s --data %s > %s\n", driver(io500.All), work, report))
	}
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(report)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cell.name, err)
	}
	var rep IO500Report
	if err := json.Unmarshal(bytes.TrimSpace(b), &rep); err != nil {
		return nil, fmt.Errorf("%s's report: %w", cell.name, err)
	}
	return rep.Results, nil
}

// IO500Report is what rsa-lab bench io500-job prints with --json.
type IO500Report struct {
	Results []io500.Result `json:"results"`
	Score   io500.Score    `json:"score"`
	Ranks   int            `json:"ranks"`
	Hosts   int            `json:"hosts"`
}

// rows are one run's rows: each cell's phases and scores, then the
// per-node efficiencies, in a fixed order (medians folds runs row by row).
func (t ClusterIO500) rows(cells []io500Cell, byCell map[string][]io500.Result, first string) ([]bench.Row, error) {
	p := t.Phases
	compliance := "no: stonewall " + p.Stonewall.String() + " (IO500 asks 300 s)"
	if p.Compliant() {
		compliance = "stonewall as IO500 asks; caps below IO500's"
	}
	base := map[string]string{"ranks_per_host": strconv.Itoa(t.RanksPerHost), "stonewall": p.Stonewall.String(), "compliant": compliance,
		"caps": fmt.Sprintf("ior-easy %s, ior-hard %d segments, mdtest %d/%d files per rank", p.EasyBlock, p.HardSegments, p.EasyFiles, p.HardFiles),
		"find": "rsa-lab's walker from one host (the harness' external-script mode), not pfind", "via": "Slurm, emulated cluster, Open MPI over TCP", "first": first}
	value := map[string]map[string]float64{}
	var rows []bench.Row
	for _, cell := range cells {
		res := byCell[cell.name]
		hosts := t.Hosts
		if cell.oneHost() {
			hosts = 1
		}
		params := withParams(base, "hosts", strconv.Itoa(hosts), "ranks", strconv.Itoa(hosts*t.RanksPerHost))
		value[cell.name] = map[string]float64{}
		for _, r := range res {
			rp := params
			if r.Phase == "find" {
				rp = withParams(params, "scanned", strconv.FormatInt(r.Scanned, 10), "matched", strconv.FormatInt(r.Matched, 10))
			}
			// Every row of a phase carries "retried", so that the runs'
			// params line up ("no" or the first attempt's error).
			retried := "no"
			if r.Retried != "" {
				retried = "after: " + firstLine(r.Retried)
			}
			rp = withParams(rp, "retried", retried)
			rows = append(rows, bench.Row{Bench: "io500", Case: r.Phase, Target: cell.name, Params: rp, Metric: "rate", Unit: r.Unit,
				Value: r.Value, Runs: []float64{r.Value}, Note: cell.note})
			value[cell.name][r.Phase] = r.Value / float64(hosts)
		}
		if cell.image {
			continue // some phases: no score
		}
		s, err := io500.ScoreOf(res)
		if err != nil {
			return nil, fmt.Errorf("E3, %s: %w", cell.name, err)
		}
		for _, sc := range []struct {
			name, unit string
			v          float64
		}{{"bw", "GiB/s", s.Bandwidth}, {"md", "kIOPS", s.Metadata}, {"score", "", s.Total}} {
			rows = append(rows, bench.Row{Bench: "io500", Case: "score", Target: cell.name, Params: params, Metric: sc.name, Unit: sc.unit,
				Value: sc.v, Runs: []float64{sc.v}, Note: "IO500's formula over this run's phases; not a valid IO500 score: " + compliance})
			value[cell.name]["score:"+sc.name] = sc.v / float64(hosts)
		}
	}
	// Per-node efficiency: a cell's rate per compute host over one host's
	// own tmpfs.
	ceiling := value["tmpfs"]
	for _, cell := range cells {
		if cell.local {
			continue
		}
		name, hosts := cell.name, t.Hosts
		if cell.oneHost() {
			hosts = 1
		}
		keys := make([]string, 0, len(io500.Phases)+3)
		for _, ph := range io500.Phases {
			keys = append(keys, ph.Name)
		}
		keys = append(keys, "score:bw", "score:md", "score:score")
		for _, k := range keys {
			v, ran := value[name][k]
			den := ceiling[k]
			if !ran || den <= 0 {
				continue
			}
			params := withParams(base, "hosts", strconv.Itoa(hosts))
			rows = append(rows, bench.Row{Bench: "io500", Case: k, Target: name + " per node vs tmpfs", Params: params, Metric: "efficiency", Unit: "x",
				Value: v / den, Runs: []float64{v / den},
				Note: fmt.Sprintf("per-node efficiency: %s's rate over %d hosts, per host, over one host's tmpfs", name, hosts)})
		}
	}
	return rows, nil
}

// jobWhy is what a failed job's output says of why: the driver's lines
// (the phases that ran, its error) and the tools' ERROR lines, else its
// last lines.
func jobWhy(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "io500:") || strings.HasPrefix(l, "rsa-lab:") || strings.Contains(l, "ERROR") {
			keep = append(keep, strings.TrimSpace(l))
		}
	}
	if len(keep) == 0 {
		return lastLines(out, 8)
	}
	return strings.Join(keep[max(0, len(keep)-12):], " | ")
}

// firstLine is s up to its first line break.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
