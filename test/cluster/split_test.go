package cluster_test

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/rsatest"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// testGlusterdRestarted: glusterd is restarted on each of a job's RSA
// hosts after the job wrote its output, as an admin's "systemctl restart
// glusterd" or a package upgrade does. The bricks run on: the job notices
// nothing, the stage-out's check (which asks glusterd) finds every part
// in reach, every file is verified on disk, and nothing is left.
//
// Whether the job ends while glusterd is still behind (one just restarted
// lists the running bricks offline until it has reconnected to them, while
// the client reads them all along) is timing: under make test's load a
// restart takes from seconds to a minute, and glusterd caught up before
// the job ended in three tries of three. Either way the stage-out must
// verify every file and lose none, which is what this test requires; the
// check's decision for a glusterd behind its client (ask again until the
// two agree, never take the part for lost) is engine/gluster's TestJudge,
// over every combination of what glusterd and the client say.
func testGlusterdRestarted(t *testing.T, c *cluster, u testutil.User) {
	w := workDir(t, u, "glusterd")
	out := filepath.Join(w, "out")
	id, j := c.filesJob(t, u, w, false)
	restart := func(node string) {
		began := time.Now()
		// A restart takes seconds alone, and has taken most of a minute
		// beside the other clusters of make test (TLS on two cores).
		if out, err := c.script(t, 3*time.Minute, "cluster-up", "restart-glusterd", node); err != nil {
			t.Fatalf("restart-glusterd %s: %v %s", node, err, out)
		}
		t.Logf("glusterd on %s restarted in %.1fs", node, time.Since(began).Seconds())
	}
	for _, p := range slices.Backward(j.Alloc) {
		restart(p.Node)
	}
	vol, first := volumeOf(j), j.Alloc[0].Node
	if _, offline, err := c.bricksOffline(t, first, vol); err != nil {
		t.Logf("as the job ends, glusterd on %s does not list %s's bricks: %v", first, vol, err)
	} else {
		t.Logf("as the job ends, glusterd on %s lists %d of the %d bricks offline", first, offline, len(j.Alloc))
	}
	if err := os.WriteFile(filepath.Join(w, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ended := time.Now()
	c.waitJob(t, id, 60*time.Second, "COMPLETED")
	c.waitRSA(t, id, 90*time.Second, "RELEASED")
	t.Logf("glusterd restarted on %d RSA hosts: output staged out and the job released %.1fs after it ended", len(j.Alloc), time.Since(ended).Seconds())
	checkOutput(t, out, parseSums(t, readFile(t, filepath.Join(w, "sums"))), filesOut)
	c.assertNoLeaks(t)
}

// bricksOffline counts the bricks of vol that glusterd on host lists
// (`gluster volume status`; a brick on a peer it does not reach is not
// listed at all), and of them those offline.
func (c *cluster) bricksOffline(t *testing.T, host, vol string) (listed, offline int, err error) {
	t.Helper()
	x, err := c.execErr(t, host, "gluster", "--mode=script", "--xml", "volume", "status", vol)
	if err != nil {
		return 0, 0, fmt.Errorf("gluster volume status %s: %w: %s", vol, err, x)
	}
	var st struct {
		Nodes []struct {
			Path   string `xml:"path"`
			Status int    `xml:"status"`
		} `xml:"volStatus>volumes>volume>node"`
	}
	if err := xml.Unmarshal([]byte(x), &st); err != nil {
		return 0, 0, fmt.Errorf("gluster volume status %s: %w: %s", vol, err, x)
	}
	for _, b := range st.Nodes {
		if strings.HasPrefix(b.Path, "/") {
			listed++
			if b.Status == 0 {
				offline++
			}
		}
	}
	return listed, offline, nil
}

// testSplitBrain: a replica-2 RAMDISK split: the job's compute host
// writes a file while it reaches only one RSA host of the pair, then
// (the partition moved) the same file again while it reaches only the
// other. Self-heal is off, so the copies stay apart: each blames the
// other. The stage-out must never pick one in silence: it fails, naming
// the file; once an admin chose a copy (gluster's split-brain
// resolution), rsa retry stages it out, verified.
func testSplitBrain(t *testing.T, c *cluster, u testutil.User) {
	w := workDir(t, u, "split")
	out := filepath.Join(w, "out")
	job := script(t, u, filepath.Join(w, "job.sh"), fmt.Sprintf(`#!/bin/bash
#SBATCH -N 1
#SBATCH -w c1
#SBATCH -o %[1]s/job.out
#RSA capacity=%[3]s pool=rsa
#RSA_DATA_OUT=%[2]s
step() { for i in $(seq 1200); do [ -e %[1]s/$1 ] && return; sleep 0.1; done; }
for i in $(seq 600); do [ "$(findmnt -n -o FSTYPE --mountpoint %[2]s)" = fuse.glusterfs ] && break; sleep 0.1; done
touch %[1]s/mounted
step cut1
if echo first > %[2]s/x; then echo ok > %[1]s/w1; else echo fail > %[1]s/w1; fi
step cut2
if echo second > %[2]s/x; then echo ok > %[1]s/w2; else echo fail > %[1]s/w2; fi
step go
`, w, out, twoNodes(true)))
	id := c.sbatch(t, u, job)
	j := c.waitRSA(t, id, 90*time.Second, "INUSE_OUT")
	if len(j.Alloc) != 2 {
		t.Fatalf("the job holds %v: the test needs a pair on two RSA nodes", j.Alloc)
	}
	testutil.WaitFor(t, "the job's output mount", 60*time.Second, poll, func() bool {
		_, err := os.Stat(filepath.Join(w, "mounted"))
		return err == nil
	})
	vol := volumeOf(j)
	// What the admin of a replicated volume would turn off to keep the
	// copies apart: every heal, by the daemon and by clients.
	c.exec(t, j.Alloc[0].Node, "gluster", "--mode=script", "volume", "set", vol,
		"cluster.self-heal-daemon", "off", "cluster.data-self-heal", "off",
		"cluster.metadata-self-heal", "off", "cluster.entry-self-heal", "off")
	// The client quorum decides which way the second write goes. None
	// (the default for replica 2, which RSA keeps: docs/failures.md):
	// either brick alone takes writes, so the second write succeeds and
	// the copies split. Auto: a pair takes writes only with its first
	// brick, so the second write, which reaches the second alone, fails
	// and the copies stay together. Another setting is none the test
	// knows the outcome of.
	quorum := c.volumeOption(t, j.Alloc[0].Node, vol, "cluster.quorum-type")
	var splits bool
	switch quorum {
	case "none":
		splits = true
	case "auto":
		splits = false
	default:
		t.Fatalf("cluster.quorum-type %q of a replica-2 job volume: the test knows what none and auto let through, not this", quorum)
	}
	t.Logf("client quorum of a replica-2 job volume: %s", quorum)
	cut := func(node string) {
		c.exec(t, "c1", "sh", "-c", fmt.Sprintf(`nft add table inet rsasplit 2>/dev/null; nft flush table inet rsasplit; nft add chain inet rsasplit out '{ type filter hook output priority 0; }' && nft add rule inet rsasplit out ip daddr %s drop`, c.addr(node)))
	}
	t.Cleanup(func() { c.execErr(t, "c1", "nft", "delete", "table", "inet", "rsasplit") })
	step := func(name, result string) string {
		if err := os.WriteFile(filepath.Join(w, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		var got string
		testutil.WaitFor(t, "the job's write "+result, 60*time.Second, poll, func() bool {
			b, err := os.ReadFile(filepath.Join(w, result))
			got = strings.TrimSpace(string(b))
			return err == nil && got != ""
		})
		return got
	}
	// The second part of the pair first: a client quorum would let
	// writes on without it, not without the first.
	cut(j.Alloc[1].Node)
	w1 := step("cut1", "w1")
	cut(j.Alloc[0].Node)
	// The write must find the second brick in reach again: c1's client
	// reconnects to it a few seconds after the partition moved.
	testutil.WaitFor(t, "c1's client to reach "+j.Alloc[1].Node+" again", 60*time.Second, poll, func() bool {
		priv, _ := c.execErr(t, "c1", "cat", fmt.Sprintf("%s/.meta/graphs/active/%s-client-1/private", j.Ramdisk, vol))
		return strings.Contains(priv, "connected = 1")
	})
	w2 := step("cut2", "w2")
	c.exec(t, "c1", "nft", "delete", "table", "inet", "rsasplit")
	t.Logf("the write reaching %s alone: %s; the one reaching %s alone: %s", j.Alloc[0].Node, w1, j.Alloc[1].Node, w2)
	if w1 != "ok" {
		t.Fatalf("the write with the first brick in reach failed")
	}
	ended := time.Now()
	if err := os.WriteFile(filepath.Join(w, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.waitJob(t, id, 60*time.Second, "COMPLETED")
	want := "fail"
	if splits {
		want = "ok"
	}
	if w2 != want {
		// Failed; the branch the write took still cleans up after it.
		t.Errorf("the write reaching %s alone: %s, where cluster.quorum-type %s says %s", j.Alloc[1].Node, w2, quorum, want)
	}
	if w2 != "ok" {
		// The client quorum kept the copies together: the second write
		// failed for the job, the first is staged out.
		c.waitRSA(t, id, 90*time.Second, "RELEASED")
		if got := strings.TrimSpace(readFile(t, filepath.Join(out, "x"))); got != "first" {
			t.Errorf("x on disk is %q, want the one write the job saw succeed", got)
		}
		c.assertNoLeaks(t)
		return
	}
	jv := c.waitRSA(t, id, 90*time.Second, "STAGE_OUT_FAILED")
	t.Logf("split brain: the stage-out failed %.1fs after the job ended: %s", time.Since(ended).Seconds(), jv.Error)
	if !strings.Contains(jv.Error, "x: input/output error") {
		t.Errorf("the failure does not name the file in split brain: %q", jv.Error)
	}
	if _, err := os.Stat(filepath.Join(out, "x")); err == nil {
		t.Errorf("a copy of x in split brain reached the disk")
	}
	// The admin chooses: the copy written last.
	c.exec(t, j.Alloc[0].Node, "gluster", "--mode=script", "volume", "heal", vol, "split-brain", "latest-mtime", "/x")
	c.rsa(t, "retry", fmt.Sprint(j.ID))
	c.waitRSA(t, id, 90*time.Second, "RELEASED")
	if got := strings.TrimSpace(readFile(t, filepath.Join(out, "x"))); got != "second" {
		t.Errorf("x on disk after the admin chose the last copy is %q, want %q", got, "second")
	}
	c.assertNoLeaks(t)
}

// testRSAPartition: the two RSA hosts of a replica-2 job are cut off from
// each other (each still reaches everyone else) after the job wrote its
// output. Clients replicate by themselves, so no copy falls behind: the
// output stages out in full, verified. glusterd's pool is split, though,
// and deletes no volume while a peer is out of its reach: the teardown
// frees the RAM and releases the job all the same, and once the
// partition heals the volume goes too: nothing is left.
func testRSAPartition(t *testing.T, c *cluster, u testutil.User) {
	w := workDir(t, u, "partition")
	out := filepath.Join(w, "out")
	id, j := c.filesJob(t, u, w, true)
	a, b := j.Alloc[0].Node, j.Alloc[1].Node
	heal := c.cutOff(t, a, b)
	if err := os.WriteFile(filepath.Join(w, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ended := time.Now()
	c.waitJob(t, id, 60*time.Second, "COMPLETED")
	var jv string
	testutil.WaitFor(t, "the stage-out and teardown to end", 120*time.Second, poll, func() bool {
		jv = string(c.rsaJob(t, id).RSA)
		return jv == "RELEASED" || jv == "TEARDOWN_FAILED" || jv == "STAGE_OUT_FAILED"
	})
	t.Logf("%s and %s cut off from each other: %s %.1fs after the job ended", a, b, jv, time.Since(ended).Seconds())
	if jv != "RELEASED" {
		t.Fatalf("the job is %s, not released, though every node answered the daemon: %s", jv, c.rsaJob(t, id).Error)
	}
	checkOutput(t, out, parseSums(t, readFile(t, filepath.Join(w, "sums"))), filesOut)
	// Each glusterd sees the other disconnected: a new RAMDISK across
	// them could be neither made nor deleted, so one of them takes none.
	testutil.WaitFor(t, "rsa nodes to keep "+a+" or "+b+" out of new RAMDISKs", 30*time.Second, poll, func() bool {
		u := c.unpooled(t)
		return u[a] != "" || u[b] != ""
	})
	t.Logf("split: rsa nodes keeps out %v", c.unpooled(t))
	// Its bricks are gone; the volume's definition waits for the pool.
	for _, n := range []string{a, b} {
		if mi := c.exec(t, n, "cat", "/proc/self/mountinfo"); strings.Contains(mi, volumeOf(j)+" ") {
			t.Errorf("the brick on %s is still mounted after the teardown", n)
		}
	}
	heal()
	healed := time.Now()
	c.mendPool(t, 60*time.Second)
	c.assertNoLeaks(t)
	t.Logf("the partition healed: nothing left %.1fs later", time.Since(healed).Seconds())
}

// testRejectedPeer: while a job runs, the RSA host it does not use is cut
// off from the two it does, and each side changes the job's volume apart
// (an option of no effect). Healed, glusterd rejects the peer: same
// version, another checksum. A rejected peer takes no part in the others'
// transactions, so the teardown's delete, through the job's own hosts,
// never reaches it, and it keeps the volume. RSA must delete it there too:
// nothing may be left on any host. Then glusterd on that host is restarted
// to make the pool whole again, as an admin would.
func testRejectedPeer(t *testing.T, c *cluster, u testutil.User) {
	w := workDir(t, u, "rejected")
	id, j := c.filesJob(t, u, w, true)
	vol := volumeOf(j)
	var x string
	for _, h := range c.storage {
		if !slices.ContainsFunc(j.Alloc, func(p job.Part) bool { return p.Node == h }) {
			x = h
		}
	}
	a, b := j.Alloc[0].Node, j.Alloc[1].Node
	if x == "" || a == b {
		t.Fatalf("the job's RSA hosts %v leave no third one of %v", j.Alloc, c.storage)
	}
	heal := c.cutOff(t, x, a, b)
	peers := func(h string) string { return c.exec(t, h, "gluster", "--mode=script", "peer", "status") }
	testutil.WaitFor(t, x+"'s glusterd to lose "+a+" and "+b, 90*time.Second, poll, func() bool {
		return strings.Count(peers(x), "(Disconnected)") == 2
	})
	c.exec(t, x, "gluster", "--mode=script", "volume", "set", vol, "user.rsa-test", "cut-off")
	c.exec(t, a, "gluster", "--mode=script", "volume", "set", vol, "user.rsa-test", "the-job's")
	heal()
	testutil.WaitFor(t, a+"'s glusterd to reconnect to "+x+" and reject it", 90*time.Second, poll, func() bool {
		return strings.Contains(peers(a), "Peer Rejected (Connected)")
	})
	// A rejected host takes no new RAMDISK, and it alone: the other two
	// see each other whole. (While cut off, it was kept out as
	// disconnected; the daemon's next look must say what glusterd says
	// now.)
	testutil.WaitFor(t, "rsa nodes to keep "+x+" out of new RAMDISKs as rejected", 30*time.Second, poll, func() bool {
		return strings.Contains(c.unpooled(t)[x], `"Peer Rejected" (connected)`)
	})
	if u := c.unpooled(t); len(u) != 1 {
		t.Errorf("rsa nodes keeps %v out of new RAMDISKs, not %s alone", u, x)
	} else {
		t.Logf("rsa nodes: %s: no new RAMDISKs: %s", x, u[x])
	}
	// Monitoring hears of it: rsa health warns, naming the node.
	cmd := testutil.Command(t, filepath.Join(c.dir, "rsa", "rsa"), "--config", c.rsaConf, "health")
	out, err := cmd.CombinedOutput()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 1 ||
		!strings.HasPrefix(string(out), "WARNING: 1 RSA nodes take no new RAMDISKs") || !strings.Contains(string(out), "RSA node "+x+": no new RAMDISKs") {
		t.Errorf("rsa health with %s kept out: %v\n%s", x, err, out)
	}
	t.Cleanup(func() { c.mendPool(t, 0) })
	if err := os.WriteFile(filepath.Join(w, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.waitJob(t, id, 60*time.Second, "COMPLETED")
	c.waitRSA(t, id, 90*time.Second, "RELEASED")
	checkOutput(t, filepath.Join(w, "out"), parseSums(t, readFile(t, filepath.Join(w, "sums"))), filesOut)
	released := time.Now()
	c.assertNoLeaks(t)
	t.Logf("%s rejected by the pool kept volume %s: gone from every host %.1fs after the job's release", x, vol, time.Since(released).Seconds())
}

// cutOff drops all traffic between host and the others, both ways, while
// each still reaches every other host; heal ends it (a cleanup does too).
func (c *cluster) cutOff(t *testing.T, host string, others ...string) (heal func()) {
	t.Helper()
	addrs := make([]string, len(others))
	for i, o := range others {
		addrs[i] = c.addr(o)
	}
	set := "{ " + strings.Join(addrs, ", ") + " }"
	c.exec(t, host, "sh", "-c", fmt.Sprintf(`nft add table inet rsacut && nft add chain inet rsacut in '{ type filter hook input priority 0; }' && nft add chain inet rsacut out '{ type filter hook output priority 0; }' && nft add rule inet rsacut in ip saddr '%[1]s' drop && nft add rule inet rsacut out ip daddr '%[1]s' drop`, set))
	t.Cleanup(func() { c.execErr(t, host, "nft", "delete", "table", "inet", "rsacut") })
	return func() { c.exec(t, host, "nft", "delete", "table", "inet", "rsacut") }
}

// unpooled is what rsa nodes says keeps each RSA host out of new
// RAMDISKs (a rift in glusterd's pool), for the hosts it keeps out.
func (c *cluster) unpooled(t *testing.T) map[string]string {
	t.Helper()
	var nodes struct{ Nodes []api.NodeView }
	if err := json.Unmarshal([]byte(c.rsa(t, "nodes", "--json")), &nodes); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range nodes.Nodes {
		if n.Agent != nil && n.Agent.Unpooled != "" {
			out[n.Name] = n.Agent.Unpooled
		}
	}
	return out
}

// poolWhole reports whether every RSA host's glusterd sees every other as
// "Peer in Cluster (Connected)".
func (c *cluster) poolWhole(t *testing.T) bool {
	t.Helper()
	for _, h := range c.storage {
		p, err := c.execErr(t, h, "gluster", "--mode=script", "peer", "status")
		if err != nil || strings.Count(p, "Peer in Cluster (Connected)") != len(c.storage)-1 {
			return false
		}
	}
	return true
}

// mendPool waits up to patience for glusterd's pool to be whole after a
// partition. If a handshake stalls instead (glusterd 10.3 leaves a healed
// peer in "Accepted peer request" now and then, and a rejected one stays
// rejected), it does what rsa nodes tells an admin to: it restarts
// glusterd on each host rsa nodes keeps out of new RAMDISKs, which must
// be some. Either way rsa nodes must take every host back.
func (c *cluster) mendPool(t *testing.T, patience time.Duration) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !c.poolWhole(t) && time.Now().Before(deadline) {
		time.Sleep(time.Second)
	}
	if !c.poolWhole(t) {
		var out map[string]string
		if !rsatest.Poll(30*time.Second, poll, func() bool { out = c.unpooled(t); return len(out) > 0 }) {
			peers, _ := c.execErr(t, c.storage[0], "gluster", "--mode=script", "peer", "status")
			t.Fatalf("glusterd's pool is not whole, and rsa nodes keeps no RSA host out of new RAMDISKs:\n%s", peers)
		}
		for h, why := range out {
			t.Logf("the pool is not whole; rsa nodes keeps %s out: %s; restarting its glusterd", h, why)
			if o, err := c.script(t, time.Minute, "cluster-up", "restart-glusterd", h); err != nil {
				t.Fatalf("restart-glusterd %s: %v %s", h, err, o)
			}
		}
		deadline = time.Now().Add(90 * time.Second)
		for !c.poolWhole(t) {
			if time.Now().After(deadline) {
				peers, _ := c.execErr(t, c.storage[0], "gluster", "--mode=script", "peer", "status")
				t.Fatalf("glusterd's pool is not whole 90s after glusterd was restarted on %v:\n%s", slices.Sorted(maps.Keys(out)), peers)
			}
			time.Sleep(time.Second)
		}
	}
	if !rsatest.Poll(30*time.Second, poll, func() bool { return len(c.unpooled(t)) == 0 }) {
		t.Fatalf("glusterd's pool is whole, and rsa nodes still keeps RSA hosts out of new RAMDISKs: %v", c.unpooled(t))
	}
}
