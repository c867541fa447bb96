package slurm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/rsatest"
	"github.com/rsa-hpc/rsa/internal/rsatest/live"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

const (
	loadUsers = 4
	// loadStall fails a run in which no job ended for this long: a hang.
	// It covers a slurmctld restart, after which Slurm holds the jobs it
	// was staging in back for a minute (docs/slurm.md).
	loadStall = 4 * time.Minute
	// loadSeed is make test's seed: the same mix of jobs and moments of
	// the crashes in every run, so that a failure is the code's, not a
	// rare draw's. The long runs draw a new one each time.
	loadSeed = 20261129
	// loadPoll is how often the driver reads squeue and RSA's active jobs.
	loadPoll = 500 * time.Millisecond
)

// The phases a job is cancelled in.
const (
	phasePending    = "pending"     // at once after sbatch, before Slurm set it up
	phaseStagingIn  = "staging-in"  // its stage-in program is still running
	phaseRunning    = "running"     // it wrote its result into RAM and lingers
	phaseStagingOut = "staging-out" // its stage-out program runs (and waits for the cancel)
)

var cancelPhases = []string{phasePending, phaseStagingIn, phaseRunning, phaseStagingOut}

// The kinds of load job.
const (
	kindInOut = "inout" // input and output in RAM, switched after RSA_DELAY
	kindIn    = "in"    // input in RAM; the job writes its result to disk itself
	kindOut   = "out"   // output in RAM only
)

// loadDelay is RSA_DELAY of the jobs with input and output: the time they
// have to read their input from RAM before it is switched to output. It
// is counted from the job's start in RSA, before its mounts are made and
// before slurmd launches the script, so it leaves room for a loaded host.
const loadDelay = 4

// loadJob is one sbatch: a plain job or an array job.
type loadJob struct {
	n        int
	c        *cluster // the job's user's view of the cluster
	kind     string
	capacity string // #RSA capacity=
	tasks    int    // array tasks; 0: a plain job
	cancel   string // phase to cancel it in; "": not cancelled
	failOut  bool   // its stage-out program fails until fixed
	in, out  string // #RSA_DATA_IN, #RSA_DATA_OUT ("" if none)
	results  string // where the job's result goes: out, or a plain directory
	inSum    string // sha256 of the input files' concatenation in name order
	stageIn  string // #RSA_STAGE_IN
	stageOut string // #RSA_STAGE_OUT

	id        string // Slurm's id of the submission (an array job's id)
	submitted time.Time
	units     []*loadUnit
}

// loadUnit is one Slurm job: a plain job or one task of an array.
type loadUnit struct {
	job   *loadJob
	task  int    // array task id; 0 for a plain job
	name  string // squeue's %i: "123" or "123_2", the id scancel takes (not a task's own)
	jobID string // the Slurm job id (an array task's own), RSA's Spec.Name

	state, reason string    // as squeue last said
	queued        bool      // seen waiting for pool space (BurstBufferResources)
	holds         int       // times seen held by Slurm (and released)
	released      time.Time // when last released
	wedged        bool      // cancelled by the test: pending long after its release

	cancelled   bool   // scancel was run
	cancelledIn string // RSA's state when it was
	cancelOut   string // scancel's output and error, if it failed

	failSeen time.Time // RSA first seen STAGE_OUT_FAILED
	retried  bool

	final               bool
	finalAt             time.Time
	finalState, finalRe string
}

type load struct {
	t     *testing.T
	name  string
	c     *cluster // as root; work is the load's directory
	users []*cluster
	rsa   *api.Client
	rng   *rand.Rand

	jobs  []*loadJob
	units []*loadUnit // those submitted, in order
	total int         // units planned

	window    int
	submitted int // jobs submitted (index into jobs)
	inflight  int // units submitted and not final
	finals    int
	firstRSA  int64 // RSA job ids above this one are the load's
	pool      int64 // the RSA nodes' capacity, bytes
	peak      int64 // the most RAM RSA's jobs held at once, bytes
	start     time.Time
	stats     daemonStats

	crashAt   []int // rsa serve is killed when this many units have ended
	ctldAt    int   // slurmctld is restarted when this many units have ended; -1: never
	crashes   int
	restarted bool
}

// TestLoad puts RSA under load: many jobs of four users through real Slurm
// (burst_buffer/lua) at once, once undisturbed ("steady") and once with
// rsa serve killed with SIGKILL three times ("crashes"), with the same end
// checks. In make test-long and make test-load (more jobs than make
// test's) the crash run also restarts slurmctld once, and the seed is
// drawn anew. make test leaves the restart out: Slurm defers every job it
// was staging in by a minute after it (see testCtldRestart), which
// TestBurstBuffer covers for RSA with one job.
//
// The jobs are a seeded mix: input and output, input only (the job writes
// its result to disk itself), output only; sizes from 32M to 640M of the
// cluster's 1G pool, so that Slurm queues some on RSA capacity
// (BurstBufferResources); one in ten (at least one in each phase), drawn
// at random, cancelled with scancel in one of four phases in turn
// (pending, staging in, running, staging out); one in twenty with a stage-out program that fails until an
// administrator fixes it and runs rsa retry; and array jobs. At the end
// every job must be in its expected Slurm state, every RSA record of it
// FINISHED/RELEASED, every output file that should exist on disk with the
// content the job wrote (its job id, its user, the file systems it saw and
// the hash of the input it read) and nothing else beside it, and nothing
// of RSA left: no mounts, RAMDISKs, allocations, nor processes of the
// users. A job that Slurm holds (a hook failed) is an error; the test
// releases it, as an administrator would, to check the rest of the load.
//
// RSA_LOAD_JOBS sets the number of Slurm jobs (array tasks count one by
// one; default 24, make test-long 40, make test-load 1000), RSA_LOAD_SEED the seed (logged,
// to replay a run's mix of jobs and moments of the crashes; make test
// uses loadSeed), RSA_LOAD_WINDOW how many jobs are submitted and not yet
// ended at most (default 32: a queue that keeps the four compute nodes
// and the pool busy without making every job wait for the whole backlog).
// Each run logs one line to grep:
//
//	load: name=steady jobs=40 users=4 ... throughput=... jobs/min ...
//
// defaultLoadJobs is make test's load: every kind of job and each cancel
// phase at least once (plan), on two cores beside test/cluster.
const defaultLoadJobs = 24

