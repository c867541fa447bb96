package slurm

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// Scripts of the user's: staging programs and what each compute node runs.
const (
	slowIn = `#!/bin/bash
# $1 RAMDISK, $2 input: waits until the test has seen the stage-in (at most
# a minute), then copies.
for _ in $(seq 600); do [[ -e "$(dirname "$2")/release-slow-in" ]] && break; sleep 0.1; done
cp -a "$2"/. "$1"/
`
	heldOut = `#!/bin/bash
# $1 RAMDISK, $2 output: waits for the test's go-ahead, then copies.
for _ in $(seq 600); do [[ -e "$(dirname "$2")/release-out" ]] && break; sleep 0.1; done
cp -a "$1"/. "$2"/
`
	gatedIn = `#!/bin/bash
# $1 RAMDISK, $2 input: waits for the test's go-ahead, then copies.
while [[ ! -e "$(dirname "$2")/release-in" ]]; do sleep 0.1; done
cp -a "$2"/. "$1"/
`
	nodeCheck = `#!/bin/bash
# On each compute node: is the input a tmpfs mount, and what does it hold?
set -u
fs=$(findmnt -n -o FSTYPE --mountpoint "$1" || echo none)
sum=$(cd "$1" && cat $(ls) | sha256sum | cut -d' ' -f1)
echo "$fs $sum" > "$2/seen-$SLURMD_NODENAME"
`
	nodeWrite = `#!/bin/bash
# On each compute node: write output into the RAMDISK at the output path,
# once RSA has switched it there (polled, not timed: the job may be slow).
set -u
for _ in $(seq 300); do
	fs=$(findmnt -n -o FSTYPE --mountpoint "$1" || echo none)
	[ "$fs" = tmpfs ] && break
	sleep 0.1
done
echo "$fs from $SLURMD_NODENAME" > "$1/$SLURMD_NODENAME"
`
)

