package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/agent"
	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/stage"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// TestGlusterJobs: jobs through Slurm's burst_buffer/lua on the emulated
// cluster, each RAMDISK a Gluster volume over RSA hosts, shown on the
// compute hosts by their agents. On cluster 1, beside the other Gluster
// tests (see TestGlusterNodeLosses).
func TestGlusterJobs(t *testing.T) {
	// Before the cluster (they go after cluster-down), and before
	// t.Parallel: useradd takes a lock and does not wait for it.
	us := testutil.EnsureUsers(t, 2)
	t.Parallel()
	c := startCluster(t, "RSA_CLUSTER_ID=1", "RSA_CLUSTER_CAPACITY=512M", "RSA_CLUSTER_LEAD=0")
	t.Run("TwoNodes", func(t *testing.T) { testTwoNodes(t, c, us[0]) })
	t.Run("InputImage", func(t *testing.T) { testInputImage(t, c, us[0]) })
	t.Run("PrivateOutput", func(t *testing.T) { testPrivateOutput(t, c, us[0]) })
	t.Run("PrivateCollision", func(t *testing.T) { testPrivateCollision(t, c, us[0]) })
	t.Run("PrivateWritesLost", func(t *testing.T) { testPrivateWritesLost(t, c, us[0]) })
	t.Run("BusyInput", func(t *testing.T) { testBusyInput(t, c, us[0]) })
	t.Run("AuthAllow", func(t *testing.T) { testAuthAllow(t, c, us[0]) })
	t.Run("DataPath", func(t *testing.T) { testDataPath(t, c, us) })
	t.Run("FullVolume", func(t *testing.T) { testFullVolumeAlone(t, c, us, false) })
	if testutil.Long() {
		t.Run("FullVolumeSoak", func(t *testing.T) { testFullVolumeAlone(t, c, us, true) })
	}
	t.Run("RebootUnwatched", func(t *testing.T) { testLossWhileRunning(t, c, us[0], false, lossUnwatched, false) })
	t.Run("FenceAtStageOut", func(t *testing.T) { testFenceAtStageOut(t, c, us[0]) })
	t.Run("GlusterdRestarted", func(t *testing.T) { testGlusterdRestarted(t, c, us[0]) })
}