func TestLoad(t *testing.T) {
	def := defaultLoadJobs
	if testutil.Long() {
		def = 40
	}
	jobs := loadEnvInt(t, "RSA_LOAD_JOBS", def)
	window := loadEnvInt(t, "RSA_LOAD_WINDOW", 32)
	long := testutil.Long() || jobs > defaultLoadJobs
	seed := uint64(loadSeed)
	if long {
		seed = uint64(time.Now().UnixNano())
	}
	if s := os.Getenv("RSA_LOAD_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("RSA_LOAD_SEED=%q: %v", s, err)
		}
	}
	t.Logf("load: seed=%d jobs=%d window=%d (RSA_LOAD_SEED=%d replays this mix of jobs)", seed, jobs, window, seed)
	if jobs < 10 {
		t.Fatalf("RSA_LOAD_JOBS=%d: the mix needs at least 10 jobs", jobs)
	}
	c := startCluster(t, "bb", 4)
	t.Logf("load: %s, 4 compute nodes, burst_buffer/lua", c.root("scontrol", "--version"))
	users := testutil.EnsureUsers(t, loadUsers)
	if !t.Run("steady", func(t *testing.T) { runLoad(t, c, users, "steady", jobs, window, seed, false, false) }) {
		return // a failed run may leave jobs that would muddle the next
	}
	t.Run("crashes", func(t *testing.T) { runLoad(t, c, users, "crashes", jobs, window, seed, true, long) })
}

func loadEnvInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, s)
	}
	return n
}

// runLoad runs one load of n Slurm jobs on the cluster, with rsa serve
// killed three times if crash and slurmctld restarted once if also
// restartCtld, and checks the end.
func runLoad(t *testing.T, base *cluster, users []testutil.User, name string, n, window int, seed uint64, crash, restartCtld bool) {
	stream := uint64(1)
	if crash {
		stream = 2
	}
	root := base.forUser(base.user, testutil.TempDir(t))
	root.t = t
	l := &load{
		t: t, name: name, c: root, window: window, ctldAt: -1,
		rsa:   api.NewClient(filepath.Join(base.dir, "rsa", "rsa.sock")),
		rng:   rand.New(rand.NewPCG(seed, stream)),
		stats: daemonStats{pidFile: filepath.Join(base.dir, "pids", "rsa")},
	}
	for _, u := range users {
		uc := root.forUser(u, testutil.MkdirOwned(t, u, filepath.Join(root.work, u.Name)))
		uc.file("sleepy-in.sh", "#!/bin/bash\n# Never done: the job is cancelled while this runs.\nsleep 600\ncp -a \"$2\"/. \"$1\"/\n", 0o755)
		uc.file("slow-out.sh", `#!/bin/bash
# Waits until the test has cancelled the job during its stage-out (the
# file DATA_OUT.cancelled), at most two minutes, then copies.
for _ in $(seq 1200); do [[ -e $2.cancelled ]] && break; sleep 0.1; done
cp -a "$1"/. "$2"/
`, 0o755)
		uc.file("flaky-out.sh", `#!/bin/bash
# Fails until the administrator fixes it (the file DATA_OUT.fixed).
if [[ -e $2.fixed ]]; then cp -a "$1"/. "$2"/; exit; fi
echo 'disk quota exceeded' >&2
exit 1
`, 0o755)
		l.users = append(l.users, uc)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nodes, err := l.rsa.Nodes(ctx)
	if err != nil {
		t.Fatalf("reading RSA's nodes: %v", err)
	}
	for _, nd := range nodes {
		l.pool += nd.Capacity
	}
	if big := int64(640 << 20); l.pool >= 2*big || l.pool < big {
		t.Fatalf("RSA's nodes hold %d MiB: the load's sizes are for a pool of 1G (scripts/slurm-up's default)", l.pool>>20)
	}
	l.plan(n)
	if crash {
		// Moments drawn between a tenth and nine tenths of the run. The
		// restart's is drawn even when unused, so that a seed gives the
		// same crash run with or without it.
		for range 3 {
			l.crashAt = append(l.crashAt, n/10+l.rng.IntN(n*8/10))
		}
		slices.Sort(l.crashAt)
		ctldAt := n/5 + l.rng.IntN(n/2)
		if restartCtld {
			l.ctldAt = ctldAt
			t.Logf("load: %s: rsa serve is killed after %v jobs ended, slurmctld restarted after %d", name, l.crashAt, l.ctldAt)
		} else {
			t.Logf("load: %s: rsa serve is killed after %v jobs ended; slurmctld is not restarted (make test-long and make test-load restart it)", name, l.crashAt)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			l.logStuck()
			// Leave no job behind for the cluster's teardown.
			base.slurm.Command(context.Background(), "scancel", "-p", "rsa").Run()
		}
	})
	l.firstRSA = l.newestRSA()
	if err := l.stats.reset(); err != nil {
		t.Fatal(err)
	}
	l.run(time.Duration(n)*15*time.Second + 10*time.Minute)
	wall := time.Since(l.start)
	l.stats.sample()
	l.check(wall)
}

