package thesis

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/bench"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/rsatest"
	"github.com/rsa-hpc/rsa/internal/rsatest/live"
)

// T52 is the thesis' Table 5.2: a job of Ranks processes writes one
// file each (Size bytes) into one output directory. It runs twice: with
// its output straight on the shared file system, and through RSA (a
// RAMDISK at the job's own output path, staged out to the shared file
// system after the job ends). The headline is how long the job held its
// compute nodes each way, and how long until its output was safe on the
// shared file system.
type T52 struct {
	RSA       string // the rsa binary, which the job's user can run
	Lab       string // the rsa-lab binary, which the job's user can run: the job's writes (bench write)
	User      string // the job's user (created, and removed after, if missing)
	Shared    string // a directory on the shared file system (shared@1g)
	RAM       string // a directory on a RAM target, the source of the stage-out comparison
	Placement string // what RSA's RAMDISK is here: "ram" (the local engine)
	Ranks     int
	Size      int64
	Runs      int
	Work      string // the daemon's state, socket and RAMDISK root (removed after)
	// Latency is what delay-gen adds to each create and open on the
	// shared file system in this run ("0" for nothing), for the rows.
	Latency string
	// AfterJob, when set, is called after each RSA job's stage-out, while
	// the daemon still runs: its socket and the job's ID, for its log
	// (TLC's lifecycle timings).
	AfterJob func(ctx context.Context, socket, job string) error
}

// T52Result is one run's measurements, in seconds.
type T52Result struct {
	HoldDirect, HoldRSA      float64            // the job's command, start to exit
	OutputDirect, OutputRSA  float64            // the writers' release to their last close
	SafeRSA                  float64            // the job's start until its output was verified on Shared
	RunRSA                   float64            // rsa run, submission to exit: the RAMDISK built before the job starts (queue time under a scheduler), then the hold
	StageOut                 map[string]float64 // method → seconds, RAM → Shared, as the user
	HoldRSAPack, SafeRSAPack float64            // the same through RSA with the custom stage-out (pack)
}

// rsaRun is one job through RSA, in seconds: its command's start to exit
// (hold), the writers' output phase, rsa run from submission to exit, and
// the command's start until rsa wait saw the output staged out and the
// RAMDISK freed (safe).
type rsaRun struct {
	job                     string
	hold, output, run, safe float64
}

// rsaJob runs the job through rsa run: its output directory a RAMDISK
// from its start (delay 0), staged out to out after by stageOut (empty:
// RSA's default).
func (t T52) rsaJob(ctx context.Context, d *daemon, cred *syscall.Credential, out, stageOut string, writer func(string, bool) []string) (rsaRun, error) {
	var r rsaRun
	capacity := strconv.FormatInt(int64(t.Ranks)*t.Size*5/4+(64<<20), 10)
	args := []string{t.RSA, "--socket", d.socket, "run", "--out", out, "--delay", "0", "--capacity", capacity}
	if stageOut != "" {
		args = append(args, "--stage-out", stageOut)
	}
	args = append(append(args, "--"), writer(out, true)...)
	var stderr bytes.Buffer
	submitted := time.Now()
	stdout, err := runAsStderr(ctx, cred, &stderr, args...)
	r.run = time.Since(submitted).Seconds()
	if err != nil {
		return r, fmt.Errorf("RSA job: %w: %s", err, stderr.String())
	}
	var w JobReport
	if err := json.Unmarshal(stdout, &w); err != nil {
		return r, fmt.Errorf("RSA job's report %q: %w", stdout, err)
	}
	r.hold, r.output = float64(w.End-w.Start)/1e9, w.Output
	m := regexp.MustCompile(`job (\d+) submitted`).FindStringSubmatch(stderr.String())
	if m == nil {
		return r, fmt.Errorf("RSA job: rsa run did not name its job: %s", stderr.String())
	}
	r.job = m[1]
	if _, err := runAs(ctx, cred, t.RSA, "--socket", d.socket, "wait", r.job); err != nil {
		return r, fmt.Errorf("RSA job %s: stage-out: %w", r.job, err)
	}
	r.safe = float64(time.Now().UnixNano()-w.Start) / 1e9
	return r, nil
}

// JobReport is what a job's command prints with --json ('rsa-lab bench
// write' and 'rsa-lab bench probe'), and what the lab reads back: the
// command's start and end, and what it measured itself.
type JobReport struct {
	Start  int64   `json:"start_unix_nano"`
	End    int64   `json:"end_unix_nano"`
	Output float64 `json:"output_seconds,omitempty"` // the writer's output phase, seconds
	Rate   float64 `json:"rate,omitempty"`           // a probe's own rate (Probe.Run)
}

