package thesis

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rsa-hpc/rsa/internal/bench"
	"github.com/rsa-hpc/rsa/internal/gluster"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/rsatest"
	"github.com/rsa-hpc/rsa/internal/rsatest/live"
)

// ClusterT52 is T52 with RSA's RAMDISK on RSA nodes of their own (ram@1g):
// the emulated cluster of scripts/cluster-up (a control host, RSA hosts
// running Gluster bricks in tmpfs, a compute host under Slurm), the
// compute host's link shaped to 1 Gbit/s each way, and shared@1g mounted
// on every host at the same path, reached through that host's link and
// the shared file system's own 1 Gbit/s link. So, as in the thesis, the
// job's output goes over one 1 Gbit/s link whether it goes to the RSA
// nodes or to the shared file system; the stage-out runs on an RSA node.
//
// Both jobs are real Slurm batch jobs of a real user, submitted with
// sbatch; the RSA one asks for RSA with #RSA lines.
type ClusterT52 struct {
	Repo       string // the checkout: scripts/cluster-up and cluster-down
	RSA        string // the rsa binary, which every host and the user can run
	Lab        string // the rsa-lab binary, which the user can run on the compute host: the job's writes (bench write)
	User       string
	Dir        string // the cluster's directory (RSA_CLUSTER_DIR)
	ID         int    // the cluster's id (RSA_CLUSTER_ID, 0-9): its bridge rsabrID and links vrsaID-HOST
	Net        string // the cluster bridge's /24, as three octets
	SharedNet  string // shared@1g's link, as three octets (its server is .2)
	SharedPath string // where shared@1g is mounted on every host
	Rate       string // the compute host's link, each way (tbf)
	Ranks      int
	Size       int64
	// Runs is how many times each latency's pair of jobs runs (1 when
	// 0); its rows give the median and every run.
	Runs int
	// Output is the RSA job's output mode (#RSA output=): shared (also
	// when empty) or private, a file system of the compute host's own.
	Output string
	// Latencies are shared@1g's per-create latencies to run at, set by
	// SetLatency before each pair of jobs.
	Latencies  []time.Duration
	SetLatency func(context.Context, time.Duration) error
	// Profile, if set, reads shared@1g's volume profile since the read
	// before: each job's file operations there (the direct job's writes;
	// RSA's stage-out and verify) go into its rows.
	Profile func(context.Context) ([]gluster.FopStat, error)
	// ProfileRAMDISK turns RSA's profile of each job's volume on
	// (cluster.profile): the file operations the RSA job's RAMDISK
	// served, from its job's log, go into its rows (rd_OP_n, rd_OP_us).
	ProfileRAMDISK bool
	// probe, when set, is the jobs' command instead of the thesis'
	// writer (E2's micro-benchmarks); Ranks and Size are then its files
	// and their size.
	probe *Probe
}