// plan draws the mix of jobs: exactly a tenth of the units cancelled, in
// the four phases in turn; a twentieth with a failing stage-out; about
// 15% as tasks of arrays of three; the rest plain jobs of the three kinds.
// Every size fits the pool, and at least two are big enough (640M of 1G)
// that they never fit at once.
func (l *load) plan(n int) {
	rng := l.rng
	pick := func(weights []int, values []string) string {
		sum := 0
		for _, w := range weights {
			sum += w
		}
		r := rng.IntN(sum)
		for i, w := range weights {
			if r < w {
				return values[i]
			}
			r -= w
		}
		panic("unreachable")
	}
	size := func() string {
		return pick([]int{30, 25, 20, 15, 10}, []string{"32M", "64M", "128M", "256M", "640M"})
	}
	var specs []*loadJob
	units := 0
	add := func(j *loadJob) {
		specs = append(specs, j)
		units += max(j.tasks, 1)
	}
	for i := range max(len(cancelPhases), n/10) {
		add(&loadJob{kind: kindInOut, capacity: size(), cancel: cancelPhases[i%len(cancelPhases)]})
	}
	for range max(1, n/20) {
		add(&loadJob{kind: pick([]int{1, 1}, []string{kindInOut, kindOut}), capacity: size(), failOut: true})
	}
	for range max(1, n*15/100/3) {
		add(&loadJob{kind: kindInOut, capacity: pick([]int{1, 1}, []string{"64M", "128M"}), tasks: 3})
	}
	for range 2 {
		add(&loadJob{kind: kindInOut, capacity: "640M"})
	}
	for units < n {
		add(&loadJob{kind: pick([]int{55, 25, 20}, []string{kindInOut, kindIn, kindOut}), capacity: size()})
	}
	rng.Shuffle(len(specs), func(i, k int) { specs[i], specs[k] = specs[k], specs[i] })
	for i, j := range specs {
		j.n = i
		j.c = l.users[rng.IntN(len(l.users))]
		l.prepare(j)
		l.jobs = append(l.jobs, j)
	}
	counts := map[string]int{}
	for _, j := range l.jobs {
		counts[j.kind] += max(j.tasks, 1)
		if j.cancel != "" {
			counts["cancel-"+j.cancel]++
		}
		if j.failOut {
			counts["stage-out-fails"]++
		}
		if j.tasks > 0 {
			counts["array-tasks"] += j.tasks
		}
		if j.capacity == "640M" {
			counts["640M"] += max(j.tasks, 1)
		}
	}
	l.total = units
	l.t.Logf("load: %s: %d jobs (%d sbatch): %v", l.name, units, len(l.jobs), counts)
}

// prepare makes the job's directories and input, owned by its user.
func (l *load) prepare(j *loadJob) {
	uc := j.c
	base := fmt.Sprintf("j%04d", j.n)
	if j.kind != kindOut {
		j.in = uc.mkdir(base + "-in")
		h := sha256.New()
		for i := range 1 + l.rng.IntN(3) {
			b := make([]byte, 1<<10+l.rng.IntN(63<<10))
			for k := range b {
				b[k] = byte(l.rng.Uint32())
			}
			p := filepath.Join(j.in, fmt.Sprintf("f%02d", i))
			if err := os.WriteFile(p, b, 0o644); err != nil {
				l.t.Fatal(err)
			}
			if err := os.Chown(p, int(uc.user.UID), int(uc.user.GID)); err != nil {
				l.t.Fatal(err)
			}
			h.Write(b)
		}
		j.inSum = fmt.Sprintf("%x", h.Sum(nil))
	}
	if j.kind == kindIn {
		j.results = uc.mkdir(base + "-results")
	} else {
		j.out = uc.mkdir(base + "-out")
		j.results = j.out
	}
	switch {
	case j.cancel == phaseStagingIn:
		j.stageIn = filepath.Join(uc.work, "sleepy-in.sh")
	case j.cancel == phaseStagingOut:
		j.stageOut = filepath.Join(uc.work, "slow-out.sh")
	case j.failOut:
		j.stageOut = filepath.Join(uc.work, "flaky-out.sh")
	}
}

