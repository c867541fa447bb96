package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/gluster"
	"github.com/rsa-hpc/rsa/internal/pki"
	"github.com/rsa-hpc/rsa/internal/stage"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// The real-Gluster test's names: a bridge and an address no one else on
// the machine uses (emulated clusters use rsabrN and 10.78.N.x).
// Gluster refuses loopback brick addresses, so the node gets this one.
const (
	glBridge = "rsatgl0"
	glAddr   = "10.79.0.1"
)

// glNode is a storage-and-compute node with its own glusterd: a private
// mount namespace (its own /run, /var/lib/glusterd, /var/log/glusterfs,
// mounts) in the root network namespace, on glAddr.
type glNode struct {
	pid int    // glusterd, whose mount namespace the node is
	ns  string // its mount namespace, as /proc/PID/ns/mnt reads
}

// exec runs name with args in the node's mount namespace.
func (n *glNode) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--mount=/proc/" + strconv.Itoa(n.pid) + "/ns/mnt", "--", name}, args...)...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// mountsBelow lists the node's mounts below dir.
func (n *glNode) mountsBelow(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", n.pid))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			out = append(out, l)
		}
	}
	return out
}

// startGlusterNode starts the node's glusterd in a new mount namespace and
// waits until it answers. Everything goes when the test ends: every
// process of the namespace is killed (and with the namespace its mounts:
// bricks, client mounts, binds), then the bridge is deleted.
func startGlusterNode(t *testing.T, dir string, id pki.Files) *glNode {
	t.Helper()
	for _, p := range []string{"gluster", "glusterd", "mount.glusterfs", "nsenter", "unshare", "setpriv", "ip"} {
		if _, err := exec.LookPath(p); err != nil {
			msg := fmt.Sprintf("%s is missing (%v): apt-get install glusterfs-server glusterfs-client util-linux iproute2", p, err)
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	// A bridge left by a test that was killed is taken over.
	exec.Command("ip", "link", "del", glBridge).Run()
	for _, args := range [][]string{
		{"link", "add", glBridge, "type", "bridge"},
		{"addr", "add", glAddr + "/32", "dev", glBridge},
		{"link", "set", glBridge, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			exec.Command("ip", "link", "del", glBridge).Run()
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "link", "del", glBridge).CombinedOutput(); err != nil {
			t.Errorf("deleting bridge %s: %v\n%s", glBridge, err, out)
		}
	})

	lib, logs := filepath.Join(dir, "glusterd"), filepath.Join(dir, "glusterfs-log")
	for _, d := range []string{lib, logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The packaged hooks and option groups; nothing else, so that
	// glusterd starts a fresh pool of its own.
	if out, err := exec.Command("cp", "-a", "/var/lib/glusterd/groups", "/var/lib/glusterd/hooks", lib).CombinedOutput(); err != nil {
		t.Fatalf("seeding glusterd's state: %v\n%s", err, out)
	}
	// Gluster's TLS as rsa ca install-gluster makes it, with the node's
	// identity, in the namespace only: OpenSSL's directory copied with
	// the three files added, and management TLS on.
	sslDir := gluster.SSLDir(context.Background())
	ssl := filepath.Join(dir, "ssl")
	if out, err := exec.Command("cp", "-a", sslDir, ssl).CombinedOutput(); err != nil {
		t.Fatalf("copying %s: %v\n%s", sslDir, err, out)
	}
	to := gluster.TLSFilesIn(ssl)
	for _, f := range [][2]string{{id.Cert, to.Cert}, {id.Key, to.Key}, {id.CA, to.CA}} {
		if out, err := exec.Command("install", "-m", "600", f[0], f[1]).CombinedOutput(); err != nil {
			t.Fatalf("installing %s: %v\n%s", f[1], err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(lib, "secure-access"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// unshare and sh exec, so the process started is glusterd itself.
	script := fmt.Sprintf("mount -t tmpfs -o mode=0755 rsatgl-run /run && mount --bind %s /var/lib/glusterd && mount --bind %s /var/log/glusterfs && mount --bind %s %s && exec glusterd -N -p /run/glusterd.pid", lib, logs, ssl, sslDir)
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	n := &glNode{pid: cmd.Process.Pid}
	t.Cleanup(func() {
		// Every process in the namespace: glusterd, its brick processes,
		// FUSE clients and agents. The namespace and its mounts go with
		// the last of them.
		for range 50 {
			pids := n.processes()
			if len(pids) == 0 {
				break
			}
			for _, p := range pids {
				syscall.Kill(p, syscall.SIGKILL)
			}
			time.Sleep(100 * time.Millisecond)
		}
		cmd.Process.Kill()
		<-exited
		if pids := n.processes(); len(pids) > 0 {
			t.Errorf("processes %v of the glusterd namespace survive", pids)
		}
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(logs, "glusterd.log")); err == nil {
				t.Logf("glusterd.log (end):\n%s", tail(string(b), 3000))
			}
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if n.ns == "" {
			if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", n.pid)); err == nil && ns != mustReadlink(t, "/proc/self/ns/mnt") {
				n.ns = ns
			}
		}
		if n.ns != "" {
			if err := n.command(context.Background(), "gluster", "--mode=script", "volume", "list").Run(); err == nil {
				return n
			}
		}
		select {
		case <-exited:
			t.Fatalf("glusterd ended: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("glusterd does not answer after 30 s: %s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func mustReadlink(t *testing.T, p string) string {
	t.Helper()
	s, err := os.Readlink(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// processes are the pids in the node's mount namespace.
func (n *glNode) processes() []int {
	if n.ns == "" {
		return nil
	}
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ns, err := os.Readlink("/proc/" + e.Name() + "/ns/mnt"); err == nil && ns == n.ns {
			out = append(out, pid)
		}
	}
	return out
}

// startAgentIn runs `rsa agent` (bin) in the node's namespace as node,
// with its own brick root, and returns its address once it answers.
func (e *env) startAgentIn(t *testing.T, n *glNode, bin, node, brickRoot string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	f := e.files[node]
	var log bytes.Buffer
	cmd := n.command(context.Background(), bin, "agent", "--listen", addr, "--control", "127.0.0.1", "--ca", f.CA, "--cert", f.Cert, "--key", f.Key,
		"--brick-root", brickRoot, "--volume-root", e.volumeRoot)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("agent %s log:\n%s", addr, log.String())
		}
	})
	c := e.client(t, node, addr)
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		if _, err := c.Status(context.Background()); err == nil {
			return addr
		} else if time.Since(start) > 30*time.Second {
			t.Fatalf("agent at %s does not answer: %v\n%s", addr, err, log.String())
		}
	}
}

// The whole life of a job's Gluster volume, as the daemon drives it, on a
// real glusterd: two bricks, a volume over them, the volume mounted on a
// compute node at the job's RAMDISK path and bound at the job's
// directory, written by the job's user, sealed (writes fail with EROFS on
// the client mounted before), released, removed, the bricks removed.
func TestAgentGluster(t *testing.T) {
	e := newEnv(t)
	u := testutil.EnsureUser(t)
	bin, cleanup, err := testutil.BuildRSA()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	n := startGlusterNode(t, e.dir, e.files["both1"])
	ctx := context.Background()

	// Two agents of the node, one per brick: an agent makes one brick
	// per volume on its node, and a test has one node.
	var clients []*Client
	for _, br := range []string{"bricks-a", "bricks-b"} {
		addr := e.startAgentIn(t, n, bin, "both1", filepath.Join(e.dir, br))
		clients = append(clients, e.client(t, "both1", addr))
	}
	c := clients[0]
	const v = "rsa-job-9"
	var bricks []string
	for _, cl := range clients {
		b, err := cl.MakeBrick(ctx, v, BrickSpec{Size: 32 << 20})
		if err != nil {
			t.Fatal(err)
		}
		bricks = append(bricks, glAddr+":"+b.Dir)
	}

	tls := []string{"both1"}
	spec := VolumeSpec{Bricks: bricks, AuthAllow: []string{glAddr}, TLSAllow: tls, PingTimeout: 5, Profile: true}
	start := time.Now()
	vol, err := c.MakeVolume(ctx, v, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("volume created, set and started over 2 bricks in %v", time.Since(start).Round(time.Millisecond))
	if vol.Name != v || !vol.Started || vol.ReadOnly || !slices.Equal(vol.Bricks, bricks) {
		t.Fatalf("MakeVolume = %+v", vol)
	}
	start = time.Now()
	if again, err := clients[1].MakeVolume(ctx, v, spec); err != nil || !again.Started || !slices.Equal(again.Bricks, bricks) {
		t.Fatalf("MakeVolume again, through the other agent: %+v, %v", again, err)
	}
	t.Logf("MakeVolume of a volume as asked: %v", time.Since(start).Round(time.Millisecond))
	for _, tc := range []struct {
		name string
		spec VolumeSpec
		want error
	}{
		{"other bricks", VolumeSpec{Bricks: bricks[:1], AuthAllow: []string{glAddr}, TLSAllow: tls}, ErrConflict},
		{"replica 2", VolumeSpec{Bricks: bricks, Replica: 2, AuthAllow: []string{glAddr}, TLSAllow: tls}, ErrConflict},
		{"no auth", VolumeSpec{Bricks: bricks, TLSAllow: tls}, ErrInvalid},
		{"bad auth", VolumeSpec{Bricks: bricks, AuthAllow: []string{"a,b"}, TLSAllow: tls}, ErrInvalid},
		{"no TLS names", VolumeSpec{Bricks: bricks, AuthAllow: []string{glAddr}}, ErrInvalid},
		{"a TLS pattern", VolumeSpec{Bricks: bricks, AuthAllow: []string{glAddr}, TLSAllow: []string{"*"}}, ErrInvalid},
		{"bad brick", VolumeSpec{Bricks: []string{"-x:/b"}, AuthAllow: []string{glAddr}, TLSAllow: tls}, ErrInvalid},
		{"relative brick", VolumeSpec{Bricks: []string{glAddr + ":b"}, AuthAllow: []string{glAddr}, TLSAllow: tls}, ErrInvalid},
		{"odd replica", VolumeSpec{Bricks: bricks[:1], Replica: 2, AuthAllow: []string{glAddr}, TLSAllow: tls}, ErrInvalid},
		{"ping", VolumeSpec{Bricks: bricks, AuthAllow: []string{glAddr}, TLSAllow: tls, PingTimeout: 42}, ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.MakeVolume(ctx, v, tc.spec); !errors.Is(err, tc.want) {
				t.Errorf("MakeVolume(%+v): %v, want %v", tc.spec, err, tc.want)
			}
		})
	}
	if vs, err := c.Volumes(ctx); err != nil || len(vs) != 1 || vs[0].Name != v || !vs[0].Started {
		t.Fatalf("Volumes = %+v, %v", vs, err)
	}

	// The compute side: mounted from the server, bound at the job's
	// output directory.
	out := testutil.MkdirOwned(t, u, filepath.Join(e.dir, "home", "job", "out"))
	m, err := c.Mount(ctx, v, MountRequest{Target: out, UID: u.UID, Role: RoleOutput, Servers: []string{glAddr}})
	if err != nil {
		t.Fatal(err)
	}
	ram := filepath.Join(e.volumeRoot, "9", "ram")
	if m.Source != ram || m.FSType != "fuse.glusterfs" || !slices.Equal(m.Targets, []string{out}) {
		t.Fatalf("Mount = %+v", m)
	}
	// The daemon gives the volume's root to the job's user through its
	// own client mount; here, through the node's.
	if o, err := n.command(ctx, "chown", fmt.Sprintf("%d:%d", u.UID, u.GID), ram).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v\n%s", err, o)
	}
	asUser := func(script string) (string, error) {
		cmd := n.command(ctx, "setpriv", fmt.Sprintf("--reuid=%d", u.UID), fmt.Sprintf("--regid=%d", u.GID), "--clear-groups", "sh", "-c", script)
		o, err := cmd.CombinedOutput()
		return string(o), err
	}
	if o, err := asUser(fmt.Sprintf("echo written > %s/f && cat %s/f", out, ram)); err != nil || strings.TrimSpace(o) != "written" {
		t.Fatalf("the job's user writing its output directory and reading its RAMDISK path: %q, %v", o, err)
	}

	// The volume's profile counts what its bricks served: the user's
	// create and write, through the compute side's mount.
	ops, err := c.VolumeProfile(ctx, v)
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]int64{}
	for _, o := range ops {
		calls[o.Op] = o.Calls
		if o.Calls < 1 || o.Mean <= 0 || o.Mean > time.Minute {
			t.Errorf("profile: %+v: want calls and a mean latency between 0 and a minute", o)
		}
	}
	if calls["CREATE"] < 1 || calls["WRITE"] < 1 {
		t.Errorf("profile after a file was created and written: %+v; want CREATE and WRITE counted", ops)
	}
	if _, err := c.VolumeProfile(ctx, "rsa-job-999"); !errors.Is(err, ErrNotFound) {
		t.Errorf("VolumeProfile of a volume not there: %v, want ErrNotFound", err)
	}

	testStageOutReach(t, n, c, v, u, ram, filepath.Join(e.dir, "bricks-b"), testutil.MkdirOwned(t, u, filepath.Join(e.dir, "home", "job", "disk")))

	seal := SealSpec{AuthAllow: []string{glAddr}, TLSAllow: tls}
	if err := c.SealVolume(ctx, v, SealSpec{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("SealVolume without who may reach it after: %v, want ErrInvalid", err)
	}
	start = time.Now()
	if err := c.SealVolume(ctx, v, seal); err != nil {
		t.Fatal(err)
	}
	t.Logf("sealed in %v", time.Since(start).Round(time.Millisecond))
	// glusterd has committed the seal; the bricks apply it a moment
	// later. Wait for that as the gluster engine does
	// (gluster.AwaitReadOnly, in this node's mount namespace): the
	// volume's root refuses a setxattr, which Gluster sends to every
	// brick and answers success if any took it.
	for deadline := time.Now().Add(30 * time.Second); ; {
		o, err := n.command(ctx, "setfattr", "-n", gluster.SealProbe, "-v", "1", ram).CombinedOutput()
		if err != nil && strings.Contains(string(o), "Read-only file system") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bricks still do not refuse a write 30 s after the seal: setfattr: %q, %v", o, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the bricks refuse writes %v after the seal began", time.Since(start).Round(time.Millisecond))
	// Until the client reaches the brick the file hashes to (one was
	// restarted a moment ago, testStageOutReach), a write fails with EIO:
	// refused too, but not yet by the seal. Only EROFS ends the wait; a
	// write that succeeds fails the test.
	for deadline := time.Now().Add(20 * time.Second); ; {
		o, err := asUser(fmt.Sprintf("echo more > %s/g", out))
		if err == nil || strings.Contains(o, "Read-only file system") {
			if err == nil {
				t.Errorf("writing a sealed volume through a client mounted before succeeded; want EROFS")
			}
			break
		}
		if !strings.Contains(o, "I/O error") || time.Now().After(deadline) {
			t.Errorf("writing a sealed volume through a client mounted before: %q, %v; want EROFS", o, err)
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if o, err := asUser(fmt.Sprintf("cat %s/f", out)); err != nil || strings.TrimSpace(o) != "written" {
		t.Errorf("reading a sealed volume: %q, %v", o, err)
	}
	if vs, err := c.Volumes(ctx); err != nil || len(vs) != 1 || !vs[0].ReadOnly {
		t.Errorf("Volumes after sealing = %+v, %v", vs, err)
	}

	// The volume's own mount gone first, as when its client ends after
	// the seal fenced this node out: the bind at the job's directory is
	// left, and Release finds it by its source.
	if o, err := n.command(ctx, "umount", "-l", ram).CombinedOutput(); err != nil {
		t.Fatalf("umount -l %s: %v\n%s", ram, err, o)
	}
	for i := range 2 {
		if err := c.Release(ctx, v, false); err != nil {
			t.Fatalf("Release #%d: %v", i+1, err)
		}
	}
	if ms := n.mountsBelow(t, e.volumeRoot); len(ms) != 0 {
		t.Errorf("left mounted after Release: %q", ms)
	}
	if ms := n.mountsBelow(t, filepath.Join(e.dir, "home")); len(ms) != 0 {
		t.Errorf("binds left after Release: %q", ms)
	}

	start = time.Now()
	if err := c.RemoveVolume(ctx, v); err != nil {
		t.Fatal(err)
	}
	t.Logf("volume stopped and deleted in %v", time.Since(start).Round(time.Millisecond))
	if err := c.RemoveVolume(ctx, v); err != nil {
		t.Errorf("RemoveVolume of a removed volume: %v", err)
	}
	if err := c.SealVolume(ctx, v, seal); !errors.Is(err, ErrNotFound) {
		t.Errorf("SealVolume of a removed volume: %v, want ErrNotFound", err)
	}
	// A one-node pool: no peer, so nothing to close.
	if n, err := c.ReconnectPeers(ctx); err != nil || n != 0 {
		t.Errorf("ReconnectPeers in a pool of one = %d, %v; want 0 connections closed", n, err)
	}
	if vs, err := c.Volumes(ctx); err != nil || len(vs) != 0 {
		t.Errorf("Volumes after removal = %+v, %v", vs, err)
	}
	for _, cl := range clients {
		if err := cl.RemoveBrick(ctx, v); err != nil {
			t.Errorf("RemoveBrick: %v", err)
		}
	}
	if ms := n.mountsBelow(t, e.dir); len(ms) != 0 {
		t.Errorf("left mounted in the node: %q", ms)
	}
}

// testStageOutReach: a stage-out through the node's own client of volume
// v is verified only if that client reaches every brick. With the brick
// under brickRoot killed, the copy lists the other brick's files alone,
// without an error: the stage must fail and name the brick. Restarted,
// the stage-out copies everything. ram is where the node mounts v.
func testStageOutReach(t *testing.T, n *glNode, c *Client, v string, u testutil.User, ram, brickRoot, disk string) {
	ctx := context.Background()
	stageOut := func() (string, error) {
		var log strings.Builder
		err := c.Stage(ctx, v, StageRequest{Phase: "stage-out", UID: u.UID, GID: u.GID, User: u.Name, Home: u.Home,
			// In a network namespace of its own, the default: the
			// copy reaches the volume through its FUSE mount all the same.
			Data: disk, Servers: []string{glAddr}, Limits: &StageLimits{Network: stage.NetworkNone}}, &log, nil)
		return log.String(), err
	}
	if log, err := stageOut(); err != nil {
		t.Fatalf("stage-out with both bricks up: %v\n%s", err, log)
	}
	if b, err := os.ReadFile(filepath.Join(disk, "f")); err != nil || string(b) != "written\n" {
		t.Fatalf("the stage-out's copy of f: %q, %v", b, err)
	}
	// The killed brick stays a zombie where no init reaps it; its pid
	// file would have glusterd take it for running. (The other brick's
	// stays: without it, glusterd starts that brick a second time.)
	if o, err := n.command(ctx, "sh", "-c", fmt.Sprintf("pkill -KILL -f '[g]lusterfsd.*%s/' && rm -f /run/gluster/vols/%s/*-%s-*.pid", brickRoot, v, filepath.Base(brickRoot))).CombinedOutput(); err != nil {
		t.Fatalf("killing the brick under %s: %v\n%s", brickRoot, err, o)
	}
	// Staged once the node's client knows (at once: the brick's
	// connection is reset), so that the check before the copy finds it
	// too. (Killed during the copy, the check after it does.)
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		dht, _ := n.command(ctx, "cat", filepath.Join(ram, ".meta", "graphs", "active", v+"-dht", "private")).Output()
		if strings.Contains(string(dht), "subvolume_status[1] = 0") {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the node's client does not see the brick under %s down:\n%s", brickRoot, dht)
		}
	}
	start := time.Now()
	log, err := stageOut()
	t.Logf("stage-out with a brick killed: %.1fs: %v", time.Since(start).Seconds(), err)
	if err == nil || !strings.Contains(err.Error(), "not verified") || !strings.Contains(err.Error(), v+"-client-1 ("+glAddr+":"+brickRoot+"/") {
		t.Errorf("stage-out with the brick under %s killed: %v; want it not verified, naming %s-client-1 and its brick\n%s", brickRoot, err, v, log)
	}
	if !strings.Contains(log, "the files there cannot be listed") {
		t.Errorf("the stage's log does not say the client misses a brick:\n%s", log)
	}
	// A stage-in meets the same client. Its writes to the brick that is
	// gone fail, or, if every file it copies hashes to the other brick,
	// the check after it names the brick: either way it fails, which is
	// all that matters, since both keep an incomplete input from being
	// called staged. Degraded: the check before the copy does not wait.
	var inLog strings.Builder
	err = c.Stage(ctx, v, StageRequest{Phase: "stage-in", UID: u.UID, GID: u.GID, User: u.Name, Home: u.Home,
		Data: disk, Servers: []string{glAddr}, Degraded: true, Limits: &StageLimits{Network: stage.NetworkNone}}, &inLog, nil)
	if err == nil || !strings.Contains(inLog.String(), "the files it would hold cannot be written") {
		t.Errorf("stage-in with the brick under %s killed: %v; want it failed, its log saying the client misses a brick\n%s", brickRoot, err, inLog.String())
	}
	if o, err := n.command(ctx, "gluster", "--mode=script", "volume", "start", v, "force").CombinedOutput(); err != nil {
		t.Fatalf("restarting the brick: %v\n%s", err, o)
	}
	start = time.Now()
	if log, err := stageOut(); err != nil {
		t.Errorf("stage-out with the brick restarted: %v\n%s", err, log)
	}
	t.Logf("stage-out with the brick restarted (its client reconnecting): %.1fs", time.Since(start).Seconds())
}