// Run runs T52 Runs times and returns the rows, each beside the thesis'
// number.
func (t T52) Run(ctx context.Context) ([]bench.Row, error) {
	results, err := runsWithDaemon(ctx, t.RSA, t.Work, t.User, t.Runs, "T52", t.once)
	if err != nil {
		return nil, err
	}
	return t.rows(results), nil
}

// runsWithDaemon calls once runs times (at least once), as user (created
// for the while if missing) and with an rsa serve of the benchmark's own
// (state under work), and returns each run's result.
func runsWithDaemon[R any](ctx context.Context, rsa, work, user string, runs int, name string,
	once func(context.Context, *daemon, *syscall.Credential, int) (R, error)) ([]R, error) {
	cred, cleanupUser, err := ensureUser(user)
	if err != nil {
		return nil, err
	}
	defer cleanupUser()
	d, err := startDaemon(ctx, rsa, work)
	if err != nil {
		return nil, err
	}
	defer d.stop()
	var results []R
	for i := range max(runs, 1) {
		r, err := once(ctx, d, cred, i)
		if err != nil {
			return nil, fmt.Errorf("%s run %d: %w", name, i+1, err)
		}
		results = append(results, r)
	}
	return results, nil
}

func (t T52) once(ctx context.Context, d *daemon, cred *syscall.Credential, run int) (T52Result, error) {
	r := T52Result{StageOut: map[string]float64{}}
	base := filepath.Join(t.Shared, fmt.Sprintf("t52-%d-%d", os.Getpid(), run))
	src := filepath.Join(t.RAM, fmt.Sprintf("t52-src-%d-%d", os.Getpid(), run))
	defer os.RemoveAll(base)
	defer os.RemoveAll(src)
	dirs := map[string]string{}
	for _, n := range []string{"direct", "rsa", "rsa-pack", "rsync", "tar", "copy"} {
		dirs[n] = filepath.Join(base, n)
	}
	for _, dir := range append(mapValues(dirs), src) {
		if err := mkdirOwned(dir, cred); err != nil {
			return r, err
		}
	}
	writer := func(dir string, waitMount bool) []string {
		a := []string{t.Lab, "bench", "write", "--dir", dir, "--ranks", strconv.Itoa(t.Ranks), "--size", strconv.FormatInt(t.Size, 10), "--json"}
		if waitMount {
			a = append(a, "--wait-mount")
		}
		return a
	}

	// The job straight on the shared file system.
	start := time.Now()
	stdout, err := runAs(ctx, cred, writer(dirs["direct"], false)...)
	if err != nil {
		return r, fmt.Errorf("direct job: %w", err)
	}
	r.HoldDirect = time.Since(start).Seconds()
	var w JobReport
	if err := json.Unmarshal(stdout, &w); err != nil {
		return r, fmt.Errorf("direct job's report %q: %w", stdout, err)
	}
	r.OutputDirect = w.Output
	if _, err := (Output{Ranks: t.Ranks, Size: t.Size}).Check(dirs["direct"]); err != nil {
		return r, fmt.Errorf("direct job: %w", err)
	}

	// The same job through RSA, twice as the thesis ran it: staged out by
	// RSA's default (rsa copy; the thesis' default was rsync) and by a
	// custom stage-out into one archive (pack; the thesis' was tar cf).
	def, err := t.rsaJob(ctx, d, cred, dirs["rsa"], "", writer)
	if err != nil {
		return r, err
	}
	if _, err := (Output{Ranks: t.Ranks, Size: t.Size}).Check(dirs["rsa"]); err != nil {
		return r, fmt.Errorf("RSA job %s's output on the shared file system: %w", def.job, err)
	}
	r.HoldRSA, r.OutputRSA, r.RunRSA, r.SafeRSA = def.hold, def.output, def.run, def.safe
	if t.AfterJob != nil {
		if err := t.AfterJob(ctx, d.socket, def.job); err != nil {
			return r, fmt.Errorf("RSA job %s: %w", def.job, err)
		}
	}
	pack, err := t.rsaJob(ctx, d, cred, dirs["rsa-pack"], "pack", writer)
	if err != nil {
		return r, err
	}
	// pack leaves one verified archive, rsa-job-ID.tar, holding every file.
	if st, err := os.Stat(filepath.Join(dirs["rsa-pack"], "rsa-job-"+pack.job+".tar")); err != nil || st.Size() < int64(t.Ranks)*t.Size {
		return r, fmt.Errorf("RSA job %s (stage-out pack): no archive of all %d files on the shared file system (%v)", pack.job, t.Ranks, err)
	}
	r.HoldRSAPack, r.SafeRSAPack = pack.hold, pack.safe

	// The thesis' stage-out methods, and RSA's mover, from the same files
	// in RAM to the shared file system, as the user.
	if _, err := runAs(ctx, cred, writer(src, false)...); err != nil {
		return r, fmt.Errorf("stage-out source: %w", err)
	}
	for _, s := range []struct {
		name string
		argv []string
	}{
		{"rsync", []string{"rsync", "-a", src + "/", dirs["rsync"] + "/"}},
		{"tar", []string{"tar", "-cf", filepath.Join(dirs["tar"], "result.tar"), "-C", src, "."}},
		{"rsa copy", []string{t.RSA, "copy", src, dirs["copy"]}},
	} {
		start := time.Now()
		if _, err := runAs(ctx, cred, s.argv...); err != nil {
			return r, fmt.Errorf("stage-out by %s: %w", s.name, err)
		}
		r.StageOut[s.name] = time.Since(start).Seconds()
	}
	if _, err := (Output{Ranks: t.Ranks, Size: t.Size}).Check(dirs["copy"]); err != nil {
		return r, fmt.Errorf("rsa copy: %w", err)
	}
	return r, nil
}