// script is the job's batch script. It writes one line, into its output
// RAMDISK once RSA has switched it there (or its results directory), that
// the end check compares: the job's id, its user, the file system its
// input and output were on and the hash of the input it read.
func (j *loadJob) script() string {
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	if j.tasks > 0 {
		fmt.Fprintf(&b, "#SBATCH --array=1-%d\n", j.tasks)
	}
	limit := 3
	if j.cancel == phaseRunning {
		limit = 15 // it lingers until cancelled
	}
	fmt.Fprintf(&b, "#SBATCH --time=%d\n", limit)
	fmt.Fprintf(&b, "#RSA capacity=%s pool=rsa\n", j.capacity)
	if j.in != "" {
		fmt.Fprintf(&b, "#RSA_DATA_IN=%s\n", j.in)
	}
	if j.stageIn != "" {
		fmt.Fprintf(&b, "#RSA_STAGE_IN=%s\n", j.stageIn)
	}
	if j.out != "" {
		fmt.Fprintf(&b, "#RSA_DATA_OUT=%s\n", j.out)
		delay := 0
		if j.in != "" {
			delay = loadDelay
		}
		fmt.Fprintf(&b, "#RSA_DELAY=%d\n", delay)
	}
	if j.stageOut != "" {
		fmt.Fprintf(&b, "#RSA_STAGE_OUT=%s\n", j.stageOut)
	}
	b.WriteString(`set -u
name=result
[[ -n ${SLURM_ARRAY_TASK_ID:-} ]] && name=task-$SLURM_ARRAY_TASK_ID
line="job=$SLURM_JOB_ID${SLURM_ARRAY_TASK_ID:+ task=$SLURM_ARRAY_TASK_ID} user=$(id -un)"
`)
	if j.in != "" {
		fmt.Fprintf(&b, `infs=$(findmnt -n -o FSTYPE --mountpoint %[1]s || echo none)
sum=$(cd %[1]s && cat $(ls) | sha256sum | cut -d' ' -f1)
line="$line in=$infs sum=$sum"
`, j.in)
	}
	if j.out != "" {
		// Polled, not timed: the switch to output follows the delay.
		fmt.Fprintf(&b, `for _ in $(seq 600); do
	outfs=$(findmnt -n -o FSTYPE --mountpoint %[1]s || echo none)
	[[ $outfs == tmpfs ]] && break
	sleep 0.1
done
line="$line out=$outfs"
`, j.out)
	}
	fmt.Fprintf(&b, "echo \"$line\" > %s/$name\n", j.results)
	if j.cancel == phaseRunning {
		b.WriteString("sleep 600\n")
	}
	return b.String()
}

// bytes is the job's capacity= in bytes (sizes are "NM").
func (j *loadJob) bytes() int64 {
	n, err := strconv.ParseInt(strings.TrimSuffix(j.capacity, "M"), 10, 64)
	if err != nil {
		panic(fmt.Sprintf("capacity %q", j.capacity))
	}
	return n << 20
}

// want is the line the unit's job writes, as the end check expects it.
func (u *loadUnit) want() string {
	j := u.job
	s := "job=" + u.jobID
	if u.task > 0 {
		s += fmt.Sprintf(" task=%d", u.task)
	}
	s += " user=" + j.c.user.Name
	if j.in != "" {
		s += " in=tmpfs sum=" + j.inSum
	}
	if j.out != "" {
		s += " out=tmpfs"
	}
	return s + "\n"
}

// file is the name of the unit's result in its job's results directory.
func (u *loadUnit) file() string {
	if u.task > 0 {
		return fmt.Sprintf("task-%d", u.task)
	}
	return "result"
}

// run submits the jobs, keeping at most window of them unfinished, and
// follows them until every one has ended, acting on each (cancel, retry)
// when it reaches its phase, and disturbing the daemons in a crash run.
func (l *load) run(timeout time.Duration) {
	l.t.Helper()
	l.start = time.Now()
	deadline := l.start.Add(timeout)
	lastEnd, ended := time.Now(), 0
	for l.finals < len(l.units) || l.submitted < len(l.jobs) {
		l.submit(4)
		l.poll()
		l.disturb()
		l.stats.sample()
		if l.finals > ended {
			lastEnd, ended = time.Now(), l.finals
		}
		if time.Since(lastEnd) > loadStall {
			l.t.Fatalf("load: %s: no job ended for %s (%d of %d ended): a hang", l.name, loadStall, l.finals, l.total)
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("load: %s: not done after %s (%d of %d jobs ended)", l.name, timeout, l.finals, l.total)
		}
		time.Sleep(loadPoll)
	}
}

// submit sbatches up to most jobs while fewer than window are unfinished.
// A job to be cancelled while pending is cancelled by its user at once.
func (l *load) submit(most int) {
	l.t.Helper()
	for ; most > 0 && l.submitted < len(l.jobs) && l.inflight < l.window; most-- {
		j := l.jobs[l.submitted]
		l.submitted++
		j.id = j.c.sbatch(fmt.Sprintf("j%04d.sh", j.n), j.script())
		j.submitted = time.Now()
		if j.tasks == 0 {
			j.units = []*loadUnit{{job: j, name: j.id, jobID: j.id}}
		}
		for task := 1; task <= j.tasks; task++ {
			j.units = append(j.units, &loadUnit{job: j, task: task, name: fmt.Sprintf("%s_%d", j.id, task)})
		}
		l.units = append(l.units, j.units...)
		l.inflight += len(j.units)
		if j.cancel == phasePending {
			l.cancel(j.units[0], "not set up")
		}
	}
}

// cancel runs scancel as the unit's user, in phase (RSA's state).
func (l *load) cancel(u *loadUnit, phase string) {
	u.cancelled, u.cancelledIn = true, phase
	said := "ok"
	if out, err := u.job.c.asUser("scancel", u.name); err != nil {
		u.cancelOut = fmt.Sprintf("%v: %s", err, out)
		said = u.cancelOut
	}
	l.t.Logf("load: %s: job %s cancelled to test phase %s (RSA %s, Slurm %s %q): scancel: %s",
		l.name, u.jobID, u.job.cancel, phase, u.state, u.reason, said)
}

