package cluster_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/failover"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// TestFailoverLong, in burst buffer mode and in polling mode, each on a
// cluster of its own: two control hosts, ctl and ctl2, each with an rsa
// serve of one failover pair (their state directory shared) and a
// slurmctld (Slurm's primary and backup). The active host is halted (every
// process of it killed, its /run emptied) while a job is in each phase:
// pending (its RAMDISK being built), staging in, running, staging out and
// in teardown. Each time the standby takes the state over under the next
// epoch, resumes the job's action, and the job ends right: its input read
// from RAM, its output verified on disk, nothing left behind. The halted
// host then boots again and stays the standby while the other is active,
// forwarding its socket's requests; the next phase halts the other. Last,
// the active host is cut off from the standby under a running job: the
// standby does not take over (the lease, not the link, decides), and the
// job ends right once the link is back. Never two active: each take-over
// raised the epoch by one, and only the host that holds the lease
// announced itself.
func TestFailoverLong(t *testing.T) {
	u := testutil.EnsureNamedUser(t, testutil.TestUserName()+"-10") // before t.Parallel: useradd takes a lock
	t.Parallel()
	for _, mode := range []string{"bb", "poll"} {
		t.Run(mode, func(t *testing.T) { testFailover(t, u, mode) })
	}
}

// testFailover is TestFailoverLong in Slurm mode mode (cluster-up's
// RSA_CLUSTER_MODE). In polling mode Slurm starts a job as soon as nodes
// are free, and one that starts before its stage-in ended reads its input
// from disk: a blocker job holds both compute nodes until RSA has staged
// the job in (READY), as a busy site's queue does.
func testFailover(t *testing.T, u testutil.User, mode string) {
	c := startCluster(t, "RSA_CLUSTER_ID=9", "RSA_CLUSTER_MODE="+mode, "RSA_CLUSTER_FAILOVER=1", "RSA_CLUSTER_RSA=2", "RSA_CLUSTER_CAPACITY=512M",
		"RSA_CLUSTER_LEAD=0", "RSA_CLUSTER_RSA_CONF=[limits]\nstage_bwlimit = \"8M\"")
	active, standby := "ctl", "ctl2"
	c.via = active
	info := c.activeRSA(t)
	if info.Host != active || info.Epoch != 1 {
		t.Fatalf("after cluster-up the active rsa serve is %+v, want ctl with epoch 1", info)
	}
	// The standby answers through the active one.
	if v := c.exec(t, standby, filepath.Join(c.dir, "rsa", "rsa"), "--config", c.rsaConf, "version"); !strings.Contains(v, "active rsa serve of the failover pair: ctl (lease epoch 1)") {
		t.Fatalf("rsa version on the standby's host: %s", v)
	}
	if l := c.rsaLog(t, standby); !strings.Contains(l, "is the standby of a failover pair") {
		t.Fatalf("the standby's log does not say it is one:\n%s", tail(l))
	}

	epoch := info.Epoch
	for _, state := range []lifecycle.RSAState{lifecycle.Booting, lifecycle.StagingIn, lifecycle.InUseIn, lifecycle.StagingOut, lifecycle.Teardown} {
		t.Run(string(state), func(t *testing.T) {
			w := workDir(t, u, "failover-"+strings.ToLower(string(state)))
			sums := fill(t, u, filepath.Join(w, "in"), 40, 2<<20)
			var release func() // ends the hold, once the active host is halted
			var unblock func() // lets a pending job start (polling mode)
			if mode == "poll" {
				unblock = c.block(t, u, w)
			}
			if state == lifecycle.Booting {
				// The construct makes the bricks, then waits for
				// glusterd to make the volume.
				release = c.freezeGlusterd(t)
			}
			id := c.sbatch(t, u, failoverJob(t, u, w, mode))
			if unblock != nil && state != lifecycle.Booting && state != lifecycle.StagingIn {
				c.waitRSA(t, id, 180*time.Second, "READY")
				unblock()
			}
			var rid int64
			switch state {
			case lifecycle.Booting, lifecycle.StagingIn:
				rid = c.waitRSA(t, id, 120*time.Second, string(state)).ID
			case lifecycle.InUseIn:
				rid = c.waitRSA(t, id, 120*time.Second, string(state)).ID
				waitFile(t, filepath.Join(w, "infs"), 60*time.Second)
			case lifecycle.StagingOut:
				// The stage-out waits for glusterd to seal the volume:
				// the output is in RAM alone.
				rid = c.waitRSA(t, id, 120*time.Second, "INUSE_OUT").ID
				waitFile(t, filepath.Join(w, "written"), 120*time.Second)
				release = c.freezeGlusterd(t)
				touch(t, filepath.Join(w, "end"))
				c.waitRSA(t, id, 120*time.Second, string(state))
			case lifecycle.Teardown:
				// A process of the user's on the active host, in the
				// RAMDISK, ignores SIGTERM: the teardown waits for it.
				j := c.waitRSA(t, id, 120*time.Second, "INUSE_OUT")
				rid = j.ID
				waitFile(t, filepath.Join(w, "written"), 120*time.Second)
				var pid int
				pid, release = c.holdRamdisk(t, u, w, j.Ramdisk)
				touch(t, filepath.Join(w, "end"))
				term := fmt.Sprintf("by pid %d (", pid)
				testutil.WaitFor(t, "the teardown to send the holder SIGTERM", 120*time.Second, poll, func() bool {
					return strings.Contains(c.stageLog(t, rid), term)
				})
			}

			// Slurm 22.05's own take-over from a primary that died is
			// not what this tests, and loses jobs here: its backup knows
			// only what the primary last saved (it missed a job
			// submitted a moment before; RSA released that job's
			// RAMDISK when squeue stopped listing it), and it recovers a
			// burst buffer job that had started as one still starting
			// (saved state pre-run), runs pre_run again and
			// requeue-holds it. So Slurm's control moves to ctl2 first,
			// as an admin's scontrol takeover does (the primary saves its
			// state and exits), and the halt takes ctl's rsa serve alone
			// by surprise. Except for a pending burst buffer job: its
			// stage-in is a script of the primary's slurmscriptd, which
			// the takeover ends (Slurm then tears the job's buffer down
			// and runs it without), while its states were saved as they
			// changed. There both take-overs happen at once: RSA's within
			// seconds, Slurm's after SlurmctldTimeout.
			if active == "ctl" && !(mode == "bb" && state == lifecycle.Booting) {
				c.slurmTakeover(t, mode == "bb")
			}
			took := c.halt(t, active, standby)
			epoch++
			if info := c.activeRSA(t); info.Epoch != epoch {
				t.Errorf("%s took over with epoch %d, want %d (one above the last)", standby, info.Epoch, epoch)
			}
			t.Logf("%s halted in %s; %s active after %s", active, state, standby, took.Round(100*time.Millisecond))
			active, standby = standby, active
			c.via = active
			if release != nil {
				release()
			}
			if unblock != nil && (state == lifecycle.Booting || state == lifecycle.StagingIn) {
				// Staged in by the new active one while pending; a job
				// that starts before its stage-in ends reads from disk
				// (polling mode), which would test nothing here.
				c.waitRSA(t, id, 180*time.Second, "READY")
				unblock()
			}
			if state == lifecycle.InUseIn || state == lifecycle.Booting || state == lifecycle.StagingIn {
				touch(t, filepath.Join(w, "end"))
			}
			c.waitJob(t, id, 240*time.Second, "COMPLETED")
			c.waitRSA(t, id, 180*time.Second, "RELEASED")
			if got := strings.TrimSpace(readFile(t, filepath.Join(w, "infs"))); got != "fuse.glusterfs" {
				t.Errorf("the job read its input from %q, not its RAMDISK", got)
			}
			if got := readFile(t, filepath.Join(w, "insums")); got != sums {
				t.Errorf("the input the job read differs from what was staged in")
			}
			if got := strings.TrimSpace(readFile(t, filepath.Join(w, "outfs"))); got != "fuse.glusterfs" {
				t.Errorf("the job wrote its output to %q, not its RAMDISK", got)
			}
			checkData(t, w)
			log := c.rsa(t, "log", fmt.Sprint(rid))
			if a, ok := lifecycle.Work(state); ok && state != lifecycle.InUseIn {
				if want := "resumed " + string(a) + " after restart"; !strings.Contains(log, want) {
					t.Errorf("the job's log lacks %q: the active host was not halted in %s:\n%s", want, state, log)
				}
			}
			if !strings.Contains(log, "stage-out done") {
				t.Errorf("the job's log lacks its stage-out:\n%s", log)
			}
			c.assertNoLeaks(t)

			// The halted host comes back while the other is active: it
			// is the standby, and its socket reaches the active one.
			c.bootControl(t, standby)
			if info := c.activeRSA(t); info.Host != active || info.Epoch != epoch {
				t.Errorf("after %s booted the active rsa serve is %+v, want %s with epoch %d", standby, info, active, epoch)
			}
			if v := c.exec(t, standby, filepath.Join(c.dir, "rsa", "rsa"), "--config", c.rsaConf, "status", "--all"); !strings.Contains(v, fmt.Sprint(rid)) {
				t.Errorf("rsa status on the standby %s does not show job %d:\n%s", standby, rid, v)
			}
		})
		if t.Failed() {
			return
		}
	}

	t.Run("partition", func(t *testing.T) {
		w := workDir(t, u, "failover-partition")
		sums := fill(t, u, filepath.Join(w, "in"), 4, 1<<20)
		var unblock func()
		if mode == "poll" {
			unblock = c.block(t, u, w)
		}
		id := c.sbatch(t, u, failoverJob(t, u, w, mode))
		if unblock != nil {
			c.waitRSA(t, id, 180*time.Second, "READY")
			unblock()
		}
		c.waitRSA(t, id, 120*time.Second, "INUSE_IN")
		before := len(c.rsaLog(t, standby))
		heal := c.cutOff(t, active, standby)
		// Longer than the standby's retries of the lease and the
		// active one's checks of it, several times over.
		time.Sleep(20 * time.Second)
		if info := c.activeRSA(t); info.Host != active || info.Epoch != epoch {
			t.Errorf("cut off from %s, the active rsa serve became %+v; want %s with epoch %d still", standby, info, active, epoch)
		}
		if l := c.rsaLog(t, standby)[before:]; strings.Contains(l, "taking the state over") {
			t.Errorf("the standby took the state over while the active one held the lease:\n%s", tail(l))
		}
		heal()
		touch(t, filepath.Join(w, "end"))
		c.waitJob(t, id, 240*time.Second, "COMPLETED")
		c.waitRSA(t, id, 180*time.Second, "RELEASED")
		if got := readFile(t, filepath.Join(w, "insums")); got != sums {
			t.Errorf("the input the job read differs from what was staged in")
		}
		checkData(t, w)
		c.assertNoLeaks(t)
	})

	// Never two active: the take-overs are the epochs, one each, and each
	// was announced by the rsa serve that made it.
	var announced int
	for _, h := range c.control {
		announced += strings.Count(c.rsaLog(t, h), "this rsa serve is the active one now")
	}
	if info := c.activeRSA(t); info.Epoch != epoch || announced != int(epoch) {
		t.Errorf("lease epoch %d after %d take-overs; the logs announce %d active rsa serve, want one per epoch", info.Epoch, epoch-1, announced)
	}
}