// input fills dir with n files of the user's and returns the sha256 of
// their concatenation in name order.
func (c *cluster) input(dir string, n int) string {
	c.t.Helper()
	h := sha256.New()
	for i := range n {
		b := []byte(strings.Repeat(fmt.Sprintf("file %d of the input\n", i), 4000))
		p := filepath.Join(dir, fmt.Sprintf("f%02d", i))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			c.t.Fatal(err)
		}
		os.Chown(p, int(c.user.UID), int(c.user.GID))
		h.Write(b)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// bbCapacityWait is slurm.capacity_wait in TestBurstBuffer's cluster:
// long enough for testCapacityWait to see the job wait, short enough not
// to cost make test much.
const bbCapacityWait = 8 * time.Second

func TestBurstBuffer(t *testing.T) {
	c := startCluster(t, "bb", 2, "RSA_SLURM_CAPACITY_WAIT="+bbCapacityWait.String())
	t.Run("lifecycle", func(t *testing.T) { testLifecycle(c.in(t)) })
	t.Run("input image", func(t *testing.T) { testInputImage(c.in(t)) })
	t.Run("private output", func(t *testing.T) { testPrivateOutput(c.in(t)) })
	t.Run("bad directives", func(t *testing.T) { testBadDirectives(c.in(t)) })
	t.Run("pool full", func(t *testing.T) { testPoolFull(c.in(t)) })
	t.Run("cancelled while pending", func(t *testing.T) { testCancelPending(c.in(t)) })
	t.Run("cancelled during stage-in", func(t *testing.T) { testCancelStageIn(c.in(t)) })
	t.Run("cancelled while running", func(t *testing.T) { testCancelRunning(c.in(t)) })
	t.Run("stage-in fails", func(t *testing.T) { testStageInFails(c.in(t)) })
	t.Run("setup checks the owner", func(t *testing.T) { testSetupChecksOwner(c.in(t)) })
	t.Run("array job", func(t *testing.T) { testArrayJob(c.in(t)) })
	t.Run("capacity wait is bounded", func(t *testing.T) { testCapacityWait(c.in(t)) })
	t.Run("stage-out script fails", func(t *testing.T) { testStageOutFails(c.in(t)) })
	t.Run("rsa serve crash during stage-in", func(t *testing.T) { testDaemonCrash(c.in(t)) })
	t.Run("slurmctld restart during stage-in", func(t *testing.T) { testCtldRestart(c.in(t), false) })
	// Last: a crashed slurmctld may come back with an older view of the cluster.
	t.Run("slurmctld crash during stage-in", func(t *testing.T) { testCtldRestart(c.in(t), true) })
}

// testPoolFull: jobs that ask for capacity in RSA's pool are accounted by
// Slurm, which queues the second with BurstBufferResources while the first
// holds the RAM, and stages it in once the first is done.
func testPoolFull(c *cluster) {
	os.Remove(filepath.Join(c.work, "release-in"))
	in := c.mkdir("pool-in")
	c.input(in, 2)
	c.file("gated-in.sh", gatedIn, 0o755)
	script := fmt.Sprintf("#!/bin/bash\n#RSA capacity=800M pool=rsa\n#RSA_DATA_IN=%s\n#RSA_STAGE_IN=%s/gated-in.sh\ntrue\n", in, c.work)
	first := c.sbatch("pool1.sh", script)
	j := c.waitRSA(first, 30*time.Second, "STAGING_IN")
	if j.Capacity() != 800<<20 {
		c.t.Errorf("the job holds %d bytes, want the 800M it asked for", j.Capacity())
	}
	if out := c.root("scontrol", "show", "burst"); !strings.Contains(out, "UsedSpace=800MiB") {
		c.t.Errorf("Slurm does not count the job's 800M in the pool:\n%s", out)
	}
	second := c.sbatch("pool2.sh", script)
	testutil.WaitFor(c.t, "Slurm to queue the second job for pool space", 30*time.Second, poll, func() bool {
		_, reason := c.jobNow(second)
		return reason == "BurstBufferResources"
	})
	if j := c.rsaJob(second); j != nil {
		c.t.Errorf("RSA was asked to set up a job that does not fit: %s", j.RSA)
	}
	c.file("release-in", "", 0o644)
	c.waitJob(first, 60*time.Second, "COMPLETED")
	c.waitJob(second, 60*time.Second, "COMPLETED")
	c.waitRSA(second, 30*time.Second, "RELEASED")
	c.assertNoLeaks()
}

// testBadDirectives: sbatch refuses a job whose RSA lines are wrong, with
// a message naming the line or the path and the fix; nothing is created.
func testBadDirectives(c *cluster) {
	in := c.mkdir("bad-in")
	c.file("not-exec.sh", "#!/bin/sh\n", 0o644)
	cases := []struct{ name, lines, want string }{
		{"unknown variable", "#RSA_DATA_INN=" + in, `line 2 "#RSA_DATA_INN=`},
		{"relative path", "#RSA_DATA_IN=work/in", "must be a clean absolute path"},
		{"missing directory", "#RSA_DATA_IN=" + in + "/nope", "does not exist; create the directory"},
		{"stage script not executable", "#RSA_DATA_IN=" + in + "\n#RSA_STAGE_IN=" + c.work + "/not-exec.sh", "is not executable; chmod +x it"},
		{"bad value", "#RSA_DATA_OUT=" + in + "\n#RSA_DELAY=soon", `delay "soon": give seconds`},
		{"unknown key", "#RSA in=" + in + " colour=red", `"colour=red" is not a key=value setting`},
		// More than the whole pool (1G) would wait for ever in
		// BurstBufferResources: refused at submission instead.
		{"more than the pool", "#RSA in=" + in + " capacity=50G pool=rsa", "more than all RSA nodes hold together (1.0G)"},
		// (Without pool=, Slurm refuses capacity= itself.)
		// Slurm checks pool names itself, before burst_buffer.lua.
		{"foreign pool", "#RSA in=" + in + " capacity=1G pool=fast", "Burst Buffer request invalid"},
	}
	for _, tc := range cases {
		path := c.file("bad.sh", "#!/bin/bash\n"+tc.lines+"\ntrue\n", 0o755)
		out, err := c.asUser("sbatch", path)
		if err == nil || !strings.Contains(out, tc.want) {
			c.t.Errorf("%s: sbatch said (err %v):\n%s\nwant a refusal containing %q", tc.name, err, out, tc.want)
		}
	}
	if out := c.root("squeue", "-h"); out != "" {
		c.t.Errorf("refused jobs are queued:\n%s", out)
	}
}

// testCancelPending: a job due in half an hour (its nodes are taken) is
// set up by Slurm at once, but RSA holds its stage-in back until the lead
// time; cancelled meanwhile, it leaves nothing.
func testCancelPending(c *cluster) {
	in := c.mkdir("pending-in")
	c.input(in, 2)
	blocker := c.sbatch("blocker.sh", "#!/bin/bash\nsleep 300\n", "-N2", "--time=30")
	c.waitJob(blocker, 30*time.Second, "RUNNING")
	// Slurm starts the stage-in of the first pending job of a
	// partition whenever it tries to start it (select_nodes tests the
	// burst buffer before it looks for nodes), busy nodes or not: in 2
	// of 6 runs it did so here at once, and RSA staged, as it must when
	// Slurm asks. A job ahead of it, which cannot start either, keeps
	// Slurm from trying this one, so only its expected start counts.
	ahead := c.sbatch("ahead.sh", "#!/bin/bash\ntrue\n", "-N2", "--time=30")
	c.waitJob(ahead, 30*time.Second, "PENDING")
	id := c.sbatch("pending.sh", fmt.Sprintf("#!/bin/bash\n#RSA_DATA_IN=%s\ntrue\n", in))
	testutil.WaitFor(c.t, "RSA to hold the stage-in back until the job is due", 60*time.Second, poll, func() bool {
		j := c.rsaJob(id)
		return j != nil && strings.Contains(j.Waiting, "stage-in starts at")
	})
	if j := c.rsaJob(id); j.RSA != "INITIAL" || j.Capacity() != 0 {
		c.t.Errorf("a job due in 30 minutes is %s holding %d bytes", j.RSA, j.Capacity())
	}
	c.root("scancel", id)
	c.waitJob(id, 30*time.Second, "CANCELLED")
	c.waitRSA(id, 30*time.Second, "RELEASED")
	c.root("scancel", ahead, blocker)
	c.waitJob(ahead, 30*time.Second, "CANCELLED")
	c.waitJob(blocker, 30*time.Second, "CANCELLED")
	c.assertNoLeaks()
}

// testCancelStageIn: a job cancelled while its input is being staged in
// stops the copy at once and leaves nothing behind.
func testCancelStageIn(c *cluster) {
	in := c.mkdir("cancel-in")
	c.input(in, 2)
	c.file("sleepy-in.sh", "#!/bin/bash\nsleep 300\n", 0o755)
	id := c.sbatch("cancel.sh", fmt.Sprintf("#!/bin/bash\n#RSA_DATA_IN=%s\n#RSA_STAGE_IN=%s/sleepy-in.sh\ntrue\n", in, c.work))
	c.waitRSA(id, 30*time.Second, "STAGING_IN")
	c.root("scancel", id)
	c.waitJob(id, 30*time.Second, "CANCELLED")
	c.waitRSA(id, 30*time.Second, "RELEASED")
	c.assertNoLeaks()
	c.noUserProcesses("the cancel")
}

// testCancelRunning: a job cancelled while it writes output in RAM gets
// that output staged out, then everything is released.
func testCancelRunning(c *cluster) {
	out := c.mkdir("cancel-out")
	id := c.sbatch("running.sh", fmt.Sprintf("#!/bin/bash\n#RSA_DATA_OUT=%[1]s\n#RSA_DELAY=0\necho partial > %[1]s/result\nsleep 300\n", out))
	j := c.waitRSA(id, 30*time.Second, "INUSE_OUT")
	testutil.WaitFor(c.t, "the job to write into RAM", 30*time.Second, poll, func() bool {
		_, err := os.Stat(filepath.Join(j.Ramdisk, "result"))
		return err == nil
	})
	c.root("scancel", id)
	c.waitJob(id, 30*time.Second, "CANCELLED")
	c.waitRSA(id, 30*time.Second, "RELEASED")
	if b, err := os.ReadFile(filepath.Join(out, "result")); err != nil || string(b) != "partial\n" {
		c.t.Errorf("the cancelled job's output on disk: %q, %v", b, err)
	}
	c.assertNoLeaks()
}

// testStageInFails: the stage-in program's failure holds the job with the
// program's reason, and its RAMDISK is torn down.
func testStageInFails(c *cluster) {
	in := c.mkdir("fail-in")
	c.file("failing-in.sh", "#!/bin/bash\necho 'tape library offline' >&2\nexit 3\n", 0o755)
	id := c.sbatch("failin.sh", fmt.Sprintf("#!/bin/bash\n#RSA_DATA_IN=%s\n#RSA_STAGE_IN=%s/failing-in.sh\ntrue\n", in, c.work))
	var reason string
	testutil.WaitFor(c.t, "the job to be held for its failed stage-in", 30*time.Second, poll, func() bool {
		_, reason = c.jobNow(id)
		return strings.Contains(reason, "RSA stage-in failed")
	})
	if !strings.Contains(reason, "tape library offline") {
		c.t.Errorf("the job's Reason does not give the program's message: %q", reason)
	}
	c.waitRSA(id, 30*time.Second, "RELEASED")
	// The message is the job's user's: on 22.05 no argument of
	// "scontrol show bbstat" makes another user root.
	for _, args := range [][]string{{id}, {"0", "0", id}} {
		argv := c.slurm.AsUser("nobody", "scontrol", append([]string{"show", "bbstat"}, args...)...)
		cmd := c.command(argv[0], argv[1:]...)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), id) || strings.Contains(string(out), "tape library") {
			c.t.Errorf("scontrol show bbstat %s as nobody: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	c.assertNoLeaks()
	c.root("scancel", id)
}

// testSetupChecksOwner: Slurm 22.05 validates a job script without saying
// whose it is, so an input directory of another user that the job's user
// may not read passes job_process; setup, which knows the user, refuses it
// and Slurm holds the job with the reason. Nothing is staged.
func testSetupChecksOwner(c *cluster) {
	others := filepath.Join(c.work, "others-in")
	os.Mkdir(others, 0o700)
	os.Chown(others, 4242, 4242)
	// Slurm 23.02 and later tell job_process who submits: sbatch refuses
	// the job at once. 22.05 does not: setup holds it.
	path := c.file("others.sh", fmt.Sprintf("#!/bin/bash\n#RSA_DATA_IN=%s\ntrue\n", others), 0o755)
	out, err := c.asUser("sbatch", "--parsable", "-o", filepath.Join(c.work, "others.%j.out"), path)
	if err != nil {
		if !strings.Contains(out, "may not be used by the job's user") {
			c.t.Errorf("sbatch refused the job, but not for its access: %v\n%s", err, out)
		}
		c.assertNoLeaks()
		return
	}
	if c.slurmMajor() >= 23 {
		c.t.Errorf("Slurm %d passes the submitter to job_process, yet sbatch took job %s", c.slurmMajor(), out)
	}
	id := strings.TrimSpace(strings.Split(out, ";")[0])
	testutil.WaitFor(c.t, "setup to refuse the job", 30*time.Second, poll, func() bool {
		_, reason := c.jobNow(id)
		return strings.Contains(reason, "may not be used by the job's user")
	})
	if j := c.rsaJob(id); j != nil {
		c.t.Errorf("RSA made job %d for a refused setup", j.ID)
	}
	c.root("scancel", id)
	c.waitJob(id, 30*time.Second, "CANCELLED")
	c.assertNoLeaks()
}

// testArrayJob: each task of an array job is its own Slurm job, with its
// own RAMDISK and its input in RAM.
func testArrayJob(c *cluster) {
	in := c.mkdir("array-in")
	sum := c.input(in, 2)
	out := c.mkdir("array-out")
	// Sized for the pool, so that Slurm, which counts the pool, stages
	// both tasks at once (unsized, they would compete for the one RSA
	// node: testCapacityWait).
	id := c.sbatch("array.sh", fmt.Sprintf(`#!/bin/bash
#SBATCH --array=1-2
#RSA capacity=400M pool=rsa
#RSA_DATA_IN=%[1]s
fs=$(findmnt -n -o FSTYPE --mountpoint %[1]s || echo none)
echo "$fs $(cd %[1]s && cat $(ls) | sha256sum | cut -d' ' -f1)" > %[2]s/task-$SLURM_ARRAY_TASK_ID
`, in, out))
	for _, task := range []string{"1", "2"} {
		c.waitJob(id+"_"+task, 90*time.Second, "COMPLETED")
		got, err := os.ReadFile(filepath.Join(out, "task-"+task))
		if want := "tmpfs " + sum + "\n"; err != nil || string(got) != want {
			c.t.Errorf("array task %s saw its input as %q (%v), want %q", task, got, err, want)
		}
	}
	c.assertNoLeaks()
}

// testCapacityWait: a job Slurm does not size waits in data_in for RSA
// capacity at most slurm.capacity_wait (bbCapacityWait), then runs from
// disk and says why. On 22.05 a longer wait could hold up the job that
// holds the RAM (config.Slurm.CapacityWait).
func testCapacityWait(c *cluster) {
	os.Remove(filepath.Join(c.work, "release-blocker"))
	in := c.mkdir("wait-in")
	sum := c.input(in, 2)
	out := c.mkdir("wait-out")
	blocker := c.sbatch("blocker.sh", fmt.Sprintf("#!/bin/bash\n#RSA_DATA_IN=%s\nwhile [ ! -e %s/release-blocker ]; do sleep 0.2; done\n", in, c.work))
	c.waitRSA(blocker, 60*time.Second, "INUSE_IN")
	waiter := c.sbatch("waiter.sh", fmt.Sprintf(`#!/bin/bash
#RSA_DATA_IN=%[1]s
fs=$(findmnt -n -o FSTYPE --mountpoint %[1]s || echo none)
echo "$fs $(cd %[1]s && cat $(ls) | sha256sum | cut -d' ' -f1)" > %[2]s/seen
`, in, out))
	testutil.WaitFor(c.t, "RSA to make the second job wait for capacity", 30*time.Second, poll, func() bool {
		j := c.rsaJob(waiter)
		return j != nil && strings.Contains(j.Waiting, "free RSA node")
	})
	started := time.Now()
	c.waitJob(waiter, 90*time.Second, "COMPLETED")
	if waited := time.Since(started); waited > 60*time.Second {
		c.t.Errorf("the job waited %v for RSA capacity, past slurm.capacity_wait", waited.Round(time.Second))
	}
	if got, err := os.ReadFile(filepath.Join(out, "seen")); err != nil || string(got) != "none "+sum+"\n" {
		c.t.Errorf("the job without RSA capacity saw its input as %q (%v), want it from disk", got, err)
	}
	j := c.waitRSA(waiter, 30*time.Second, "RELEASED")
	if !strings.Contains(j.Error, "slurm.capacity_wait") {
		c.t.Errorf("RSA does not say why the job ran from disk: %q", j.Error)
	}
	c.file("release-blocker", "", 0o644)
	c.waitJob(blocker, 60*time.Second, "COMPLETED")
	c.waitRSA(blocker, 30*time.Second, "RELEASED")
	c.assertNoLeaks()
}

// testStageOutFails: a failing stage-out script keeps the output in RAM
// (never lost), tells Slurm why, and an administrator's retry after the fix
// lands it on disk and releases everything.
func testStageOutFails(c *cluster) {
	out := c.mkdir("fail-out")
	script := c.file("failing-out.sh", "#!/bin/bash\necho 'disk quota exceeded' >&2\nexit 1\n", 0o755)
	id := c.sbatch("failout.sh", fmt.Sprintf("#!/bin/bash\n#RSA_DATA_OUT=%[1]s\n#RSA_STAGE_OUT=%[2]s\n#RSA_DELAY=0\necho precious > %[1]s/result\n", out, script))
	j := c.waitRSA(id, 60*time.Second, "STAGE_OUT_FAILED")
	if !strings.Contains(j.Error, "disk quota exceeded") {
		c.t.Errorf("RSA's reason does not give the script's message: %q", j.Error)
	}
	testutil.WaitFor(c.t, "Slurm to let the job go with the reason", 30*time.Second, poll, func() bool {
		st, reason := c.jobNow(id)
		return st != "PENDING" && st != "RUNNING" && strings.Contains(reason, "RSA stage-out failed")
	})
	if b, err := os.ReadFile(filepath.Join(j.Ramdisk, "result")); err != nil || string(b) != "precious\n" {
		c.t.Fatalf("the output is not kept in RAM after the failed stage-out: %q, %v", b, err)
	}

	// The administrator fixes the cause and retries.
	c.file("failing-out.sh", "#!/bin/bash\ncp -a \"$1\"/. \"$2\"/\n", 0o755)
	// By its Slurm id, as an admin reading squeue knows it; both ids
	// are shown.
	if out := string(c.rsa("retry", "slurm:"+id)); !strings.Contains(out, fmt.Sprintf("job %d (Slurm %s)", j.ID, id)) {
		c.t.Errorf("rsa retry slurm:%s said %q", id, out)
	}
	c.waitRSA(id, 30*time.Second, "RELEASED")
	if b, err := os.ReadFile(filepath.Join(out, "result")); err != nil || string(b) != "precious\n" {
		c.t.Errorf("after the retry the output on disk is %q, %v", b, err)
	}

	c.assertNoLeaks()
}

// testCtldRestart: slurmctld is restarted (or crashes) during a stage-in.
// After a restart Slurm tears the half-staged RAMDISK down, defers the job
// by a minute and stages it in again; after a crash it may have forgotten
// the job, and RSA lets go of it by itself. Either way nothing is left,
// and a job Slurm still has gets its input in RAM.
//
// The minute is Slurm's own, hard-coded "for the teardown"
// (burst_buffer_lua.c, _recover_job_bb: begin_time = now + 60, from 22.05
// to 25.11), not RSA's. Once RSA has released the interrupted stage-in the
// teardown is over, so the test lets the job go at once, as an
// administrator may: scontrol update StartTime=now sets a pending job's
// begin_time to now (job_mgr.c, _update_job). It checks that the job is
// no longer deferred, so that it never waits out the minute unnoticed.
func testCtldRestart(c *cluster, crash bool) {
	c.file("release-in", "", 0o644)
	os.Remove(filepath.Join(c.work, "release-in"))
	in := c.mkdir("restart-in")
	sum := c.input(in, 3)
	c.file("gated-in.sh", gatedIn, 0o755)
	c.file("node-check.sh", nodeCheck, 0o755)
	os.Remove(filepath.Join(c.work, "seen-n1"))
	id := c.sbatch("restart.sh", fmt.Sprintf("#!/bin/bash\n#SBATCH -w n1\n#RSA_DATA_IN=%[1]s\n#RSA_STAGE_IN=%[2]s/gated-in.sh\nsrun %[2]s/node-check.sh %[1]s %[2]s\n", in, c.work))
	first := c.waitRSA(id, 30*time.Second, "STAGING_IN")
	c.restart("slurmctld", crash)
	// slurmctld recovers its burst buffers before it answers (read_slurm_conf
	// loads them before the RPC thread starts), so the deferral is set by now.
	deferredTo, known := c.eligibleAt(id)
	if !crash {
		if !known {
			c.t.Fatalf("Slurm lost job %s over a clean restart", id)
		}
		// Without the deferral the StartTime update below would prove
		// nothing.
		if !deferredTo.After(time.Now()) {
			c.t.Errorf("after the restart Slurm does not defer job %s (EligibleTime %s): the test's premise is gone", id, deferredTo.Format(time.TimeOnly))
		}
	} else {
		// After a crash Slurm has only what it last saved: it may defer
		// the job as after a restart, or have forgotten it (then RSA
		// releases it by itself). What follows checks either.
		c.t.Logf("after the crash Slurm knows job %s: %v (eligible at %s)", id, known, deferredTo.Format(time.TimeOnly))
		if known && !deferredTo.After(time.Now()) && c.bbState(id) == "staging-in" {
			testLostStageIn(c, id)
			return
		}
	}
	testutil.WaitFor(c.t, "the interrupted stage-in to be released", 60*time.Second, poll, func() bool {
		j := c.rsaJob(id)
		return j.ID != first.ID || string(j.RSA) == "RELEASED"
	})
	if _, known := c.eligibleAt(id); known {
		c.root("scontrol", "update", "JobId="+id, "StartTime=now")
		if at, _ := c.eligibleAt(id); at.After(time.Now()) {
			c.t.Fatalf("scontrol update StartTime=now left job %s deferred to %s", id, at.Format(time.TimeOnly))
		}
	}
	c.file("release-in", "", 0o644)
	var st string
	testutil.WaitFor(c.t, "Slurm to finish the job or forget it", 120*time.Second, poll, func() bool {
		var err error
		st, _, err = c.job(id)
		return err == nil && (st == "COMPLETED" || st == "")
	})
	if st == "COMPLETED" {
		got, err := os.ReadFile(filepath.Join(c.work, "seen-n1"))
		if want := "tmpfs " + sum + "\n"; err != nil || string(got) != want {
			c.t.Errorf("after the restart the job saw its input as %q (err %v), want %q", got, err, want)
		}
	} else if !crash {
		c.t.Errorf("Slurm lost job %s over a clean restart", id)
	}
	testutil.WaitFor(c.t, "RSA to release the job", 30*time.Second, poll, func() bool { return string(c.rsaJob(id).RSA) == "RELEASED" })
	c.assertNoLeaks()
}

// testLostStageIn is the third way a slurmctld crash during stage-in can
// end, and right on RSA's side too: Slurm saved the job after its stage-in
// began but not yet its burst buffer (burst_buffer/lua saves those every
// 30 s, AGENT_INTERVAL; jobs more often). It recovers the job staging in
// with no allocation to tear down, and never runs data_in again
// (_recover_bb_state, bb_p_job_test_stage_in): the job waits for good.
// Slurm tells RSA nothing, so RSA keeps the job's RAMDISK as it must for a
// job Slurm still has; the way out docs/slurm.md gives, scancel, releases
// it and leaves nothing behind.
func testLostStageIn(c *cluster, id string) {
	c.t.Logf("Slurm recovered job %s staging in without its burst buffer: cancelling it, as docs/slurm.md says", id)
	c.root("scancel", id)
	testutil.WaitFor(c.t, "RSA to release the job Slurm lost the stage-in of", 60*time.Second, poll, func() bool { return string(c.rsaJob(id).RSA) == "RELEASED" })
	c.file("release-in", "", 0o644)
	c.assertNoLeaks()
}

// bbState is Slurm's burst buffer state of job id (scontrol's
// BurstBufferState), "" if it shows none.
func (c *cluster) bbState(id string) string {
	c.t.Helper()
	out, err := c.slurmCommand("scontrol", "show", "job", "-o", id).CombinedOutput()
	if err != nil {
		c.t.Fatalf("scontrol show job %s: %v\n%s", id, err, out)
	}
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "BurstBufferState="); ok {
			return v
		}
	}
	return ""
}

