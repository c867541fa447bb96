package cluster_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/agent"
	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// rsaJob is RSA's newest job for Slurm job id, nil if none yet.
func (c *cluster) rsaJob(t *testing.T, id string) *api.JobView {
	t.Helper()
	var r struct{ Jobs []api.JobView }
	if err := json.Unmarshal([]byte(c.rsa(t, "status", "--all", "--json")), &r); err != nil {
		t.Fatal(err)
	}
	var found *api.JobView
	for i := range r.Jobs {
		if r.Jobs[i].Spec.Name == id && (found == nil || r.Jobs[i].ID > found.ID) {
			found = &r.Jobs[i]
		}
	}
	return found
}

// waitRSA waits until RSA's job for Slurm job id is in rsaState.
func (c *cluster) waitRSA(t *testing.T, id string, timeout time.Duration, rsaState string) *api.JobView {
	t.Helper()
	var j *api.JobView
	if poll(timeout, func() bool {
		j = c.rsaJob(t, id)
		return j != nil && string(j.RSA) == rsaState
	}) {
		return j
	}
	// Where it stands says which step hung: a CI log holds no more.
	where := "unknown to RSA"
	if j != nil {
		where = fmt.Sprintf("RSA job %d is %s (job state %s), error %q, waiting %q", j.ID, j.RSA, j.State, j.Error, j.Waiting)
	}
	t.Fatalf("timed out after %s waiting for RSA's job for Slurm job %s to be %s: %s", timeout, id, rsaState, where)
	return nil
}

// brickFiles counts the regular files in vol's brick on host (Gluster's
// own .glusterfs directory aside): where the data physically lives.
func (c *cluster) brickFiles(t *testing.T, host, vol string) int {
	t.Helper()
	out := c.exec(t, host, "sh", "-c", fmt.Sprintf(
		"find /run/rsa/bricks/%s/brick -path '*/.glusterfs' -prune -o -type f ! -perm -1000 -print 2>/dev/null | wc -l", vol))
	var n int
	fmt.Sscan(out, &n)
	return n
}

// volumeOf is the name of the volume of j's RAMDISK as j saw it.
func volumeOf(j *api.JobView) string { return agent.BuildName(j.ID, j.Build) }

// leaks lists what RSA left on any host: Gluster volumes, bricks, FUSE
// mounts or tmpfs of jobs in any host's mount namespace, RAM allocated.
func (c *cluster) leaks(t *testing.T) string {
	t.Helper()
	var found []string
	// Every RSA host's glusterd: a pool healed from a split can
	// disagree, one peer keeping a volume the others deleted.
	for _, h := range c.storage {
		if v := c.exec(t, h, "gluster", "--mode=script", "volume", "list"); strings.Contains(v, "rsa-job-") {
			found = append(found, h+": volumes: "+strings.Join(strings.Fields(v), " "))
		}
	}
	for _, h := range append(append([]string{"ctl"}, c.storage...), c.compute...) {
		mi := c.exec(t, h, "cat", "/proc/self/mountinfo")
		for _, l := range strings.Split(mi, "\n") {
			if strings.Contains(l, "rsa-job-") || strings.Contains(l, "fuse.glusterfs") {
				found = append(found, h+": "+l)
			}
		}
	}
	var nodes struct{ Nodes []api.NodeView }
	if err := json.Unmarshal([]byte(c.rsa(t, "nodes", "--json")), &nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Nodes {
		if n.Used != 0 {
			found = append(found, fmt.Sprintf("%s: %d bytes allocated to %v", n.Name, n.Used, n.Jobs))
		}
	}
	return strings.Join(found, "\n")
}

func (c *cluster) assertNoLeaks(t *testing.T) {
	t.Helper()
	var l string
	deadline := time.Now().Add(30 * time.Second)
	for {
		if l = c.leaks(t); l == "" {
			return
		}
		if time.Now().After(deadline) {
			// What glusterd and the daemon think, for whoever reads why.
			peers, _ := c.execErr(t, c.storage[0], "gluster", "--mode=script", "peer", "status")
			nodes := c.rsa(t, "nodes")
			t.Fatalf("RSA left something behind:\n%s\npeers seen from %s:\n%s\nrsa nodes:\n%s", l, c.storage[0], peers, nodes)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// workDir makes a fresh directory of u's under u's home.
func workDir(t *testing.T, u testutil.User, name string) string {
	t.Helper()
	d := filepath.Join(u.Home, name)
	os.RemoveAll(d)
	for _, p := range []string{d, filepath.Join(d, "in"), filepath.Join(d, "out")} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, int(u.UID), int(u.GID)); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// fill writes n files of size bytes of random data into dir as u's and
// returns their sha256 sums, "SUM  NAME" lines sorted by name as
// sha256sum prints them.
func fill(t *testing.T, u testutil.User, dir string, n, size int) string {
	t.Helper()
	var sums []string
	buf := make([]byte, size)
	for i := range n {
		if _, err := rand.Read(buf); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("f%04d", i)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chown(p, int(u.UID), int(u.GID))
		s := sha256.Sum256(buf)
		sums = append(sums, hex.EncodeToString(s[:])+"  "+name)
	}
	return strings.Join(sums, "\n") + "\n"
}

// script writes an executable job script of u's.
func script(t *testing.T, u testutil.User, path, body string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chown(path, int(u.UID), int(u.GID))
	return path
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sha256File(t *testing.T, p string) string {
	t.Helper()
	s, err := sha256Of(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sha256Of(p string) (string, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

// metrics is what rsa serve's metrics endpoint (on ctl, port 19477) says.
func (c *cluster) metrics(t *testing.T) string {
	t.Helper()
	// The cluster's own bridge, never a proxy; one connection a scrape,
	// closed after it: the server holds 16 of one address at most, and a
	// Transport per call would leave each one open, idle.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := hc.Get("http://" + c.addr("ctl") + ":19477/metrics")
	if err != nil {
		t.Fatalf("scraping rsa serve's metrics: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
