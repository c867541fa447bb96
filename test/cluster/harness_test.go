// Package cluster_test runs RSA on one machine emulating a cluster
// (scripts/cluster-up): a control host ctl (rsa serve, slurmctld), RSA
// hosts rsa1..rsaN (glusterd in one trusted pool, an rsa agent each) and
// compute hosts c1..cM (slurmd, an rsa agent each), each in its own
// network, mount and UTS namespace on a bridge of the cluster's own. The
// root namespace is the login node, where jobs are submitted with sbatch
// by real unprivileged users. Each test stops the cluster it started
// (scripts/cluster-down), also on failure. Tests of clusters with
// different ids (RSA_CLUSTER_ID) may run in parallel; the rest run one
// after another on cluster 0.
package cluster_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/rsatest"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

var rsaBin string

func TestMain(m *testing.M) { testutil.RunWithRSA(m, &rsaBin) }

// clusterDir is the start of the tests' cluster directories (the
// cluster's id follows), apart from the default one (/var/tmp/rsa-cluster)
// a demo may use; on the root file system, which every host's mount
// namespace sees.
const clusterDir = "/var/tmp/rsa-cluster-test"

type cluster struct {
	dir         string        // RSA_CLUSTER_DIR
	net         string        // the bridge's /24 ("10.78.ID"), as cluster-up makes it
	conf        string        // slurm.conf
	slurmClient rsatest.Slurm // Slurm's client side on the login node
	rsaConf     string        // rsa serve's config
	root        string        // the repository
	env         []string      // the scripts' environment
	storage     []string      // rsa1..rsaN
	compute     []string      // c1..cM
	control     []string      // ctl, and ctl2 with RSA_CLUSTER_FAILOVER=1
	// via is the control host the rsa CLI and holdRamdisk run on; "":
	// the CLI on the login node, through the config's socket, and the
	// holder on ctl. A failover pair's sockets are in each host's /run.
	via string
}

// startCluster brings the cluster up with scripts/cluster-up and the rsa
// built for this test run; env adds to the script's environment
// ("RSA_CLUSTER_NO_RSA=1", "RSA_CLUSTER_MODE=poll", "RSA_CLUSTER_RSA=2",
// "RSA_CLUSTER_ID=1", ...). It needs root, and fails without it: CI runs
// as root. The cluster is taken down when the test ends.
func startCluster(t *testing.T, env ...string) *cluster {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the cluster tests need root (network, mount and UTS namespaces, a bridge): run them as root")
	}
	id, nrsa, ncompute := 0, 3, 2
	control := []string{"ctl"}
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		n, err := strconv.Atoi(v)
		switch {
		case k == "RSA_CLUSTER_ID" && err == nil:
			id = n
		case k == "RSA_CLUSTER_RSA" && err == nil:
			nrsa = n
		case k == "RSA_CLUSTER_COMPUTE" && err == nil:
			ncompute = n
		case k == "RSA_CLUSTER_FAILOVER" && v == "1":
			control = append(control, "ctl2")
		}
	}
	c := &cluster{dir: fmt.Sprintf("%s-%d", clusterDir, id), net: fmt.Sprintf("10.78.%d", id), root: testutil.RepoRoot(t), control: control}
	c.conf = filepath.Join(c.dir, "etc", "slurm.conf")
	c.slurmClient = rsatest.Slurm{Conf: c.conf}
	c.rsaConf = filepath.Join(c.dir, "rsa", "rsa.toml")
	c.env = append(os.Environ(), "RSA_CLUSTER_DIR="+c.dir, "RSA_BIN="+rsaBin)
	c.env = append(c.env, env...)
	for i := 1; i <= nrsa; i++ {
		c.storage = append(c.storage, fmt.Sprintf("rsa%d", i))
	}
	for i := 1; i <= ncompute; i++ {
		c.compute = append(c.compute, fmt.Sprintf("c%d", i))
	}

	c.down(t) // a cluster left by an interrupted run
	t.Cleanup(func() {
		if t.Failed() {
			c.dumpLogs(t)
		}
		c.down(t)
	})
	out, err := c.script(t, 5*time.Minute, "cluster-up")
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("cluster-up: %v", err)
	}
	return c
}

// addr is host's address on the cluster's bridge, as cluster-up gives it.
func (c *cluster) addr(host string) string {
	switch {
	case host == "ctl":
		return c.net + ".2"
	case host == "ctl2":
		return c.net + ".3"
	case strings.HasPrefix(host, "rsa"):
		return c.net + ".1" + strings.TrimPrefix(host, "rsa")
	case strings.HasPrefix(host, "c"):
		return c.net + ".2" + strings.TrimPrefix(host, "c")
	}
	panic("no host " + host)
}

