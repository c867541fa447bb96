package slurm

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPolling runs the thesis' own integration: RSA reads squeue (a job
// pending on Resources is on deck, pending for any other reason demoted)
// and Slurm's PrologSlurmctld/EpilogSlurmctld report starts and ends.
func TestPolling(t *testing.T) {
	c := startCluster(t, "poll", 1)
	t.Run("lifecycle", func(t *testing.T) { testPollLifecycle(c.in(t)) })
	t.Run("demoted while staging", func(t *testing.T) { testPollDemoted(c.in(t)) })
	t.Run("started without being on deck", func(t *testing.T) { testPollStartedAtOnce(c.in(t)) })
	t.Run("due later holds no RAM", func(t *testing.T) { testPollDueLater(c.in(t)) })
	t.Run("bad directive", func(t *testing.T) { testPollBadDirective(c.in(t)) })
	t.Run("a down daemon holds up no other job", func(t *testing.T) { testPollDaemonDown(c.in(t)) })
}

// testPollDaemonDown: with rsa serve down, a job that does not use RSA
// runs and ends as if RSA were not there: the prolog and the epilog wait
// out a restart only for RSA's own jobs (issue 16, point 2). Before, each
// waited 30 s for every job.
func testPollDaemonDown(c *cluster) {
	c.slurmUp("stop-rsa")
	defer c.slurmUp("start-rsa")
	start := time.Now()
	id := c.sbatch("plain.sh", "#!/bin/bash\ntrue\n")
	c.waitJob(id, 60*time.Second, "COMPLETED")
	// The scheduler starts a job within a second or two here
	// (sched_interval=1); 15 s is far from the 60 s of two waits.
	if took := time.Since(start); took > 15*time.Second {
		c.t.Errorf("a job without RSA took %v from sbatch to COMPLETED while rsa serve was down", took.Round(time.Second))
	}
}

// testPollBadDirective: polling cannot refuse a job at submission; a job
// with a wrong RSA line runs without RSA, and its comment says why.
func testPollBadDirective(c *cluster) {
	blocker := c.sbatch("blocker.sh", "#!/bin/bash\nsleep 3\n", "--time=1")
	c.waitJob(blocker, 30*time.Second, "RUNNING")
	id := c.sbatch("bad.sh", "#!/bin/bash\n#RSA_DATA_INN=/nowhere\ntrue\n")
	var comment string
	c.waitFor("RSA to explain in the job's comment", 30*time.Second, func() bool {
		comment = c.root("squeue", "-h", "-j", id, "-t", "all", "-o", "%k")
		return strings.Contains(comment, "RSA:")
	})
	if !strings.Contains(comment, `line 2 "#RSA_DATA_INN=/nowhere": unknown variable RSA_DATA_INN`) {
		c.t.Errorf("the job's comment is %q", comment)
	}
	c.waitJob(id, 30*time.Second, "COMPLETED")
	if j := c.rsaJob(id); j != nil {
		c.t.Errorf("RSA took a job with a bad directive: %+v", j)
	}
}

// testPollDueLater: a job that Slurm expects to start in half an hour is
// on deck, but its stage-in waits until stage_in_lead (10m) before that.
func testPollDueLater(c *cluster) {
	in := c.mkdir("later-in")
	c.input(in, 2)
	blocker := c.sbatch("blocker.sh", "#!/bin/bash\nsleep 300\n", "--time=30")
	c.waitJob(blocker, 30*time.Second, "RUNNING")
	id := c.sbatch("later.sh", fmt.Sprintf("#!/bin/bash\n#RSA_DATA_IN=%s\ntrue\n", in))
	c.waitFor("RSA to hold the job back until its stage-in time", 30*time.Second, func() bool {
		j := c.rsaJob(id)
		return j != nil && strings.Contains(j.Waiting, "stage-in starts at")
	})
	// Four polls (500ms) and ten ticks later: still nothing staged.
	time.Sleep(2 * time.Second)
	if j := c.rsaJob(id); j.RSA != "INITIAL" || j.Capacity() != 0 {
		c.t.Errorf("a job due in 30 minutes is %s holding %d bytes", j.RSA, j.Capacity())
	}
	c.assertNoLeaks()
	c.root("scancel", blocker, id)
	c.waitFor("RSA to let go of the cancelled job", 30*time.Second, func() bool { return string(c.rsaJob(id).RSA) == "RELEASED" })
}