// eligibleAt is the earliest time Slurm lets job id start (scontrol's
// EligibleTime: the job's begin_time; zero if it has none), and whether
// Slurm knows the job at all.
func (c *cluster) eligibleAt(id string) (at time.Time, known bool) {
	c.t.Helper()
	cmd := c.slurmCommand("scontrol", "show", "job", "-o", id)
	// Seconds since the epoch: no time zone or format to guess.
	cmd.Env = append(cmd.Env, "SLURM_TIME_FORMAT=%s")
	out, err := cmd.CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "Invalid job id") {
			return time.Time{}, false
		}
		c.t.Fatalf("scontrol show job %s: %v\n%s", id, err, out)
	}
	for _, f := range strings.Fields(string(out)) {
		v, ok := strings.CutPrefix(f, "EligibleTime=")
		if !ok {
			continue
		}
		if v == "Unknown" || v == "None" { // begin_time 0 or unset
			return time.Time{}, true
		}
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			c.t.Fatalf("scontrol show job %s: EligibleTime=%q: %v", id, v, err)
		}
		return time.Unix(secs, 0), true
	}
	c.t.Fatalf("scontrol show job %s gives no EligibleTime:\n%s", id, out)
	return time.Time{}, false
}

// testDaemonCrash: rsa serve is killed while a job stages in. Slurm's
// data_in call waits for it to come back; the restarted daemon stages in
// again, and the job runs with its input in RAM.
func testDaemonCrash(c *cluster) {
	os.Remove(filepath.Join(c.work, "release-in"))
	os.Remove(filepath.Join(c.work, "seen-n1"))
	in := c.mkdir("crash-in")
	sum := c.input(in, 3)
	c.file("gated-in.sh", gatedIn, 0o755)
	c.file("node-check.sh", nodeCheck, 0o755)
	id := c.sbatch("crash.sh", fmt.Sprintf("#!/bin/bash\n#SBATCH -w n1\n#RSA_DATA_IN=%[1]s\n#RSA_STAGE_IN=%[2]s/gated-in.sh\nsrun %[2]s/node-check.sh %[1]s %[2]s\n", in, c.work))
	c.waitRSA(id, 30*time.Second, "STAGING_IN")
	c.restart("rsa", true)
	c.file("release-in", "", 0o644)
	c.waitJob(id, 60*time.Second, "COMPLETED")
	got, err := os.ReadFile(filepath.Join(c.work, "seen-n1"))
	if want := "tmpfs " + sum + "\n"; err != nil || string(got) != want {
		c.t.Errorf("after the daemon's crash the job saw its input as %q (err %v), want %q", got, err, want)
	}
	c.waitRSA(id, 30*time.Second, "RELEASED")
	c.assertNoLeaks()
}