// failoverJob writes the script of a one-node job of u's in w, for Slurm
// mode mode (a capacity in the pool in burst buffer mode, sized by
// proportion in polling mode): it reads
// and sums its input from the RAMDISK at w/in (w/insums, w/infs), waits
// for its output RAMDISK at w/out (20 s after it started), writes 20 MB of
// random data there and its sum (w/sum, checkData), says so (w/written)
// and holds its node until the test creates w/end.
func failoverJob(t *testing.T, u testutil.User, w, mode string) string {
	t.Helper()
	in, out := filepath.Join(w, "in"), filepath.Join(w, "out")
	size := "#RSA capacity=600M pool=rsa"
	if mode == "poll" {
		size = ""
	}
	return script(t, u, filepath.Join(w, "job.sh"), fmt.Sprintf(`#!/bin/bash
#SBATCH -N 1
#SBATCH -o %[1]s/job.out
%[4]s
#RSA_DATA_IN=%[2]s
#RSA_DATA_OUT=%[3]s
#RSA_DELAY=20
(cd %[2]s && sha256sum f*) > %[1]s/insums
findmnt -n -o FSTYPE --mountpoint %[2]s > %[1]s/infs
for i in $(seq 1200); do [ "$(findmnt -n -o FSTYPE --mountpoint %[3]s)" = fuse.glusterfs ] && break; sleep 0.1; done
findmnt -n -o FSTYPE --mountpoint %[3]s > %[1]s/outfs
head -c 20000000 /dev/urandom > %[3]s/data
sha256sum < %[3]s/data > %[1]s/sum
touch %[1]s/written
for i in $(seq 3000); do [ -e %[1]s/end ] && break; sleep 0.1; done
`, w, in, out, size))
}

