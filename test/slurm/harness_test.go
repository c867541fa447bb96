// Package slurm runs RSA against a real Slurm (Debian's slurm-wlm, started
// by scripts/slurm-up with several slurmd on this host, each in its own
// mount namespace) in both modes: burst_buffer/lua and squeue polling. Jobs
// are submitted with sbatch by a real unprivileged user. Each test stops the
// cluster it started (scripts/slurm-down, by recorded pids), also on
// failure. Clusters share fixed ports, so the tests of this package run one
// after another.
package slurm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/rsatest"
	"github.com/rsa-hpc/rsa/internal/rsatest/live"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

var rsaBin string

func TestMain(m *testing.M) { testutil.RunWithRSA(m, &rsaBin) }

type cluster struct {
	t       *testing.T
	mode    string
	dir     string // scripts/slurm-up's directory
	conf    string // slurm.conf
	rsaConf string
	slurm   rsatest.Slurm // the cluster's client side: slurm.conf, and RSA_SLURM_PREFIX's commands (make test-slurm)
	nodes   int
	user    testutil.User
	work    string // the user's directory for this test
}

// startCluster brings up Slurm and rsa serve in mode (bb or poll).
func startCluster(t *testing.T, mode string, nodes int, env ...string) *cluster {
	t.Helper()
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	c := &cluster{t: t, mode: mode, nodes: nodes, user: u, dir: "/run/rsa-slurm-test"}
	c.conf = filepath.Join(c.dir, "etc", "slurm.conf")
	c.rsaConf = filepath.Join(c.dir, "rsa", "rsa.toml")
	c.slurm = rsatest.Slurm{Conf: c.conf, Prefix: os.Getenv("RSA_SLURM_PREFIX")}
	root := testutil.RepoRoot(t)
	scriptEnv := append(os.Environ(), "RSA_SLURM_DIR="+c.dir, "RSA_SLURM_MODE="+mode,
		fmt.Sprintf("RSA_SLURM_NODES=%d", nodes), "RSA_BIN="+rsaBin)
	scriptEnv = append(scriptEnv, env...)
	down := func() {
		cmd := exec.Command(filepath.Join(root, "scripts", "slurm-down"))
		cmd.Env = scriptEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("slurm-down: %v\n%s", err, out)
		}
	}
	down() // a cluster left by an interrupted run
	t.Cleanup(func() {
		if t.Failed() {
			// Kept for a closer look: the cluster's directory goes with
			// slurm-down.
			logs := filepath.Join(c.dir, "log")
			testutil.KeepLogs(t, logs, "rsa-slurm-logs")
			testutil.LogTails(t, logs, "rsa.out", "slurmctld.log")
		}
		down()
	})
	up := exec.Command(filepath.Join(root, "scripts", "slurm-up"))
	up.Env = scriptEnv
	if out, err := up.CombinedOutput(); err != nil {
		t.Fatalf("slurm-up: %v\n%s", err, out)
	}
	c.work = testutil.MkdirOwned(t, u, filepath.Join(testutil.TempDir(t), "work"))
	return c
}

// in returns the cluster for a subtest. A subtest that fails leaves no
// job behind to hold the RSA node or the compute nodes of the next one.
func (c *cluster) in(t *testing.T) *cluster {
	cc := *c
	cc.t = t
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		if out, err := c.slurm.Command(context.Background(), "scancel", "-u", c.user.Name).CombinedOutput(); err != nil {
			t.Logf("cancelling the failed subtest's jobs: %v %s", err, out)
		}
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if out, err := c.slurm.Command(context.Background(), "squeue", "-h", "-u", c.user.Name).Output(); err == nil && len(strings.TrimSpace(string(out))) == 0 {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Logf("the failed subtest's jobs are still in squeue after 60s")
	})
	return &cc
}

