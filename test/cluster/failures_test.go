package cluster_test

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/agent"
	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/pki"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// TestGlusterFailures: replica 2, agents and rsa
// serve killed at bad moments, and who the agents accept. On cluster 2,
// beside the other Gluster tests (see TestGlusterNodeLosses).
func TestGlusterFailures(t *testing.T) {
	u := testutil.EnsureUser(t) // before t.Parallel: useradd takes a lock and does not wait for it
	t.Parallel()
	c := startCluster(t, "RSA_CLUSTER_ID=2", "RSA_CLUSTER_REPLICA=2", "RSA_CLUSTER_CAPACITY=512M", "RSA_CLUSTER_LEAD=0")
	t.Run("Trust", func(t *testing.T) { testTrust(t, c) })
	t.Run("AgentsKilled", func(t *testing.T) { testAgentsKilled(t, c, u) })
	t.Run("DaemonKilled", func(t *testing.T) { testDaemonKilled(t, c, u) })
	t.Run("AgentDownAtTeardown", func(t *testing.T) { testAgentDownAtTeardown(t, c, u) })
}

// TestGlusterAlone: replica 2, the network split between a job's compute
// and RSA hosts, and between its RSA hosts, a volume that comes back after
// its job let it go, and a peer the healed pool rejects. Alone on cluster 0,
// before the parallel tests start, as each of the first three raced the
// daemon's timers under their load. A volume planted to come back was
// removed by the daemon's sweep between its creation and its start (a race
// of the test's own). A healed partition twice left the job's volume in
// glusterd past 90 s, "removed" by the daemon's sweep every 20 s: the pool
// had rejected a peer, which kept the volume while the node the daemon
// asked had none. RejectedPeer makes that state on purpose; the engine now
// deletes through the node that still lists the volume.
func TestGlusterAlone(t *testing.T) {
	u := testutil.EnsureNamedUser(t, testutil.TestUserName()+"-5")
	c := startCluster(t, "RSA_CLUSTER_REPLICA=2", "RSA_CLUSTER_CAPACITY=512M", "RSA_CLUSTER_LEAD=0")
	t.Run("SplitBrain", func(t *testing.T) { testSplitBrain(t, c, u) })
	t.Run("RSAPartition", func(t *testing.T) { testRSAPartition(t, c, u) })
	t.Run("VolumeBackFromTheDead", func(t *testing.T) { testVolumeBack(t, c) })
	t.Run("RejectedPeer", func(t *testing.T) { testRejectedPeer(t, c, u) })
}