// Run brings the cluster up, runs both jobs once at each latency, takes
// the cluster down and returns the rows.
func (t ClusterT52) Run(ctx context.Context) (rows []bench.Row, err error) {
	s, closeCluster, err := t.open(ctx, 1, int64(t.Ranks)*t.Size, t.Rate)
	defer func() {
		if cerr := closeCluster(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err != nil {
		return nil, err
	}
	cred, script := s.cred, s.script
	for _, lat := range t.Latencies {
		if err := t.SetLatency(ctx, lat); err != nil {
			return nil, err
		}
		var runs [][]bench.Row
		for i := range max(t.Runs, 1) {
			r, err := t.once(ctx, cred, script, lat, i)
			if err != nil {
				return nil, fmt.Errorf("T52 on ram@1g, shared@1g latency %s, run %d: %w", lat, i+1, err)
			}
			runs = append(runs, r)
		}
		rows = append(rows, medians(runs)...)
	}
	return rows, nil
}

// scripts returns what runs scripts/cluster-up and cluster-down (and
// cluster-up's exec) for the cluster t describes, with compute hosts c1 to
// cN and RSA hosts with RAM for three quarters of output bytes each.
// cluster-down runs also when ctx has ended: a benchmark interrupted
// takes its cluster down.
func (t ClusterT52) scripts(ctx context.Context, compute int, output int64) func(time.Duration, ...string) (string, error) {
	env := append(os.Environ(), "RSA_CLUSTER_DIR="+t.Dir, "RSA_BIN="+t.RSA, "RSA_CLUSTER_RSA=2", "RSA_CLUSTER_COMPUTE="+strconv.Itoa(compute),
		"RSA_CLUSTER_ID="+strconv.Itoa(t.ID), "RSA_CLUSTER_NET="+t.Net, "RSA_CLUSTER_CAPACITY="+strconv.FormatInt((output*3/4>>30)+1, 10)+"G",
		"RSA_CLUSTER_RSA_CONF="+refusedWithoutFUSE(), "RSA_CLUSTER_PROFILE="+strconv.FormatBool(t.ProfileRAMDISK))
	return func(timeout time.Duration, args ...string) (string, error) {
		ctx := ctx
		if args[0] == "cluster-down" {
			ctx = context.WithoutCancel(ctx)
		}
		out, err := rsatest.Script(ctx, t.Repo, env, timeout, args[0], args[1:]...)
		if err != nil {
			return out, fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, lastLines(out, 5))
		}
		return out, nil
	}
}

// session is the emulated cluster up for one benchmark: the jobs' user's
// credential, and what runs cluster-up's scripts for it.
type session struct {
	cred   *syscall.Credential
	script func(time.Duration, ...string) (string, error)
}

// open brings up the cluster t describes, with compute hosts c1 to cN
// behind links at rate, RSA hosts with RAM for output bytes, shared@1g
// mounted on every host, and the jobs' user. closeCluster takes down what
// it brought up (the network, the cluster, the user), also when open
// failed, and returns cluster-down's error.
func (t ClusterT52) open(ctx context.Context, n int, output int64, rate string) (s session, closeCluster func() error, err error) {
	var undos []func() error
	closeCluster = func() error {
		var errs []error
		for i := len(undos) - 1; i >= 0; i-- {
			errs = append(errs, undos[i]())
		}
		return errors.Join(errs...)
	}
	cred, cleanupUser, err := ensureUser(t.User)
	if err != nil {
		return s, closeCluster, err
	}
	undos = append(undos, func() error { cleanupUser(); return nil })
	s = session{cred: cred, script: t.scripts(ctx, n, output)}
	down, err := up(s.script)
	undos = append(undos, down)
	if err != nil {
		return s, closeCluster, err
	}
	var compute []string
	for i := 1; i <= n; i++ {
		compute = append(compute, "c"+strconv.Itoa(i))
	}
	undo, err := network(ctx, t.ID, t.Net, t.SharedNet, t.SharedPath, rate, s.script, append([]string{"ctl", "rsa1", "rsa2"}, compute...), compute)
	undos = append(undos, func() error { undo(); return nil })
	return s, closeCluster, err
}

// up brings the cluster up, after taking down what an earlier run left,
// and returns what takes it down (to be called also when up failed).
func up(script func(time.Duration, ...string) (string, error)) (down func() error, err error) {
	_, _ = script(5*time.Minute, "cluster-down")
	down = func() error {
		_, err := script(5*time.Minute, "cluster-down")
		return err
	}
	_, err = script(10*time.Minute, "cluster-up")
	return down, err
}

// medians folds the rows of several runs, each run's in the same order,
// into one row each: its value the median of the runs' (a ratio's, the
// median of each run's own ratio: its two jobs ran one after the other),
// every run's value kept, and with bench.MinCIRuns runs or more the
// bootstrap's 95% interval of that median (resampling runs, so a ratio's
// pairs stay whole).
func medians(runs [][]bench.Row) []bench.Row {
	rows := slices.Clone(runs[0])
	for k := range rows {
		vs := make([]float64, len(runs))
		for i, run := range runs {
			vs[i] = run[k].Value
		}
		rows[k].Runs, rows[k].Value = vs, bench.Median(vs)
		rows[k].CI = bench.Bootstrap(vs, bench.Median, 10000, uint64(k+1))
		rows[k].Params = runParams(runs, k)
	}
	return rows
}

// runParams is the params of row k of runs: a param whose value differs
// between runs (which job went first, a counter) gives every run's
// value, in the runs' order, joined by "/".
func runParams(runs [][]bench.Row, k int) map[string]string {
	out := maps.Clone(runs[0][k].Params)
	for key := range out {
		vals := make([]string, len(runs))
		same := true
		for i, run := range runs {
			vals[i] = run[k].Params[key]
			same = same && vals[i] == vals[0]
		}
		if !same {
			out[key] = strings.Join(vals, "/")
		}
	}
	return out
}

// once runs the job straight to shared@1g and through RSA, one right
// after the other in an order drawn from run (the pair interleaved, its
// order random), and returns their rows.
func (t ClusterT52) once(ctx context.Context, cred *syscall.Credential, script func(time.Duration, ...string) (string, error), lat time.Duration, run int) ([]bench.Row, error) {
	work := filepath.Join(t.SharedPath, fmt.Sprintf("t52-cluster-%d-%d", os.Getpid(), lat.Milliseconds()))
	local := filepath.Join(t.Dir, "bench")
	if err := mkdirOwned(local, cred); err != nil {
		return nil, err
	}
	// Directories on the shared file system are made through a host's
	// mount, as the user.
	if _, err := script(time.Minute, "cluster-up", "exec", "c1", "setpriv", "--reuid", strconv.Itoa(int(cred.Uid)), "--regid", strconv.Itoa(int(cred.Gid)),
		"--clear-groups", "mkdir", "-p", work+"/direct", work+"/rsa"); err != nil {
		return nil, err
	}
	var direct, via t52Job
	jobs := []func() error{
		func() (err error) { direct, err = t.direct(ctx, cred, local, work); return err },
		func() (err error) { via, err = t.viaRSA(ctx, cred, local, work); return err },
	}
	directFirst := pairOrder(lat, run)
	if !directFirst {
		slices.Reverse(jobs)
	}
	for _, j := range jobs {
		if err := j(); err != nil {
			return nil, err
		}
	}
	os.RemoveAll(filepath.Join(t.localShared(), filepath.Base(work)))

	params := map[string]string{"ranks": strconv.Itoa(t.Ranks), "size": strconv.FormatInt(t.Size, 10), "layout": "one directory",
		"shared_latency": lat.String(), "via": "Slurm, emulated cluster", "link": t.Rate}
	if t.Output != "" && t.Output != "shared" {
		params["output"] = t.Output
	}
	first := "rsa"
	if directFirst {
		first = "direct"
	}
	row := func(target, metric, unit string, v float64, job *t52Job, ref string, src float64, note string) bench.Row {
		p := withParams(params, "first", first)
		if job != nil {
			p = withParams(p, "slurm_hold_s", strconv.FormatFloat(job.slurmHold, 'f', 0, 64), "sacct_hold_s", strconv.FormatFloat(job.sacctHold, 'f', 0, 64),
				"c1_link_MiB", strconv.FormatFloat(float64(job.linkBytes)/(1<<20), 'f', 0, 64),
				"steal_pct", strconv.FormatFloat(job.cpu.steal, 'f', 1, 64), "softirq_pct", strconv.FormatFloat(job.cpu.softirq, 'f', 1, 64))
			for h, s := range job.hostCPU {
				p = withParams(p, "cpu_s_"+h, strconv.FormatFloat(s, 'f', 1, 64))
			}
			p = withFops(p, "gl_", job.fops)
			p = withFops(p, "rd_", job.ramdiskFops)
		}
		r := bench.Row{Bench: "thesis", Case: "T52", Target: target, Params: p, Metric: metric, Unit: unit, Value: v, Runs: []float64{v}, Note: note}
		if ref != "" {
			r.Source(ref, src, unit)
		}
		return r
	}
	return []bench.Row{
		row("shared@1g", "hold", "s", direct.hold, &direct, "THESIS T5.2 No RSA Output Mean", 1109.86, "the Slurm job's command, start to exit, on the compute host behind its link; each file fsync'd"),
		row("ram@1g", "hold", "s", via.hold, &via, "THESIS T5.2 RSA default Output Mean", 35.87, "the Slurm job's command, start to exit, its output on RSA hosts behind the same link; each file fsync'd"),
		row("ram@1g", "run", "s", via.run, nil, "", 0, "sbatch until Slurm's COMPLETED, which under burst_buffer/lua comes after data_out (the stage-out)"),
		row("ram@1g vs shared@1g", "hold_ratio", "x", direct.hold/via.hold, nil, "THESIS T5.2 (derived)", 30.9, "compute-hold ratio: shared / RSA"),
		row("ram@1g", "verified", "s", via.verified, nil, "", 0, "the job's start until RSA's DONE_STAGING_OUT: its output staged out (each file fsync'd, rsa copy --durable) and verified on the shared file system"),
		row("ram@1g", "safe", "s", via.safe, nil, "THESIS T5.2 (derived: 35.87 + 224)", 260, "the job's start until RSA released it: output verified on the shared file system, RAMDISK gone"),
		row("ram@1g vs shared@1g", "safe_ratio", "x", direct.hold/via.safe, nil, "THESIS T5.2 (derived: 1109.86 / 260)", 4.3, "time to safe output: direct / RSA"),
		row("ram@1g vs shared@1g", "verified_ratio", "x", direct.hold/via.verified, nil, "", 0, "time to verified output: direct / RSA's DONE_STAGING_OUT"),
	}, nil
}

// profiledFops are the file operations at a brick a row gives (calls and
// mean latency): those that set a job's pace there.
func profiledFops() []string { return []string{"CREATE", "WRITE", "FSYNC", "LOOKUP", "READ", "RENAME"} }

// withFops adds fops' profiledFops to p, each as PREFIX+OP+"_n" (calls)
// and PREFIX+OP+"_us" (mean latency in microseconds).
func withFops(p map[string]string, prefix string, fops []gluster.FopStat) map[string]string {
	for _, s := range fops {
		if slices.Contains(profiledFops(), s.Op) && s.Calls > 0 {
			p = withParams(p, prefix+s.Op+"_n", strconv.FormatInt(s.Calls, 10),
				prefix+s.Op+"_us", strconv.FormatFloat(float64(s.Mean)/float64(time.Microsecond), 'f', 0, 64))
		}
	}
	return p
}

// pairOrder draws whether a pair's direct job runs first, from its
// latency and run: reproducible, and not the same every run.
func pairOrder(lat time.Duration, run int) bool {
	x := uint64(lat.Microseconds())*0x9e3779b97f4a7c15 + uint64(run+1)*0xbf58476d1ce4e5b9
	x ^= x >> 31
	x *= 0x94d049bb133111eb
	x ^= x >> 29
	return x&1 == 1
}

// t52Job is what one of a pair's jobs measured.
type t52Job struct {
	hold, run, verified, safe float64 // seconds
	toolRate                  float64 // a probe's own rate (Probe.Run), 0 for the thesis' writer
	slurmHold, sacctHold      float64 // seconds Slurm held the job's node, by squeue and by sacct (whole seconds)
	linkBytes                 int64   // through the compute host's link, both ways, during the job
	cpu                       cpuShare
	hostCPU                   map[string]float64 // CPU seconds by emulated host during the job
	fops                      []gluster.FopStat  // shared@1g's brick, during the job (nil: not profiled)
	ramdiskFops               []gluster.FopStat  // the RSA job's RAMDISK's bricks, its whole life (nil: not profiled)
}

// count keeps what a meter counted over the job.
func (j *t52Job) count(r reading) { j.linkBytes, j.cpu, j.hostCPU = r.linkBytes, r.cpu, r.hostCPU }

// direct runs the job straight to the shared file system.
func (t ClusterT52) direct(ctx context.Context, cred *syscall.Credential, local, work string) (t52Job, error) {
	var j t52Job
	conf, writer := t.slurmConf(), t.writer()
	body := fmt.Sprintf("#!/bin/bash\n#SBATCH -N 1\n#SBATCH -o %[1]s/direct.out\n%[4]s%[2]s --dir %[3]s/direct > %[1]s/direct.json\n", local, writer, work, t.jobEnv())
	if err := t.profile(ctx, nil); err != nil {
		return j, err
	}
	m := t.meter()
	id, err := t.sbatch(ctx, cred, conf, filepath.Join(local, "direct.sh"), body)
	if err != nil {
		return j, err
	}
	if err := t.waitSlurm(ctx, conf, id, 15*time.Minute); err != nil {
		return j, fmt.Errorf("direct job %s: %w", id, err)
	}
	j.count(m.read())
	if err := t.profile(ctx, &j.fops); err != nil {
		return j, err
	}
	if j.slurmHold, j.sacctHold, err = t.slurmHold(ctx, conf, id); err != nil {
		return j, err
	}
	w, err := readWriter(filepath.Join(local, "direct.json"))
	if err != nil {
		return j, fmt.Errorf("direct job %s: %w", id, err)
	}
	j.hold, j.toolRate = float64(w.End-w.Start)/1e9, w.Rate
	if err := t.checkOutput(filepath.Join(t.localShared(), filepath.Base(work), "direct")); err != nil {
		return j, fmt.Errorf("direct job %s's output: %w", id, err)
	}
	return j, nil
}

// viaRSA runs the job with its output directory a RAMDISK on the RSA
// hosts from its start, staged out to the shared file system after it.
func (t ClusterT52) viaRSA(ctx context.Context, cred *syscall.Credential, local, work string) (t52Job, error) {
	var j t52Job
	conf, writer := t.slurmConf(), t.writer()
	capacity := (int64(t.Ranks)*t.Size*5/4>>20 + 64)
	output := cmp.Or(t.Output, "shared")
	body := fmt.Sprintf("#!/bin/bash\n#SBATCH -N 1\n#SBATCH -o %[1]s/rsa.out\n#RSA capacity=%[4]dM pool=rsa output=%[5]s\n#RSA_DATA_OUT=%[3]s/rsa\n#RSA_DELAY=0\n%[6]s%[2]s --dir %[3]s/rsa --wait-mount > %[1]s/rsa.json\n",
		local, writer, work, capacity, output, t.jobEnv())
	if err := t.profile(ctx, nil); err != nil {
		return j, err
	}
	m := t.meter()
	submitted := time.Now()
	id, err := t.sbatch(ctx, cred, conf, filepath.Join(local, "rsa.sh"), body)
	if err != nil {
		return j, err
	}
	if err := t.waitSlurm(ctx, conf, id, 15*time.Minute); err != nil {
		return j, fmt.Errorf("RSA job %s: %w", id, err)
	}
	j.run = time.Since(submitted).Seconds()
	if j.slurmHold, j.sacctHold, err = t.slurmHold(ctx, conf, id); err != nil {
		return j, err
	}
	w, err := readWriter(filepath.Join(local, "rsa.json"))
	if err != nil {
		return j, fmt.Errorf("RSA job %s: %w", id, err)
	}
	j.hold, j.toolRate = float64(w.End-w.Start)/1e9, w.Rate
	if err := t.waitReleased(ctx, id, 15*time.Minute); err != nil {
		return j, fmt.Errorf("RSA job %s: %w", id, err)
	}
	j.safe = float64(time.Now().UnixNano()-w.Start) / 1e9
	j.count(m.read())
	if err := t.profile(ctx, &j.fops); err != nil {
		return j, err
	}
	l, err := t.rsaLog(ctx, id)
	if err != nil {
		return j, fmt.Errorf("RSA job %s: %w", id, err)
	}
	verified, err := l.verifiedAt()
	if err != nil {
		return j, fmt.Errorf("RSA job %s: %w", id, err)
	}
	j.verified = float64(verified.UnixNano()-w.Start) / 1e9
	if t.ProfileRAMDISK {
		if j.ramdiskFops, err = RAMDISKProfile(l.Lines); err != nil {
			return j, fmt.Errorf("RSA job %s: %w", id, err)
		}
	}
	// The output, checked through this host's own mount of shared@1g.
	if err := t.checkOutput(filepath.Join(t.localShared(), filepath.Base(work), "rsa")); err != nil {
		return j, fmt.Errorf("RSA job %s's output on the shared file system: %w", id, err)
	}
	return j, nil
}

// profile reads shared@1g's profile since the read before into into
// (nil: the start of an interval, the counts so far dropped); without
// t.Profile it does nothing.
func (t ClusterT52) profile(ctx context.Context, into *[]gluster.FopStat) error {
	if t.Profile == nil {
		return nil
	}
	s, err := t.Profile(ctx)
	if err != nil {
		return err
	}
	if into != nil {
		*into = s
	}
	return nil
}

// slurmHold is how long Slurm held job id's nodes by its own records,
// start to end in whole seconds: squeue's, while slurmctld still keeps the
// job, and sacct's (its job-completion record; the emulated cluster has no
// slurmdbd).
func (t ClusterT52) slurmHold(ctx context.Context, conf, id string) (squeue, sacct float64, err error) {
	s := rsatest.Slurm{Conf: conf}
	start, end, err := s.Span(ctx, id)
	if err != nil {
		return 0, 0, err
	}
	astart, aend, err := s.Accounted(ctx, id)
	if err != nil {
		return 0, 0, err
	}
	return end.Sub(start).Seconds(), aend.Sub(astart).Seconds(), nil
}

// slurmConf is the cluster's slurm.conf.
func (t ClusterT52) slurmConf() string { return filepath.Join(t.Dir, "etc", "slurm.conf") }

// writer is the job's command: the thesis' writers, t.Ranks files of
// t.Size (or t.probe), their timings as JSON on stdout; --dir to be added.
func (t ClusterT52) writer() string {
	if t.probe != nil {
		return t.probe.command(t.Lab)
	}
	return fmt.Sprintf("%s bench write --ranks %d --size %d --json", t.Lab, t.Ranks, t.Size)
}

// jobEnv is what the job's script sets before its command: Open MPI's
// settings for a probe's ranks.
func (t ClusterT52) jobEnv() string {
	if t.probe != nil {
		return mpiEnv
	}
	return ""
}

// checkOutput verifies what the job left in dir: the writer's files, or
// the probe's t.Ranks files of t.Size in any directories under dir.
func (t ClusterT52) checkOutput(dir string) error {
	if t.probe == nil {
		_, err := (Output{Ranks: t.Ranks, Size: t.Size}).Check(dir)
		return err
	}
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() || fi.Size() != t.Size {
			return fmt.Errorf("output check: %s is %v of %d bytes, want a file of %d", path, fi.Mode().Type(), fi.Size(), t.Size)
		}
		n++
		return nil
	})
	if err == nil && n != t.Ranks {
		err = fmt.Errorf("output check: %d files under %s, want %d", n, dir, t.Ranks)
	}
	return err
}

