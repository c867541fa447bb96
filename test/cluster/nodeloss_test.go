package cluster_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// TestGlusterNodeLosses: one of a job's RSA nodes lost (its brick killed,
// the host rebooted, its link cut) while the job stages in, while it runs
// and before its stage-out; on a distribute volume (cluster 3), where that
// part of the RAMDISK is lost, and on replica 2 (cluster 4), where the job
// goes on.
//
// The Gluster tests run side by side on clusters of their own (1 to 5;
// make test runs two at a time, scripts/go-test.sh): most of their time is
// spent waiting for timeouts to reveal a loss, so together they take
// little more than the longest alone. Each has users of its own: the job
// directories are named by test, not by cluster.
//
// make test runs, of the 3 losses × 3 phases, a Latin square on each
// volume type: each loss kind once and each phase once per volume type,
// the two squares pairing them differently (distribute: brick killed at
// stage-out, reboot during stage-in, link down while running; replica 2:
// link down at stage-out, brick killed during stage-in, reboot while
// running). So every loss kind, every phase and every volume type is
// covered, each loss kind in two phases and each phase by two loss kinds,
// in 6 jobs instead of 18. Replica2/RebootDuringStageIn runs as well: a
// loss found as the stage-in ends, which must leave the job READY on its
// replicas, never torn down under a job Slurm may be starting. And a
// reboot while a job's input image is built, on distribute. make
// test-long runs all 18 and that one.
func TestGlusterNodeLosses(t *testing.T) {
	// Before t.Parallel: useradd takes a lock and does not wait for it.
	us := []testutil.User{
		testutil.EnsureNamedUser(t, testutil.TestUserName()+"-3"),
		testutil.EnsureNamedUser(t, testutil.TestUserName()+"-4"),
	}
	t.Parallel()
	for i, volume := range []struct {
		name    string
		replica bool
	}{{"Distribute", false}, {"Replica2", true}} {
		u := us[i]
		t.Run(volume.name, func(t *testing.T) {
			t.Parallel()
			env := []string{fmt.Sprintf("RSA_CLUSTER_ID=%d", 3+i), "RSA_CLUSTER_CAPACITY=512M", "RSA_CLUSTER_LEAD=0"}
			if volume.replica {
				env = append(env, "RSA_CLUSTER_REPLICA=2")
			}
			c := startCluster(t, env...)
			for _, s := range []struct {
				name string
				test func(*testing.T, *cluster, testutil.User, bool)
				// In make test on a distribute volume, on replica 2;
				// the rest in make test-long alone.
				distribute, replica bool
			}{
				{"BrickKilledAtStageOut", testBrickKilledAtStageOut, true, false},
				{"RebootAtStageOut", testRebootAtStageOut, false, false},
				{"LinkDownAtStageOut", testLinkDownAtStageOut, false, true},
				{"RebootDuringStageIn", lossDuringStageIn(lossReboot), true, true},
				{"BrickKilledDuringStageIn", lossDuringStageIn(lossBrick), false, true},
				{"LinkDownDuringStageIn", lossDuringStageIn(lossLink), false, false},
				{"RebootDuringImageBuild", lossDuringImageBuild(lossReboot), true, false},
				{"RebootWhileRunning", lossWhileRunning(lossReboot), false, true},
				{"BrickKilledWhileRunning", lossWhileRunning(lossBrick), false, false},
				{"LinkDownWhileRunning", lossWhileRunning(lossLink), true, false},
				{"RebootWhileImageMounted", lossWhileImageMounted(lossReboot), true, false},
				{"BrickKilledWhileImageMounted", lossWhileImageMounted(lossBrick), false, false},
				{"RebootAtPrivateStageOut", lossAtPrivateStageOut(lossReboot), true, false},
				{"BrickKilledAtPrivateStageOut", lossAtPrivateStageOut(lossBrick), false, true},
				{"LinkDownAtPrivateStageOut", lossAtPrivateStageOut(lossLink), false, false},
			} {
				inMakeTest := s.distribute
				if volume.replica {
					inMakeTest = s.replica
				}
				if !inMakeTest && !testutil.Long() {
					continue
				}
				t.Run(s.name, func(t *testing.T) { s.test(t, c, u, volume.replica) })
			}
		})
	}
}

func lossDuringStageIn(how string) func(*testing.T, *cluster, testutil.User, bool) {
	return func(t *testing.T, c *cluster, u testutil.User, replica bool) {
		testLossDuringStageIn(t, c, u, replica, how, false)
	}
}

// lossDuringImageBuild: as lossDuringStageIn, for a job whose input is an
// image (input=image): the loss must never leave a compute node mounting
// an image with pieces missing.
func lossDuringImageBuild(how string) func(*testing.T, *cluster, testutil.User, bool) {
	return func(t *testing.T, c *cluster, u testutil.User, replica bool) {
		testLossDuringStageIn(t, c, u, replica, how, true)
	}
}

func lossWhileRunning(how string) func(*testing.T, *cluster, testutil.User, bool) {
	return func(t *testing.T, c *cluster, u testutil.User, replica bool) {
		testLossWhileRunning(t, c, u, replica, how, false)
	}
}

// lossWhileImageMounted: as lossWhileRunning, for a job whose input is an
// image mounted on its compute node: the switch must take the image's
// mount (and loop device) away though part of the volume under it is
// gone.
func lossWhileImageMounted(how string) func(*testing.T, *cluster, testutil.User, bool) {
	return func(t *testing.T, c *cluster, u testutil.User, replica bool) {
		testLossWhileRunning(t, c, u, replica, how, true)
	}
}

