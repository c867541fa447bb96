package cluster_test

import (
	"bufio"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/engine/all"
	"github.com/rsa-hpc/rsa/internal/engine/enginetest"
	"github.com/rsa-hpc/rsa/internal/engine/gluster"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// The environment that tells TestGlusterConformance it runs inside the
// control host: the cluster's directory, and the jobs' user.
const (
	conformanceDirEnv = "RSA_CONFORMANCE_CLUSTER"
	conformanceUIDEnv = "RSA_CONFORMANCE_UID"
	conformanceGIDEnv = "RSA_CONFORMANCE_GID"
)

// TestGlusterConformance runs the engine conformance suite (enginetest)
// against the gluster engine, on cluster 6 of its own with no rsa serve,
// whose sweep would take the suite's RAMDISKs for leftovers.
//
// The engine must run where the daemon does: in the control host's mount
// and network namespaces, with ctl's address, /run and Gluster TLS
// identity. A Go process cannot enter another mount namespace (setns
// refuses a process with more than one thread), so the test runs this
// test binary again inside ctl (cluster-up exec), told so by
// conformanceDirEnv, and there it builds a gluster engine from the
// cluster's config over one view of the RSA nodes that it asks on demand
// (so that a silenced node is seen at once), and runs the suite in-process. To silence an RSA node the inner run asks
// this one, in the root namespace, to kill the node's agent and to start
// it again (cluster-up kill-agent, start-agent: ctl does not see the
// namespace files they need), over a unix socket in the cluster's
// directory.
func TestGlusterConformance(t *testing.T) {
	if dir := os.Getenv(conformanceDirEnv); dir != "" {
		conformanceInsideCtl(t, dir)
		return
	}
	// Before t.Parallel: useradd takes a lock and does not wait for it.
	u := testutil.EnsureNamedUser(t, testutil.TestUserName()+"-7")
	t.Parallel()
	c := startCluster(t, "RSA_CLUSTER_ID=6", "RSA_CLUSTER_NO_RSA=1")
	sock := filepath.Join(c.dir, "conformance.sock")
	c.serveAgents(t, sock)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := testutil.CommandWithin(t, 20*time.Minute, filepath.Join(c.root, "scripts", "cluster-up"), "exec", "ctl",
		self, "-test.run=^TestGlusterConformance$", "-test.v", "-test.count=1", "-test.timeout=18m")
	cmd.Env = append(slices.Clone(c.env), conformanceDirEnv+"="+c.dir,
		fmt.Sprintf("%s=%d", conformanceUIDEnv, u.UID), fmt.Sprintf("%s=%d", conformanceGIDEnv, u.GID),
		// The inner run's TestMain copies this rsa instead of building one.
		"RSA_TEST_BIN="+rsaBin)
	out, err := cmd.CombinedOutput()
	t.Logf("the suite, run inside ctl:\n%s", out)
	if err != nil {
		t.Fatalf("the suite, run inside ctl: %v", err)
	}
	if l := c.glusterLeaks(t); l != "" {
		t.Errorf("the suite left behind:\n%s", l)
	}
}

// conformanceInsideCtl is TestGlusterConformance inside ctl: the gluster
// engine of the cluster in dir, as rsa serve would build it from its
// config, against the suite.
func conformanceInsideCtl(t *testing.T, dir string) {
	uid, err1 := strconv.ParseUint(os.Getenv(conformanceUIDEnv), 10, 32)
	gid, err2 := strconv.ParseUint(os.Getenv(conformanceGIDEnv), 10, 32)
	if err1 != nil || err2 != nil {
		t.Fatalf("%s and %s must name the jobs' user: %v %v", conformanceUIDEnv, conformanceGIDEnv, err1, err2)
	}
	cfg, err := config.Load(filepath.Join(dir, "rsa", "rsa.toml"), true, all.Engines())
	if err != nil {
		t.Fatal(err)
	}
	gc, err := gluster.ConfigOf(cfg)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	cl, err := gluster.NewCluster(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	// Up and Down are what the last heartbeat found: the daemon beats
	// every second, this test when it needs to know.
	upIs := func(node string, up bool) func() bool {
		return func() bool {
			cl.Beat(t.Context(), 2*time.Second)
			return cl.Up(node) == up
		}
	}
	nodes := cl.StorageNodes()
	if len(nodes) < 2 {
		t.Fatalf("the cluster has RSA nodes %v; the suite spreads RAMDISKs over two", nodes)
	}
	for _, n := range nodes {
		testutil.WaitFor(t, "the agent of "+n+" to answer", 30*time.Second, poll, upIs(n, true))
	}
	newEngine := func() *gluster.Engine {
		return &gluster.Engine{Root: cfg.RamdiskRoot, Nodes: cl, Control: gc.Address,
			Replica: gc.Replica, Shard: gc.Shard, PingTimeout: gc.PingTimeout,
			CheckTimeout: gc.CheckTimeout, CheckSettle: gc.CheckSettle, Log: log}
	}
	if err := newEngine().Prepare(); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "conformance.sock")
	enginetest.Run(t, enginetest.Harness{
		New:  func(*testing.T) engine.Engine { return newEngine() },
		Root: cfg.RamdiskRoot,
		Parts: func(size int64) []job.Part {
			return []job.Part{{Node: nodes[0], Bytes: size / 2}, {Node: nodes[1], Bytes: size - size/2}}
		},
		UID:               uint32(uid),
		GID:               uint32(gid),
		Kernel:            true,
		SealsUnderWriters: true,
		Silence: func(t *testing.T, node string) func() {
			askAgent(t, sock, "silence", node)
			testutil.WaitFor(t, "the heartbeat to find "+node+" silent", 30*time.Second, poll, upIs(node, false))
			return func() {
				askAgent(t, sock, "answer", node)
				testutil.WaitFor(t, "the agent of "+node+" to answer again", 60*time.Second, poll, upIs(node, true))
			}
		},
	})
}

// serveAgents answers the requests of the run inside ctl, one line each,
// on a unix socket at sock until t ends: "silence NODE" kills the agent of
// RSA node NODE, "answer NODE" starts it again. The answer is "ok" or
// what went wrong, on one line.
func (c *cluster) serveAgents(t *testing.T, sock string) {
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return // closed: the test is over
			}
			c.answerAgentRequest(t, conn)
		}
	}()
}