// rsaLog is RSA's log of Slurm job id: its transitions and its own log.
func (t ClusterT52) rsaLog(ctx context.Context, id string) (JobLog, error) {
	cfg := filepath.Join(t.Dir, "rsa", "rsa.toml")
	jobs, err := live.Jobs(ctx, t.RSA, cfg)
	if err != nil {
		return JobLog{}, err
	}
	j := live.Newest(jobs, id)[id]
	if j == nil {
		return JobLog{}, fmt.Errorf("RSA has no record of Slurm job %s", id)
	}
	out, err := exec.CommandContext(ctx, t.RSA, "--config", cfg, "log", "--json", strconv.FormatInt(j.ID, 10)).Output()
	if err != nil {
		return JobLog{}, fmt.Errorf("rsa log %d: %w", j.ID, err)
	}
	return ParseJobLog(out)
}

// verifiedAt is when RSA had the job's output staged out and verified
// (DONE_STAGING_OUT).
func (l JobLog) verifiedAt() (time.Time, error) {
	for _, e := range l.Events {
		if e.To == string(lifecycle.DoneStagingOut) {
			return e.At, nil
		}
	}
	return time.Time{}, fmt.Errorf("RSA job %s's log has no DONE_STAGING_OUT", l.Job)
}

// localShared is this host's mount of shared@1g, where the checks read.
func (t ClusterT52) localShared() string { return filepath.Join(bench.RunHome, "shared@1g") }