// agentClient is a client of host's agent with the identity in pki dir.
func (c *cluster) agentClient(t *testing.T, dir, host, addr string) *agent.Client {
	t.Helper()
	id, err := pki.Load(pki.DirFiles(dir))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := agent.NewClient(id, host, addr+":9477")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// testTrust: an agent answers the control host's certificate alone:
// not another CA's, not a compute node's (even for status), and the daemon
// refuses an agent whose certificate names another node than it dialled.
func testTrust(t *testing.T, c *cluster) {
	ctx := context.Background()
	ctl := filepath.Join(c.dir, "pki", "ctl")
	if _, err := c.agentClient(t, ctl, "rsa1", c.addr("rsa1")).Status(ctx); err != nil {
		t.Fatalf("the control host's certificate: %v", err)
	}

	other := t.TempDir()
	if _, err := pki.Init(filepath.Join(other, "ca"), pki.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pki.Issue(filepath.Join(other, "ca"), filepath.Join(other, "ctl"), "ctl", pki.RoleControl, pki.IssueOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := c.agentClient(t, filepath.Join(other, "ctl"), "rsa1", c.addr("rsa1")).MakeBrick(ctx, "rsa-job-997", agent.BrickSpec{Size: 8 << 20})
	if err == nil || agent.Transient(err) {
		t.Errorf("a control certificate of another CA: %v", err)
	}

	_, err = c.agentClient(t, ctl, "rsa2", c.addr("rsa1")).Status(ctx)
	if err == nil || agent.Transient(err) {
		t.Errorf("rsa1's agent, dialled as rsa2: %v", err)
	}

	// A compute node's own credentials, sent straight to a storage
	// agent's storage operation.
	c1 := filepath.Join(c.dir, "pki", "c1")
	cert, err := tls.LoadX509KeyPair(filepath.Join(c1, "node.crt"), filepath.Join(c1, "node.key"))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(c1, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates: []tls.Certificate{cert}, RootCAs: roots, ServerName: "rsa1", MinVersion: tls.VersionTLS13}}}
	req, _ := http.NewRequest(http.MethodPut, "https://"+c.addr("rsa1")+":9477/v1/bricks/rsa-job-998", strings.NewReader(`{"size":8388608}`))
	// Refused for its certificate, and for nothing else: by the TLS
	// handshake (the agent's alert, which a TLS 1.3 client reads after its
	// own side of the handshake) or by the agent's 403. Any other answer
	// (a 404 of a route that moved, a connection refused) says nothing of
	// who may call.
	resp, err := hc.Do(req)
	var alert *net.OpError
	switch {
	case err == nil:
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("c1's certificate asking rsa1's agent for a brick: %s, want 403 Forbidden or a TLS refusal", resp.Status)
		}
	case errors.As(err, &alert) && alert.Op == "remote error":
		t.Logf("c1's certificate refused by rsa1's agent in the TLS handshake: %v", err)
	default:
		t.Errorf("c1's certificate asking rsa1's agent for a brick: %v; want 403 Forbidden or a TLS refusal", err)
	}
	st, err := c.agentClient(t, ctl, "rsa1", c.addr("rsa1")).Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range st.Bricks {
		if b.Volume == "rsa-job-998" || b.Volume == "rsa-job-997" {
			t.Errorf("a refused caller's brick exists: %+v", b)
		}
	}
}