// block submits, as u, a job that holds both compute hosts until unblock
// is called (or the test ends), and returns once it runs.
func (c *cluster) block(t *testing.T, u testutil.User, w string) (unblock func()) {
	t.Helper()
	gate := filepath.Join(w, "unblock")
	blocker := c.sbatch(t, u, "-N", "2", "-o", filepath.Join(w, "blocker.out"), "--wrap",
		fmt.Sprintf("for i in $(seq 3000); do [ -e %s ] && break; sleep 0.1; done", gate))
	c.waitJob(t, blocker, 60*time.Second, "RUNNING")
	unblock = sync.OnceFunc(func() { touch(t, gate) })
	t.Cleanup(unblock)
	return unblock
}

// activeRSA is what the active rsa serve of the failover pair announced.
func (c *cluster) activeRSA(t *testing.T) failover.Info {
	t.Helper()
	var i failover.Info
	b, err := os.ReadFile(filepath.Join(c.dir, "rsa", "state", "rsa.active"))
	if err == nil {
		err = json.Unmarshal(b, &i)
	}
	if err != nil {
		t.Fatalf("reading the active rsa serve's announcement: %v", err)
	}
	return i
}

// rsaLog is everything rsa serve on control host h wrote to its log.
func (c *cluster) rsaLog(t *testing.T, h string) string {
	t.Helper()
	name := "rsa.out"
	if h != "ctl" {
		name = "rsa-" + h + ".out"
	}
	b, err := os.ReadFile(filepath.Join(c.dir, "log", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// halt halts control host h (cluster-up halt) and waits until the rsa
// serve of other announced itself active; it returns how long that took.
func (c *cluster) halt(t *testing.T, h, other string) time.Duration {
	t.Helper()
	before := c.activeRSA(t).Epoch
	began := time.Now()
	if o, err := c.script(t, time.Minute, "cluster-up", "halt", h); err != nil {
		t.Fatalf("cluster-up halt %s: %v\n%s", h, err, o)
	}
	t.Cleanup(func() {
		if t.Failed() {
			c.script(t, time.Minute, "cluster-up", "boot-control", h)
		}
	})
	testutil.WaitFor(t, "the rsa serve of "+other+" to take over", 60*time.Second, poll, func() bool {
		i := c.activeRSA(t)
		return i.Host == other && i.Epoch > before
	})
	return time.Since(began)
}

// slurmTakeover hands Slurm's control to the backup slurmctld on ctl2
// (scontrol takeover: the primary on ctl exits) and waits until ctl2's
// has taken it (its log says so) and, with bb (burst buffer mode), until
// its burst_buffer/lua has read RSA's pools: a
// burst_buffer/lua whose first pools call at its start fails is "down",
// and stages no job out until a later call answers, while the job's end
// goes by (a stage-out RSA then makes only once Slurm forgets the job).
// That call must not meet the moment RSA's own take-over leaves no
// daemon answering (a second or so): the two take-overs are played one
// after the other here, as each is tested for what it is.
func (c *cluster) slurmTakeover(t *testing.T, bb bool) {
	t.Helper()
	log := filepath.Join(c.dir, "log", "slurmctld.log")
	before, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	c.slurm(t, "scontrol", "takeover")
	testutil.WaitFor(t, "slurmctld on ctl2 to be in control, its burst buffer up", 60*time.Second, poll, func() bool {
		b, err := os.ReadFile(log)
		if err != nil || len(b) < len(before) {
			return false
		}
		after := string(b[len(before):])
		i := strings.Index(after, "ctl2 taking over")
		return i >= 0 && (!bb || strings.Contains(after[i:], "slurm_bb_pools returned, status=0"))
	})
}

// bootControl boots halted control host h again (cluster-up boot-control).
func (c *cluster) bootControl(t *testing.T, h string) {
	t.Helper()
	if o, err := c.script(t, 2*time.Minute, "cluster-up", "boot-control", h); err != nil {
		t.Fatalf("cluster-up boot-control %s: %v\n%s", h, err, o)
	}
}

// waitFile waits until path exists.
func waitFile(t *testing.T, path string, timeout time.Duration) {
	t.Helper()
	testutil.WaitFor(t, path, timeout, poll, func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
}

// touch creates an empty file.
func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// tail is the end of a log, for a failure's message.
func tail(s string) string {
	if len(s) > 4000 {
		return s[len(s)-4000:]
	}
	return s
}