// network shapes the compute hosts' links (each at rate, each way),
// routes every host to shared@1g through this host and mounts it on each
// at sharedPath; undo reverses what this host keeps (forwarding, the
// server's route). The cluster's hosts go with it. id and cnet are the
// cluster's (RSA_CLUSTER_ID, its /24's three octets), snet shared@1g's
// link's.
func network(ctx context.Context, id int, cnet, snet, sharedPath, rate string, script func(time.Duration, ...string) (string, error), hosts, compute []string) (func(), error) {
	undos := []func(){}
	undo := func() {
		for i := len(undos) - 1; i >= 0; i-- {
			undos[i]()
		}
	}
	fwd, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	if err != nil {
		return undo, err
	}
	if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1\n"), 0o644); err != nil {
		return undo, err
	}
	undos = append(undos, func() { _ = os.WriteFile("/proc/sys/net/ipv4/ip_forward", fwd, 0o644) })
	server := snet + ".2"
	if _, err := rsatest.Run(ctx, "ip", "-n", "rsab-shared", "route", "replace", cnet+".0/24", "via", snet+".1"); err != nil {
		return undo, err
	}
	undos = append(undos, func() {
		_, _ = rsatest.Run(context.Background(), "ip", "-n", "rsab-shared", "route", "del", cnet+".0/24")
	})
	if err := shape(ctx, id, rate, script, compute); err != nil {
		return undo, err
	}
	// The stand-in's Gluster has no TLS, and management TLS is a host's
	// setting for every Gluster it mounts (RSA's, on these hosts, has it):
	// its client is started as mount.glusterfs would, told otherwise, and
	// waited for.
	mountShared := fmt.Sprintf(`glusterfs --secure-mgmt=no --volfile-server=%s --volfile-id=shared "$1" &&
for i in $(seq 100); do mountpoint -q "$1" && exit 0; sleep 0.1; done; echo "shared@1g: not mounted at $1 after 10 s" >&2; exit 1`, server)
	for _, h := range hosts {
		for _, args := range [][]string{
			{"ip", "route", "replace", snet + ".0/30", "via", cnet + ".1"},
			{"mkdir", "-p", sharedPath},
			{"sh", "-c", mountShared, "mount-shared", sharedPath},
		} {
			if _, err := script(time.Minute, append([]string{"cluster-up", "exec", h}, args...)...); err != nil {
				return undo, fmt.Errorf("shared@1g on %s: %w", h, err)
			}
		}
	}
	return undo, nil
}