func lossAtPrivateStageOut(how string) func(*testing.T, *cluster, testutil.User, bool) {
	return func(t *testing.T, c *cluster, u testutil.User, replica bool) {
		testLossAtPrivateStageOut(t, c, u, replica, how)
	}
}

// testBrickKilledAtStageOut: the brick process of one of a job's RSA
// nodes is killed (SIGKILL) after the job wrote its output, before its
// stage-out. Distribute: the stage-out is never "verified" over the part
// left; it fails naming the node, the files there are missing on disk
// and the others are there, and once the brick is back rsa retry
// completes it, every file whole. Replica 2: it stages out in full.
func testBrickKilledAtStageOut(t *testing.T, c *cluster, u testutil.User, replica bool) {
	testLossAtStageOut(t, c, u, replica, lossBrick)
}

// testRebootAtStageOut: as testBrickKilledAtStageOut, but the RSA host
// "reboots": the part there is gone for good. Distribute: the stage-out
// fails naming the node, and rsa discard, the admin's explicit choice,
// releases the job with the other parts' files on disk. Replica 2: it
// stages out in full.
func testRebootAtStageOut(t *testing.T, c *cluster, u testutil.User, replica bool) {
	testLossAtStageOut(t, c, u, replica, lossReboot)
}

// testLinkDownAtStageOut: as testBrickKilledAtStageOut, but the RSA host's
// link goes down: a silent loss, which only timeouts reveal. Distribute:
// the stage-out fails naming the node; once the link is back rsa retry
// completes it. Replica 2: it stages out in full.
func testLinkDownAtStageOut(t *testing.T, c *cluster, u testutil.User, replica bool) {
	testLossAtStageOut(t, c, u, replica, lossLink)
}

// The ways an RSA host's part of a RAMDISK is lost in these tests.
const (
	lossBrick  = "brick killed"
	lossReboot = "rebooted"
	lossLink   = "link down"
	// lossUnwatched: rebooted while rsa serve was down, which must
	// notice the new incarnation when it starts.
	lossUnwatched = "rebooted while rsa serve was down"
)

func testLossAtStageOut(t *testing.T, c *cluster, u testutil.User, replica bool, how string) {
	const files = filesOut
	w := workDir(t, u, "brickkill")
	out := filepath.Join(w, "out")
	id, j := c.filesJob(t, u, w, replica)
	if len(j.Alloc) != 2 || j.Alloc[0].Node == j.Alloc[1].Node {
		t.Fatalf("the job holds %v: the test needs two RSA nodes", j.Alloc)
	}
	victim, other := j.Alloc[1].Node, j.Alloc[0].Node
	onVictim := c.brickFiles(t, victim, volumeOf(j))
	if !replica && onVictim == 0 {
		// A job that writes the moment its volume starts may find one
		// brick not yet connected and place every file on the other.
		victim, other = other, victim
		onVictim = c.brickFiles(t, victim, volumeOf(j))
	}
	if replica && onVictim != files {
		t.Fatalf("%d of %d files on %s: replica 2 over two nodes puts all on each", onVictim, files, victim)
	}
	if onVictim == 0 {
		t.Fatalf("no file on %s nor %s", victim, other)
	}
	sums, ended, done := c.loseBeforeEnd(t, id, w, victim, volumeOf(j), how, replica, files, "output")
	if done {
		return
	}
	jv := c.waitRSA(t, id, 90*time.Second, "STAGE_OUT_FAILED")
	t.Logf("distribute, %s: %s: stage-out failed %.1fs after the job ended: %s", victim, how, time.Since(ended).Seconds(), jv.Error)
	if !strings.Contains(jv.Error, "RSA node "+victim) || strings.Contains(jv.Error, "RSA node "+other) {
		t.Errorf("the failure does not name %s alone: %q", victim, jv.Error)
	}
	if !strings.Contains(jv.Error, "files on "+victim+" cannot be listed") {
		t.Errorf("the failure's count of files in RAM does not say it leaves out those on %s: %q", victim, jv.Error)
	}
	var there int
	for name, sum := range sums {
		if got, err := sha256Of(filepath.Join(out, name)); err == nil {
			there++
			if got != sum {
				t.Errorf("%s on disk: sha256 %s, the job wrote %s", name, got, sum)
			}
		}
	}
	if there != files-onVictim {
		t.Errorf("after the failed stage-out %d files are on disk; want the %d not on %s", there, files-onVictim, victim)
	}
	if how == lossReboot {
		// The part is gone for good: the admin gives it up.
		c.rsa(t, "discard", fmt.Sprint(j.ID))
		c.waitRSA(t, id, 60*time.Second, "RELEASED")
		c.assertNoLeaks(t)
		return
	}
	// The part back: the link, or the brick by the command an admin
	// would give.
	if how == lossLink {
		c.exec(t, victim, "ip", "link", "set", "eth0", "up")
	} else {
		c.restartBrick(t, other, volumeOf(j))
	}
	// What an admin sees before the retry: glusterd has the brick online.
	// A restarted brick's client reconnects seconds later, and the retry
	// must not list the volume before (its files would be left out, and
	// the stage-out verified without them): it comes at once. A healed
	// link's client reconnects at its next try, which TCP's backoff may
	// put half a minute away: the retry waits for it, as an admin would
	// after 'out of reach' once more.
	vol := volumeOf(j)
	testutil.WaitFor(t, "glusterd to see the brick online (a healed link: the control host's client connected as well)", 60*time.Second, poll, func() bool {
		st := c.exec(t, other, "gluster", "--mode=script", "--xml", "volume", "status", vol)
		if how == lossBrick {
			return strings.Count(st, "<status>1</status>") == 2
		}
		priv, _ := c.execErr(t, "ctl", "cat", fmt.Sprintf("%s/.meta/graphs/active/%s-client-%d/private", j.Ramdisk, vol,
			slices.IndexFunc(j.Alloc, func(p job.Part) bool { return p.Node == victim })))
		return strings.Count(st, "<status>1</status>") == 2 && strings.Contains(priv, "connected = 1")
	})
	c.rsa(t, "retry", fmt.Sprint(j.ID))
	c.waitRSA(t, id, 90*time.Second, "RELEASED")
	checkOutput(t, out, sums, files)
	c.assertNoLeaks(t)
}