func mapValues(m map[string]string) []string {
	var v []string
	for _, x := range m {
		v = append(v, x)
	}
	return v
}

// rows turns runs into rows: medians, every run, the thesis beside.
func (t T52) rows(rs []T52Result) []bench.Row {
	col := func(f func(T52Result) float64) []float64 {
		var v []float64
		for _, r := range rs {
			v = append(v, f(r))
		}
		return v
	}
	params := map[string]string{"ranks": strconv.Itoa(t.Ranks), "size": strconv.FormatInt(t.Size, 10), "layout": "one directory",
		"shared_latency": cmp.Or(t.Latency, "0")}
	row := func(target, metric, unit string, runs []float64, ref string, src float64, note string) bench.Row {
		r := bench.Row{Bench: "thesis", Case: "T52", Target: target, Params: params, Metric: metric, Unit: unit,
			Value: bench.Median(runs), Runs: runs, Note: note}
		if ref != "" {
			r.Source(ref, src, unit)
		}
		return r
	}
	ratio := func(a, b func(T52Result) float64) []float64 {
		return col(func(r T52Result) float64 { return a(r) / b(r) })
	}
	holdD := func(r T52Result) float64 { return r.HoldDirect }
	holdR := func(r T52Result) float64 { return r.HoldRSA }
	safeR := func(r T52Result) float64 { return r.SafeRSA }
	rows := []bench.Row{
		row("shared@1g", "hold", "s", col(holdD), "THESIS T5.2 No RSA Output Mean", 1109.86, "the job's command, start to exit, writing straight to the shared file system"),
		row(t.Placement, "hold", "s", col(holdR), "THESIS T5.2 RSA default Output Mean", 35.87, "the job's command under rsa run, start to exit, including its wait for the output switch"),
		row(t.Placement, "run", "s", col(func(r T52Result) float64 { return r.RunRSA }), "", 0, "rsa run, submission to exit: the RAMDISK built before the job starts (queue time under a scheduler), then the hold"),
		row(t.Placement+" vs shared@1g", "hold_ratio", "x", ratio(holdD, holdR), "THESIS T5.2 (derived)", 30.9, "compute-hold ratio: shared / RSA"),
		row("shared@1g", "output", "s", col(func(r T52Result) float64 { return r.OutputDirect }), "", 0, "the writers' release to the last close (fsync'd)"),
		row(t.Placement, "output", "s", col(func(r T52Result) float64 { return r.OutputRSA }), "", 0, "the writers' release to the last close (fsync'd)"),
		row(t.Placement, "safe", "s", col(safeR), "THESIS T5.2 (derived: 35.87 + 224)", 260, "the job's start until its output is verified on the shared file system and the RAMDISK freed (rsa wait)"),
		row(t.Placement+" vs shared@1g", "safe_ratio", "x", ratio(holdD, safeR), "THESIS T5.2 (derived: 1109.86 / 260)", 4.3, "time to safe output: direct / RSA"),
	}
	// The thesis' "RSA custom" columns: a stage-out into one archive.
	pack := func(p map[string]string) map[string]string {
		q := map[string]string{"stage_out": "pack"}
		for k, v := range p {
			q[k] = v
		}
		return q
	}
	holdP := func(r T52Result) float64 { return r.HoldRSAPack }
	safeP := func(r T52Result) float64 { return r.SafeRSAPack }
	for _, r := range []bench.Row{
		row(t.Placement, "hold", "s", col(holdP), "THESIS T5.2 RSA custom Output (runs' mean)", 35.99, "as above, the output staged out by rsa copy --pack into one verified archive"),
		row(t.Placement+" vs shared@1g", "hold_ratio", "x", ratio(holdD, holdP), "THESIS T5.2 (derived: 1109.86 / 35.99)", 30.8, ""),
		row(t.Placement, "safe", "s", col(safeP), "THESIS T5.2 (derived: 35.99 + 179)", 215, "the job's start until its archive is verified on the shared file system and the RAMDISK freed"),
		row(t.Placement+" vs shared@1g", "safe_ratio", "x", ratio(holdD, safeP), "THESIS T5.2 (derived: 1109.86 / 215)", 5.2, "time to safe output: direct / RSA with the archive stage-out"),
	} {
		r.Params = pack(r.Params)
		rows = append(rows, r)
	}
	for _, m := range []struct {
		name, ref string
		src       float64
	}{{"rsync", "THESIS T5.2 RSA default Stage-Out Mean", 224}, {"tar", "THESIS T5.2 RSA custom Stage-Out Mean", 179}, {"rsa copy", "", 0}} {
		rows = append(rows, row("ram -> shared@1g", "stage_out "+m.name, "s", col(func(r T52Result) float64 { return r.StageOut[m.name] }), m.ref, m.src, "as the user, from RAM to the shared file system"))
	}
	rows = append(rows, row("ram -> shared@1g", "stage_out rsync/tar", "x",
		ratio(func(r T52Result) float64 { return r.StageOut["rsync"] }, func(r T52Result) float64 { return r.StageOut["tar"] }),
		"THESIS T5.2 (derived: 224 / 179)", 1.25, ""))
	return rows
}

