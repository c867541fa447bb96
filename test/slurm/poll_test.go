package slurm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// TestPolling runs the thesis' own integration: RSA reads squeue (a job
// pending on Resources is on deck, pending for any other reason demoted)
// and Slurm's PrologSlurmctld/EpilogSlurmctld report starts and ends.
func TestPolling(t *testing.T) {
	c := startCluster(t, "poll", 1)
	t.Run("lifecycle", func(t *testing.T) { testPollLifecycle(c.in(t)) })
	t.Run("demoted while staging", func(t *testing.T) { testPollDemoted(c.in(t)) })
	t.Run("started without being on deck", func(t *testing.T) { testPollStartedAtOnce(c.in(t)) })
	t.Run("the prolog meets the job before the poller", func(t *testing.T) { testPollPrologFirst(c.in(t)) })
	t.Run("due later holds no RAM", func(t *testing.T) { testPollDueLater(c.in(t)) })
	t.Run("bad directive", func(t *testing.T) { testPollBadDirective(c.in(t)) })
	t.Run("a down daemon holds up no other job", func(t *testing.T) { testPollDaemonDown(c.in(t)) })
	t.Run("a job its prolog let go runs without RSA", func(t *testing.T) { testPollLetGo(c.in(t)) })
}

// rsaServe stops and starts the cluster's rsa serve, and starts it again
// if the test ends with it stopped.
type rsaServe struct {
	c    *cluster
	down bool
}

func (c *cluster) rsaServe() *rsaServe {
	s := &rsaServe{c: c}
	c.t.Cleanup(func() {
		if s.down {
			s.start()
		}
	})
	return s
}

func (s *rsaServe) stop()  { s.c.slurmUp("stop-rsa"); s.down = true }
func (s *rsaServe) start() { s.c.slurmUp("start-rsa"); s.down = false }

// blocker submits a job that holds the cluster's one compute node until
// the returned open is called: a gate file, so that the test, not a sleep
// that load can outlast, says when the node comes free.
func (c *cluster) blocker(name string) (id string, open func()) {
	c.t.Helper()
	gate := filepath.Join(c.work, name+".gate")
	id = c.sbatch(name+".sh", fmt.Sprintf("#!/bin/bash\nuntil [ -e %s ]; do sleep 0.1; done\n", gate), "--time=5")
	return id, func() { c.file(name+".gate", "", 0o644) }
}

// rsaSetting sets key of [slurm] in the cluster's rsa.toml to value (TOML)
// until the test ends. rsa serve reads the file when it starts; the prolog
// and the epilog read it for every job.
func (c *cluster) rsaSetting(key, value string) {
	c.t.Helper()
	old, err := os.ReadFile(c.rsaConf)
	if err != nil {
		c.t.Fatal(err)
	}
	st, err := os.Stat(c.rsaConf)
	if err != nil {
		c.t.Fatal(err)
	}
	set := key + " = " + value
	line := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + `\s*=.*$`)
	conf := line.ReplaceAll(old, []byte(set))
	if !line.Match(old) {
		conf = bytes.Replace(old, []byte("[slurm]\n"), []byte("[slurm]\n"+set+"\n"), 1)
	}
	if bytes.Equal(conf, old) {
		c.t.Fatalf("cannot set %s in %s:\n%s", key, c.rsaConf, old)
	}
	if err := os.WriteFile(c.rsaConf, conf, st.Mode().Perm()); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() {
		if err := os.WriteFile(c.rsaConf, old, st.Mode().Perm()); err != nil {
			c.t.Errorf("putting %s back: %v", c.rsaConf, err)
		}
	})
}

// rsaEvent is one line of an RSA job's event log.
type rsaEvent struct {
	Kind     string `json:"kind"`
	JobState string `json:"job_state"`
	RSAState string `json:"rsa_state"`
	Message  string `json:"message"`
}

// rsaEvents is the event log of RSA job id (rsa log).
func (c *cluster) rsaEvents(id int64) []rsaEvent {
	c.t.Helper()
	var r struct{ Events []rsaEvent }
	if err := json.Unmarshal(c.rsa("log", "--json", strconv.FormatInt(id, 10)), &r); err != nil {
		c.t.Fatal(err)
	}
	return r.Events
}