// testLifecycle: a two-node job reads its input from RAM on both nodes,
// writes its output into RAM, and its output reaches the disk after the
// job, while its nodes already run the next job. The daemon's metrics
// count each hook that carried it.
func testLifecycle(c *cluster) {
	metricsBefore := c.metrics()
	in, out := c.mkdir("in"), c.mkdir("out")
	sum := c.input(in, 20)
	w := c.work
	c.file("slow-in.sh", slowIn, 0o755)
	c.file("held-out.sh", heldOut, 0o755)
	c.file("node-check.sh", nodeCheck, 0o755)
	c.file("node-write.sh", nodeWrite, 0o755)
	id := c.sbatch("job.sh", fmt.Sprintf(`#!/bin/bash
#SBATCH -N 2
#RSA_DATA_IN=%[1]s
#RSA_STAGE_IN=%[3]s/slow-in.sh
#RSA_DATA_OUT=%[2]s
#RSA_STAGE_OUT=%[3]s/held-out.sh
#RSA_DELAY=4
echo "RSA_RAMDISK=$RSA_RAMDISK"
srun -N2 %[3]s/node-check.sh %[1]s %[3]s
srun -N2 %[3]s/node-write.sh %[2]s
`, in, out, w))

	// While it stages in, Slurm says so and bbstat shows RSA's progress.
	seen := map[string]bool{}
	var bbstat string
	testutil.WaitFor(c.t, "the job to start", 60*time.Second, poll, func() bool {
		st, reason := c.jobNow(id)
		seen[reason] = true
		if reason == "BurstBufferStageIn" && !strings.Contains(bbstat, "STAGING_IN") {
			if bbstat = c.root("scontrol", "show", "bbstat", id); strings.Contains(bbstat, "STAGING_IN") {
				c.file("release-slow-in", "", 0o644)
			}
		}
		return st != "PENDING"
	})
	os.Remove(filepath.Join(c.work, "release-slow-in"))
	if !seen["BurstBufferStageIn"] {
		c.t.Errorf("squeue never showed BurstBufferStageIn while staging; reasons seen: %v", seen)
	}
	if !strings.Contains(bbstat, id) || !strings.Contains(bbstat, "STAGING_IN") {
		c.t.Errorf("scontrol show bbstat %s during stage-in said:\n%s", id, bbstat)
	}

	// After the job: its nodes are free while RSA still stages out.
	c.waitRSA(id, 60*time.Second, "STAGING_OUT")
	next := c.sbatch("next.sh", "#!/bin/bash\n#SBATCH -N 2\nsrun -N2 true\n")
	c.waitJob(next, 30*time.Second, "COMPLETED")
	if j := c.rsaJob(id); string(j.RSA) != "STAGING_OUT" {
		c.t.Fatalf("the next job ran, but RSA's job is %s, not still STAGING_OUT", j.RSA)
	}
	if _, err := os.Stat(filepath.Join(out, "n1")); err == nil {
		c.t.Fatal("output on disk before stage-out copied it")
	}
	c.file("release-out", "", 0o644)
	c.waitRSA(id, 30*time.Second, "RELEASED")
	c.waitJob(id, 30*time.Second, "COMPLETED")

	for _, n := range []string{"n1", "n2"} {
		got, err := os.ReadFile(filepath.Join(w, "seen-"+n))
		if want := "tmpfs " + sum + "\n"; err != nil || string(got) != want {
			c.t.Errorf("compute node %s saw its input as %q (err %v), want %q", n, got, err, want)
		}
		got, err = os.ReadFile(filepath.Join(out, n))
		if want := "tmpfs from " + n + "\n"; err != nil || string(got) != want {
			c.t.Errorf("output of %s on disk: %q (err %v), want %q", n, got, err, want)
		}
	}
	if o := c.output("job.sh", id); !strings.Contains(o, "RSA_RAMDISK=/") {
		c.t.Errorf("the job's environment has no RSA_RAMDISK:\n%s", o)
	}
	c.assertNoLeaks()
	// The job is COMPLETED, no longer STAGE_OUT: Slurm clears that only
	// once the teardown hook has returned (burst_buffer_lua.c,
	// _start_teardown), and the daemon counts a hook before it answers.
	c.assertHooksCounted(metricsBefore)
}