// testPollLifecycle: a job waiting for the node another job holds is
// staged in while it waits, starts with its input in RAM, and its output
// reaches the disk after it.
func testPollLifecycle(c *cluster) {
	in, out := c.mkdir("poll-in"), c.mkdir("poll-out")
	sum := c.input(in, 10)
	c.file("node-check.sh", nodeCheck, 0o755)
	c.file("node-write.sh", nodeWrite, 0o755)
	blocker := c.sbatch("blocker.sh", "#!/bin/bash\nsleep 8\n", "--time=1")
	c.waitJob(blocker, 30*time.Second, "RUNNING")
	id := c.sbatch("job.sh", fmt.Sprintf(`#!/bin/bash
#RSA_DATA_IN=%[1]s
#RSA_DATA_OUT=%[2]s
#RSA_DELAY=4
srun %[3]s/node-check.sh %[1]s %[3]s
srun %[3]s/node-write.sh %[2]s
`, in, out, c.work))
	c.waitRSA(id, 30*time.Second, "READY")
	if st, reason := c.jobNow(id); st != "PENDING" || reason != "Resources" {
		c.t.Errorf("the input was staged while the job was %s (%s), not pending on Resources", st, reason)
	}
	c.waitJob(id, 60*time.Second, "COMPLETED")
	c.waitRSA(id, 30*time.Second, "RELEASED")
	if got, err := os.ReadFile(filepath.Join(c.work, "seen-n1")); err != nil || string(got) != "tmpfs "+sum+"\n" {
		c.t.Errorf("the job saw its input as %q (err %v), want tmpfs with its data", got, err)
	}
	if got, err := os.ReadFile(filepath.Join(out, "n1")); err != nil || string(got) != "tmpfs from n1\n" {
		c.t.Errorf("output on disk: %q (err %v)", got, err)
	}
	c.assertNoLeaks()
}

// testPollDemoted: a job staging in while on deck is pushed back by a job
// of higher priority; RSA stops its stage-in and releases its RAM (App. A).
func testPollDemoted(c *cluster) {
	in := c.mkdir("demote-in")
	c.input(in, 2)
	c.file("sleepy-in.sh", "#!/bin/bash\nsleep 300\n", 0o755)
	blocker := c.sbatch("blocker.sh", "#!/bin/bash\nsleep 300\n", "--time=1")
	c.waitJob(blocker, 30*time.Second, "RUNNING")
	id := c.sbatch("demoted.sh", fmt.Sprintf("#!/bin/bash\n#RSA_DATA_IN=%s\n#RSA_STAGE_IN=%s/sleepy-in.sh\ntrue\n", in, c.work))
	c.waitRSA(id, 30*time.Second, "STAGING_IN")
	other := c.sbatch("other.sh", "#!/bin/bash\ntrue\n")
	prio, err := strconv.ParseUint(c.root("squeue", "-h", "-j", id, "-o", "%Q"), 10, 64)
	if err != nil {
		c.t.Fatal(err)
	}
	c.root("scontrol", "update", "jobid="+other, fmt.Sprintf("priority=%d", prio+1000))
	c.waitFor("the job to be demoted (pending on Priority)", 30*time.Second, func() bool {
		_, reason := c.jobNow(id)
		return reason == "Priority"
	})
	j := c.waitRSA(id, 30*time.Second, "RELEASED")
	if j.State != "DEMOTED" {
		c.t.Errorf("RSA's job is %s/%s, want DEMOTED/RELEASED", j.State, j.RSA)
	}
	c.assertNoLeaks()
	c.root("scancel", blocker, other, id)
	c.waitJob(blocker, 30*time.Second, "CANCELLED")
	c.waitFor("RSA to let go of the cancelled job", 30*time.Second, func() bool { return c.rsaJob(id).State == "FINISHED" })
	c.assertNoLeaks()
}

// testPollStartedAtOnce: a job that starts at once was never seen on deck;
// the prolog tells RSA, which gives it a RAMDISK for its output (App. K).
func testPollStartedAtOnce(c *cluster) {
	out := c.mkdir("direct-out")
	id := c.sbatch("direct.sh", fmt.Sprintf("#!/bin/bash\n#RSA_DATA_OUT=%[1]s\nfindmnt -n -o FSTYPE --mountpoint %[1]s > %[1]s/fs\n", out))
	c.waitJob(id, 30*time.Second, "COMPLETED")
	c.waitRSA(id, 30*time.Second, "RELEASED")
	if got, err := os.ReadFile(filepath.Join(out, "fs")); err != nil || string(got) != "tmpfs\n" {
		c.t.Errorf("the job's output directory was %q (err %v), want a tmpfs", got, err)
	}
	c.assertNoLeaks()
}