// poll reads squeue and RSA's active jobs once, acts on the units that
// reached the phase they wait for, and marks those that ended: Slurm is
// done with them and RSA holds nothing for them. squeue or RSA not
// answering (restarting) is not an error: the next poll reads again.
func (l *load) poll() {
	l.t.Helper()
	cmd := l.c.slurmCommand("squeue", "-h", "-t", "all", "-p", "rsa", "-o", "%i|%A|%T|%r")
	out, err := cmd.Output()
	if err != nil {
		return
	}
	type entry struct{ jobID, state, reason string }
	seen := map[string]entry{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "|", 4)
		if len(f) == 4 && !strings.Contains(f[0], "[") { // not an array's pending rest
			seen[f[0]] = entry{f[1], f[2], f[3]}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	active, err := l.rsa.Jobs(ctx, false)
	if err != nil {
		return
	}
	var held int64
	for _, j := range active {
		held += j.Capacity()
	}
	rsaJobs := live.Newest(active)
	l.peak = max(l.peak, held)
	for _, u := range l.units {
		if u.final {
			continue
		}
		e, ok := seen[u.name]
		if !ok {
			continue // an array task not split off yet
		}
		u.jobID, u.state, u.reason = e.jobID, e.state, e.reason
		rj := rsaJobs[u.jobID]
		if u.state == "PENDING" && heldReason(u.reason) && time.Since(u.released) > 5*time.Second {
			// Nothing in the load should make Slurm hold a job: a hook
			// failed. Say so, and release it as an administrator would,
			// so that the rest of the load goes on and is checked.
			u.holds++
			report := l.t.Errorf
			if u.holds > 1 {
				report = l.t.Logf // an error already
			}
			report("load: %s: job %s is held by Slurm: %q (RSA %v); releasing it", l.name, u.jobID, u.reason, rsaState(rj))
			u.released = time.Now()
			cmd := l.c.slurmCommand("scontrol", "release", u.name)
			if out, err := cmd.CombinedOutput(); err != nil {
				l.t.Logf("load: %s: scontrol release %s: %v %s", l.name, u.name, err, out)
			}
		}
		if u.holds > 0 && !u.wedged && u.state == "PENDING" && time.Since(u.released) > 3*time.Minute {
			// Slurm 22.05 never starts a job whose paths hook failed,
			// released or not: it stays PENDING in burst buffer state
			// pre-run, its RAMDISK holding RAM that the jobs behind it
			// wait for. Cancel it to let the rest go on (before
			// loadStall calls the load hung).
			u.wedged = true
			l.t.Errorf("load: %s: job %s is still %s (%q) 3 minutes after its release (RSA %v); cancelling it", l.name, u.jobID, u.state, u.reason, rsaState(rj))
			cmd := l.c.slurmCommand("scancel", u.name)
			if out, err := cmd.CombinedOutput(); err != nil {
				l.t.Errorf("load: %s: scancel %s: %v %s", l.name, u.name, err, out)
			}
		}
		// Slurm gives this reason to every job it has not staged in
		// yet (and 22.05 keeps it while RSA stages in): the job waits
		// for the pool only if it does not fit in what RSA holds free.
		if u.state == "PENDING" && u.reason == "BurstBufferResources" && rj == nil && u.job.bytes() > l.pool-held {
			u.queued = true
		}
		l.act(u, rj)
		if rj == nil && rsatest.Ended(u.state) {
			u.final, u.finalAt, u.finalState, u.finalRe = true, time.Now(), u.state, u.reason
			l.finals++
			l.inflight--
		}
	}
}

// heldReason reports whether a pending job's reason says that Slurm holds
// it: an administrator's or user's hold (Slurm 22.05 holds a job whose
// paths hook failed), or a failed burst buffer call ("burst_buffer/lua:
// slurm_bb_setup: ...", "Burst buffer pre_run error").
func heldReason(reason string) bool {
	return reason == "JobHeldAdmin" || reason == "JobHeldUser" ||
		strings.HasPrefix(reason, "burst_buffer/lua:") || strings.HasPrefix(reason, "Burst buffer")
}

// rsaState is the RSA job's state for a message, "-" without one.
func rsaState(j *api.JobView) string {
	if j == nil {
		return "-"
	}
	return fmt.Sprintf("%d %s/%s", j.ID, j.State, j.RSA)
}

// act cancels a unit that reached its phase, and retries a failed
// stage-out once the output is seen kept in RAM and Slurm let the job go.
func (l *load) act(u *loadUnit, rj *api.JobView) {
	l.t.Helper()
	if rj == nil {
		return
	}
	j := u.job
	if j.cancel != "" && !u.cancelled {
		var hit bool
		switch j.cancel {
		case phaseStagingIn:
			hit = rj.RSA == lifecycle.StagingIn
		case phaseRunning:
			_, err := os.Stat(filepath.Join(rj.Ramdisk, u.file()))
			hit = rj.RSA == lifecycle.InUseOut && err == nil
		case phaseStagingOut:
			hit = rj.RSA == lifecycle.StagingOut
		}
		if hit {
			l.cancel(u, string(rj.RSA))
			if j.cancel == phaseStagingOut {
				// slow-out.sh waits for this to copy.
				if err := os.WriteFile(j.out+".cancelled", nil, 0o644); err != nil {
					l.t.Fatal(err)
				}
			}
		}
	}
	if !j.failOut || rj.RSA != lifecycle.StageOutFailed || u.retried {
		return
	}
	if u.failSeen.IsZero() {
		u.failSeen = time.Now()
		if !strings.Contains(rj.Error, "disk quota exceeded") {
			l.t.Errorf("job %s: RSA's reason does not give the stage-out program's message: %q", u.jobID, rj.Error)
		}
		if b, err := os.ReadFile(filepath.Join(rj.Ramdisk, u.file())); err != nil || string(b) != u.want() {
			l.t.Errorf("job %s: the output is not kept in RAM after the failed stage-out: %q, %v; want %q", u.jobID, b, err, u.want())
		}
	}
	// Slurm lets the job go with the reason (Flags=TeardownFailure); then
	// the administrator fixes the cause and retries.
	if !strings.Contains(u.reason, "RSA stage-out failed") {
		if time.Since(u.failSeen) < time.Minute {
			return
		}
		l.t.Errorf("job %s: Slurm never gave the failed stage-out as the reason: %s %q", u.jobID, u.state, u.reason)
	}
	fixed := j.out + ".fixed"
	if err := os.WriteFile(fixed, nil, 0o644); err != nil {
		l.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := l.rsa.Act(ctx, rj.ID, api.VerbRetry, api.ActOptions{}); err != nil {
		if api.Unreachable(err) {
			return // restarting: the next poll retries
		}
		l.t.Errorf("job %s: rsa retry %d: %v", u.jobID, rj.ID, err)
	}
	u.retried = true
}

// disturb kills rsa serve, or restarts slurmctld, when as many jobs have
// ended as drawn, after a random fraction of a second more.
func (l *load) disturb() {
	l.t.Helper()
	if l.crashes < len(l.crashAt) && l.finals >= l.crashAt[l.crashes] {
		time.Sleep(time.Duration(l.rng.IntN(1500)) * time.Millisecond)
		l.stats.sample() // what this incarnation used, just before it dies
		l.c.restart("rsa", true)
		l.crashes++
		l.t.Logf("load: %s: rsa serve killed (SIGKILL) and restarted with %d of %d jobs ended", l.name, l.finals, l.total)
	}
	if l.ctldAt >= 0 && !l.restarted && l.finals >= l.ctldAt {
		time.Sleep(time.Duration(l.rng.IntN(1500)) * time.Millisecond)
		// A slurmctld stopped between a job's allocation and the launch
		// of its batch script loses the launch: Slurm 22.05 recovers the
		// job RUNNING with no batch step on its node, and it runs out its
		// time limit (TIMEOUT) though RSA did its part (seen with seed
		// 1796195113437534543: pre_run done 20 ms before the SIGTERM).
		// That is Slurm's, not what this test is about: slurmctld is
		// stopped only while nothing is being launched, its partition
		// DOWN (nothing new allocated) and no job CONFIGURING.
		l.c.root("scontrol", "update", "PartitionName=rsa", "State=DOWN")
		for deadline := time.Now().Add(time.Minute); l.c.root("squeue", "-h", "-p", "rsa", "-t", "CF", "-o", "%i") != ""; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				l.t.Fatalf("load: %s: a job stays CONFIGURING for a minute: %s", l.name, l.c.root("squeue", "-p", "rsa", "-t", "CF"))
			}
		}
		l.c.restart("slurmctld", false)
		l.c.root("scontrol", "update", "PartitionName=rsa", "State=UP")
		l.restarted = true
		l.t.Logf("load: %s: slurmctld restarted with %d of %d jobs ended", l.name, l.finals, l.total)
	}
}