func (c *cluster) answerAgentRequest(t *testing.T, conn net.Conn) {
	defer conn.Close()
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return
	}
	verb, node, _ := strings.Cut(strings.TrimSpace(line), " ")
	cmd := map[string]string{"silence": "kill-agent", "answer": "start-agent"}[verb]
	reply := "ok"
	switch {
	case cmd == "" || !slices.Contains(c.storage, node):
		reply = fmt.Sprintf("no such request %q: silence or answer, and an RSA node of %v", strings.TrimSpace(line), c.storage)
	default:
		if out, err := c.script(t, 2*time.Minute, "cluster-up", cmd, node); err != nil {
			reply = strings.ReplaceAll(fmt.Sprintf("cluster-up %s %s: %v: %s", cmd, node, err, out), "\n", " | ")
		}
	}
	fmt.Fprintln(conn, reply)
}

// askAgent asks the test in the root namespace (serveAgents) to silence
// node's agent or to make it answer again (verb), and waits for it done.
func askAgent(t *testing.T, sock, verb, node string) {
	t.Helper()
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("asking for %s %s: %v", verb, node, err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "%s %s\n", verb, node); err != nil {
		t.Fatalf("asking for %s %s: %v", verb, node, err)
	}
	reply, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || strings.TrimSpace(reply) != "ok" {
		t.Fatalf("%s %s: %q, %v", verb, node, strings.TrimSpace(reply), err)
	}
}

// glusterLeaks lists what the suite left on the cluster's hosts: Gluster
// volumes, bricks and client mounts of jobs (leaks, for a cluster without
// rsa serve to ask about RAM).
func (c *cluster) glusterLeaks(t *testing.T) string {
	t.Helper()
	var found []string
	for _, h := range c.storage {
		if v := c.exec(t, h, "gluster", "--mode=script", "volume", "list"); strings.Contains(v, "rsa-job-") {
			found = append(found, h+": volumes: "+strings.Join(strings.Fields(v), " "))
		}
	}
	for _, h := range append([]string{"ctl"}, c.storage...) {
		for _, l := range strings.Split(c.exec(t, h, "cat", "/proc/self/mountinfo"), "\n") {
			if strings.Contains(l, "rsa-job-") || strings.Contains(l, "fuse.glusterfs") {
				found = append(found, h+": "+l)
			}
		}
	}
	return strings.Join(found, "\n")
}
