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
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/agent"
	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/rsatest"
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
		if r.Jobs[i].Spec.SchedulerID == id && (found == nil || r.Jobs[i].ID > found.ID) {
			found = &r.Jobs[i]
		}
	}
	return found
}

// waitRSA waits until RSA's job for Slurm job id is in rsaState.
func (c *cluster) waitRSA(t *testing.T, id string, timeout time.Duration, rsaState string) *api.JobView {
	t.Helper()
	var j *api.JobView
	if rsatest.Poll(timeout, poll, func() bool {
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
	for _, h := range append(append(slices.Clone(c.control), c.storage...), c.compute...) {
		mi := c.exec(t, h, "cat", "/proc/self/mountinfo")
		for _, l := range strings.Split(mi, "\n") {
			if strings.Contains(l, "rsa-job-") || strings.Contains(l, "fuse.glusterfs") || strings.Contains(l, " - erofs ") ||
				strings.Contains(l, " - ext4 ") && strings.Contains(l, "/run/rsa/") {
				found = append(found, h+": "+l)
			}
		}
	}
	// Loop devices are the machine's, shared by every emulated host: one
	// left under an input image names its file in a job's volume.
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), "/run/rsa/") {
			found = append(found, "a loop device on "+strings.TrimSpace(string(b)))
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

// stageLog is the staging log of RSA job rid as 'rsa log' shows it: the
// lines the daemon and the job's staging programs wrote, without the
// job's events (whose messages repeat the reasons of some of those lines).
func (c *cluster) stageLog(t *testing.T, rid int64) string {
	t.Helper()
	var l struct {
		StageLog string `json:"stage_log"`
	}
	if err := json.Unmarshal([]byte(c.rsa(t, "log", "--json", fmt.Sprint(rid))), &l); err != nil {
		t.Fatalf("rsa log --json %d: %v", rid, err)
	}
	return l.StageLog
}

// volumeOption is the value glusterd on host gives vol's option opt
// (gluster volume get), without the "(DEFAULT)" it may add.
func (c *cluster) volumeOption(t *testing.T, host, vol, opt string) string {
	t.Helper()
	out := c.exec(t, host, "gluster", "--mode=script", "volume", "get", vol, opt)
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == opt {
			return f[1]
		}
	}
	t.Fatalf("gluster volume get %s %s on %s names no value:\n%s", vol, opt, host, out)
	return ""
}

// signal sends sig to the process cluster-up started as name, by the pid
// its pid file records ($DIR/pids/NAME: "PID STARTTIME", as cluster-up's
// start writes it; every host shares the machine's pid namespace). A pid
// whose start time differs is another process now: an error, as is one
// that is gone.
func (c *cluster) signal(name string, sig syscall.Signal) error {
	b, err := os.ReadFile(filepath.Join(c.dir, "pids", name))
	if err != nil {
		return fmt.Errorf("no pid of %s: %w", name, err)
	}
	var pid int
	var started string
	if _, err := fmt.Sscan(string(b), &pid, &started); err != nil {
		return fmt.Errorf("pid file of %s: %q: %w", name, b, err)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return fmt.Errorf("%s (pid %d) does not run: %w", name, pid, err)
	}
	// Field 22, the start time; the command (field 2) may hold spaces.
	s := string(stat)
	f := strings.Fields(s[strings.LastIndex(s, ") ")+2:])
	if len(f) < 20 || f[19] != started {
		return fmt.Errorf("%s (pid %d) does not run: that pid is another process now", name, pid)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("signalling %s (pid %d): %w", name, pid, err)
	}
	return nil
}

// freezeGlusterd stops glusterd on every RSA host (SIGSTOP). Every gluster
// command an agent runs then waits for it (the CLI gives up after two
// minutes), so an action that makes, changes or deletes a volume cannot
// finish; the bricks and the clients, processes of their own, serve on.
// thaw lets glusterd go on (SIGCONT); a cleanup thaws too.
func (c *cluster) freezeGlusterd(t *testing.T) (thaw func()) {
	t.Helper()
	thaw = func() {
		for _, h := range c.storage {
			if err := c.signal("glusterd-"+h, syscall.SIGCONT); err != nil {
				t.Errorf("thawing glusterd on %s: %v", h, err)
			}
		}
	}
	t.Cleanup(thaw)
	for _, h := range c.storage {
		if err := c.signal("glusterd-"+h, syscall.SIGSTOP); err != nil {
			t.Fatalf("freezing glusterd on %s: %v", h, err)
		}
	}
	return thaw
}

// daemonLog is rsa serve's log (stderr) from byte offset from on: every
// run of it on this cluster, appended.
func (c *cluster) daemonLog(t *testing.T, from int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.dir, "log", "rsa.out"))
	if err != nil {
		t.Fatal(err)
	}
	if from > len(b) {
		t.Fatalf("rsa serve's log is %d bytes, shorter than before (%d)", len(b), from)
	}
	return string(b[from:])
}

// clusterSetting is the value of key in the [cluster] table of rsa
// serve's config as cluster-up wrote it ("" if absent), unquoted.
func (c *cluster) clusterSetting(t *testing.T, key string) string {
	t.Helper()
	in := false
	for _, l := range strings.Split(readFile(t, c.rsaConf), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "[") {
			in = l == "[cluster]"
			continue
		}
		if k, v, ok := strings.Cut(l, "="); in && ok && strings.TrimSpace(k) == key {
			return strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	return ""
}

// agentState is node's state as rsa nodes gives it: "up", "suspect" or
// "down" ("" for a node without an agent).
func (c *cluster) agentState(t *testing.T, node string) string {
	t.Helper()
	if n, ok := c.nodes(t)[node]; ok && n.Agent != nil {
		return n.Agent.State
	}
	return ""
}

// nodes is rsa nodes --json, by node name.
func (c *cluster) nodes(t *testing.T) map[string]api.NodeView {
	t.Helper()
	var v struct{ Nodes []api.NodeView }
	if err := json.Unmarshal([]byte(c.rsa(t, "nodes", "--json")), &v); err != nil {
		t.Fatal(err)
	}
	m := map[string]api.NodeView{}
	for _, n := range v.Nodes {
		m[n.Name] = n
	}
	return m
}