// testPollDaemonDown: while rsa serve is down, the prolog and the epilog
// wait it out (slurm.prolog_grace) only for RSA's own jobs. The grace is
// ten minutes here, far past every wait of the test: a job that does not
// use RSA runs and ends all the same, and one of RSA's, on deck when the
// daemon went down, is held by its prolog until the daemon is back, then
// starts with its RAMDISK mounted.
func testPollDaemonDown(c *cluster) {
	rsa := c.rsaServe()
	c.rsaSetting("prolog_grace", `"10m"`)
	rsa.stop()
	plain := c.sbatch("plain.sh", "#!/bin/bash\ntrue\n")
	c.waitJob(plain, 60*time.Second, "COMPLETED")
	rsa.start()

	out := c.mkdir("down-out")
	blocker, open := c.blocker("down-blocker")
	c.waitJob(blocker, 30*time.Second, "RUNNING")
	id := c.sbatch("down.sh", fmt.Sprintf("#!/bin/bash\n#RSA_DATA_OUT=%[1]s\nfindmnt -n -o FSTYPE --mountpoint %[1]s > %[1]s/fs\n", out))
	c.waitRSA(id, 30*time.Second, "READY") // on deck: RSA's, marked
	rsa.stop()
	open()
	// CONFIGURING: its nodes are given, its prolog runs and waits.
	c.waitJob(id, 30*time.Second, "CONFIGURING")
	rsa.start()
	c.waitJob(id, 60*time.Second, "COMPLETED")
	c.waitRSA(id, 30*time.Second, "RELEASED")
	if got, err := os.ReadFile(filepath.Join(out, "fs")); err != nil || string(got) != "tmpfs\n" {
		c.t.Errorf("the job's output directory was %q (err %v), want a tmpfs", got, err)
	}
	c.assertNoLeaks()
}

// testPollLetGo: a job whose prolog gave up on a daemon that did not
// answer (slurm.prolog_grace, 2 s here) runs without RSA, on disk. RSA,
// back while the job runs, never mounts over its directories and says in
// the job's log that it runs without RSA, and why; what the job wrote
// stays on disk as it wrote it.
func testPollLetGo(c *cluster) {
	rsa := c.rsaServe()
	c.rsaSetting("prolog_grace", `"2s"`)
	out := c.mkdir("letgo-out")
	blocker, open := c.blocker("letgo-blocker")
	c.waitJob(blocker, 30*time.Second, "RUNNING")
	gate := filepath.Join(c.work, "letgo.gate")
	id := c.sbatch("letgo.sh", fmt.Sprintf(`#!/bin/bash
#RSA_DATA_OUT=%[1]s
findmnt -n -o FSTYPE --mountpoint %[1]s > %[1]s/fs
until [ -e %[2]s ]; do sleep 0.1; done
echo on disk > %[1]s/data
`, out, gate))
	rsaID := c.waitRSA(id, 30*time.Second, "READY").ID // on deck: RSA's, marked
	rsa.stop()
	open()
	// RUNNING, past CONFIGURING: its prolog let it go.
	c.waitJob(id, 60*time.Second, "RUNNING")
	rsa.start()
	testutil.WaitFor(c.t, "RSA to say the job runs without RSA", 30*time.Second, poll, func() bool {
		return strings.Contains(string(c.rsa("log", strconv.FormatInt(rsaID, 10))), "runs without RSA: Slurm started the job without its prolog reaching rsa serve")
	})
	c.file("letgo.gate", "", 0o644)
	c.waitJob(id, 30*time.Second, "COMPLETED")
	c.waitRSA(id, 30*time.Second, "RELEASED")
	for _, e := range c.rsaEvents(rsaID) {
		switch e.RSAState {
		case "MOUNTING", "MOUNTING_IN", "INUSE_IN", "INUSE_OUT", "STAGING_OUT":
			c.t.Errorf("RSA served a job that runs without it: %s", e.Message)
		}
	}
	if got, err := os.ReadFile(filepath.Join(out, "fs")); err != nil || len(got) != 0 {
		c.t.Errorf("the job found %q at its output path (err %v), want its directory on disk", got, err)
	}
	if got, err := os.ReadFile(filepath.Join(out, "data")); err != nil || string(got) != "on disk\n" {
		c.t.Errorf("the job's output on disk is %q (err %v), want what it wrote", got, err)
	}
	c.assertNoLeaks()
}

// testPollBadDirective: polling cannot refuse a job at submission; a job
// with a wrong RSA line runs without RSA, and its comment says why.
func testPollBadDirective(c *cluster) {
	blocker, open := c.blocker("bad-blocker")
	c.waitJob(blocker, 30*time.Second, "RUNNING")
	id := c.sbatch("bad.sh", "#!/bin/bash\n#RSA_DATA_INN=/nowhere\ntrue\n")
	var comment string
	testutil.WaitFor(c.t, "RSA to explain in the job's comment", 30*time.Second, poll, func() bool {
		comment = c.root("squeue", "-h", "-j", id, "-t", "all", "-o", "%k")
		return strings.Contains(comment, "RSA:")
	})
	if !strings.Contains(comment, `line 2 "#RSA_DATA_INN=/nowhere": unknown variable RSA_DATA_INN`) {
		c.t.Errorf("the job's comment is %q", comment)
	}
	open()
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
	var j *api.JobView
	testutil.WaitFor(c.t, "RSA to hold the job back until its stage-in time", 30*time.Second, poll, func() bool {
		j = c.rsaJob(id)
		return j != nil && strings.Contains(j.Waiting, "stage-in starts at")
	})
	// The wait is the daemon's own decision, made by its assignment
	// (Waiting) and kept until a time it shows: far past this test, and
	// stage_in_lead before Slurm's expected start.
	now := time.Now()
	switch {
	case j.RSA != "INITIAL" || j.Capacity() != 0:
		c.t.Errorf("a job due in 30 minutes is %s holding %d bytes", j.RSA, j.Capacity())
	case !j.NotBefore.After(now.Add(5 * time.Minute)):
		c.t.Errorf("a job Slurm expects at %s is staged in from %s, not within stage_in_lead (10m) of its start", j.Expected, j.NotBefore)
	case j.Expected.Sub(j.NotBefore) < 10*time.Minute:
		c.t.Errorf("the stage-in starts at %s, less than stage_in_lead (10m) before the expected start %s", j.NotBefore, j.Expected)
	}
	c.assertNoLeaks()
	c.root("scancel", blocker, id)
	testutil.WaitFor(c.t, "RSA to let go of the cancelled job", 30*time.Second, poll, func() bool { return string(c.rsaJob(id).RSA) == "RELEASED" })
}