// shape sets the compute hosts' links to rate, each way (tbf: one queue
// of up to 50 ms), in place of what they had.
func shape(ctx context.Context, id int, rate string, script func(time.Duration, ...string) (string, error), compute []string) error {
	tbf := []string{"root", "tbf", "rate", rate, "burst", "128kb", "latency", "50ms"}
	for _, c := range compute {
		if _, err := rsatest.Run(ctx, "tc", append([]string{"qdisc", "replace", "dev", fmt.Sprintf("vrsa%d-%s", id, c)}, tbf...)...); err != nil {
			return err
		}
		if _, err := script(time.Minute, append([]string{"cluster-up", "exec", c, "tc", "qdisc", "replace", "dev", "eth0"}, tbf...)...); err != nil {
			return err
		}
	}
	return nil
}

// sbatch writes the job script (the user's) and submits it as the user.
func (t ClusterT52) sbatch(ctx context.Context, cred *syscall.Credential, conf, path, body string) (string, error) {
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		return "", err
	}
	if err := os.Chown(path, int(cred.Uid), int(cred.Gid)); err != nil {
		return "", err
	}
	return rsatest.Slurm{Conf: conf}.Sbatch(ctx, t.User, filepath.Dir(path), path)
}

// waitSlurm waits until Slurm's job id has ended, and fails unless it
// completed. A slurmctld that does not answer is polled through.
func (t ClusterT52) waitSlurm(ctx context.Context, conf, id string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		switch st, _, err := (rsatest.Slurm{Conf: conf}).Job(ctx, id); {
		case err != nil:
		case st == "COMPLETED":
			return nil
		case rsatest.Ended(st):
			return fmt.Errorf("Slurm job %s ended %s", id, st)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("Slurm job %s not done within %s", id, timeout)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// waitReleased waits until RSA has released the job of Slurm job id:
// its output staged out and verified, its RAMDISK gone.
func (t ClusterT52) waitReleased(ctx context.Context, id string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if jobs, err := live.Jobs(ctx, t.RSA, filepath.Join(t.Dir, "rsa", "rsa.toml")); err == nil {
			if j := live.Newest(jobs, id)[id]; j != nil && j.RSA == lifecycle.Released {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("RSA did not release Slurm job %s within %s", id, timeout)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

func readWriter(path string) (JobReport, error) {
	var w JobReport
	b, err := os.ReadFile(path)
	if err != nil {
		return w, err
	}
	if err := json.Unmarshal(bytes.TrimSpace(b), &w); err != nil {
		return w, fmt.Errorf("%s: %w", path, err)
	}
	if w.End <= w.Start {
		return w, errors.New(path + ": no timing")
	}
	return w, nil
}

// refusedWithoutFUSE is a refused_fs_types line: the defaults but FUSE,
// for a daemon whose only FUSE is the benchmark's shared@1g.
func refusedWithoutFUSE() string {
	var q []string
	for _, t := range mount.DefaultRefusedFSTypes() {
		if t != "fuse" {
			q = append(q, strconv.Quote(t))
		}
	}
	return "refused_fs_types = [" + strings.Join(append(q, `"fuse.sshfs"`), ", ") + "]"
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