// testVolumeBack: a job's volume appears in glusterd after its job let it
// go, as one does when a peer that was down while it was deleted returns
// with it in its store and glusterd hands it to the others. The running
// daemon removes it, brick and all, without being asked: its record says
// the job let it go. (That it leaves the volumes of the jobs it holds
// alone, every other test here checks; that it keeps one of a job it has
// no record of, TestGlusterFailures' DaemonKilled.) The job is the newest that
// an earlier subtest of TestGlusterAlone ran to its end.
func testVolumeBack(t *testing.T, c *cluster) {
	ctx := context.Background()
	var st struct{ Jobs []api.JobView }
	if err := json.Unmarshal([]byte(c.rsa(t, "status", "--all", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	var gone int64
	for _, j := range st.Jobs {
		if j.RSA == lifecycle.Released && j.ID > gone {
			gone = j.ID
		}
	}
	if gone == 0 {
		t.Fatal("no job of this cluster has ended to plant its volume back: the subtests before this one run jobs")
	}
	vol := agent.VolumeName(gone)
	rsa3 := c.agentClient(t, filepath.Join(c.dir, "pki", "ctl"), "rsa3", c.addr("rsa3"))
	b, err := rsa3.MakeBrick(ctx, vol, agent.BrickSpec{Size: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rsa3.MakeVolume(ctx, vol, agent.VolumeSpec{Bricks: []string{c.addr("rsa3") + ":" + b.Dir}, AuthAllow: []string{c.addr("ctl")}, TLSAllow: []string{"ctl", "rsa3"}}); err != nil {
		t.Fatal(err)
	}
	// The cure for a member whose peers lost a volume it lists (see the
	// gluster engine's restoreAndDelete), which cannot be made to happen
	// on purpose: its glusterd's connections to its peers are closed, and
	// it connects again and shakes hands with each.
	before := glusterdLinks(t, c, "rsa3")
	closed, err := rsa3.ReconnectPeers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if closed < 2 {
		t.Errorf("ReconnectPeers closed %d connections of rsa3's glusterd (it had %q): want one at least with each of its two peers", closed, before)
	}
	testutil.WaitFor(t, "rsa3's glusterd to connect to its peers again", 60*time.Second, poll, func() bool {
		ps, err := rsa3.Peers(ctx)
		if err != nil || len(ps) != 2 {
			return false
		}
		for _, p := range ps {
			if !p.Connected || !p.InCluster() {
				return false
			}
		}
		return true
	})
	after := glusterdLinks(t, c, "rsa3")
	if len(after) == 0 || slices.ContainsFunc(after, func(l string) bool { return slices.Contains(before, l) }) {
		t.Errorf("rsa3's glusterd connections to its peers: %q before ReconnectPeers, %q after: want all new", before, after)
	}
	t.Logf("ReconnectPeers on rsa3 closed %d connections: %q; now %q", closed, before, after)
	back := time.Now()
	testutil.WaitFor(t, "the daemon to remove the volume no job holds", 90*time.Second, poll, func() bool {
		return !strings.Contains(c.exec(t, "rsa3", "gluster", "--mode=script", "volume", "list"), vol)
	})
	t.Logf("a volume no job holds, back in glusterd: removed %.1fs later", time.Since(back).Seconds())
	testutil.WaitFor(t, "its brick to go", 30*time.Second, poll, func() bool {
		st, err := rsa3.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return !slices.ContainsFunc(st.Bricks, func(b agent.Brick) bool { return b.Volume == vol })
	})
	c.assertNoLeaks(t)
}

// glusterdLinks lists host's established connections between its
// glusterd and the other RSA hosts' (port 24007 on one end), each as its
// addresses and its socket's inode: glusterd binds the same source port
// again when it reconnects, so only the inode tells a new connection.
func glusterdLinks(t *testing.T, c *cluster, host string) []string {
	t.Helper()
	var links []string
	out := c.exec(t, host, "ss", "-H", "-tne", "state", "established", "( sport = :24007 or dport = :24007 )")
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 4 {
			continue
		}
		local, peer := f[2], f[3]
		ino := ""
		for _, x := range f[4:] {
			if strings.HasPrefix(x, "ino:") {
				ino = x
			}
		}
		for _, h := range c.storage {
			if h != host && strings.HasPrefix(peer, c.addr(h)+":") {
				links = append(links, local+" "+peer+" "+ino)
			}
		}
	}
	return links
}

// testTwoNodes: a 2-node job's input, spread over 2 RSA hosts, is read by
// content on both compute hosts; the output both write lands on disk,
// verified; nothing is left on any host.
func testTwoNodes(t *testing.T, c *cluster, u testutil.User) {
	w := workDir(t, u, "two")
	in, out := filepath.Join(w, "in"), filepath.Join(w, "out")
	sums := fill(t, u, in, 40, 256<<10)
	job := script(t, u, filepath.Join(w, "job.sh"), fmt.Sprintf(`#!/bin/bash
#SBATCH -N 2
#SBATCH -o %[1]s/job.out
#RSA_DATA_IN=%[2]s
#RSA_DATA_OUT=%[3]s
#RSA_DELAY=8
srun -N2 bash -c 'findmnt -n -o FSTYPE --mountpoint %[2]s > %[1]s/infs-$(hostname); cd %[2]s && sha256sum f* > %[1]s/sums-$(hostname); echo "$RSA_RAMDISK $(stat -c %%U "$RSA_RAMDISK")" > %[1]s/ramdisk-$(hostname)'
srun -N2 bash -c 'for i in $(seq 600); do [ "$(findmnt -n -o FSTYPE --mountpoint %[3]s)" = fuse.glusterfs ] && break; sleep 0.1; done
findmnt -n -o FSTYPE --mountpoint %[3]s > %[1]s/outfs-$(hostname)
head -c 3000000 /dev/urandom > %[3]s/from-$(hostname)
sha256sum < %[3]s/from-$(hostname) > %[1]s/outsum-$(hostname)'
`, w, in, out))
	id := c.sbatch(t, u, job)
	j := c.waitRSA(t, id, 90*time.Second, "INUSE_IN")
	// Where the input lives: on the job's two RSA hosts, all of it.
	total, holding := 0, 0
	for _, h := range c.storage {
		n := c.brickFiles(t, h, volumeOf(j))
		total += n
		if n > 0 {
			holding++
		}
	}
	if total != 40 || holding != 2 {
		t.Errorf("the input's 40 files lie on %d RSA hosts, %d files in all; want 2 hosts, 40 files", holding, total)
	}
	c.waitJob(t, id, 120*time.Second, "COMPLETED")
	// The cluster's accounting (sacct from its job-completion record,
	// which the evidence's node hold is read from) agrees with squeue.
	start, end, err := c.slurmClient.Span(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	astart, aend, err := c.slurmClient.Accounted(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if !astart.Equal(start) || !aend.Equal(end) {
		t.Errorf("sacct says job %s ran %s to %s, squeue %s to %s: want the same", id, astart, aend, start, end)
	}
	c.waitRSA(t, id, 90*time.Second, "RELEASED")
	for _, h := range c.compute {
		if got := strings.TrimSpace(readFile(t, filepath.Join(w, "infs-"+h))); got != "fuse.glusterfs" {
			t.Errorf("input on %s is %q, not the Gluster volume", h, got)
		}
		if got := readFile(t, filepath.Join(w, "sums-"+h)); got != sums {
			t.Errorf("input read on %s differs from what was staged in:\n%s", h, got)
		}
		if got := strings.TrimSpace(readFile(t, filepath.Join(w, "ramdisk-"+h))); got != fmt.Sprintf("/run/rsa/ramdisk/%d/ram %s", j.ID, u.Name) {
			t.Errorf("RSA_RAMDISK on %s: %q", h, got)
		}
		if got := strings.TrimSpace(readFile(t, filepath.Join(w, "outfs-"+h))); got != "fuse.glusterfs" {
			t.Errorf("output on %s went to %q, not the Gluster volume", h, got)
		}
		want := strings.TrimSpace(readFile(t, filepath.Join(w, "outsum-"+h)))
		got := sha256File(t, filepath.Join(out, "from-"+h))
		if !strings.HasPrefix(want, got) {
			t.Errorf("output of %s on disk: sha256 %s, the job wrote %s", h, got, want)
		}
	}
	log := c.rsa(t, "log", fmt.Sprint(j.ID))
	// The stage-in spread over both of the job's RSA nodes, each copying
	// a share through its own client, then finished on one.
	for _, s := range []string{"stage-in on rsa", "(share 1 of 2)", "(share 2 of 2)", "(finishing the shares)", "stage-out on rsa", "stage-out done"} {
		if !strings.Contains(log, s) {
			t.Errorf("the job's log lacks %q:\n%s", s, log)
		}
	}
	c.assertNoLeaks(t)
}

// testInputImage: #RSA input=image on two compute hosts. The stage-in on
// an RSA host packs the input into one image, root's, in a volume whose
// root is root's; each compute host checks it and mounts it read-only at
// the input path and reads it whole; the job's user reaches neither the
// volume nor a way to write the image; output goes to a volume built anew;
// nothing is left (no erofs mount, no loop device).
func testInputImage(t *testing.T, c *cluster, u testutil.User) {
	w := workDir(t, u, "image")
	in, out := filepath.Join(w, "in"), filepath.Join(w, "out")
	sums := fill(t, u, in, 40, 64<<10)
	job := script(t, u, filepath.Join(w, "job.sh"), fmt.Sprintf(`#!/bin/bash
#SBATCH -N 2
#SBATCH -o %[1]s/job.out
#RSA in=%[2]s input=image out=%[3]s delay=6
srun -N2 bash -c 'h=$(hostname); findmnt -n -o FSTYPE,OPTIONS --mountpoint %[2]s | awk "{print \$1, substr(\$2, 1, 15)}" > %[1]s/infs-$h
cd %[2]s && sha256sum f* > %[1]s/sums-$h
{ touch %[2]s/new 2>/dev/null && echo WRITABLE || echo ro; ls "$RSA_RAMDISK" >/dev/null 2>&1 && echo REACHABLE || echo closed; } > %[1]s/tries-$h'
srun -N2 bash -c 'for i in $(seq 600); do [ "$(findmnt -n -o FSTYPE --mountpoint %[3]s)" = fuse.glusterfs ] && break; sleep 0.1; done
echo out > %[3]s/from-$(hostname)'
`, w, in, out))
	id := c.sbatch(t, u, job)
	j := c.waitRSA(t, id, 90*time.Second, "INUSE_IN")
	// The image, one file of root's, on one of the job's RSA hosts.
	var where []string
	for _, h := range c.storage {
		st, err := c.execErr(t, h, "stat", "-c", "%U %a %s", fmt.Sprintf("/run/rsa/bricks/%s/brick/%s", volumeOf(j), stage.ImageName))
		if err == nil {
			where = append(where, h+": "+strings.TrimSpace(st))
		}
	}
	if len(where) != 1 || !strings.Contains(where[0], ": root 400 ") {
		t.Errorf("the input image on the bricks: %q, want one file of root's, mode 400", where)
	}
	c.waitJob(t, id, 120*time.Second, "COMPLETED")
	c.waitRSA(t, id, 90*time.Second, "RELEASED")
	for _, h := range c.compute {
		if got := strings.TrimSpace(readFile(t, filepath.Join(w, "infs-"+h))); got != "erofs ro,nosuid,nodev" {
			t.Errorf("input on %s is %q, not the image read-only, nosuid, nodev", h, got)
		}
		if got := readFile(t, filepath.Join(w, "sums-"+h)); got != sums {
			t.Errorf("input read on %s differs from the input:\n%s", h, got)
		}
		if got := strings.Fields(readFile(t, filepath.Join(w, "tries-"+h))); !slices.Equal(got, []string{"ro", "closed"}) {
			t.Errorf("on %s the job's user could write the image or reach its volume: %q", h, got)
		}
		if got := strings.TrimSpace(readFile(t, filepath.Join(out, "from-"+h))); got != "out" {
			t.Errorf("output of %s on disk: %q", h, got)
		}
	}
	if log := c.rsa(t, "log", fmt.Sprint(j.ID)); !strings.Contains(log, "input image of 40 entries") {
		t.Errorf("the job's log does not tell of its image:\n%s", log)
	}
	c.assertNoLeaks(t)
}

// testPrivateOutput: #RSA output=private on two compute hosts: each
// writes into an ext4 file system of its own (an image in the job's
// volume, which the user cannot reach), sees nothing of the other's, and
// both trees are staged out; nothing is left.
func testPrivateOutput(t *testing.T, c *cluster, u testutil.User) {
	w := workDir(t, u, "private")
	out := filepath.Join(w, "out")
	job := script(t, u, filepath.Join(w, "job.sh"), fmt.Sprintf(`#!/bin/bash
#SBATCH -N 2
#SBATCH -o %[1]s/job.out
#RSA out=%[2]s output=private
srun -N2 bash -c 'h=$(hostname); for i in $(seq 300); do [ "$(findmnt -n -o FSTYPE --mountpoint %[2]s)" = ext4 ] && break; sleep 0.1; done
echo "$(findmnt -n -o FSTYPE,OPTIONS --mountpoint %[2]s | tr -s " " | cut -d, -f1-3) $(ls %[2]s | wc -l)" > %[2]s/from-$h
{ ls "$RSA_RAMDISK" >/dev/null 2>&1 && echo REACHABLE || echo closed; } >> %[2]s/from-$h'
`, w, out))
	id := c.sbatch(t, u, job)
	c.waitJob(t, id, 120*time.Second, "COMPLETED")
	j := c.waitRSA(t, id, 90*time.Second, "RELEASED")
	for _, h := range c.compute {
		if got := readFile(t, filepath.Join(out, "from-"+h)); got != "ext4 rw,nosuid,nodev 0\nclosed\n" {
			t.Errorf("output of %s on disk: %q: want its own empty ext4, rw, nosuid, nodev, and its RAMDISK closed", h, got)
		}
	}
	if log := c.rsa(t, "log", fmt.Sprint(j.ID)); !strings.Contains(log, "the private output of c1") || !strings.Contains(log, "the private output of c2") {
		t.Errorf("the job's log does not tell of both nodes' stage-outs:\n%s", log)
	}
	c.assertNoLeaks(t)
}

// testPrivateCollision: #RSA output=private on two compute hosts that
// both write the same name: one output directory cannot hold both, so the
// stage-out fails naming the file and both hosts, copies nothing (not
// even the names only one host wrote), and keeps both file systems in RAM
// until the administrator's rsa discard.
func testPrivateCollision(t *testing.T, c *cluster, u testutil.User) {
	w := workDir(t, u, "collision")
	out := filepath.Join(w, "out")
	job := script(t, u, filepath.Join(w, "job.sh"), fmt.Sprintf(`#!/bin/bash
#SBATCH -N 2
#SBATCH -o %[1]s/job.out
#RSA out=%[2]s output=private
srun -N2 bash -c 'for i in $(seq 300); do [ "$(findmnt -n -o FSTYPE --mountpoint %[2]s)" = ext4 ] && break; sleep 0.1; done
mkdir -p %[2]s/d; hostname > %[2]s/d/same; hostname > %[2]s/only-$(hostname)'
`, w, out))
	id := c.sbatch(t, u, job)
	c.waitJob(t, id, 120*time.Second, "COMPLETED")
	j := c.waitRSA(t, id, 90*time.Second, "STAGE_OUT_FAILED")
	if !strings.Contains(j.Error, "d/same (from c1 and c2)") {
		t.Errorf("the failure does not name the file both hosts wrote, and both hosts: %q", j.Error)
	}
	if names, err := os.ReadDir(out); err != nil || len(names) != 0 {
		t.Errorf("the output directory holds %d entries (%v) after a collision: want none", len(names), err)
	}
	var held []string
	for _, h := range []string{"c1", "c2"} {
		img := fmt.Sprintf("%s/out-%s.img", j.Ramdisk, h)
		if _, err := c.execErr(t, "ctl", "test", "-s", img); err == nil {
			held = append(held, h)
		}
	}
	if len(held) != 2 {
		t.Errorf("the file systems kept in RAM: %v, want both hosts'", held)
	}
	c.rsa(t, "discard", fmt.Sprint(j.ID))
	c.waitRSA(t, id, 60*time.Second, "RELEASED")
	c.assertNoLeaks(t)
}

// testPrivateWritesLost: with output=private, the RSA hosts' parts of the
// RAMDISK fill (here: root fills each brick's tmpfs beside the brick,
// as an uneven spread of the image's pieces does) before the job's file
// system does. The job's writes succeed (they land in its page cache);
// the kernel fails to carry them into the image later, unseen by the job.
// The stage-out must call nothing verified, now or on a retry, and keep
// the image for an administrator.
func testPrivateWritesLost(t *testing.T, c *cluster, u testutil.User) {
	w := workDir(t, u, "writes-lost")
	out := filepath.Join(w, "out")
	job := script(t, u, filepath.Join(w, "job.sh"), fmt.Sprintf(`#!/bin/bash
#SBATCH -N 1
#SBATCH -o %[1]s/job.out
#RSA out=%[2]s output=private
while [ ! -e %[1]s/go ]; do sleep 0.2; done
head -c 200M /dev/urandom > %[2]s/big && echo written
`, w, out))
	id := c.sbatch(t, u, job)
	j := c.waitRSA(t, id, 90*time.Second, "INUSE_OUT")
	filled := 0
	for _, h := range c.storage {
		b := "/run/rsa/bricks/" + volumeOf(j)
		if _, err := c.execErr(t, h, "test", "-d", b+"/brick"); err != nil {
			continue
		}
		// All but 8 MiB of the brick's tmpfs, outside the brick's tree.
		c.exec(t, h, "sh", "-c", `fallocate -l $(( $(df -B1 --output=avail "$1" | tail -1) - 8388608 )) "$1/filler"`, "sh", b)
		filled++
	}
	if filled == 0 {
		t.Fatalf("no brick of volume %s on the RSA hosts", volumeOf(j))
	}
	if err := os.WriteFile(filepath.Join(w, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.waitJob(t, id, 120*time.Second, "COMPLETED")
	if got := readFile(t, filepath.Join(w, "job.out")); !strings.Contains(got, "written") {
		t.Fatalf("the job's writes failed in the job (want them to succeed and fail later, unseen): %q", got)
	}
	for try := range 2 { // the stage-out, then a retry
		j = c.waitRSA(t, id, 90*time.Second, "STAGE_OUT_FAILED")
		for _, want := range []string{"never will be", "compute node c1", "filled", "rsa discard"} {
			if !strings.Contains(j.Error, want) {
				t.Errorf("try %d: the failure does not say %q: %q", try, want, j.Error)
			}
		}
		// The loop device under the file system turns the image's
		// ENOSPC into ENOSPC for a write that failed whole and into EIO
		// for one cut short (drivers/block/loop.c): either is what the
		// kernel lost. The compute node's flush learns of it, or, when
		// the failure came after the flush (the client's write-behind
		// under load, seen once in make test), the check on the
		// control host does: e2fsck finds the image inconsistent and
		// cannot write its fixes ("No space left on device"). Both are
		// the same loss, refused for good, nothing copied.
		if e := strings.ToLower(j.Error); !strings.Contains(e, "no space left on device") && !strings.Contains(e, "input/output error") {
			t.Errorf("try %d: the failure does not give the kernel's error: %q", try, j.Error)
		}
		if names, err := os.ReadDir(out); err != nil || len(names) != 0 {
			t.Errorf("try %d: the output directory holds %d entries (%v): want none", try, len(names), err)
		}
		if try == 0 {
			// Committed before it returns: the state is STAGING_OUT.
			c.rsa(t, "retry", fmt.Sprint(j.ID))
		}
	}
	if _, err := c.execErr(t, "ctl", "test", "-s", j.Ramdisk+"/out-c1.img"); err != nil {
		t.Errorf("the image is not kept in RAM: %v", err)
	}
	c.rsa(t, "discard", fmt.Sprint(j.ID))
	c.waitRSA(t, id, 60*time.Second, "RELEASED")
	c.assertNoLeaks(t)
}

// testBusyInput: a file held open on one compute host at the switch keeps
// the input mounted (UNMOUNT_BUSY); the output goes to disk; all is
// released at the end. The batch script itself, which runs on the
// allocation's first host (c1), holds the file from its first line: a
// step started with srun could open it after the switch on a loaded
// machine (one CI run did: INUSE_OUT, never UNMOUNT_BUSY). RSA_DELAY
// counts from the job's start, which the mounts on both compute hosts
// follow: it must outlast them (10 s under make test's load), or the
// switch comes as the script starts, before it holds the file.
func testBusyInput(t *testing.T, c *cluster, u testutil.User) {
	w := workDir(t, u, "busy")
	in, out := filepath.Join(w, "in"), filepath.Join(w, "out")
	fill(t, u, in, 3, 4096)
	job := script(t, u, filepath.Join(w, "job.sh"), fmt.Sprintf(`#!/bin/bash
#SBATCH -N 2
#SBATCH -o %[1]s/job.out
#RSA_DATA_IN=%[2]s
#RSA_DATA_OUT=%[3]s
#RSA_DELAY=12
exec 3< %[2]s/f0000
while [ ! -e %[1]s/go ]; do sleep 0.1; done
exec 3<&-
echo on-disk > %[3]s/result
`, w, in, out))
	id := c.sbatch(t, u, job)
	j := c.waitRSA(t, id, 90*time.Second, "UNMOUNT_BUSY")
	if err := os.WriteFile(filepath.Join(w, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.waitJob(t, id, 60*time.Second, "COMPLETED")
	c.waitRSA(t, id, 60*time.Second, "RELEASED")
	if got := readFile(t, filepath.Join(out, "result")); got != "on-disk\n" {
		t.Errorf("output: %q", got)
	}
	if log := c.rsa(t, "log", fmt.Sprint(j.ID)); !strings.Contains(log, "on c1") || !strings.Contains(log, "in use") {
		t.Errorf("the log does not say the input was in use on c1:\n%s", log)
	}
	c.assertNoLeaks(t)
}

// testAuthAllow: only the control host, the job's RSA hosts and its
// compute hosts may mount its volume.
func testAuthAllow(t *testing.T, c *cluster, u testutil.User) {
	w := workDir(t, u, "auth")
	in := filepath.Join(w, "in")
	fill(t, u, in, 2, 4096)
	job := script(t, u, filepath.Join(w, "job.sh"), fmt.Sprintf(`#!/bin/bash
#SBATCH -N 1
#SBATCH -w c1
#SBATCH -o %[1]s/job.out
#RSA_DATA_IN=%[2]s
while [ ! -e %[1]s/go ]; do sleep 0.1; done
`, w, in))
	id := c.sbatch(t, u, job)
	j := c.waitRSA(t, id, 90*time.Second, "INUSE_IN")
	vol := volumeOf(j)
	allow := c.exec(t, c.storage[0], "gluster", "--mode=script", "volume", "get", vol, "auth.allow")
	if !strings.Contains(allow, c.addr("ctl")+",") || !strings.Contains(allow, c.addr("c1")) || strings.Contains(allow, c.addr("c2")) {
		t.Errorf("auth.allow of %s: %s", vol, allow)
	}
	server := j.Alloc[0].Node
	// The mount itself may succeed (the volume's layout comes from
	// glusterd, which auth.allow does not guard); its bricks refuse c2,
	// so nothing of the job's data can be read there.
	c.exec(t, "c2", "mkdir", "-p", "/run/probe")
	mountOut, _ := c.execErr(t, "c2", "mount", "-t", "glusterfs", server+":/"+vol, "/run/probe")
	out, err := c.execErr(t, "c2", "sh", "-c", "ls /run/probe && cat /run/probe/f0000 | wc -c")
	c.execErr(t, "c2", "umount", "-l", "/run/probe")
	if err == nil && strings.Contains(out, "4096") {
		t.Errorf("c2, not one of the job's hosts, read its volume: mount said %q, then %q", mountOut, out)
	}
	// The job's own compute host reads it.
	if got := c.exec(t, "c1", "sh", "-c", "wc -c < "+filepath.Join(in, "f0000")); got != "4096" {
		t.Errorf("c1 reads %q bytes of its job's input", got)
	}
	if err := os.WriteFile(filepath.Join(w, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.waitJob(t, id, 60*time.Second, "COMPLETED")
	c.waitRSA(t, id, 60*time.Second, "RELEASED")
	c.assertNoLeaks(t)
}

// TestGlusterPoll: the polling adapter (the thesis' integration) across
// hosts, on cluster 5, beside the other Gluster tests (see
// TestGlusterNodeLosses): alone, before them, it added half a minute to
// make test. Its cluster is the one that checks the emulated cluster came
// up whole, first, and the one where an agent's silence reaches
// cluster.down_after (8 s here, against 30 s by default), last: no other
// test of its shares either.
func TestGlusterPoll(t *testing.T) {
	// A user of its own, made before t.Parallel (useradd takes a lock and
	// does not wait for it): the user's maker removes it when it ends.
	u := testutil.EnsureNamedUser(t, testutil.TestUserName()+"-6")
	t.Parallel()
	c := startCluster(t, "RSA_CLUSTER_ID=5", "RSA_CLUSTER_MODE=poll", "RSA_CLUSTER_CAPACITY=256M", "RSA_CLUSTER_LEAD=0",
		"RSA_CLUSTER_DOWN_AFTER="+pollDownAfter.String())
	t.Run("Up", func(t *testing.T) { testUp(t, c, u) })
	t.Run("StagedInWhilePending", func(t *testing.T) { testStagedInWhilePending(t, c, u) })
	t.Run("AgentSilentPastDownAfter", func(t *testing.T) { testAgentSilentPastDownAfter(t, c, u) })
}

// pollDownAfter is TestGlusterPoll's cluster.down_after: short, since its
// test waits it out, and 8 heartbeats long.
const pollDownAfter = 8 * time.Second

// testStagedInWhilePending: a 2-node job, pending behind another, is
// staged in while it waits; it reads its input on both compute hosts and
// its output is staged out.
func testStagedInWhilePending(t *testing.T, c *cluster, u testutil.User) {
	w := workDir(t, u, "poll")
	in, out := filepath.Join(w, "in"), filepath.Join(w, "out")
	sums := fill(t, u, in, 10, 64<<10)
	// The blocker holds both compute nodes until the test lets it go,
	// once RSA has staged the waiting job in: a fixed sleep raced the
	// RAMDISK's construction on a loaded machine.
	gate := filepath.Join(w, "go")
	blocker := c.sbatch(t, u, "-N", "2", "--time=1", "-o", filepath.Join(w, "blocker.out"), "--wrap",
		fmt.Sprintf("for i in $(seq 600); do [ -e %s ] && break; sleep 0.1; done", gate))
	c.waitJob(t, blocker, 60*time.Second, "RUNNING")
	// RSA_DELAY: the switch must find the first srun done with the
	// input (see testDaemonKilled).
	job := script(t, u, filepath.Join(w, "job.sh"), fmt.Sprintf(`#!/bin/bash
#SBATCH -N 2
#SBATCH -o %[1]s/job.out
#RSA_DATA_IN=%[2]s
#RSA_DATA_OUT=%[3]s
#RSA_DELAY=10
srun -N2 bash -c 'findmnt -n -o FSTYPE --mountpoint %[2]s > %[1]s/infs-$(hostname); cd %[2]s && sha256sum f* > %[1]s/sums-$(hostname)'
srun -N2 bash -c 'for i in $(seq 600); do [ "$(findmnt -n -o FSTYPE --mountpoint %[3]s)" = fuse.glusterfs ] && break; sleep 0.1; done
findmnt -n -o FSTYPE --mountpoint %[3]s > %[1]s/outfs-$(hostname); echo from $(hostname) > %[3]s/from-$(hostname)'
`, w, in, out))
	id := c.sbatch(t, u, job)
	c.waitRSA(t, id, 60*time.Second, "READY") // staged in while pending
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.waitJob(t, id, 120*time.Second, "COMPLETED")
	if j := c.waitRSA(t, id, 90*time.Second, "RELEASED"); j.Build != 2 {
		// The output's RAMDISK is a volume of its own: under the
		// input's name, a client once met the old brick's port and
		// left that part out of the stage-out.
		t.Errorf("the job's RAMDISKs were built %d times, want 2 (input, then output)", j.Build)
	}
	for _, h := range c.compute {
		for _, f := range []string{"infs-", "outfs-"} {
			if got := strings.TrimSpace(readFile(t, filepath.Join(w, f+h))); got != "fuse.glusterfs" {
				t.Errorf("%s%s: %q", f, h, got)
			}
		}
		if got := readFile(t, filepath.Join(w, "sums-"+h)); got != sums {
			t.Errorf("input read on %s differs from what was staged in", h)
		}
		if got := readFile(t, filepath.Join(out, "from-"+h)); got != "from "+h+"\n" {
			t.Errorf("output of %s on disk: %q", h, got)
		}
	}
	c.assertNoLeaks(t)
}

// testFullVolumeAlone: two jobs whose volumes share RSA hosts; one fills
// its volume to ENOSPC, the other's output is whole. A full tmpfs brick
// fails Gluster's brick health check (docs/failures.md), so job volumes
// run without it: glusterd must say so. With soak (make test-long) the
// full volume is kept full past the check's 30 s period, and its files are
// all still there.
func testFullVolumeAlone(t *testing.T, c *cluster, us []testutil.User, soak bool) {
	var ids [2]string
	var dirs [2]string
	for i, u := range us {
		w := workDir(t, u, fmt.Sprintf("full%d", i))
		dirs[i] = w
		out := filepath.Join(w, "out")
		// It writes once the test has seen both jobs hold their
		// volumes: done at once, it was released (four clusters on two
		// cores) before the filling job's volume was there to compare.
		work := fmt.Sprintf(`while [ ! -e %[2]s/go ]; do sleep 0.2; done
head -c 20000000 /dev/urandom > %[1]s/data; sha256sum < %[1]s/data > %[2]s/sum`, out, w)
		if i == 0 {
			// Full, then (soaked) kept full; then it lists what it has.
			wait := ""
			if soak {
				wait = "sleep 35; "
			}
			// stderr first: a create that fails (the volume full
			// before the file's first byte) is the shell's message,
			// written where stderr is when the redirection fails.
			work = fmt.Sprintf(`i=0; s=0; while :; do head -c 10000000 /dev/zero 2> %[2]s/err > %[1]s/fill-$i || { s=$?; break; }; i=$((i+1)); [ $i -lt 100 ] || break; done; echo "$i $s" > %[2]s/count
%[3]sls %[1]s > %[2]s/after 2>&1`, out, w, wait)
		}
		job := script(t, u, filepath.Join(w, "job.sh"), fmt.Sprintf(`#!/bin/bash
#SBATCH -N 1
#SBATCH -w c%[4]d
#SBATCH -o %[1]s/job.out
#RSA capacity=600M pool=rsa
#RSA_DATA_OUT=%[2]s
for i in $(seq 600); do [ "$(findmnt -n -o FSTYPE --mountpoint %[2]s)" = fuse.glusterfs ] && break; sleep 0.1; done
findmnt -n -o FSTYPE --mountpoint %[2]s > %[1]s/outfs
%[3]s
exit 0
`, w, out, work, i+1))
		ids[i] = c.sbatch(t, us[i], job)
	}
	var hosts [2][]string
	for i, id := range ids {
		j := c.waitRSA(t, id, 90*time.Second, "INUSE_OUT")
		for _, p := range j.Alloc {
			hosts[i] = append(hosts[i], p.Node)
		}
		if v := c.volumeOption(t, j.Alloc[0].Node, volumeOf(j), "storage.health-check-interval"); v != "0" {
			t.Errorf("job %d's volume %s has storage.health-check-interval %s, want 0 (off)", i, volumeOf(j), v)
		}
	}
	shared := false
	for _, a := range hosts[0] {
		for _, b := range hosts[1] {
			shared = shared || a == b
		}
	}
	if !shared {
		t.Errorf("the jobs' volumes share no RSA host (%v, %v): the test means them to", hosts[0], hosts[1])
	}
	if err := os.WriteFile(filepath.Join(dirs[1], "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		// The filling job writes 600M through FUSE (and soaked, sleeps
		// 35 s): with four clusters on two cores that took 115 s once.
		c.waitJob(t, id, 240*time.Second, "COMPLETED")
		c.waitRSA(t, id, 120*time.Second, "RELEASED")
		if got := strings.TrimSpace(readFile(t, filepath.Join(dirs[i], "outfs"))); got != "fuse.glusterfs" {
			t.Errorf("job %d wrote to %q, not its volume", i, got)
		}
	}
	count, status, _ := strings.Cut(strings.TrimSpace(readFile(t, filepath.Join(dirs[0], "count"))), " ")
	if e := readFile(t, filepath.Join(dirs[0], "err")); !strings.Contains(e, "No space left") {
		t.Errorf("the filling job's last write did not fail with ENOSPC: %q (exit status %s)", e, status)
	}
	n, err := strconv.Atoi(count)
	if err != nil || n == 100 || n == 0 {
		t.Fatalf("the filling job wrote %d files of 10 MB into 600M (%v)", n, err)
	}
	if after := strings.Fields(readFile(t, filepath.Join(dirs[0], "after"))); len(after) < n {
		t.Errorf("its volume full (soaked: %v), the job saw %d files of its %d: %q", soak, len(after), n, after)
	}
	for k := range n {
		p := filepath.Join(dirs[0], "out", fmt.Sprintf("fill-%d", k))
		if st, err := os.Stat(p); err != nil || st.Size() != 10000000 {
			t.Errorf("the filling job's file %s on disk: %v, want 10000000 bytes", p, err)
		}
	}
	checkData(t, dirs[1]) // the other job's
	c.assertNoLeaks(t)
}