// testPollLifecycle: a job waiting for the node another job holds is
// staged in while it waits, starts with its input in RAM, and its output
// reaches the disk after it.
func testPollLifecycle(c *cluster) {
	in, out := c.mkdir("poll-in"), c.mkdir("poll-out")
	sum := c.input(in, 10)
	c.file("node-check.sh", nodeCheck, 0o755)
	c.file("node-write.sh", nodeWrite, 0o755)
	blocker, open := c.blocker("poll-blocker")
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
	open()
	c.waitJob(id, 60*time.Second, "COMPLETED")
	c.waitRSA(id, 30*time.Second, "RELEASED")
	if got, err := os.ReadFile(filepath.Join(c.work, "seen-n1")); err != nil || string(got) != "tmpfs "+sum+"\n" {
		c.t.Errorf("the job saw its input as %q (err %v), want tmpfs with its data", got, err)
	}
	if got, err := os.ReadFile(filepath.Join(out, "n1")); err != nil || string(got) != "tmpfs from n1\n" {
		c.t.Errorf("output on disk: %q (err %v)", got, err)
	}
	c.assertAccounted(id, 10, 10*4000*20)
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
	testutil.WaitFor(c.t, "the job to be demoted (pending on Priority)", 30*time.Second, poll, func() bool {
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
	testutil.WaitFor(c.t, "RSA to let go of the cancelled job", 30*time.Second, poll, func() bool { return c.rsaJob(id).State == "FINISHED" })
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

// testPollPrologFirst: the prolog wins the race with the poller on purpose.
// The poller reads squeue once, when rsa serve starts, and then not for an
// hour, so it never meets the job, which waits on Resources for the node a
// blocker holds until the test lets it start.
// The prolog meets it first: RSA reads the job from Slurm there, takes it
// on and holds it until its RAMDISK is at its output path, where the batch
// script's first line finds it.
func testPollPrologFirst(c *cluster) {
	// Cleanups run last first: rsa serve restarts with the file put back.
	c.t.Cleanup(func() { c.slurmUp("restart-rsa") })
	c.rsaSetting("poll_interval", `"1h"`)
	c.slurmUp("restart-rsa")
	out := c.mkdir("first-out")
	blocker, open := c.blocker("first-blocker")
	c.waitJob(blocker, 30*time.Second, "RUNNING")
	id := c.sbatch("first.sh", fmt.Sprintf("#!/bin/bash\n#RSA_DATA_OUT=%[1]s\nfindmnt -n -o FSTYPE --mountpoint %[1]s > %[1]s/fs\n", out))
	testutil.WaitFor(c.t, "the job to wait on Resources", 30*time.Second, poll, func() bool {
		st, reason := c.jobNow(id)
		return st == "PENDING" && reason == "Resources"
	})
	if j := c.rsaJob(id); j != nil {
		c.t.Fatalf("the poller met the job (%s/%s) before it started: the race is not the prolog's", j.State, j.RSA)
	}
	open()
	c.waitJob(id, 60*time.Second, "COMPLETED")
	j := c.waitRSA(id, 30*time.Second, "RELEASED")
	if got, err := os.ReadFile(filepath.Join(out, "fs")); err != nil || string(got) != "tmpfs\n" {
		c.t.Errorf("the batch script found its output directory as %q (err %v), want the RAMDISK (tmpfs)", got, err)
	}
	evs := c.rsaEvents(j.ID)
	if len(evs) == 0 || evs[0].Kind != "submit" || evs[0].JobState != "RUNNING" {
		c.t.Errorf("RSA's job did not begin started, as the prolog makes it: %+v", evs)
	}
	if !slices.ContainsFunc(evs, func(e rsaEvent) bool { return e.RSAState == "INUSE_OUT" }) {
		c.t.Errorf("RSA's job never served the output: %+v", evs)
	}
	c.assertNoLeaks()
}