// script runs one of the cluster's scripts with the cluster's environment.
func (c *cluster) script(t *testing.T, timeout time.Duration, name string, args ...string) (string, error) {
	out, err := rsatest.Script(context.Background(), c.root, c.env, timeout, name, args...)
	return strings.TrimSpace(out), err
}

func (c *cluster) down(t *testing.T) {
	if out, err := c.script(t, 2*time.Minute, "cluster-down"); err != nil {
		t.Errorf("cluster-down: %v\n%s", err, out)
	}
}

func (c *cluster) dumpLogs(t *testing.T) {
	// Kept for a closer look: the cluster's directory goes with cluster-down.
	logs := filepath.Join(c.dir, "log")
	keep := testutil.KeepLogs(t, logs, "rsa-cluster-logs")
	// glusterd's and the bricks' own logs, by RSA host: what a pool
	// did when the daemon's log only says what it saw.
	hosts, _ := filepath.Glob(filepath.Join(c.dir, "hosts", "*", "log-glusterfs"))
	for _, h := range hosts {
		dst := filepath.Join(keep, "glusterfs-"+filepath.Base(filepath.Dir(h)))
		if out, err := exec.Command("cp", "-a", h, dst).CombinedOutput(); err != nil {
			t.Logf("keeping %s: %v %s", h, err, out)
		}
	}
	// The daemon's log last: a CI page shows the end of the output.
	testutil.LogTails(t, logs, "slurmctld.log", "rsa.out")
}

// exec runs a command on host (in all of its namespaces, through
// scripts/cluster-up exec) and returns its output; a failure fails the test.
func (c *cluster) exec(t *testing.T, host string, args ...string) string {
	t.Helper()
	out, err := c.execErr(t, host, args...)
	if err != nil {
		t.Fatalf("on %s: %s: %v\n%s", host, strings.Join(args, " "), err, out)
	}
	return out
}

// execErr is exec for a command that may fail.
func (c *cluster) execErr(t *testing.T, host string, args ...string) (string, error) {
	t.Helper()
	return c.script(t, 90*time.Second, "cluster-up", append([]string{"exec", host}, args...)...)
}

// rsa runs the cluster's rsa CLI on the login node (the root namespace) as
// root, with the cluster's config; a failure fails the test.
func (c *cluster) rsa(t *testing.T, args ...string) string {
	t.Helper()
	if c.via != "" {
		return c.exec(t, c.via, append([]string{filepath.Join(c.dir, "rsa", "rsa"), "--config", c.rsaConf}, args...)...)
	}
	cmd := testutil.Command(t, filepath.Join(c.dir, "rsa", "rsa"), append([]string{"--config", c.rsaConf}, args...)...)
	cmd.Env = c.slurmClient.Env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("rsa %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// slurm runs a Slurm command on the login node as root.
func (c *cluster) slurm(t *testing.T, args ...string) string {
	t.Helper()
	cmd := testutil.Command(t, args[0], args[1:]...)
	cmd.Env = c.slurmClient.Env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// sbatch submits a job as u from the login node, in u's home directory
// (on the root file system, which every host sees), and returns its id.
func (c *cluster) sbatch(t *testing.T, u testutil.User, args ...string) string {
	t.Helper()
	id := testutil.Sbatch(t, c.slurmClient, u, u.Home, args...)
	// A test that fails while its job waits (for a file the test never
	// writes) would leave the job holding its hosts, and every later test
	// would wait for them until the package's timeout.
	t.Cleanup(func() {
		if t.Failed() {
			if out, err := c.slurmClient.Command(context.Background(), "scancel", id).CombinedOutput(); err != nil {
				t.Logf("scancel %s after the failure: %v: %s", id, err, out)
			}
		}
	})
	return id
}

// poll is how often a test checks the condition it waits for: most run a
// program (squeue, rsa status, a command on a host).
const poll = 100 * time.Millisecond

// job reads a Slurm job's state ("" once Slurm forgets it).
func (c *cluster) job(t *testing.T, id string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	state, _, err := c.slurmClient.Job(ctx, id)
	return state, err
}

// waitJob waits until job id is in one of states and returns that state
// (testutil.WaitJob).
func (c *cluster) waitJob(t *testing.T, id string, timeout time.Duration, states ...string) string {
	t.Helper()
	return testutil.WaitJob(t, c.slurmClient, id, timeout, states...)
}

// connectedPeers counts the peers host's glusterd lists as connected,
// itself included.
func (c *cluster) connectedPeers(t *testing.T, host string) int {
	t.Helper()
	n := 0
	for _, l := range strings.Split(c.exec(t, host, "gluster", "--mode=script", "pool", "list"), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[2] == "Connected" {
			n++
		}
	}
	return n
}

// idleNodes lists the compute nodes Slurm has idle.
func (c *cluster) idleNodes(t *testing.T) []string {
	t.Helper()
	return strings.Fields(c.slurm(t, "sinfo", "-h", "-N", "-t", "idle", "-o", "%N"))
}