// newestRSA is the highest RSA job id so far (0: none).
func (l *load) newestRSA() int64 {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js, err := l.rsa.Jobs(ctx, true)
	if err != nil {
		l.t.Fatalf("listing RSA's jobs: %v", err)
	}
	var id int64
	for _, j := range js {
		id = max(id, j.ID)
	}
	return id
}

// logStuck says where every unfinished job stands, for a failed run.
func (l *load) logStuck() {
	var b strings.Builder
	for _, u := range l.units {
		if !u.final {
			fmt.Fprintf(&b, "  job %s (%s, sbatch %d, cancel %q, failing stage-out %v): Slurm %s %q\n",
				u.jobID, u.name, u.job.n, u.job.cancel, u.job.failOut, u.state, u.reason)
		}
	}
	if b.Len() > 0 {
		l.t.Logf("load: %s: jobs not ended:\n%s", l.name, b.String())
	}
}

// check is the end check: Slurm's and RSA's final states, the outputs on
// disk by content, no leaks. It then logs the run's numbers.
func (l *load) check(wall time.Duration) {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// Every RSA job the load made, by Slurm job id. rsa status lists the
	// newest 1,000 only; each is read on its own.
	records := map[string][]*api.JobView{}
	last := l.newestRSA()
	for id := l.firstRSA + 1; id <= last; id++ {
		j, err := l.rsa.Job(ctx, id, 0, 0)
		var ae *api.Error
		if errors.As(err, &ae) && ae.Status == 404 {
			continue
		}
		if err != nil {
			l.t.Fatalf("reading RSA job %d: %v", id, err)
		}
		records[j.Spec.SchedulerID] = append(records[j.Spec.SchedulerID], j)
	}
	ours := map[string]bool{}
	for _, u := range l.units {
		ours[u.jobID] = true
	}
	for name, rs := range records {
		for _, j := range rs {
			if !ours[name] {
				l.t.Errorf("RSA job %d is for Slurm job %q, which the load did not submit", j.ID, name)
			}
			if j.RSA != lifecycle.Released || j.State != lifecycle.Finished {
				l.t.Errorf("RSA job %d (Slurm job %s) ended %s/%s, want FINISHED/RELEASED (error %q)", j.ID, name, j.State, j.RSA, j.Error)
			}
		}
	}

	var toStageIn, setupToStageIn, toEnd []time.Duration
	var queued, cancelled, failedOut, holds int
	for _, u := range l.units {
		j := u.job
		if u.queued {
			queued++
		}
		holds += u.holds
		toEnd = append(toEnd, u.finalAt.Sub(j.submitted))
		rs := records[u.jobID]
		if len(rs) == 0 && j.cancel != phasePending {
			l.t.Errorf("job %s: RSA has no record of it", u.jobID)
		}
		if !u.wedged { // its hold is an error already; it has no expected end
			l.checkSlurm(u)
			l.checkOutput(u)
		}

		if j.in == "" || len(rs) == 0 {
			continue
		}
		// The first stage-in of any of its RSA jobs (a slurmctld
		// restart tears a stage-in down and Slurm sets the job up again).
		var first time.Time
		var created time.Time
		for _, r := range rs {
			evs, _, err := l.rsa.Events(ctx, r.ID)
			if err != nil {
				l.t.Fatalf("reading RSA job %d's events: %v", r.ID, err)
			}
			for _, e := range evs {
				if e.RSAState == lifecycle.StagingIn && (first.IsZero() || e.At.Before(first)) {
					first, created = e.At, r.CreatedAt
				}
			}
		}
		if first.IsZero() {
			if j.cancel != phasePending {
				l.t.Errorf("job %s: RSA never staged its input in", u.jobID)
			}
			continue
		}
		toStageIn = append(toStageIn, first.Sub(j.submitted))
		setupToStageIn = append(setupToStageIn, first.Sub(created))
	}
	for _, j := range l.jobs {
		if j.cancel != "" {
			cancelled++
		}
		if j.failOut {
			failedOut++
		}
	}
	if queued == 0 && len(l.units) >= 40 {
		l.t.Errorf("no job ever waited for RSA capacity (BurstBufferResources): the load did not fill the pool")
	}

	l.assertNoLeaks()
	for _, uc := range l.users {
		uc.noUserProcesses("the load")
	}

	cpu, children, hwm, incarnations := l.stats.total()
	p := func(ds []time.Duration, q float64) float64 {
		if len(ds) == 0 {
			return 0
		}
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[min(len(s)-1, int(q*float64(len(s))))].Seconds()
	}
	l.t.Logf("load: name=%s jobs=%d users=%d sbatch=%d cancelled=%d stage_out_failed=%d queued_on_capacity=%d "+
		"held=%d pool=%dMiB pool_peak=%dMiB rsa_kills=%d ctld_restarts=%d wall=%.0fs throughput=%.1f jobs/min "+
		"submit->stage-in p50=%.1fs p99=%.1fs setup->stage-in p50=%.2fs p99=%.2fs submit->end p50=%.1fs p99=%.1fs "+
		"daemon cpu=%.1fs children_cpu=%.1fs rss_max=%.1fMiB incarnations=%d",
		l.name, len(l.units), len(l.users), len(l.jobs), cancelled, failedOut, queued,
		holds, l.pool>>20, l.peak>>20, l.crashes, btoi(l.restarted), wall.Seconds(), float64(len(l.units))/wall.Minutes(),
		p(toStageIn, 0.5), p(toStageIn, 0.99), p(setupToStageIn, 0.5), p(setupToStageIn, 0.99), p(toEnd, 0.5), p(toEnd, 0.99),
		cpu.Seconds(), children.Seconds(), float64(hwm)/(1<<20), incarnations)
}