// imageCheck runs on each compute node of an input=image job: is the input
// the image, read-only, and what does it hold; can the job's user reach
// the RAMDISK that holds the image, or write the image through its mount?
const imageCheck = `#!/bin/bash
set -u
fs=$(findmnt -n -o FSTYPE --mountpoint "$1" || echo none)
case $(findmnt -n -o OPTIONS --mountpoint "$1") in ro,nosuid,nodev*) m=ro,nosuid,nodev ;; *) m=unsafe ;; esac
sum=$(cd "$1" && cat $(ls) | sha256sum | cut -d' ' -f1)
w=ro; touch "$1/new" 2>/dev/null && w=WRITABLE
r=closed; ls "$RSA_RAMDISK" >/dev/null 2>&1 && r=REACHABLE
[ -n "$RSA_RAMDISK" ] || r=unset
echo "$fs $m $w $r $sum" > "$2/seen-image-$SLURMD_NODENAME"
`

// testInputImage: #RSA input=image on two compute nodes: each mounts the
// one image read-only at the input path, whole; the user reaches neither
// the image's RAMDISK nor a way to write it; the output goes to a RAMDISK
// built anew for it, and nothing is left (no mount, no loop device).
func testInputImage(c *cluster) {
	in, out := c.mkdir("img-in"), c.mkdir("img-out")
	sum := c.input(in, 20)
	w := c.work
	c.file("image-check.sh", imageCheck, 0o755)
	c.file("node-write.sh", nodeWrite, 0o755)
	id := c.sbatch("image.sh", fmt.Sprintf(`#!/bin/bash
#SBATCH -N 2
#RSA in=%[1]s input=image out=%[2]s delay=3
srun -N2 %[3]s/image-check.sh %[1]s %[3]s
srun -N2 %[3]s/node-write.sh %[2]s
`, in, out, w))
	c.waitJob(id, 90*time.Second, "COMPLETED")
	c.waitRSA(id, 30*time.Second, "RELEASED")
	for _, n := range []string{"n1", "n2"} {
		got, err := os.ReadFile(filepath.Join(w, "seen-image-"+n))
		if want := "erofs ro,nosuid,nodev ro closed " + sum + "\n"; err != nil || string(got) != want {
			c.t.Errorf("compute node %s saw its input as %q (err %v), want %q", n, got, err, want)
		}
		got, err = os.ReadFile(filepath.Join(out, n))
		if want := "tmpfs from " + n + "\n"; err != nil || string(got) != want {
			c.t.Errorf("output of %s on disk: %q (err %v), want %q", n, got, err, want)
		}
	}
	if log := c.root(rsaBin, "--config", c.rsaConf, "log", "slurm:"+id); !strings.Contains(log, "input image of 20 entries") {
		c.t.Errorf("the job's log does not tell of its image:\n%s", log)
	}
	// sacct's view: what the stage-in copied, in the job's AdminComment.
	c.assertAccounted(id, 20, 20*4000*20)
	c.assertNoLeaks()
}