// testAgentsKilled: the agents of a storage host and a compute host are
// killed (SIGKILL) and started again while a job reads its input on both
// compute hosts: the reads go on unharmed, and the restarted agents make
// no second brick or mount. With replica 2 every file lies on two hosts.
func testAgentsKilled(t *testing.T, c *cluster, u testutil.User) {
	w := workDir(t, u, "agents")
	in := filepath.Join(w, "in")
	fill(t, u, in, 20, 64<<10)
	job := script(t, u, filepath.Join(w, "job.sh"), fmt.Sprintf(`#!/bin/bash
#SBATCH -N 2
#SBATCH -o %[1]s/job.out
#RSA_DATA_IN=%[2]s
#RSA_DELAY=300
srun -N2 bash -c 'cd %[2]s; while [ ! -e %[1]s/go ]; do cat f* | sha256sum; sleep 0.2; done > %[1]s/reads-$(hostname); for i in 1 2 3 4 5; do cat f* | sha256sum; done >> %[1]s/reads-$(hostname)'
`, w, in))
	id := c.sbatch(t, u, job)
	j := c.waitRSA(t, id, 90*time.Second, "INUSE_IN")
	for _, h := range c.storage {
		if n := c.brickFiles(t, h, volumeOf(j)); n != 0 && n != 20 {
			t.Errorf("%s holds %d of the 20 files", h, n)
		}
	}
	total := 0
	for _, h := range c.storage {
		total += c.brickFiles(t, h, volumeOf(j))
	}
	if total != 40 {
		t.Errorf("replica 2: the bricks hold %d files, want 2 × 20", total)
	}
	storage := j.Alloc[0].Node
	for _, h := range []string{storage, "c1"} {
		if out, err := c.script(t, time.Minute, "cluster-up", "kill-agent", h); err != nil {
			t.Fatalf("kill-agent %s: %v %s", h, err, out)
		}
	}
	// The daemon notices (heartbeat 1s): rsa nodes and the metrics say so.
	testutil.WaitFor(t, "the metrics to show both agents down", 30*time.Second, poll, func() bool {
		m := c.metrics(t)
		return strings.Contains(m, `rsa_agent_up{node="c1",role="compute"} 0`) &&
			strings.Contains(m, fmt.Sprintf(`rsa_agent_up{node=%q,role="storage"} 0`, storage))
	})
	// Silent for less than cluster.down_after (30 s): suspect, not lost.
	if nodes := c.rsa(t, "nodes"); !strings.Contains(nodes, "suspect (agent:") {
		t.Errorf("rsa nodes does not show %s's agent suspect:\n%s", storage, nodes)
	}
	if m := c.metrics(t); !strings.Contains(m, fmt.Sprintf(`rsa_agent_state{node=%q,role="storage",state="suspect"} 1`, storage)) {
		t.Errorf("the metrics do not show %s suspect", storage)
	}
	for _, h := range []string{storage, "c1"} {
		if out, err := c.script(t, time.Minute, "cluster-up", "start-agent", h); err != nil {
			t.Fatalf("start-agent %s: %v %s", h, err, out)
		}
	}
	testutil.WaitFor(t, "the metrics to show both agents up again", 30*time.Second, poll, func() bool {
		m := c.metrics(t)
		return strings.Contains(m, `rsa_agent_up{node="c1",role="compute"} 1`) &&
			strings.Contains(m, fmt.Sprintf(`rsa_agent_up{node=%q,role="storage"} 1`, storage))
	})
	vol := volumeOf(j)
	if n := strings.Count(c.exec(t, storage, "cat", "/proc/self/mountinfo"), " "+vol+" "); n != 1 {
		t.Errorf("%s has %d mounts of %s's brick after its agent restarted, want 1", storage, n, vol)
	}
	if n := strings.Count(c.exec(t, "c1", "cat", "/proc/self/mountinfo"), ":/"+vol+" "); n != 2 {
		t.Errorf("c1 has %d mounts of %s after its agent restarted, want 2 (the volume and its bind)", n, vol)
	}
	time.Sleep(2 * time.Second)
	if err := os.WriteFile(filepath.Join(w, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.waitJob(t, id, 60*time.Second, "COMPLETED")
	c.waitRSA(t, id, 60*time.Second, "RELEASED")
	for _, h := range c.compute {
		lines := strings.Split(strings.TrimSpace(readFile(t, filepath.Join(w, "reads-"+h))), "\n")
		if len(lines) < 10 {
			t.Errorf("%s read its input %d times only", h, len(lines))
		}
		for _, l := range lines {
			if l != lines[0] {
				t.Errorf("%s read different input while agents restarted: %q, then %q", h, lines[0], l)
				break
			}
		}
	}
	c.assertNoLeaks(t)
}

// testDaemonKilled: rsa serve killed (SIGKILL) while a job is BOOTING,
// MOUNTING_IN, STAGING_OUT and TEARDOWN. Each time the state's action is
// held so that it cannot finish before the kill, and the job's log must
// say the restarted daemon resumed that very action: a kill that came
// after the state had passed would test nothing. Each job ends right (its
// input read in RAM, or its output on disk), and gc at the restart removes
// only what no job holds, and quarantines a volume and its brick planted
// for an unknown job, which rsa gc --discard removes. An input-only job covers the states before the job runs, an
// output-only one those after it: the switch from input to output is
// another test's (TwoNodes, WhileRunning, the poll test).
func testDaemonKilled(t *testing.T, c *cluster, u testutil.User) {
	ctx := context.Background()
	rsa3 := c.agentClient(t, filepath.Join(c.dir, "pki", "ctl"), "rsa3", c.addr("rsa3"))
	for _, state := range []lifecycle.RSAState{lifecycle.Booting, lifecycle.MountingIn, lifecycle.StagingOut, lifecycle.Teardown} {
		action, ok := lifecycle.Work(state)
		if !ok {
			t.Fatalf("%s runs no action: nothing to resume", state)
		}
		t.Run(string(state), func(t *testing.T) {
			w := workDir(t, u, "crash-"+strings.ToLower(string(state)))
			var (
				id        string // the Slurm job
				rid       int64  // RSA's job
				output    bool   // an output-only job (else input-only)
				check     func() // what the job did, once it is released
				release   func() // ends the hold, the daemon dead
				restarted func() // after the daemon's restart
			)
			switch state {
			case lifecycle.Booting:
				// The construct makes the bricks, then waits for
				// glusterd to make the volume.
				release = c.freezeGlusterd(t)
				id, check = c.inputJob(t, u, w)
				rid = c.waitRSA(t, id, 120*time.Second, string(state)).ID
			case lifecycle.MountingIn:
				// Its agent away, the mount on c2 is tried again for a
				// minute (the daemon's patience with an agent).
				if o, err := c.script(t, time.Minute, "cluster-up", "kill-agent", "c2"); err != nil {
					t.Fatalf("kill-agent c2: %v %s", err, o)
				}
				back := false
				restarted = func() {
					if o, err := c.script(t, time.Minute, "cluster-up", "start-agent", "c2"); err != nil {
						t.Fatalf("start-agent c2: %v %s", err, o)
					}
					back = true
				}
				t.Cleanup(func() {
					if !back { // the test failed first: the next ones need c2
						c.script(t, time.Minute, "cluster-up", "start-agent", "c2")
					}
				})
				id, check = c.inputJob(t, u, w)
				rid = c.waitRSA(t, id, 120*time.Second, string(state)).ID
			case lifecycle.StagingOut:
				// The stage-out unmounts the job's compute node, then
				// waits for glusterd to seal the volume: the output is
				// in RAM alone.
				var j *api.JobView
				id, j = c.dataJob(t, u, w, "#RSA_DELAY=0", 1_000_000)
				rid, output, check = j.ID, true, func() { checkData(t, w) }
				release = c.freezeGlusterd(t)
				letGo(t, w)
				c.waitRSA(t, id, 120*time.Second, string(state))
			case lifecycle.Teardown:
				// A process of the user's, left on the control host in
				// the RAMDISK, ignores SIGTERM: the teardown waits
				// limits.kill_grace (10 s) for it before SIGKILL, and
				// says so in the job's log as it sends SIGTERM.
				var j *api.JobView
				id, j = c.dataJob(t, u, w, "#RSA_DELAY=0", 1_000_000)
				rid, output, check = j.ID, true, func() { checkData(t, w) }
				var pid int
				pid, release = c.holdRamdisk(t, u, w, j.Ramdisk)
				letGo(t, w)
				term := fmt.Sprintf("by pid %d (", pid)
				testutil.WaitFor(t, "the teardown to send the holder SIGTERM", 120*time.Second, poll, func() bool {
					for _, l := range strings.Split(c.stageLog(t, rid), "\n") {
						if strings.Contains(l, term) && strings.HasSuffix(l, "sending SIGTERM") {
							return true
						}
					}
					return false
				})
			}
			if o, err := c.script(t, time.Minute, "cluster-up", "stop-rsa", "--crash"); err != nil {
				t.Fatalf("stop-rsa --crash: %v %s", err, o)
			}
			serving := false
			t.Cleanup(func() {
				if !serving { // the test failed first: the next ones need rsa serve
					c.script(t, time.Minute, "cluster-up", "start-rsa")
				}
			})
			if release != nil {
				release()
			}
			// A leftover of a job the daemon never knew, for gc at the
			// restart. Made while the daemon is down: its sweep
			// (cluster.leftover_sweep) once removed the volume while it
			// was being made.
			b, err := rsa3.MakeBrick(ctx, "rsa-job-999", agent.BrickSpec{Size: 8 << 20})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := rsa3.MakeVolume(ctx, "rsa-job-999", agent.VolumeSpec{Bricks: []string{c.addr("rsa3") + ":" + b.Dir}, AuthAllow: []string{c.addr("ctl")}, TLSAllow: []string{"ctl", "rsa3"}}); err != nil {
				t.Fatal(err)
			}
			if o, err := c.script(t, time.Minute, "cluster-up", "start-rsa"); err != nil {
				t.Fatalf("start-rsa: %v %s", err, o)
			}
			serving = true
			if restarted != nil {
				restarted()
			}
			c.waitJob(t, id, 180*time.Second, "COMPLETED")
			c.waitRSA(t, id, 120*time.Second, "RELEASED")
			check()
			// The unknown volume is quarantined, not removed: engine
			// gluster cannot tell that a volume holds nothing, and one
			// RSA has no record of may hold a job's only output (a
			// state directory restored from an older backup). The
			// administrator discards it.
			if gc := c.rsa(t, "gc"); !strings.Contains(gc, "(job 999)") || !strings.Contains(gc, "quarantined") {
				t.Errorf("rsa gc after the restart does not list the unknown volume as quarantined:\n%s", gc)
			}
			c.rsa(t, "gc", "--discard", "999")
			st, err := rsa3.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range st.Bricks {
				if b.Volume == "rsa-job-999" {
					t.Error("rsa gc --discard 999 left the brick of a job the daemon never had")
				}
			}
			log := c.rsa(t, "log", fmt.Sprint(rid))
			if want := "resumed " + string(action) + " after restart"; !strings.Contains(log, want) {
				t.Errorf("the job's log lacks %q: rsa serve was not killed in %s:\n%s", want, state, log)
			}
			if output && !strings.Contains(log, "stage-out done") {
				t.Errorf("the job's log lacks its stage-out:\n%s", log)
			}
			c.assertNoLeaks(t)
		})
	}
}

// inputJob submits, as u, a job on both compute hosts whose input is
// w/in (10 files it fills): each host says where it found its input and
// sums it. check checks, once the job has run, that each read every file
// whole from its RAMDISK.
func (c *cluster) inputJob(t *testing.T, u testutil.User, w string) (id string, check func()) {
	t.Helper()
	in := filepath.Join(w, "in")
	sums := fill(t, u, in, 10, 64<<10)
	job := script(t, u, filepath.Join(w, "job.sh"), fmt.Sprintf(`#!/bin/bash
#SBATCH -N 2
#SBATCH -o %[1]s/job.out
#RSA_DATA_IN=%[2]s
srun -N2 bash -c 'findmnt -n -o FSTYPE --mountpoint %[2]s > %[1]s/infs-$(hostname); cd %[2]s && sha256sum f* > %[1]s/sums-$(hostname)'
`, w, in))
	id = c.sbatch(t, u, job)
	return id, func() {
		for _, h := range c.compute {
			if got := strings.TrimSpace(readFile(t, filepath.Join(w, "infs-"+h))); got != "fuse.glusterfs" {
				t.Errorf("input on %s is %q, not the RAMDISK", h, got)
			}
			if got := readFile(t, filepath.Join(w, "sums-"+h)); got != sums {
				t.Errorf("input read on %s differs from what was staged in", h)
			}
		}
	}
}

// letGo lets an outputJob's job end (w/go).
func letGo(t *testing.T, w string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(w, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// holdRamdisk starts a process of u's on the control host whose working
// directory is the RAMDISK at ramdisk and which ignores SIGTERM (its sleeps
// inherit that), until w/release exists. It returns the process's pid once
// it is in the RAMDISK, and release, which makes it end by itself and
// waits for that (idempotent; a cleanup too).
func (c *cluster) holdRamdisk(t *testing.T, u testutil.User, w, ramdisk string) (pid int, release func()) {
	t.Helper()
	pidFile, releaseFile := filepath.Join(w, "holder.pid"), filepath.Join(w, "release")
	// Not testutil.Command: the hold outlasts its 90 s under load.
	cmd := exec.Command(filepath.Join(c.root, "scripts", "cluster-up"), "exec", cmp.Or(c.via, "ctl"),
		"setpriv", "--reuid="+strconv.Itoa(int(u.UID)), "--regid="+strconv.Itoa(int(u.GID)), "--clear-groups",
		"sh", "-c", `trap '' TERM; cd "$1" || exit 1; echo $$ > "$2"; while [ ! -e "$3" ]; do sleep 0.2; done`,
		"holder", ramdisk, pidFile, releaseFile)
	cmd.Env = c.env
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	release = func() {
		if err := os.WriteFile(releaseFile, nil, 0o644); err != nil {
			t.Error(err)
		}
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("the holder of %s did not end 30 s after its release: killed", ramdisk)
			cmd.Process.Kill()
			<-done
		}
	}
	t.Cleanup(release)
	testutil.WaitFor(t, "the holder to be in the RAMDISK", 30*time.Second, poll, func() bool {
		select {
		case <-done:
			t.Fatalf("the holder of %s ended before it was in it (%v)", ramdisk, cmd.ProcessState)
		default:
		}
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid, release
}

// testAgentSilentPastDownAfter: the agent of a running job's RSA node is
// killed and stays away. Silent, the node is suspect, and nothing is
// undone; silent for cluster.down_after (pollDownAfter), it is down: the
// heartbeat reports it lost ("has not answered for"), and the job goes on,
// its record and its log naming the node, its input path back on disk:
// the brick there still serves, an agent holding no data, but nothing
// vouches for the node any more, so the job reads its whole input from
// disk rather than a part of it from RAM. Once the agent answers again the
// node is up, and the job ends and is released with nothing left.
func testAgentSilentPastDownAfter(t *testing.T, c *cluster, u testutil.User) {
	if got := c.clusterSetting(t, "down_after"); got != pollDownAfter.String() {
		t.Fatalf("rsa serve's config has cluster.down_after %q, not the %s asked of cluster-up (RSA_CLUSTER_DOWN_AFTER)", got, pollDownAfter)
	}
	w := workDir(t, u, "silent")
	in := filepath.Join(w, "in")
	sums := fill(t, u, in, 10, 64<<10)
	job := script(t, u, filepath.Join(w, "job.sh"), fmt.Sprintf(`#!/bin/bash
#SBATCH -N 1
#SBATCH -o %[1]s/job.out
#RSA_DATA_IN=%[2]s
findmnt -n -o FSTYPE --mountpoint %[2]s > %[1]s/infs
(cd %[2]s && sha256sum f*) > %[1]s/sums
touch %[1]s/read
for i in $(seq 3000); do [ -e %[1]s/go ] && break; sleep 0.1; done
(cd %[2]s && sha256sum f*) > %[1]s/sums-after
`, w, in))
	// In polling mode RSA stages in a job it sees pending on deck; one
	// that starts at once gets RAM for output only. A blocker holds
	// every compute node until the input is in RAM.
	gate := filepath.Join(w, "blocker-go")
	blocker := c.sbatch(t, u, "-N", "2", "--time=1", "-o", filepath.Join(w, "blocker.out"), "--wrap",
		fmt.Sprintf("for i in $(seq 600); do [ -e %s ] && break; sleep 0.1; done", gate))
	c.waitJob(t, blocker, 60*time.Second, "RUNNING")
	id := c.sbatch(t, u, job)
	c.waitRSA(t, id, 90*time.Second, "READY")
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	j := c.waitRSA(t, id, 90*time.Second, "INUSE_IN")
	testutil.WaitFor(t, "the job to read its input", 60*time.Second, poll, func() bool {
		_, err := os.Stat(filepath.Join(w, "read"))
		return err == nil
	})
	victim := j.Alloc[0].Node
	logFrom := len(c.daemonLog(t, 0))
	if out, err := c.script(t, time.Minute, "cluster-up", "kill-agent", victim); err != nil {
		t.Fatalf("kill-agent %s: %v %s", victim, err, out)
	}
	back := false
	t.Cleanup(func() {
		if !back { // the test failed first: leave the cluster whole
			c.script(t, time.Minute, "cluster-up", "start-agent", victim)
		}
	})
	silenced := time.Now()
	// The job read first, then the node: a node still suspect now was
	// suspect when the job was read, so the job must not be degraded
	// yet. (Suspect lasts down_after, many of these looks.)
	sawSuspect := false
	testutil.WaitFor(t, victim+" to go down", 60*time.Second, poll, func() bool {
		jv := c.rsaJob(t, id)
		switch c.agentState(t, victim) {
		case "suspect":
			sawSuspect = true
			if slices.Contains(jv.Lost, victim) {
				t.Fatalf("the job is degraded (lost %v) while %s is only suspect", jv.Lost, victim)
			}
		case "down":
			return true
		}
		return false
	})
	t.Logf("%s's agent killed: down %.1fs later (suspect seen before: %v)", victim, time.Since(silenced).Seconds(), sawSuspect)
	// The daemon's own account, which no look can miss: suspect first,
	// then lost after down_after of silence.
	log := c.daemonLog(t, logFrom)
	suspect := strings.Index(log, `msg="agent not answering" node=`+victim+" ")
	lost := regexp.MustCompile(`msg="node lost: its agent has not answered for ([^"]+)" node=` + regexp.QuoteMeta(victim) + " ").FindStringSubmatchIndex(log)
	switch {
	case suspect < 0 || lost == nil:
		t.Errorf("rsa serve's log does not say %s went suspect (%v), then was lost for its silence (%v):\n%s", victim, suspect >= 0, lost != nil, log)
	case suspect > lost[0]:
		t.Errorf("rsa serve's log says %s was lost before it went suspect:\n%s", victim, log)
	default:
		if silent, err := time.ParseDuration(log[lost[2]:lost[3]]); err != nil || silent < pollDownAfter {
			t.Errorf("rsa serve lost %s after %s of silence, not cluster.down_after (%s) at least", victim, log[lost[2]:lost[3]], pollDownAfter)
		}
	}
	if m := c.metrics(t); !strings.Contains(m, fmt.Sprintf(`rsa_agent_state{node=%q,role="storage",state="down"} 1`, victim)) {
		t.Errorf("the metrics do not show %s down", victim)
	}
	testutil.WaitFor(t, "the job's record to name "+victim, 60*time.Second, poll, func() bool {
		return slices.Contains(c.rsaJob(t, id).Lost, victim)
	})
	// Nothing vouches for the node's part of the input now: the input
	// path goes back to disk (the job holds nothing in it), and the job
	// runs on.
	testutil.WaitFor(t, "the input path to leave RAM", 60*time.Second, poll, func() bool {
		switch jv := c.rsaJob(t, id); jv.RSA {
		case "INUSE_IN", "UNMOUNT_NEEDED", "UNMOUNTING":
			return false
		case "UNMOUNT_BUSY":
			t.Fatalf("the input stayed mounted (%s), though the job holds nothing in it", jv.RSA)
		}
		return true
	})
	if jv := c.rsaJob(t, id); jv.State != "RUNNING" {
		t.Errorf("the job is %s/%s after losing %s, not running on", jv.State, jv.RSA, victim)
	}
	if sl := c.stageLog(t, j.ID); !namesLoss(sl, victim) {
		t.Errorf("the job's log does not say %s was lost:\n%s", victim, sl)
	}
	if out, err := c.script(t, time.Minute, "cluster-up", "start-agent", victim); err != nil {
		t.Fatalf("start-agent %s: %v %s", victim, err, out)
	}
	back = true
	testutil.WaitFor(t, victim+" to be up again", 30*time.Second, poll, func() bool { return c.agentState(t, victim) == "up" })
	letGo(t, w)
	c.waitJob(t, id, 60*time.Second, "COMPLETED")
	c.waitRSA(t, id, 60*time.Second, "RELEASED")
	if got := strings.TrimSpace(readFile(t, filepath.Join(w, "infs"))); got != "fuse.glusterfs" {
		t.Errorf("the job read its input from %q, not its RAMDISK", got)
	}
	for _, f := range []string{"sums", "sums-after"} {
		if got := readFile(t, filepath.Join(w, f)); got != sums {
			t.Errorf("%s: the job read other input than it has on disk", f)
		}
	}
	c.assertNoLeaks(t)
}