// assertNoLeaks is the harness' check, but for one fault of Slurm's own:
// a job cancelled while pending with its buffer allocated (here: during
// its stage-in) has its teardown started and, at once, every script of the
// job killed (job_signal's slurmscriptd_flush_job); a teardown killed so
// never frees the buffer in Slurm's accounting ("teardown for JobId=N
// terminated by slurmctld"; burst_buffer_lua.c, _start_teardown), until
// slurmctld restarts. RSA's side (its record, RAMDISK, allocation) is
// checked all the same; only such a buffer is logged instead of failed.
func (l *load) assertNoLeaks() {
	l.t.Helper()
	c := *l.c
	c.mode = "bb, pool checked below" // leaks checks Slurm's pool in mode "bb" only
	c.assertNoLeaks()
	var left []string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		out := l.c.root("scontrol", "show", "burst")
		if poolFree(out) {
			return
		}
		ctld, err := os.ReadFile(filepath.Join(l.c.dir, "log", "slurmctld.log"))
		if err != nil {
			l.t.Fatal(err)
		}
		left = nil
		bufs := allocatedBuffer.FindAllStringSubmatch(out, -1)
		for _, m := range bufs {
			if bytes.Contains(ctld, []byte("teardown for JobId="+m[1]+" terminated by slurmctld")) {
				left = append(left, m[1])
			}
		}
		if len(bufs) > 0 && len(left) == len(bufs) {
			l.t.Logf("load: %s: Slurm still counts the buffers of jobs %v, whose teardown it killed itself (slurmctld.log: \"teardown for JobId=N terminated by slurmctld\"); RSA released them", l.name, left)
			return
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("Slurm counts burst buffer space in use after the load:\n%s", out)
		}
	}
}