// testLossAtPrivateStageOut: a job with output=private, on two RSA nodes;
// after it wrote its output, and before it ends, the node whose brick
// holds the start of its compute node's image loses its part (how).
// Distribute: what the compute node had not yet flushed into the image
// may be lost, unseen, so the stage-out fails for good, naming that node,
// and copies nothing, also when retried after the part is back; rsa
// discard is the admin's choice. Replica 2: the other copy holds the
// whole image, and it stages out in full.
func testLossAtPrivateStageOut(t *testing.T, c *cluster, u testutil.User, replica bool, how string) {
	const files = 20
	w := workDir(t, u, "privateloss")
	out := filepath.Join(w, "out")
	job := script(t, u, filepath.Join(w, "job.sh"), fmt.Sprintf(`#!/bin/bash
#SBATCH -N 1
#SBATCH -o %[1]s/job.out
#RSA capacity=%[3]s pool=rsa output=private out=%[2]s
for i in $(seq 600); do [ "$(findmnt -n -o FSTYPE --mountpoint %[2]s)" = ext4 ] && break; sleep 0.1; done
for i in $(seq %[4]d); do head -c 100000 /dev/urandom > %[2]s/f$i; done
(cd %[2]s && sha256sum f*) > %[1]s/sums
touch %[1]s/written
for i in $(seq 3000); do [ -e %[1]s/go ] && break; sleep 0.1; done
`, w, out, twoNodes(replica), files))
	id := c.sbatch(t, u, job)
	j := c.waitRSA(t, id, 90*time.Second, "INUSE_OUT")
	testutil.WaitFor(t, "the job's output", 60*time.Second, poll, func() bool {
		_, err := os.Stat(filepath.Join(w, "written"))
		return err == nil
	})
	if len(j.Alloc) != 2 || j.Alloc[0].Node == j.Alloc[1].Node {
		t.Fatalf("the job holds %v: the test needs two RSA nodes", j.Alloc)
	}
	// The image's first piece (a regular file of root's; DHT's pointers
	// are empty and sticky): on the node that holds it, on replica 2 on
	// both.
	var holders []string
	for _, p := range j.Alloc {
		st, err := c.execErr(t, p.Node, "stat", "-c", "%s %A", fmt.Sprintf("/run/rsa/bricks/%s/brick/out-%s.img", volumeOf(j), j.Hosts[0]))
		if f := strings.Fields(st); err == nil && len(f) == 2 && f[0] != "0" && !strings.HasSuffix(f[1], "T") {
			holders = append(holders, p.Node)
		}
	}
	if want := map[bool]int{false: 1, true: 2}[replica]; len(holders) != want {
		t.Fatalf("the private image of %s is on %v, want %d of the job's RSA nodes", j.Hosts[0], holders, want)
	}
	victim := holders[0]
	_, ended, done := c.loseBeforeEnd(t, id, w, victim, volumeOf(j), how, replica, files, "private output")
	if done {
		return
	}
	jv := c.waitRSA(t, id, 120*time.Second, "STAGE_OUT_FAILED")
	t.Logf("distribute, %s: %s: the private stage-out failed %.1fs after the job ended: %s", victim, how, time.Since(ended).Seconds(), jv.Error)
	c.checkWritesLost(t, jv, victim, out)
	// The part back (a brick restarted, a link healed) brings back what
	// the bricks hold, not what the compute node failed to write there:
	// a retry fails as the first did.
	switch how {
	case lossLink:
		c.exec(t, victim, "ip", "link", "set", "eth0", "up")
	case lossBrick:
		other := j.Alloc[0].Node
		if other == victim {
			other = j.Alloc[1].Node
		}
		c.restartBrick(t, other, volumeOf(j))
	}
	c.rsa(t, "retry", fmt.Sprint(j.ID))
	c.checkWritesLost(t, c.waitRSA(t, id, 120*time.Second, "STAGE_OUT_FAILED"), victim, out)
	c.rsa(t, "discard", fmt.Sprint(j.ID))
	c.waitRSA(t, id, 60*time.Second, "RELEASED")
	c.assertNoLeaks(t)
}