// privateWrite runs on each compute node of an output=private job: is the
// output a file system of the node's own, and it writes a file named $2
// there (its node's name when $2 is "own").
const privateWrite = `#!/bin/bash
set -u
for _ in $(seq 300); do
	[ "$(findmnt -n -o FSTYPE --mountpoint "$1")" = ext4 ] && break
	sleep 0.1
done
name=$2; [ "$name" = own ] && name=$SLURMD_NODENAME
echo "$(findmnt -n -o FSTYPE --mountpoint "$1") from $SLURMD_NODENAME, alone: $(ls "$1" | wc -l)" > "$1/$name"
`

// testPrivateOutput: output=private on two compute nodes: each writes
// into a file system of its own, and both trees are staged out; the same
// name from both nodes fails the stage-out naming both, and keeps both in
// RAM until an administrator discards them.
func testPrivateOutput(c *cluster) {
	out := c.mkdir("priv-out")
	w := c.work
	c.file("private-write.sh", privateWrite, 0o755)
	id := c.sbatch("private.sh", fmt.Sprintf("#!/bin/bash\n#SBATCH -N 2\n#RSA out=%[1]s output=private\nsrun -N2 %[2]s/private-write.sh %[1]s own\n", out, w))
	c.waitJob(id, 90*time.Second, "COMPLETED")
	c.waitRSA(id, 30*time.Second, "RELEASED")
	for _, n := range []string{"n1", "n2"} {
		// Each node saw its own file system, empty but for what it wrote.
		if got, err := os.ReadFile(filepath.Join(out, n)); err != nil || string(got) != "ext4 from "+n+", alone: 0\n" {
			c.t.Errorf("output of %s on disk: %q (err %v)", n, got, err)
		}
	}
	c.assertNoLeaks()

	clash := c.mkdir("priv-clash")
	id = c.sbatch("clash.sh", fmt.Sprintf("#!/bin/bash\n#SBATCH -N 2\n#RSA out=%[1]s output=private\nsrun -N2 %[2]s/private-write.sh %[1]s same\n", clash, w))
	j := c.waitRSA(id, 90*time.Second, "STAGE_OUT_FAILED")
	if !strings.Contains(j.Error, "same (from n1 and n2)") || !strings.Contains(j.Error, "nothing was copied") {
		c.t.Errorf("the clash is not named with both nodes: %q", j.Error)
	}
	if ents, _ := os.ReadDir(clash); len(ents) != 0 {
		c.t.Errorf("a clashing stage-out copied %d entries", len(ents))
	}
	c.rsa("discard", "slurm:"+id)
	c.waitRSA(id, 30*time.Second, "RELEASED")
	c.assertNoLeaks()
}

// assertHooksCounted: the daemon's metrics count the hooks that carried
// one job through Slurm, with their latency, between before (read before
// the job's sbatch) and now. The hooks inside slurmctld come over the
// socket from the Lua itself (lua-socket), the others through rsa slurm-bb
// (TestHookLatencyLong compares the two). pools is slurmctld's, not the
// job's: it asks at its start and every half minute, so it need only have
// been counted at all.
func (c *cluster) assertHooksCounted(before string) {
	c.t.Helper()
	after := c.metrics()
	for _, hook := range []string{"job_process", "setup", "data_in", "paths", "pre_run", "data_out", "teardown", "pools"} {
		via := "rsa"
		if hook == "job_process" || hook == "paths" || hook == "pools" {
			via = "lua-socket"
		}
		series := `rsa_slurm_hook_duration_seconds_count{hook="` + hook + `",via="` + via + `"}`
		was, now := metricValue(before, series), metricValue(after, series)
		switch {
		case hook == "pools" && now < 1:
			c.t.Errorf("no latency of hook pools via %s in the metrics", via)
		case hook != "pools" && now <= was:
			c.t.Errorf("the job's hook %s via %s is not counted: %s went from %v to %v", hook, via, series, was, now)
		}
	}
}