// restart stops slurmctld or rsa (with SIGKILL if crash) and starts it
// again.
func (c *cluster) restart(daemon string, crash bool) {
	c.t.Helper()
	args := []string{"restart-" + daemon}
	if crash {
		args = append(args, "--crash")
	}
	c.slurmUp(args...)
}

// slurmUp runs one of scripts/slurm-up's commands on this cluster.
func (c *cluster) slurmUp(args ...string) {
	c.t.Helper()
	cmd := exec.Command(filepath.Join(testutil.RepoRoot(c.t), "scripts", "slurm-up"), args...)
	cmd.Env = append(os.Environ(), "RSA_SLURM_DIR="+c.dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		c.t.Fatalf("slurm-up %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// forUser is the cluster as another of the test's users sees it, with
// work as that user's directory: sbatch, file, mkdir and asUser act as u
// there, and leaks looks for RAMDISKs mounted under work.
func (c *cluster) forUser(u testutil.User, work string) *cluster {
	cc := *c
	cc.user, cc.work = u, work
	return &cc
}

// mkdir makes a directory of the user's under the work area.
func (c *cluster) mkdir(name string) string {
	return testutil.MkdirOwned(c.t, c.user, filepath.Join(c.work, name))
}

// file writes a file of the user's.
func (c *cluster) file(name, content string, mode os.FileMode) string {
	c.t.Helper()
	p := filepath.Join(c.work, name)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		c.t.Fatal(err)
	}
	if err := os.Chown(p, int(c.user.UID), int(c.user.GID)); err != nil {
		c.t.Fatal(err)
	}
	return p
}

// asUser runs a Slurm command as the test user.
func (c *cluster) asUser(args ...string) (string, error) {
	argv := c.slurm.AsUser(c.user.Name, args[0], args[1:]...)
	cmd := c.command(argv[0], argv[1:]...)
	cmd.Dir = c.work
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// root runs a command as root with the cluster's SLURM_CONF.
func (c *cluster) root(args ...string) string {
	c.t.Helper()
	out, err := c.slurmCommand(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// command is a command with a deadline (testutil.Command); a Slurm tool is
// the cluster's own.
func (c *cluster) command(name string, args ...string) *exec.Cmd {
	return testutil.Command(c.t, c.slurm.Tool(name), args...)
}

// slurmCommand is command with the cluster's SLURM_CONF, for a Slurm
// command run as root.
func (c *cluster) slurmCommand(name string, args ...string) *exec.Cmd {
	cmd := c.command(name, args...)
	cmd.Env = c.slurm.Env()
	return cmd
}

// slurmMajor is the major version of the cluster's Slurm (22 for 22.05).
func (c *cluster) slurmMajor() int {
	c.t.Helper()
	out := c.root("scontrol", "--version") // "slurm 25.11.7", Debian's "slurm-wlm 22.05.8"
	f := strings.Fields(out)
	var v string
	if len(f) == 2 {
		v, _, _ = strings.Cut(f[1], ".")
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		c.t.Fatalf("scontrol --version: %q", out)
	}
	return n
}

// sbatch submits script (written to the work area) as the user.
func (c *cluster) sbatch(name, script string, opts ...string) string {
	c.t.Helper()
	path := c.file(name, script, 0o755)
	return testutil.Sbatch(c.t, c.slurm, c.user, c.work, append(append([]string{"-o", filepath.Join(c.work, name+".%j.out")}, opts...), path)...)
}

// job reads one Slurm job's state and reason (rsatest.Slurm.Job).
func (c *cluster) job(id string) (state, reason string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	return c.slurm.Job(ctx, id)
}

// jobNow is job for a slurmctld that is up: an error fails the test.
func (c *cluster) jobNow(id string) (state, reason string) {
	c.t.Helper()
	state, reason, err := c.job(id)
	if err != nil {
		c.t.Fatal(err)
	}
	return state, reason
}

// poll is how often a test checks the condition it waits for: most run a
// program (squeue, rsa status, ps).
const poll = 100 * time.Millisecond

// waitJob waits for Slurm's job id to be in one of states (testutil.WaitJob).
func (c *cluster) waitJob(id string, timeout time.Duration, states ...string) {
	c.t.Helper()
	testutil.WaitJob(c.t, c.slurm, id, timeout, states...)
}

func (c *cluster) rsa(args ...string) []byte {
	c.t.Helper()
	out, err := c.command(rsaBin, append([]string{"--config", c.rsaConf}, args...)...).Output()
	if err != nil {
		c.t.Fatalf("rsa %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// metrics is what rsa serve's metrics endpoint (slurm-up's
// RSA_SLURM_METRICS_PORT, default 19477) says now.
func (c *cluster) metrics() string {
	c.t.Helper()
	resp, err := http.Get("http://127.0.0.1:19477/metrics")
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return string(b)
}

// rsaJob is RSA's newest record of a Slurm job, or nil.
func (c *cluster) rsaJob(id string) *api.JobView {
	c.t.Helper()
	return c.rsaJobs(id)[id]
}

// rsaJobs is RSA's newest record of each of the Slurm jobs ids, read in
// one rsa status (so at one moment); a job RSA has no record of is
// missing from the map.
func (c *cluster) rsaJobs(ids ...string) map[string]*api.JobView {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	jobs, err := live.Jobs(ctx, rsaBin, c.rsaConf)
	if err != nil {
		c.t.Fatal(err)
	}
	return live.Newest(jobs, ids...)
}

func (c *cluster) waitRSA(id string, timeout time.Duration, rsaState string) *api.JobView {
	c.t.Helper()
	var j *api.JobView
	testutil.WaitFor(c.t, fmt.Sprintf("RSA's job for Slurm job %s to be %s", id, rsaState), timeout, poll, func() bool {
		j = c.rsaJob(id)
		return j != nil && string(j.RSA) == rsaState
	})
	return j
}

// assertNoLeaks checks that nothing of RSA is left: no RAMDISK on the
// RSA host or mounted on any compute node, no RAM allocated, and (with
// burst_buffer/lua) no pool space in use.
func (c *cluster) assertNoLeaks() {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		leaks := c.leaks()
		if leaks == "" {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("RSA left something behind: %s", leaks)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ramdiskMount matches a RAMDISK's mount in /proc/PID/mountinfo: source
// rsa-JOBID, and a mount point in this cluster's own directories (its RSA
// ramdisk root or the test's work area), so that RAMDISKs of other test
// packages running at the same time are not taken for leaks.
var ramdiskSource = regexp.MustCompile(`^rsa-[0-9]+$`)

func (c *cluster) ramdiskMounts(mountinfo []byte) []string {
	var found []string
	for _, line := range strings.Split(string(mountinfo), "\n") {
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		// An input image's mount (erofs) names no job in its source.
		if len(f) < 5 || sep < 0 || sep+2 >= len(f) || !ramdiskSource.MatchString(f[sep+2]) && f[sep+1] != "erofs" {
			continue
		}
		if p := f[4]; strings.HasPrefix(p, c.dir+"/") || strings.HasPrefix(p, c.work+"/") || p == c.work {
			found = append(found, p+" ("+f[sep+2]+")")
		}
	}
	return found
}

func (c *cluster) leaks() string {
	c.t.Helper()
	var leaks []string
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		c.t.Fatalf("reading the RSA host's mounts: %v", err)
	}
	if m := c.ramdiskMounts(b); len(m) > 0 {
		leaks = append(leaks, fmt.Sprintf("RAMDISKs mounted on the RSA host: %v", m))
	}
	for _, l := range rsatest.LoopsBelow(c.dir) {
		leaks = append(leaks, "a loop device: "+l)
	}
	for i := 1; i <= c.nodes; i++ {
		out, err := c.command("nsenter", "--mount="+filepath.Join(c.dir, "ns", fmt.Sprintf("n%d", i)), "cat", "/proc/self/mountinfo").Output()
		if err != nil {
			c.t.Fatalf("reading compute node n%d's mounts: %v", i, err)
		}
		if m := c.ramdiskMounts(out); len(m) > 0 {
			leaks = append(leaks, fmt.Sprintf("RAMDISKs mounted on compute node n%d: %v", i, m))
		}
	}
	var ns struct{ Nodes []api.NodeView }
	if err := json.Unmarshal(c.rsa("nodes", "--json"), &ns); err != nil {
		c.t.Fatalf("reading rsa nodes: %v", err)
	}
	{
		for _, n := range ns.Nodes {
			if n.Used != 0 {
				leaks = append(leaks, fmt.Sprintf("RSA node %s has %d bytes allocated", n.Name, n.Used))
			}
		}
	}
	if c.mode == "bb" {
		if out := c.root("scontrol", "show", "burst"); !poolFree(out) {
			leaks = append(leaks, "Slurm counts burst buffer space in use:\n"+out)
		}
	}
	return strings.Join(leaks, "; ")
}

// poolFree reads `scontrol show burst`: Slurm counts no space of RSA's
// pool as used by a job. (FreeSpace follows RSA's report, which Slurm reads
// only every half minute; RSA's own allocation is checked through rsa nodes.)
func poolFree(out string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "PoolName") {
			return strings.Contains(line, "UsedSpace=0")
		}
	}
	return false
}

// noUserProcesses fails if any process of the test user runs: after a
// cancelled stage-in, not its program nor anything it started (ps's exit
// status 1 is "none"; anything else but 0 is an error, not a pass).
func (c *cluster) noUserProcesses(after string) {
	c.t.Helper()
	testutil.WaitFor(c.t, "the user's processes to end after "+after, 10*time.Second, poll, func() bool {
		out, err := c.command("ps", "-o", "pid=,stat=,args=", "-u", c.user.Name).Output()
		var ee *exec.ExitError
		switch {
		case err == nil:

			var live []string
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if f := strings.Fields(l); len(f) >= 2 && !strings.HasPrefix(f[1], "Z") {
					live = append(live, l)
				}
			}
			if len(live) == 0 {
				return true
			}
			c.t.Logf("still running as %s: %s", c.user.Name, strings.Join(live, "; "))
			return false
		case errors.As(err, &ee) && ee.ExitCode() == 1:
			return true
		default:
			c.t.Fatalf("ps -u %s: %v", c.user.Name, err)
			return false
		}
	})

}

// output reads a finished job's stdout.
func (c *cluster) output(name, id string) string {
	b, _ := os.ReadFile(filepath.Join(c.work, name+"."+id+".out"))
	return string(b)
}

// accountingRE is RSA's token in a job's AdminComment, alone: a job
// without a comment of the site's gets exactly it.
var accountingRE = regexp.MustCompile(`(?m)\bAdminComment=rsa:in=(\d+)b/(\d+)f(\s|$)`)

// assertAccounted waits for the job's AdminComment to record its
// stage-in (RSA writes it off its loop, right after the stage-in) and
// checks the figures against what was staged: files files, at least
// minBytes bytes.
func (c *cluster) assertAccounted(id string, files, minBytes int64) {
	c.t.Helper()
	var show string
	var m []string
	testutil.WaitFor(c.t, "the stage-in in the job's AdminComment", 20*time.Second, poll, func() bool {
		show = c.root("scontrol", "show", "job", id)
		m = accountingRE.FindStringSubmatch(show)
		return m != nil
	})

	b, _ := strconv.ParseInt(m[1], 10, 64)
	f, _ := strconv.ParseInt(m[2], 10, 64)
	if f != files || b < minBytes {
		c.t.Errorf("the job's AdminComment records %d bytes in %d files; want %d files, at least %d bytes:\n%s", b, f, files, minBytes, show)
	}
}