// ensureUser returns the credential of the named user, creating the
// account (and removing it afterwards) if it does not exist.
func ensureUser(name string) (*syscall.Credential, func(), error) {
	noop := func() {}
	a, made, err := rsatest.EnsureAccount(name, "--no-create-home", "--shell", "/usr/sbin/nologin")
	cleanup := noop
	if made {
		cleanup = func() { _ = rsatest.RemoveAccount(name) }
	}
	if err != nil {
		cleanup()
		return nil, noop, err
	}
	return &syscall.Credential{Uid: a.UID, Gid: a.GID, Groups: []uint32{}}, cleanup, nil
}

func mkdirOwned(dir string, cred *syscall.Credential) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.Chown(dir, int(cred.Uid), int(cred.Gid))
}

func runAs(ctx context.Context, cred *syscall.Credential, argv ...string) ([]byte, error) {
	var stderr bytes.Buffer
	out, err := runAsStderr(ctx, cred, &stderr, argv...)
	if err != nil {
		return out, fmt.Errorf("%w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}

func runAsStderr(ctx context.Context, cred *syscall.Credential, stderr *bytes.Buffer, argv ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/", "LANG=C"}
	cmd.Dir = "/"
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	err := cmd.Run()
	if err != nil {
		return stdout.Bytes(), fmt.Errorf("%s: %w", filepath.Base(argv[0]), err)
	}
	return stdout.Bytes(), nil
}

// daemon is an rsa serve of the benchmark's own: its state, socket and
// RAMDISK root under a directory it removes when it stops.
type daemon struct {
	*live.Daemon
	dir    string
	socket string
}

func startDaemon(ctx context.Context, rsa, dir string) (*daemon, error) {
	dir = cmp.Or(dir, filepath.Join(bench.StateHome, "daemon"))
	if _, err := os.Stat(dir); err == nil {
		return nil, fmt.Errorf("%s exists: another rsa-lab bench runs, or one was killed (check, then remove it)", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	d := &daemon{dir: dir, socket: filepath.Join(dir, "run", "rsa.sock")}
	conf := filepath.Join(dir, "rsa.toml")
	// shared@1g, the stand-in for the site's GPFS, is Gluster over FUSE,
	// which RSA refuses to mount over by default (a user's FUSE server
	// could stall root). This daemon's only FUSE is the benchmark's own.
	if err := os.WriteFile(conf, fmt.Appendf(nil, "state_dir = %q\nsocket = %q\nramdisk_root = %q\n%s\ninput_mode = \"files\"\n",
		filepath.Join(dir, "state"), d.socket, filepath.Join(dir, "ramdisk"), refusedWithoutFUSE()), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	served, err := live.Serve(ctx, rsa, conf, d.socket, filepath.Join(dir, "serve.log"), 10*time.Second)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	d.Daemon = served
	return d, nil
}

// stop ends the daemon (TERM, by its pid; KILL if it still runs 30 s
// later) and removes its directory.
func (d *daemon) stop() {
	_ = d.Stop(syscall.SIGTERM, 30*time.Second)
	// A daemon that died with a RAMDISK mounted leaves it under dir: detach
	// it rather than empty it through the mount.
	if ms, err := mount.List(); err == nil {
		for _, m := range ms {
			if strings.HasPrefix(m.Point, d.dir+"/") {
				_ = unix.Unmount(m.Point, unix.MNT_DETACH)
			}
		}
	}
	os.RemoveAll(d.dir)
}