// allocatedBuffer is a buffer in `scontrol show burst`: its job id.
var allocatedBuffer = regexp.MustCompile(`(?m)^\s*JobID=([0-9]+) .*Pool=`)

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkSlurm: the unit's final Slurm state is the one for what happened
// to it.
func (l *load) checkSlurm(u *loadUnit) {
	l.t.Helper()
	j := u.job
	want := "COMPLETED"
	switch j.cancel {
	case phasePending, phaseStagingIn, phaseRunning:
		want = "CANCELLED"
		if !u.cancelled {
			l.t.Errorf("job %s never reached the phase it was to be cancelled in (%s)", u.jobID, j.cancel)
		} else if u.cancelOut != "" {
			l.t.Errorf("job %s: scancel in phase %s (RSA %s) failed: %s", u.jobID, j.cancel, u.cancelledIn, u.cancelOut)
		}
	case phaseStagingOut:
		// The job has ended: scancel changes nothing, its output is
		// staged out and it stays COMPLETED.
		if !u.cancelled {
			l.t.Errorf("job %s never reached the phase it was to be cancelled in (%s)", u.jobID, j.cancel)
		}
	}
	if u.finalState != want {
		l.t.Errorf("job %s (cancel %q, failing stage-out %v) ended %s (%q), want %s", u.jobID, j.cancel, j.failOut, u.finalState, u.finalRe, want)
	}
	if j.failOut {
		if !u.retried {
			l.t.Errorf("job %s: its stage-out never failed, or was never retried", u.jobID)
		}
		if !strings.Contains(u.finalRe, "RSA stage-out failed") {
			l.t.Errorf("job %s: Slurm's reason after the failed stage-out is %q", u.jobID, u.finalRe)
		}
	}
}

// checkOutput: the job's results directory holds exactly what it should:
// its result, written by the job with the expected content and owned by
// its user, unless it was cancelled before it ran. An array's tasks share
// a directory: each checks its own file, the array's first task the rest.
func (l *load) checkOutput(u *loadUnit) {
	l.t.Helper()
	j := u.job
	wantFiles := map[string]bool{}
	if j.cancel != phasePending && j.cancel != phaseStagingIn {
		for _, v := range j.units {
			wantFiles[v.file()] = true
		}
	}
	if u.task <= 1 {
		ents, err := os.ReadDir(j.results)
		if err != nil {
			l.t.Fatal(err)
		}
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		var want []string
		for f := range wantFiles {
			want = append(want, f)
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			l.t.Errorf("job %s (sbatch %d, cancel %q): %s holds %q, want %q", u.jobID, j.n, j.cancel, j.results, got, want)
		}
	}
	if !wantFiles[u.file()] {
		return
	}
	p := filepath.Join(j.results, u.file())
	b, err := os.ReadFile(p)
	if err != nil || !bytes.Equal(b, []byte(u.want())) {
		l.t.Errorf("job %s (sbatch %d, cancel %q): %s is %q (%v), want %q", u.jobID, j.n, j.cancel, p, b, err, u.want())
		return
	}
	if st, err := os.Stat(p); err != nil || st.Sys().(*syscall.Stat_t).Uid != j.c.user.UID {
		l.t.Errorf("job %s: %s is not owned by %s (%v)", u.jobID, p, j.c.user.Name, err)
	}
}

// daemonStats follows rsa serve's CPU time and peak memory, each
// incarnation (pid) on its own: a killed one keeps what it last showed.
// The incarnation that runs when a load starts counts from there: reset
// starts its CPU time anew (its numbers so far become the base) and its
// peak memory at what it holds now.
type daemonStats struct {
	pidFile string
	procs   map[int]procStat
	base    map[int]procStat
}

type procStat struct {
	cpu, children time.Duration // its own (utime+stime), its waited-for children's
	hwm           int64         // VmHWM: peak resident set, bytes
}

// clockTick is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux the tests run on (the kernel's ABI, whatever its own HZ).
const clockTick = 10 * time.Millisecond

// sample reads the current incarnation's numbers; one that is starting
// or gone is skipped.
func (d *daemonStats) sample() {
	b, err := os.ReadFile(d.pidFile)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return
	}
	proc := fmt.Sprintf("/proc/%d/", pid)
	if comm, err := os.ReadFile(proc + "comm"); err != nil || strings.TrimSpace(string(comm)) != "rsa" {
		return // not exec'd yet (env) or gone
	}
	stat, err := os.ReadFile(proc + "stat")
	if err != nil {
		return
	}
	// The fields after "(comm)": state is the first, utime the 12th.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 15 {
		return
	}
	ticks := func(k int) time.Duration {
		n, _ := strconv.ParseInt(f[k], 10, 64)
		return time.Duration(n) * clockTick
	}
	s := procStat{cpu: ticks(11) + ticks(12), children: ticks(13) + ticks(14)}
	status, err := os.ReadFile(proc + "status")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			s.hwm = kb << 10
		}
	}
	d.procs[pid] = s
}

// reset makes the running incarnation's numbers so far the base, and
// sets its peak memory to what it holds now (clear_refs 5, Linux 4.0).
func (d *daemonStats) reset() error {
	d.procs, d.base = map[int]procStat{}, map[int]procStat{}
	d.sample()
	if len(d.procs) != 1 {
		return fmt.Errorf("no rsa serve found through %s", d.pidFile)
	}
	for pid, s := range d.procs {
		d.base[pid] = s
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
			return fmt.Errorf("resetting rsa serve's peak memory: %w", err)
		}
	}
	return nil
}

// total sums the incarnations' CPU and gives the highest peak memory.
func (d *daemonStats) total() (cpu, children time.Duration, hwm int64, n int) {
	for pid, s := range d.procs {
		cpu += s.cpu - d.base[pid].cpu
		children += s.children - d.base[pid].children
		hwm = max(hwm, s.hwm)
	}
	return cpu, children, hwm, len(d.procs)
}
