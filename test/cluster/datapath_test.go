package cluster_test

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// probe runs testdata/gfprobe.py (a user-space Gluster client over
// libgfapi) on host as u against vol served from server, and returns its
// lines: "NAME ok: ..." for each way in that got through.
func (c *cluster) probe(t *testing.T, host string, u testutil.User, server, vol string, signout ...string) string {
	t.Helper()
	p := c.installProbe(t)
	out, _ := c.execErr(t, host, append([]string{"setpriv", "--reuid=" + strconv.Itoa(int(u.UID)),
		"--regid=" + strconv.Itoa(int(u.GID)), "--clear-groups", "/usr/bin/python3", p, server, vol}, signout...)...)
	return out
}

// installProbe copies the probe where every host and user reads it.
func (c *cluster) installProbe(t *testing.T) string {
	t.Helper()
	p := filepath.Join(c.dir, "gfprobe.py")
	b, err := os.ReadFile(filepath.Join("testdata", "gfprobe.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// refused fails the test for each line of a probe's output that says a
// way in got through. A probe that printed nothing it tried (it could not
// start) fails too: it would check nothing.
func refused(t *testing.T, who, out string) {
	t.Helper()
	if !strings.Contains(out, "init ") && !strings.Contains(out, "timeout ") && !strings.Contains(out, "signout ") {
		t.Errorf("%s: the probe tried nothing:\n%s", who, out)
		return
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[1] == "ok:" {
			t.Errorf("%s got through: %s", who, l)
		} else {
			t.Logf("%s: %s", who, l)
		}
	}
}

// brickStatus is `gluster volume status` of vol's bricks on host, as
// "HOST:DIR PORT ONLINE" each.
func (c *cluster) brickStatus(t *testing.T, host, vol string) []string {
	t.Helper()
	var st struct {
		Nodes []struct {
			Host   string `xml:"hostname"`
			Path   string `xml:"path"`
			Port   string `xml:"port"`
			Status int    `xml:"status"`
		} `xml:"volStatus>volumes>volume>node"`
	}
	x := c.exec(t, host, "gluster", "--mode=script", "--xml", "volume", "status", vol)
	if err := xml.Unmarshal([]byte(x), &st); err != nil {
		t.Fatalf("gluster volume status %s: %v\n%s", vol, err, x)
	}
	var out []string
	for _, n := range st.Nodes {
		if strings.HasPrefix(n.Path, "/") {
			out = append(out, fmt.Sprintf("%s:%s %s %d", n.Host, n.Path, n.Port, n.Status))
		}
	}
	return out
}

// testDataPath: no process but RSA's own reaches a job's RAMDISK through
// Gluster (docs/security.md, "The data path"). A user-space Gluster client
// run by an ordinary user (another user, and the job's own claiming root)
// on a compute host that runs the job, on one that does not, on an RSA
// host, on the control host and as a stage program on an RSA host can
// neither fetch the volume's layout, list, read, write, make a device, nor
// unmap a brick; every mount a user reaches is nosuid and nodev; a staging
// child has no_new_privs; the seal fences the compute hosts out and holds
// against a client claiming one of Gluster's own pids.
func testDataPath(t *testing.T, c *cluster, us []testutil.User) {
	victim, other := us[0], us[1]
	w := workDir(t, victim, "datapath")
	out := filepath.Join(w, "out")
	stageOut := script(t, victim, filepath.Join(w, "stage-out.sh"), fmt.Sprintf(`#!/bin/bash
grep NoNewPrivs /proc/self/status > %[1]s/nnp
/usr/bin/python3 %[2]s/gfprobe.py 127.0.0.1 "$(cat %[1]s/vol)" > %[1]s/probe-stage 2>&1
/usr/bin/python3 %[2]s/gfprobe.py %[3]s "$(cat %[1]s/vol)" >> %[1]s/probe-stage 2>&1
touch %[1]s/probed
while [ ! -e %[1]s/go-out ]; do sleep 0.1; done
cp -a "$1"/. "$2"/
`, w, c.dir, c.addr("rsa1")))
	job := script(t, victim, filepath.Join(w, "job.sh"), fmt.Sprintf(`#!/bin/bash
#SBATCH -N 1
#SBATCH -w c1
#SBATCH -o %[1]s/job.out
#RSA_DATA_OUT=%[2]s
#RSA_STAGE_OUT=%[3]s
echo result > %[2]s/result
while [ ! -e %[1]s/go ]; do sleep 0.1; done
`, w, out, stageOut))
	c.installProbe(t)
	id := c.sbatch(t, victim, job)
	j := c.waitRSA(t, id, 90*time.Second, "INUSE_OUT")
	vol := volumeOf(j)
	server := c.addr(j.Alloc[0].Node)
	if err := os.WriteFile(filepath.Join(w, "vol"), []byte(vol), 0o644); err != nil {
		t.Fatal(err)
	}

	// Every mount of the volume a user reaches is nosuid and nodev, on the
	// compute host and on the control host.
	for _, m := range []struct{ host, point string }{
		{"c1", out},
		{"c1", j.Ramdisk},
		{"ctl", j.Ramdisk},
	} {
		opts := c.exec(t, m.host, "findmnt", "-n", "-o", "OPTIONS", "--mountpoint", m.point)
		if !strings.Contains(","+opts+",", ",nosuid,") || !strings.Contains(","+opts+",", ",nodev,") {
			t.Errorf("the mount at %s on %s is not nosuid,nodev: %s", m.point, m.host, opts)
		}
	}

	// Findings 1-3, 6, 7 and 10: user-space clients on every kind of
	// host, the job's own user claiming root among them.
	bricks := c.brickStatus(t, j.Alloc[0].Node, vol)
	if len(bricks) == 0 {
		t.Fatalf("gluster volume status %s lists no brick", vol)
	}
	brick := strings.Fields(bricks[0])
	_, brickDir, _ := strings.Cut(brick[0], ":")
	for _, p := range []struct {
		host string
		u    testutil.User
	}{
		{"c1", victim},           // the job's own user, as root through libgfapi
		{"c1", other},            // another user on a compute host the job runs on
		{"c2", other},            // a compute host the job does not run on
		{j.Alloc[0].Node, other}, // an RSA host holding a brick of the job
		{"ctl", other},           // the control host
	} {
		refused(t, fmt.Sprintf("a user-space client of %s on %s", p.u.Name, p.host), c.probe(t, p.host, p.u, server, vol))
	}
	refused(t, "a client on the RSA host through its own glusterd", c.probe(t, j.Alloc[0].Node, other, "127.0.0.1", vol))
	// The port mapper's SIGNOUT, then the brick still mapped.
	refused(t, "SIGNOUT from c1", c.probe(t, "c1", other, server, vol, brickDir, brick[1]))
	if after := c.brickStatus(t, j.Alloc[0].Node, vol); strings.Join(after, "\n") != strings.Join(bricks, "\n") {
		t.Errorf("a user's SIGNOUT changed the bricks of %s: before %q, after %q", vol, bricks, after)
	}
	// glusterd's CLI over TCP answers no user.
	if o, err := c.execErr(t, "c1", "setpriv", "--reuid="+strconv.Itoa(int(other.UID)), "--regid="+strconv.Itoa(int(other.GID)),
		"--clear-groups", "gluster", "--mode=script", "--remote-host="+server, "volume", "list"); err == nil || strings.Contains(o, vol) {
		t.Errorf("glusterd's CLI answered a user on c1: %v\n%s", err, o)
	}
	// The volume is TLS only, and admits the named hosts alone.
	for _, o := range []string{"client.ssl", "server.ssl"} {
		got := strings.Fields(c.exec(t, j.Alloc[0].Node, "gluster", "--mode=script", "volume", "get", vol, o))
		if len(got) == 0 || got[len(got)-1] != "on" {
			t.Errorf("%s of %s: %q, want on", o, vol, got)
		}
	}
	ssl := c.exec(t, j.Alloc[0].Node, "gluster", "--mode=script", "volume", "get", vol, "auth.ssl-allow")
	if !strings.Contains(ssl, "c1") || strings.Contains(ssl, "c2") {
		t.Errorf("auth.ssl-allow of %s while the job runs on c1: %s", vol, ssl)
	}

	// The job ends; its stage-out program waits with the volume sealed.
	if err := os.WriteFile(filepath.Join(w, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Slurm holds the job in its stage-out until the program ends.
	c.waitRSA(t, id, 60*time.Second, "STAGING_OUT")
	testutil.WaitFor(t, "the stage-out program's probes", 100*time.Second, poll, func() bool {
		_, err := os.Stat(filepath.Join(w, "probed"))
		return err == nil
	})
	// The seal: c1 is admitted no more, by address or certificate.
	for _, o := range []string{"auth.ssl-allow", "auth.allow"} {
		got := c.exec(t, j.Alloc[0].Node, "gluster", "--mode=script", "volume", "get", vol, o)
		if strings.Contains(got, "c1") || strings.Contains(got, c.addr("c1")) {
			t.Errorf("%s of %s after the job left c1: %s", o, vol, got)
		}
	}
	// The sealed volume, as the job's own user claiming a pid of Gluster's
	// own.
	refused(t, "a client of the job's user on c1 while sealed", c.probe(t, "c1", victim, server, vol))
	// The stage program, on an RSA host, without privileges and without a
	// way to glusterd or the bricks.
	refused(t, "the stage-out program on an RSA host", readFile(t, filepath.Join(w, "probe-stage")))
	if got := strings.Fields(readFile(t, filepath.Join(w, "nnp"))); len(got) != 2 || got[1] != "1" {
		t.Errorf("the stage program's NoNewPrivs: %q, want 1", got)
	}
	if err := os.WriteFile(filepath.Join(w, "go-out"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.waitJob(t, id, 60*time.Second, "COMPLETED")
	c.waitRSA(t, id, 90*time.Second, "RELEASED")
	if got := readFile(t, filepath.Join(out, "result")); got != "result\n" {
		t.Errorf("the job's output: %q", got)
	}
	if ents, err := os.ReadDir(out); err != nil || len(ents) != 1 {
		t.Errorf("the output directory holds %d entries (%v), want the job's result alone: a probe planted files", len(ents), err)
	}
	c.assertNoLeaks(t)
}