// loseBeforeEnd takes victim's part of vol away (how) while the job id
// waits for w/go, then lets it end. On replica 2 its output (what, for
// the log) must stage out whole, every file of w/sums in w/out: it
// checks so, and that nothing is left, and says done. It returns the
// job's sums and when it was let end.
func (c *cluster) loseBeforeEnd(t *testing.T, id, w, victim, vol, how string, replica bool, files int, what string) (sums map[string]string, ended time.Time, done bool) {
	t.Helper()
	c.lose(t, victim, vol, how)
	if err := os.WriteFile(filepath.Join(w, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ended = time.Now()
	c.waitJob(t, id, 60*time.Second, "COMPLETED")
	sums = parseSums(t, readFile(t, filepath.Join(w, "sums")))
	if !replica {
		return sums, ended, false
	}
	c.waitRSA(t, id, 120*time.Second, "RELEASED")
	t.Logf("replica 2, %s: %s: %s staged out in full %.1fs after the job ended", victim, how, what, time.Since(ended).Seconds())
	checkOutput(t, filepath.Join(w, "out"), sums, files)
	if how == lossLink {
		// What the teardown left there is removed once it answers.
		c.exec(t, victim, "ip", "link", "set", "eth0", "up")
	}
	c.assertNoLeaks(t)
	return sums, ended, true
}

// checkWritesLost: the private stage-out of jv failed for good, naming
// victim, and copied nothing into out.
func (c *cluster) checkWritesLost(t *testing.T, jv *api.JobView, victim, out string) {
	t.Helper()
	if !strings.Contains(jv.Error, "never will be: the part of the RAMDISK on RSA node "+victim+" was lost") {
		t.Errorf("the failure does not say the images cannot be verified for the loss of %s: %q", victim, jv.Error)
	}
	if names, err := os.ReadDir(out); err != nil || len(names) != 0 {
		t.Errorf("after a failed private stage-out the output directory holds %d entries (%v), want none", len(names), err)
	}
}

// lose takes away victim's part of the RAMDISK vol, as how says.
func (c *cluster) lose(t *testing.T, victim, vol, how string) {
	t.Helper()
	switch how {
	case lossReboot:
		if out, err := c.script(t, time.Minute, "cluster-up", "reboot", victim); err != nil {
			t.Fatalf("reboot %s: %v %s", victim, err, out)
		}
	case lossUnwatched:
		for _, step := range [][]string{{"stop-rsa"}, {"reboot", victim}, {"start-rsa"}} {
			if out, err := c.script(t, time.Minute, "cluster-up", step...); err != nil {
				t.Fatalf("cluster-up %v: %v %s", step, err, out)
			}
		}
	case lossLink:
		c.exec(t, victim, "ip", "link", "set", "eth0", "down")
		t.Cleanup(func() { c.execErr(t, victim, "ip", "link", "set", "eth0", "up") })
	case lossBrick:
		// Every host shares the machine's pid namespace: the pattern
		// names the victim's brick by its address, which no host of
		// another cluster has.
		addr := strings.ReplaceAll(c.addr(victim), ".", "[.]")
		c.exec(t, victim, "pkill", "-KILL", "-f", fmt.Sprintf("volfile-id %s[.]%s[.]", vol, addr))
		// This VM's init reaps no orphan: the killed brick stays a
		// zombie, whose pid file glusterd takes for a running brick (a
		// volume rebuilt under the same name would get no brick). A
		// real host's init reaps it, and the pid file names no process.
		c.exec(t, victim, "sh", "-c", fmt.Sprintf("rm -f /run/gluster/vols/%s/*.pid", vol))
	default:
		t.Fatalf("no way to lose a node %q", how)
	}
}

// restartBrick starts the killed brick of vol again, by the command an
// admin would give (on other, a node of the same volume).
func (c *cluster) restartBrick(t *testing.T, other, vol string) {
	t.Helper()
	c.exec(t, other, "gluster", "--mode=script", "volume", "start", vol, "force")
}

// filesOut is how many files filesJob's job writes.
const filesOut = 40

// filesJob is outputJob on two RSA nodes (replica 2 or not) whose job
// writes filesOut files of random data into w/out and their sums into
// w/sums.
func (c *cluster) filesJob(t *testing.T, u testutil.User, w string, replica bool) (string, *api.JobView) {
	t.Helper()
	return c.outputJob(t, u, w, "#RSA capacity="+twoNodes(replica)+" pool=rsa", fmt.Sprintf(
		`for i in $(seq %[3]d); do head -c 100000 /dev/urandom > %[2]s/f$i; done
(cd %[2]s && sha256sum f*) > %[1]s/sums`, w, filepath.Join(w, "out"), filesOut))
}

// twoNodes is a capacity that puts a job on two RSA nodes of 512M each:
// 600M is more than one node's; under replica 2, 400M is one pair,
// charged 800M.
func twoNodes(replica bool) string {
	if replica {
		return "400M"
	}
	return "600M"
}

// outputJob submits, as u, a one-node job whose output goes to its RAMDISK
// at w/out: with the #SBATCH and #RSA lines in header, it waits for its
// output mount, runs write (a shell snippet), says so (w/written) and then
// holds its node until the test creates w/go (5 min at most). It returns
// once the output is written, with the job's Slurm id and RSA record.
func (c *cluster) outputJob(t *testing.T, u testutil.User, w, header, write string) (string, *api.JobView) {
	t.Helper()
	out := filepath.Join(w, "out")
	job := script(t, u, filepath.Join(w, "job.sh"), fmt.Sprintf(`#!/bin/bash
#SBATCH -N 1
#SBATCH -o %[1]s/job.out
%[3]s
#RSA_DATA_OUT=%[2]s
for i in $(seq 600); do [ "$(findmnt -n -o FSTYPE --mountpoint %[2]s)" = fuse.glusterfs ] && break; sleep 0.1; done
%[4]s
touch %[1]s/written
for i in $(seq 3000); do [ -e %[1]s/go ] && break; sleep 0.1; done
`, w, out, header, write))
	id := c.sbatch(t, u, job)
	j := c.waitRSA(t, id, 90*time.Second, "INUSE_OUT")
	testutil.WaitFor(t, "the job's output", 60*time.Second, poll, func() bool {
		_, err := os.Stat(filepath.Join(w, "written"))
		return err == nil
	})
	return id, j
}

// dataJob is outputJob whose job writes one file of size bytes of random
// data, w/out/data, and its sum into w/sum (checkData checks it).
func (c *cluster) dataJob(t *testing.T, u testutil.User, w, header string, size int) (string, *api.JobView) {
	t.Helper()
	return c.outputJob(t, u, w, header, fmt.Sprintf(`head -c %[3]d /dev/urandom > %[2]s/data
sha256sum < %[2]s/data > %[1]s/sum`, w, filepath.Join(w, "out"), size))
}

// checkData checks that w/out/data on disk is what the job summed in w/sum.
func checkData(t *testing.T, w string) {
	t.Helper()
	want := strings.Fields(readFile(t, filepath.Join(w, "sum")))[0]
	if got := sha256File(t, filepath.Join(w, "out", "data")); got != want {
		t.Errorf("the job's output on disk: sha256 %s, it wrote %s", got, want)
	}
}

// parseSums reads sha256sum's output: file name → sum.
func parseSums(t *testing.T, s string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 {
			m[f[1]] = f[0]
		}
	}
	return m
}

// checkOutput checks that every file the job wrote is on disk, whole.
func checkOutput(t *testing.T, dir string, sums map[string]string, files int) {
	t.Helper()
	if len(sums) != files {
		t.Fatalf("the job summed %d files, not %d", len(sums), files)
	}
	for name, sum := range sums {
		if got, err := sha256Of(filepath.Join(dir, name)); err != nil || got != sum {
			t.Errorf("%s on disk: %s %v, the job wrote %s", name, got, err, sum)
		}
	}
}

// testAgentDownAtTeardown: the agent of one of a job's RSA nodes is
// killed while the job runs. Its output still stages out (the agent holds
// no data; glusterd and the client vouch for the brick), and the teardown
// does not wait for the node: the job is released at once, the node's
// part is a debt still counted as held there, and when the agent is back
// the daemon removes the brick and the debt.
func testAgentDownAtTeardown(t *testing.T, c *cluster, u testutil.User) {
	w := workDir(t, u, "agentdown")
	id, j := c.dataJob(t, u, w, "#RSA capacity=400M pool=rsa", 3000000)
	if len(j.Alloc) != 2 {
		t.Fatalf("the job holds %v: the test needs two RSA nodes", j.Alloc)
	}
	silent := j.Alloc[1].Node
	if out, err := c.script(t, time.Minute, "cluster-up", "kill-agent", silent); err != nil {
		t.Fatalf("kill-agent %s: %v %s", silent, err, out)
	}
	if err := os.WriteFile(filepath.Join(w, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ended := time.Now()
	c.waitJob(t, id, 60*time.Second, "COMPLETED")
	c.waitRSA(t, id, 90*time.Second, "RELEASED")
	t.Logf("agent of %s down: output staged out and the job released %.1fs after it ended", silent, time.Since(ended).Seconds())
	checkData(t, w)
	owed := func() int64 {
		var nodes struct{ Nodes []api.NodeView }
		if err := json.Unmarshal([]byte(c.rsa(t, "nodes", "--json")), &nodes); err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes.Nodes {
			if n.Name == silent {
				return n.Owed
			}
		}
		return -1
	}
	if o := owed(); o != j.Alloc[1].Bytes {
		t.Errorf("%s owes %d bytes after the teardown, want its part, %d", silent, o, j.Alloc[1].Bytes)
	}
	if mi := c.exec(t, silent, "cat", "/proc/self/mountinfo"); !strings.Contains(mi, volumeOf(j)) {
		t.Errorf("the brick on %s is gone though its agent was down: what removed it?", silent)
	}
	if out, err := c.script(t, time.Minute, "cluster-up", "start-agent", silent); err != nil {
		t.Fatalf("start-agent %s: %v %s", silent, err, out)
	}
	back := time.Now()
	testutil.WaitFor(t, "the debt to be paid", 60*time.Second, poll, func() bool { return owed() == 0 })
	t.Logf("agent of %s back: its part removed and the debt paid %.1fs later", silent, time.Since(back).Seconds())
	c.assertNoLeaks(t)
}

// testLossDuringStageIn: one of a job's RSA hosts loses its part of the
// RAMDISK (how) while the job's input is staged in. The stage-in's check,
// the daemon's probe of the control host's client or the heartbeat finds
// it. Distribute: the stage-in stops, what is left is torn down (a silent
// node's part a debt), the job is assigned anew and its input staged in
// again. Replica 2: the other copy holds every file, and the job reads its
// input whole from its RAMDISK, the loss reported once.
func testLossDuringStageIn(t *testing.T, c *cluster, u testutil.User, replica bool, how string, image bool) {
	w := workDir(t, u, "stagein")
	in := filepath.Join(w, "in")
	// Enough files that the stage-in outlasts a reboot's first second,
	// in which its processes die; an image is one file written at the
	// volume's bandwidth, so it gets bigger ones.
	mode, inRAM, size := "files", "fuse.glusterfs", 16<<10
	if image {
		mode, inRAM, size = "image", "erofs", 192<<10
	}
	sums := fill(t, u, in, 1000, size)
	// With replica 2 the job holds its RAMDISK until RSA has recorded the
	// loss (the test then writes release): a stage-in quicker than the
	// reboot (an image) meets the loss only once the job runs, and its
	// report, after a check of the other copies that may take the
	// client's 15 s, must find the job still holding its RAMDISK.
	release := filepath.Join(w, "release")
	hold := ""
	if replica {
		hold = fmt.Sprintf("while [ ! -e %s ]; do sleep 0.2; done\n", release)
	}
	job := script(t, u, filepath.Join(w, "job.sh"), fmt.Sprintf(`#!/bin/bash
#SBATCH -N 1
#SBATCH -o %[1]s/job.out
#RSA capacity=%[3]s pool=rsa input=%[4]s
#RSA_DATA_IN=%[2]s
findmnt -n -o FSTYPE --mountpoint %[2]s > %[1]s/infs
cd %[2]s && sha256sum f* > %[1]s/sums
%[5]s`, w, in, twoNodes(replica), mode, hold))
	id := c.sbatch(t, u, job)
	j := c.waitRSA(t, id, 90*time.Second, "STAGING_IN")
	if len(j.Alloc) != 2 {
		t.Fatalf("the job holds %v: the test needs two RSA nodes", j.Alloc)
	}
	victim := j.Alloc[1].Node
	lost := time.Now()
	c.lose(t, victim, volumeOf(j), how)
	took := time.Since(lost)
	testutil.WaitFor(t, "the job to leave its first stage-in", 90*time.Second, poll, func() bool {
		return c.rsaJob(t, id).RSA != "STAGING_IN"
	})
	t.Logf("%s: %s during stage-in (that took %.1fs): the stage-in ended within %.1fs of it", victim, how, took.Seconds(), time.Since(lost).Seconds())
	if replica {
		testutil.WaitFor(t, "RSA to record the loss of "+victim, 90*time.Second, poll, func() bool {
			return slices.Contains(c.rsaJob(t, id).Lost, victim)
		})
		if err := os.WriteFile(release, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c.waitJob(t, id, 180*time.Second, "COMPLETED")
	t.Logf("the job ran %.1fs after that", time.Since(lost).Seconds())
	// The teardown removes the volume through glusterd, which keeps a
	// volume's lock that a peer held as it rebooted until glusterd's
	// lock-timer gives it up (cluster-up: 20 s, 60 s under
	// RSA_TEST_LONG; 180 s by default, which one CI run met), and a
	// command waiting on it may take its CLI timeout (120 s) first.
	c.waitRSA(t, id, 300*time.Second, "RELEASED")
	log, stageLog := c.rsa(t, "log", fmt.Sprint(j.ID)), c.stageLog(t, j.ID)
	infs := strings.TrimSpace(readFile(t, filepath.Join(w, "infs")))
	if replica {
		// Every file is on the other copy: wherever the loss is found
		// (during the copy, by the stage-in's check as it ends, or in
		// READY, which the RAMDISK keeps, degraded), the job reads its
		// input from RAM, and the loss is reported once: a second
		// report of the same node is a duplicate, and one that tore the
		// RAMDISK down under a job Slurm was starting is the READY race.
		if infs != inRAM {
			t.Errorf("the job read its input from %q, not from its RAMDISK, though the other copy held every file:\n%s", infs, log)
		}
		if n := lossReports(stageLog, victim); n != 1 {
			t.Errorf("the job's log reports the loss of %s %d times, want once:\n%s", victim, n, stageLog)
		}
	} else {
		// Two outcomes are right. The loss found before READY (the
		// stage-in's check, the heartbeat during the copy) has the
		// RAMDISK rebuilt and the input staged in again: the job reads
		// from RAM. Found only in READY, as the copy was done, the
		// RAMDISK lost files and is never mounted: a job Slurm starts
		// meanwhile reads its input from disk, and its log says so.
		// Never does it read a listing with files missing.
		if infs != inRAM && !strings.Contains(log, "the job reads its input from disk") {
			t.Errorf("the job read its input from %q, not from its RAMDISK, and its log does not say why:\n%s", infs, log)
		}
		if !namesLoss(log, victim) {
			t.Errorf("the job's log does not say %s was lost:\n%s", victim, log)
		}
	}
	if got := readFile(t, filepath.Join(w, "sums")); got != sums {
		t.Errorf("the job read other input than it has on disk (%d bytes of sums, want %d)", len(got), len(sums))
	}
	if how == lossLink {
		// What the teardown left there is removed once it answers.
		c.exec(t, victim, "ip", "link", "set", "eth0", "up")
	}
	c.assertNoLeaks(t)
}

// lossReports counts the lines of a job's staging log that report node's
// part of its RAMDISK lost or out of reach: the stage-in's check, the
// heartbeat, the probe, the mount's. A teardown's note that it leaves the
// part there as a debt (the node silent) reports nothing new.
func lossReports(stageLog, node string) int {
	n := 0
	for _, l := range strings.Split(stageLog, "\n") {
		if _, msg, ok := strings.Cut(l, " "); ok && namesLoss(msg, node) && !strings.HasPrefix(msg, "teardown: ") {
			n++
		}
	}
	return n
}

// namesLoss: a job's log says node's part of its RAMDISK was lost or out
// of reach.
func namesLoss(log, node string) bool {
	return strings.Contains(log, "RSA node "+node+" is out of reach") || strings.Contains(log, "RSA node "+node+" lost") ||
		strings.Contains(log, "RSA node "+node+" out of reach")
}

// testLossWhileRunning: one of a job's RSA hosts loses its part of the
// RAMDISK (how) while the job reads its input from RAM. The job goes on
// (its record and its log name the node). With replica 2 it reads every
// file from the other copy, degraded, until the switch. Without, it must
// not read a shorter input: the switch comes at once (its delay is far
// off), the input path shows the input on disk again, and what the job
// reads after that is all of it. The RAMDISK is rebuilt on live nodes for
// output, and the output written there is staged out whole.
func testLossWhileRunning(t *testing.T, c *cluster, u testutil.User, replica bool, how string, image bool) {
	w := workDir(t, u, "running")
	in, out := filepath.Join(w, "in"), filepath.Join(w, "out")
	// An image big enough to be spread over both nodes' bricks (64 MiB
	// shards).
	mode, inRAM, n, size := "files", "fuse.glusterfs", 40, 64<<10
	if image {
		mode, inRAM, n, size = "image", "erofs", 160, 1<<20
	}
	// Replica 2: the switch comes when it is due, after the job has read
	// its input again (a switch while it reads finds the input busy and
	// leaves the output on disk).
	delay := 30
	if !replica {
		delay = 3600 // only the loss brings the switch within the test
	}
	sums := fill(t, u, in, n, size)
	job := script(t, u, filepath.Join(w, "job.sh"), fmt.Sprintf(`#!/bin/bash
#SBATCH -N 1
#SBATCH -o %[1]s/job.out
#RSA capacity=%[4]s pool=rsa input=%[5]s
#RSA_DATA_IN=%[2]s
#RSA_DATA_OUT=%[3]s
#RSA_DELAY=%[6]d
findmnt -n -o FSTYPE --mountpoint %[2]s > %[1]s/infs
(cd %[2]s && sha256sum f*) > %[1]s/insums
touch %[1]s/read
for i in $(seq 3000); do [ -e %[1]s/go ] && break; sleep 0.1; done
(cd %[2]s && sha256sum f*) > %[1]s/resums 2>&1
for i in $(seq 1200); do [ "$(findmnt -n -o FSTYPE --mountpoint %[3]s)" = fuse.glusterfs ] && break; sleep 0.1; done
findmnt -n -o FSTYPE --mountpoint %[3]s > %[1]s/outfs
for i in $(seq 20); do head -c 100000 /dev/urandom > %[3]s/o$i; done
(cd %[3]s && sha256sum o*) > %[1]s/outsums
`, w, in, out, twoNodes(replica), mode, delay))
	id := c.sbatch(t, u, job)
	j := c.waitRSA(t, id, 90*time.Second, "INUSE_IN")
	testutil.WaitFor(t, "the job to read its input", 60*time.Second, poll, func() bool {
		_, err := os.Stat(filepath.Join(w, "read"))
		return err == nil
	})
	victim := j.Alloc[1].Node
	lost := time.Now()
	c.lose(t, victim, volumeOf(j), how)
	// A link cut is silent: the client gives the brick up after its ping
	// timeout, the heartbeat after cluster.down_after, the switch's
	// teardown when the node does not answer; whichever comes first.
	// The record names the node until the RAMDISK is rebuilt on live
	// nodes (a new assignment has lost none): when the node stays silent
	// past the switch, as a reboot did once in CI under four clusters'
	// load, only the job's log still says so.
	testutil.WaitFor(t, "the job's record or log to name the lost node", 60*time.Second, poll, func() bool {
		return slices.Contains(c.rsaJob(t, id).Lost, victim) || namesLoss(c.rsa(t, "log", fmt.Sprint(j.ID)), victim)
	})
	t.Logf("%s: %s while the job ran: the job knew %.1fs later", victim, how, time.Since(lost).Seconds())
	if jv := c.rsaJob(t, id); jv.State != "RUNNING" {
		t.Errorf("the job is %s/%s after losing an RSA node, not running on", jv.State, jv.RSA)
	}
	if got := readFile(t, filepath.Join(w, "insums")); got != sums {
		t.Errorf("the job read other input than it has on disk")
	}
	if got := strings.TrimSpace(readFile(t, filepath.Join(w, "infs"))); got != inRAM {
		t.Errorf("the job read its input from %q, not %s", got, inRAM)
	}
	if !replica {
		// The input path leaves RAM: what the job reads next is on disk.
		testutil.WaitFor(t, "the switch the loss brings", 60*time.Second, poll, func() bool {
			switch c.rsaJob(t, id).RSA {
			case "INUSE_IN", "UNMOUNT_NEEDED", "UNMOUNTING":
				return false
			}
			return true
		})
		if jv := c.rsaJob(t, id); jv.RSA == "UNMOUNT_BUSY" {
			t.Fatalf("the input stayed mounted (%s), though the job holds nothing in it", jv.RSA)
		}
	}
	if err := os.WriteFile(filepath.Join(w, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.waitJob(t, id, 120*time.Second, "COMPLETED")
	c.waitRSA(t, id, 60*time.Second, "RELEASED")
	// Never a shorter input: every file, read after the loss (from disk
	// without replicas, from the other copy with them).
	if got := readFile(t, filepath.Join(w, "resums")); got != sums {
		t.Errorf("after the loss the job read:\n%s\nwant every file of its input:\n%s", got, sums)
	}
	if got := strings.TrimSpace(readFile(t, filepath.Join(w, "outfs"))); got != "fuse.glusterfs" {
		t.Errorf("the job wrote its output to %q, not to a rebuilt RAMDISK", got)
	}
	checkOutput(t, out, parseSums(t, readFile(t, filepath.Join(w, "outsums"))), 20)
	log := c.rsa(t, "log", fmt.Sprint(j.ID))
	if !namesLoss(log, victim) {
		t.Errorf("the job's log does not say %s was lost:\n%s", victim, log)
	}
	if how == lossUnwatched && !strings.Contains(log, "RSA node "+victim+" rebooted") {
		t.Errorf("the job's log does not say %s rebooted:\n%s", victim, log)
	}
	if how == lossLink {
		c.exec(t, victim, "ip", "link", "set", "eth0", "up")
	}
	c.assertNoLeaks(t)
}

// testFenceAtStageOut: when the job ends, its compute host is cut off from
// the control host (the agent's port alone: Slurm and Gluster still pass)
// while a process there still writes into the RAMDISK through a file it
// holds open. The stage-out does not wait for the host: it fences it (the
// RAMDISK turns read-only for every client, open files included) and
// stages out what was written before. Every write the process saw succeed
// is on disk: nothing it wrote was silently lost.
func testFenceAtStageOut(t *testing.T, c *cluster, u testutil.User) {
	w := workDir(t, u, "fence")
	out := filepath.Join(w, "out")
	id, j := c.dataJob(t, u, w, "#SBATCH -w c1", 1000000)
	// A writer left behind on c1, its file open before the fence. It
	// writes until the test has read what it saw (w/stop): a fixed number
	// of writes could end before the fence on a loaded machine.
	// Not testutil.Command, which ends it after 90 s.
	wlog, stop := filepath.Join(w, "writer.log"), filepath.Join(w, "stop")
	writer := exec.Command(filepath.Join(c.root, "scripts", "cluster-up"), "exec", "c1", "sh", "-c",
		fmt.Sprintf(`exec 3>>%s/late; i=0; while [ ! -e %s ]; do if echo $i >&3; then echo ok $i; else echo fail $i; fi; i=$((i+1)); sleep 0.1; done > %s 2>&1`, j.Ramdisk, stop, wlog))
	writer.Env = c.env
	writer.WaitDelay = 5 * time.Second
	if err := writer.Start(); err != nil {
		t.Fatal(err)
	}
	writerDone := make(chan struct{})
	go func() { writer.Wait(); close(writerDone) }()
	// stopWriter has the writer end by itself, or kills it if a write
	// hangs; idempotent.
	stopWriter := func() {
		if err := os.WriteFile(stop, nil, 0o644); err != nil {
			t.Error(err)
		}
		select {
		case <-writerDone:
		case <-time.After(30 * time.Second):
			writer.Process.Kill()
			<-writerDone
		}
	}
	t.Cleanup(stopWriter)
	testutil.WaitFor(t, "the writer's first write", 30*time.Second, poll, func() bool {
		b, _ := os.ReadFile(wlog)
		return strings.Contains(string(b), "ok 0")
	})
	c.exec(t, "c1", "sh", "-c", `nft add table inet rsafence && nft add chain inet rsafence in '{ type filter hook input priority 0; }' && nft add rule inet rsafence in ip saddr `+c.addr("ctl")+` tcp dport 9477 drop`)
	t.Cleanup(func() { c.execErr(t, "c1", "nft", "delete", "table", "inet", "rsafence") })
	testutil.WaitFor(t, "the daemon to miss c1's agent", 30*time.Second, poll, func() bool {
		return strings.Contains(c.metrics(t), `rsa_agent_up{node="c1",role="compute"} 0`)
	})
	if err := os.WriteFile(filepath.Join(w, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ended := time.Now()
	c.waitJob(t, id, 60*time.Second, "COMPLETED")
	c.waitRSA(t, id, 120*time.Second, "RELEASED")
	t.Logf("c1 cut off at stage-out: fenced, staged out and released %.1fs after the job ended", time.Since(ended).Seconds())
	checkData(t, w)
	time.Sleep(time.Second) // a few more tries of the writer
	stopWriter()
	var oks []string
	failed := false
	for _, l := range strings.Split(readFile(t, wlog), "\n") {
		if !failed && l != "" && !strings.HasPrefix(l, "ok ") {
			t.Logf("the writer on c1 after %d writes: %s", len(oks), l)
		}
		switch {
		case strings.HasPrefix(l, "ok "):
			if failed {
				t.Errorf("the writer wrote again after a write failed: %q", l)
			}
			oks = append(oks, strings.TrimPrefix(l, "ok "))
		case strings.HasPrefix(l, "fail "):
			failed = true
		}
	}
	if !failed {
		t.Errorf("no write of the writer on c1 failed after the fence")
	}
	if got := strings.Fields(readFile(t, filepath.Join(out, "late"))); !slices.Equal(got, oks) {
		t.Errorf("the writer saw %d writes succeed; on disk are %d (%v…): writes were lost silently", len(oks), len(got), got[:min(len(got), 5)])
	}
	if log := c.rsa(t, "log", fmt.Sprint(j.ID)); !strings.Contains(log, "compute node c1 out of reach") {
		t.Errorf("the job's log does not say c1 was fenced:\n%s", log)
	}
	c.exec(t, "c1", "nft", "delete", "table", "inet", "rsafence")
	testutil.WaitFor(t, "c1's agent to answer again", 30*time.Second, poll, func() bool {
		return strings.Contains(c.metrics(t), `rsa_agent_up{node="c1",role="compute"} 1`)
	})
	// Its client mount was left as a debt: removed once c1 answers,
	// without an admin.
	c.assertNoLeaks(t)
}
