package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/mounttest"
	"github.com/rsa-hpc/rsa/internal/pki"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// env is one test's world: a temporary directory whose mounts are all
// detached when the test ends (even when it fails), a cluster CA with a
// certificate per role, and the agents' roots.
type env struct {
	dir        string
	brickRoot  string
	volumeRoot string
	files      map[string]pki.Files // by node: ctl1 (control), rsa1 (storage), node1 (compute), both1 (both), ctl9 (control, another CA)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	testutil.RequireRoot(t)
	dir := testutil.TempDir(t)
	// Registered after TempDir's removal, so run before it: nothing is
	// removed while still mounted.
	t.Cleanup(func() { mounttest.UnmountBelow(dir) })
	e := &env{dir: dir, brickRoot: filepath.Join(dir, "bricks"), volumeRoot: filepath.Join(dir, "volumes"), files: map[string]pki.Files{}}
	ca, other := filepath.Join(dir, "pki", "ca"), filepath.Join(dir, "pki", "other-ca")
	for _, d := range []string{ca, other} {
		if _, err := pki.Init(d, pki.InitOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []struct {
		node, ca string
		role     pki.Role
	}{{"ctl1", ca, pki.RoleControl}, {"rsa1", ca, pki.RoleStorage}, {"node1", ca, pki.RoleCompute}, {"both1", ca, pki.RoleBoth}, {"ctl9", other, pki.RoleControl}} {
		out := filepath.Join(dir, "pki", n.node)
		if _, err := pki.Issue(n.ca, out, n.node, n.role, pki.IssueOptions{}); err != nil {
			t.Fatal(err)
		}
		e.files[n.node] = pki.DirFiles(out)
	}
	return e
}

func (e *env) identity(t *testing.T, node string) *pki.Identity {
	t.Helper()
	id, err := pki.Load(e.files[node])
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// agent is a running agent.
type agent struct {
	srv  *Server
	addr string
	stop func()
}

// start starts the agent of node on a loopback port, stopped when the test
// ends (or earlier with stop).
func (e *env) start(t *testing.T, node string) *agent {
	t.Helper()
	return e.startWith(t, node, e.identity(t, node), slog.New(slog.NewTextHandler(t.Output(), nil)))
}

// startWith starts an agent serving with id, logging to log, as start does.
func (e *env) startWith(t *testing.T, node string, id pki.Source, log *slog.Logger) *agent {
	t.Helper()
	s, err := New(Config{Identity: id, BrickRoot: e.brickRoot, VolumeRoot: e.volumeRoot, Log: log, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("agent %s: Serve: %v", node, err)
			}
		})
	}
	t.Cleanup(stop)
	return &agent{srv: s, addr: ln.Addr().String(), stop: stop}
}

// client is the daemon's client of node's agent at addr.
func (e *env) client(t *testing.T, node, addr string) *Client {
	t.Helper()
	c, err := NewClient(e.identity(t, "ctl1"), node, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// rawClient is an HTTPS client presenting caller's certificate, trusting
// the CA in trust and expecting node, with none of Client's checks: what
// a misconfigured or hostile host would send.
func (e *env) rawClient(t *testing.T, caller, trust, node string) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(e.files[trust].CA)
	if err != nil || !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("reading %s: %v", e.files[trust].CA, err)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: pool, ServerName: node}
	if caller != "" {
		cert, err := tls.LoadX509KeyPair(e.files[caller].Cert, e.files[caller].Key)
		if err != nil {
			t.Fatal(err)
		}
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	hc := &http.Client{
		Transport:     &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       30 * time.Second,
	}
	t.Cleanup(hc.CloseIdleConnections)
	return hc
}

// send sends a raw request and returns the status and the agent's error
// code (empty if the answer is not an error body).
func send(hc *http.Client, method, url, body string) (int, string, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var eb errorBody
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &eb)
	return resp.StatusCode, eb.Code, nil
}

// mountinfo returns the lines of /proc/self/mountinfo whose mount point is
// point, or (with below) is below point: an oracle independent of package
// mount, which the agent reads the kernel with.
func mountinfo(t *testing.T, point string, below bool) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) < 5 {
			continue
		}
		if f[4] == point || below && strings.HasPrefix(f[4], point+"/") {
			out = append(out, l)
		}
	}
	return out
}

// mountFields splits a mountinfo line into its mount options, file system
// type, source and super block options.
func mountFields(t *testing.T, line string) (opts, fstype, source, super string) {
	t.Helper()
	pre, post, ok := strings.Cut(line, " - ")
	f, g := strings.Fields(pre), strings.Fields(post)
	if !ok || len(f) < 6 || len(g) < 3 {
		t.Fatalf("bad mountinfo line %q", line)
	}
	return f[5], g[0], g[1], g[2]
}

func hasOpt(opts, o string) bool { return slices.Contains(strings.Split(opts, ","), o) }

// hold starts a process whose working directory is dir, killed when the
// test ends or when the returned function is called.
func hold(t *testing.T, dir string) func() {
	t.Helper()
	cmd := exec.Command("sleep", "120")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() { once.Do(func() { cmd.Process.Kill(); cmd.Wait() }) }
	t.Cleanup(stop)
	return stop
}

func bootID(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// A brick is made once however often it is asked for, refuses another
// size, shows in status as the kernel has it, and goes, leaving nothing in
// the mount table, however often it is removed.
func TestAgentBricks(t *testing.T) {
	e := newEnv(t)
	a := e.start(t, "rsa1")
	c := e.client(t, "rsa1", a.addr)
	ctx := context.Background()
	const v = "rsa-job-41"
	point := filepath.Join(e.brickRoot, v)

	for i := range 2 {
		b, err := c.MakeBrick(ctx, v, BrickSpec{Size: 8 << 20})
		if err != nil {
			t.Fatalf("MakeBrick #%d: %v", i+1, err)
		}
		want := Brick{Volume: v, Mount: point, Dir: filepath.Join(point, BrickSubdir), Size: 8 << 20, Inodes: 1024}
		if b.Volume != want.Volume || b.Mount != want.Mount || b.Dir != want.Dir || b.Size != want.Size || b.Inodes != want.Inodes || b.Problem != "" {
			t.Fatalf("MakeBrick #%d = %+v, want %+v", i+1, b, want)
		}
	}
	lines := mountinfo(t, point, false)
	if len(lines) != 1 {
		t.Fatalf("brick mounted %d times, want once:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	opts, fstype, source, super := mountFields(t, lines[0])
	if fstype != "tmpfs" || source != v || !hasOpt(opts, "nosuid") || !hasOpt(opts, "nodev") || !hasOpt(opts, "noexec") ||
		!hasOpt(super, "size=8192k") || !hasOpt(super, "nr_inodes=1024") || !hasOpt(super, "mode=700") {
		t.Errorf("brick mount %q: want tmpfs %s, nosuid,nodev,noexec, size=8192k,nr_inodes=1024,mode=700", lines[0], v)
	}
	if len(mountinfo(t, e.brickRoot, true)) != 1 {
		t.Errorf("more than the brick is mounted below %s", e.brickRoot)
	}
	// The brick directory is a subdirectory of the tmpfs, and the size a
	// hard limit.
	var st, rootSt unix.Stat_t
	if err := unix.Lstat(filepath.Join(point, BrickSubdir), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		t.Fatalf("no brick directory: %v", err)
	}
	if err := unix.Stat(e.brickRoot, &rootSt); err != nil || st.Dev == rootSt.Dev {
		t.Fatalf("brick directory is not on the brick's tmpfs (%v)", err)
	}
	if err := os.WriteFile(filepath.Join(point, BrickSubdir, "big"), make([]byte, 9<<20), 0o600); !errors.Is(err, unix.ENOSPC) {
		t.Errorf("writing 9 MiB into an 8 MiB brick: %v, want ENOSPC", err)
	}
	os.Remove(filepath.Join(point, BrickSubdir, "big"))

	for _, tc := range []struct {
		name string
		spec BrickSpec
	}{
		{"another size", BrickSpec{Size: 16 << 20}},
		{"another inode bound", BrickSpec{Size: 8 << 20, Inodes: 4096}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.MakeBrick(ctx, v, tc.spec)
			if !errors.Is(err, ErrConflict) || Transient(err) {
				t.Fatalf("MakeBrick(%+v) over an 8 MiB brick: %v, want a permanent ErrConflict", tc.spec, err)
			}
			if !strings.Contains(err.Error(), "remove it first") {
				t.Errorf("the conflict does not say what to do: %v", err)
			}
			if lines := mountinfo(t, point, false); len(lines) != 1 || !strings.Contains(lines[0], "size=8192k") {
				t.Errorf("after a refused MakeBrick: %q", lines)
			}
		})
	}
	for _, tc := range []struct {
		name string
		spec BrickSpec
		want string
	}{
		{"no size", BrickSpec{}, "below 1 MiB"},
		{"tiny", BrickSpec{Size: 4096}, "below 1 MiB"},
		{"more than the RAM", BrickSpec{Size: 1 << 60}, "more than this node's RAM"},
		{"too few inodes", BrickSpec{Size: 8 << 20, Inodes: 10}, "below 1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.MakeBrick(ctx, "rsa-job-42", tc.spec)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("MakeBrick(%+v): %v, want ErrInvalid saying %q", tc.spec, err, tc.want)
			}
			if lines := mountinfo(t, filepath.Join(e.brickRoot, "rsa-job-42"), false); len(lines) != 0 {
				t.Errorf("a refused brick was mounted: %q", lines)
			}
		})
	}

	st0 := time.Now()
	s, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Node != "rsa1" || s.Role != pki.RoleStorage || s.BootID != bootID(t) || s.Started.After(st0) || s.Version != "test" ||
		s.MemTotal <= 0 || s.MemAvailable <= 0 || s.MemAvailable > s.MemTotal {
		t.Errorf("status %+v", s)
	}
	if len(s.Bricks) != 1 || s.Bricks[0].Volume != v || s.Bricks[0].Size != 8<<20 || s.Bricks[0].Dir != filepath.Join(point, BrickSubdir) || s.Bricks[0].Problem != "" {
		t.Errorf("status bricks %+v, want the one of %s", s.Bricks, v)
	}
	if len(s.Mounts) != 0 {
		t.Errorf("status mounts %+v on a storage node", s.Mounts)
	}

	// In use, a brick stays and says so: detached, its RAM would stay
	// taken while the daemon counts it free.
	release := hold(t, filepath.Join(point, BrickSubdir))
	err = c.RemoveBrick(ctx, v)
	if !errors.Is(err, ErrBusy) || !Transient(err) {
		t.Fatalf("RemoveBrick of a brick in use: %v, want a transient ErrBusy", err)
	}
	if len(mountinfo(t, point, false)) != 1 {
		t.Fatal("a brick in use was unmounted")
	}
	release()

	for i := range 2 {
		if err := c.RemoveBrick(ctx, v); err != nil {
			t.Fatalf("RemoveBrick #%d: %v", i+1, err)
		}
	}
	if lines := mountinfo(t, e.brickRoot, true); len(lines) != 0 {
		t.Errorf("left in the mount table: %q", lines)
	}
	if _, err := os.Lstat(point); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the brick's mount point is still there: %v", err)
	}
	if s, err := c.Status(ctx); err != nil || len(s.Bricks) != 0 {
		t.Errorf("status after removal: %+v, %v", s, err)
	}
}

// The agent is stateless: a new agent on the same brick root reports the
// bricks the old one made, from the kernel, and carries on with them.
func TestAgentRestart(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	first := e.start(t, "rsa1")
	c := e.client(t, "rsa1", first.addr)
	vols := []string{"rsa-job-3", "rsa-job-20"}
	for _, v := range vols {
		if _, err := c.MakeBrick(ctx, v, BrickSpec{Size: 2 << 20}); err != nil {
			t.Fatal(err)
		}
	}
	before, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first.stop()
	if _, err := c.Status(ctx); err == nil || !Transient(err) {
		t.Errorf("status of a stopped agent: %v, want a transient error", err)
	}

	second := e.start(t, "rsa1")
	c = e.client(t, "rsa1", second.addr)
	after, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.BootID != before.BootID || !after.Started.After(before.Started) {
		t.Errorf("boot id %s -> %s, started %s -> %s: want the same boot, a later start", before.BootID, after.BootID, before.Started, after.Started)
	}
	var got []string
	for _, b := range after.Bricks {
		got = append(got, b.Volume)
	}
	if !slices.Equal(got, vols) {
		t.Fatalf("the restarted agent reports bricks %v, want %v (by job)", got, vols)
	}
	// Asked again for the same bricks, it makes none twice.
	for _, v := range vols {
		if _, err := c.MakeBrick(ctx, v, BrickSpec{Size: 2 << 20}); err != nil {
			t.Fatal(err)
		}
		if lines := mountinfo(t, filepath.Join(e.brickRoot, v), false); len(lines) != 1 {
			t.Errorf("%s mounted %d times after a restart and MakeBrick", v, len(lines))
		}
		if err := c.RemoveBrick(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	if lines := mountinfo(t, e.brickRoot, true); len(lines) != 0 {
		t.Errorf("left in the mount table: %q", lines)
	}
}

// Only the control daemon may call an agent, and an agent serves only what
// its role is for: checked in the handshake on both sides, and again by
// Authorize in each handler.
func TestAgentAuthorization(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	agents := map[string]*agent{}
	for _, n := range []string{"rsa1", "node1", "both1"} {
		agents[n] = e.start(t, n)
	}
	url := func(node, path string) string { return "https://" + agents[node].addr + path }

	// Status: every agent role answers the daemon.
	for n, a := range agents {
		if s, err := e.client(t, n, a.addr).Status(ctx); err != nil || s.Node != n {
			t.Errorf("status of %s: %+v, %v", n, s, err)
		}
	}

	// The daemon's client never sends an operation to an agent whose
	// certificate does not serve it: the handshake fails.
	if _, err := e.client(t, "node1", agents["node1"].addr).MakeBrick(ctx, "rsa-job-1", BrickSpec{Size: 2 << 20}); err == nil || Transient(err) ||
		!strings.Contains(err.Error(), "does not serve storage") {
		t.Errorf("MakeBrick on a compute node: %v, want a permanent refusal", err)
	}
	if _, err := e.client(t, "rsa1", agents["rsa1"].addr).Mount(ctx, "rsa-job-1", MountRequest{Target: "/tmp", UID: 1000, Role: RoleInput}); err == nil ||
		Transient(err) || !strings.Contains(err.Error(), "does not serve compute") {
		t.Errorf("Mount on a storage node: %v, want a permanent refusal", err)
	}

	// Past the daemon's own check, the agent refuses what its role is not
	// for (Authorize): the request reaches the handler and is refused there.
	for _, tc := range []struct {
		node, method, path, body string
		want                     int
	}{
		{"node1", "PUT", "/v1/bricks/rsa-job-1", `{"size":2097152}`, http.StatusForbidden},
		{"node1", "DELETE", "/v1/bricks/rsa-job-1", "", http.StatusForbidden},
		{"rsa1", "PUT", "/v1/mounts/rsa-job-1", `{"target":"/tmp","uid":1000,"role":"input"}`, http.StatusForbidden},
		{"rsa1", "DELETE", "/v1/mounts/rsa-job-1", "", http.StatusForbidden},
		{"node1", "PUT", "/v1/volumes/rsa-job-1", `{"bricks":["10.0.0.1:/b"],"auth_allow":["10.0.0.2"]}`, http.StatusForbidden},
		{"node1", "DELETE", "/v1/volumes/rsa-job-1", "", http.StatusForbidden},
		{"node1", "POST", "/v1/volumes/rsa-job-1/seal", "", http.StatusForbidden},
		{"node1", "POST", "/v1/peers/reconnect", "", http.StatusForbidden},
		{"node1", "GET", "/v1/volumes", "", http.StatusForbidden},
		{"node1", "GET", "/v1/peers", "", http.StatusForbidden},
		{"rsa1", "DELETE", "/v1/clients/rsa-job-1", "", http.StatusForbidden},
		{"both1", "DELETE", "/v1/clients/rsa-job-1?detach=1", "", http.StatusOK},
		{"both1", "PUT", "/v1/bricks/rsa-job-1", `{"size":2097152}`, http.StatusOK},
		{"both1", "DELETE", "/v1/bricks/rsa-job-1", "", http.StatusOK},
		{"both1", "DELETE", "/v1/mounts/rsa-job-1", "", http.StatusOK},
	} {
		t.Run(fmt.Sprintf("%s %s on %s", tc.method, tc.path, tc.node), func(t *testing.T) {
			status, code, err := send(e.rawClient(t, "ctl1", "ctl1", tc.node), tc.method, url(tc.node, tc.path), tc.body)
			if err != nil || status != tc.want || status == http.StatusForbidden && code != "forbidden" {
				t.Errorf("got %d %q, %v; want %d", status, code, err, tc.want)
			}
		})
	}

	// Callers that are not the control daemon fail the handshake.
	for _, tc := range []struct {
		name, caller, trust string
	}{
		{"a storage node's certificate", "rsa1", "ctl1"},
		{"a compute node's certificate", "node1", "ctl1"},
		{"a control certificate of another CA", "ctl9", "ctl1"},
		{"no certificate", "", "ctl1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hc := e.rawClient(t, tc.caller, tc.trust, "both1")
			for _, r := range []struct{ method, path, body string }{
				{"GET", "/v1/status", ""},
				{"PUT", "/v1/bricks/rsa-job-2", `{"size":2097152}`},
			} {
				if status, _, err := send(hc, r.method, url("both1", r.path), r.body); err == nil {
					t.Errorf("%s %s answered %d", r.method, r.path, status)
				}
			}
		})
	}
	if lines := mountinfo(t, e.brickRoot, true); len(lines) != 0 {
		t.Errorf("refused requests left mounts: %q", lines)
	}
}

// Volume names are checked before anything is sent or done: none reaches
// outside the agent's roots, and a job has one name.
func TestAgentVolumeNames(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := e.start(t, "both1")
	c := e.client(t, "both1", a.addr)
	raw := e.rawClient(t, "ctl1", "ctl1", "both1")
	for _, name := range []string{
		"../x", "rsa-job-1/..", "rsa-job-1/../../x", "..", ".", "", "/etc", "rsa-job-", "rsa-job-0", "rsa-job-01",
		"rsa-job--1", "rsa-job-+1", "rsa-job-1a", "rsa-job-1 ", " rsa-job-1", "RSA-JOB-1", "rsa-job-1\x00",
		"rsa-job-1\n", "rsa-job-99999999999999999999", "rsa-job-١", "x/rsa-job-1",
	} {
		t.Run(fmt.Sprintf("%q", name), func(t *testing.T) {
			if err := CheckVolume(name); !errors.Is(err, ErrInvalid) {
				t.Fatalf("CheckVolume: %v, want ErrInvalid", err)
			}
			if _, err := c.MakeBrick(ctx, name, BrickSpec{Size: 2 << 20}); !errors.Is(err, ErrInvalid) {
				t.Errorf("MakeBrick: %v, want ErrInvalid", err)
			}
			if err := c.RemoveBrick(ctx, name); !errors.Is(err, ErrInvalid) {
				t.Errorf("RemoveBrick: %v, want ErrInvalid", err)
			}
			if _, err := c.Mount(ctx, name, MountRequest{Target: "/tmp", UID: 1000, Role: RoleInput}); !errors.Is(err, ErrInvalid) {
				t.Errorf("Mount: %v, want ErrInvalid", err)
			}
			// Sent anyway, escaped or as it is, it is refused: by the
			// agent's check when the name reaches the handler as one
			// path segment, by net/http's routing (a redirect to the
			// cleaned path, not found) otherwise.
			for i, p := range []string{url.PathEscape(name), name} {
				segment := i == 0 && name != "" && name != "." && name != ".."
				for _, r := range []struct{ method, path, body string }{
					{"PUT", "/v1/bricks/", `{"size":2097152}`},
					{"DELETE", "/v1/bricks/", ""},
					{"PUT", "/v1/mounts/", `{"target":"/tmp","uid":1000,"role":"input"}`},
					{"DELETE", "/v1/mounts/", ""},
				} {
					status, code, err := send(raw, r.method, "https://"+a.addr+r.path+p, r.body)
					if err != nil {
						continue // not even a URL
					}
					if status == http.StatusOK || segment && (status != http.StatusBadRequest || code != "invalid") {
						t.Errorf("%s %s%s: %d %q", r.method, r.path, p, status, code)
					}
				}
			}
		})
	}
	for _, name := range []string{"rsa-job-1", "rsa-job-9223372036854775807"} {
		if err := CheckVolume(name); err != nil {
			t.Errorf("CheckVolume(%q): %v", name, err)
		}
	}
	if id, err := ParseVolume(VolumeName(17)); err != nil || id != 17 || VolumeName(17) != "rsa-job-17" {
		t.Errorf("ParseVolume(VolumeName(17)) = %d, %v", id, err)
	}
	for _, tc := range []struct {
		build int
		name  string
	}{{0, "rsa-job-17"}, {1, "rsa-job-17"}, {2, "rsa-job-17-2"}, {12, "rsa-job-17-12"}} {
		name := BuildName(17, tc.build)
		id, build, err := ParseBuild(name)
		if name != tc.name || err != nil || id != 17 || build != max(tc.build, 1) {
			t.Errorf("BuildName(17, %d) = %q, parsed %d %d %v", tc.build, name, id, build, err)
		}
	}
	for _, name := range []string{"rsa-job-17-", "rsa-job-17-1", "rsa-job-17-0", "rsa-job-17-02", "rsa-job-17-2-3", "rsa-job--2", "rsa-job-17-x"} {
		if err := CheckVolume(name); !errors.Is(err, ErrInvalid) {
			t.Errorf("CheckVolume(%q) = %v, want invalid", name, err)
		}
	}
	if lines := mountinfo(t, e.dir, true); len(lines) != 0 {
		t.Errorf("bad names mounted something: %q", lines)
	}
	for _, d := range []string{e.brickRoot, e.volumeRoot} {
		if ents, err := os.ReadDir(d); err != nil || len(ents) != 0 {
			t.Errorf("%s holds %v (%v)", d, ents, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(e.dir, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a name climbed out of the agent's roots: %v", err)
	}
}

// A compute node binds a job's volume, mounted there, over the job's own
// directories with package mount's checks, idempotently; switches from
// input to output; reports busy mounts; and unbinds.
func TestAgentMounts(t *testing.T) {
	e := newEnv(t)
	u := testutil.EnsureUser(t)
	ctx := context.Background()
	a := e.start(t, "node1")
	c := e.client(t, "node1", a.addr)
	const v = "rsa-job-5"

	// The volume, mounted on the node where the RAMDISK path leads (a
	// tmpfs standing in for the Gluster client mount).
	src := filepath.Join(e.volumeRoot, "5", "ram")
	if err := os.MkdirAll(src, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(v, src, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m,mode=0755"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "data"), []byte("in RAM"), 0o644); err != nil {
		t.Fatal(err)
	}
	job := testutil.MkdirOwned(t, u, filepath.Join(e.dir, "home", "job"))
	in := testutil.MkdirOwned(t, u, filepath.Join(job, "in"))
	out := testutil.MkdirOwned(t, u, filepath.Join(job, "out"))
	rootsDir := filepath.Join(job, "roots")
	if err := os.Mkdir(rootsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(job, "link")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	inReq := MountRequest{Target: in, UID: u.UID, Role: RoleInput}

	for i := range 2 {
		m, err := c.Mount(ctx, v, inReq)
		if err != nil {
			t.Fatalf("Mount #%d: %v", i+1, err)
		}
		if m.Volume != v || m.Source != src || m.FSType != "tmpfs" || !slices.Equal(m.Targets, []string{in}) {
			t.Fatalf("Mount #%d = %+v", i+1, m)
		}
	}
	if lines := mountinfo(t, in, false); len(lines) != 1 {
		t.Fatalf("bound %d times, want once: %q", len(lines), lines)
	}
	if b, err := os.ReadFile(filepath.Join(in, "data")); err != nil || string(b) != "in RAM" {
		t.Fatalf("the job's input directory shows %q, %v", b, err)
	}

	for _, tc := range []struct {
		name string
		req  MountRequest
		want string
	}{
		{"through a symbolic link", MountRequest{Target: link, UID: u.UID, Role: RoleInput}, "symbolic link"},
		{"another user's directory, the job's user unknown here", MountRequest{Target: out, UID: 3999999, Role: RoleInput}, "not the job's user's own"},
		{"root's directory", MountRequest{Target: rootsDir, UID: u.UID, Role: RoleInput}, "is owned by uid 0"},
		{"a missing directory", MountRequest{Target: filepath.Join(job, "nope"), UID: u.UID, Role: RoleInput}, "does not exist"},
		{"a relative path", MountRequest{Target: "home/job/out", UID: u.UID, Role: RoleInput}, "clean absolute path"},
		{"an unclean path", MountRequest{Target: out + "/../out", UID: u.UID, Role: RoleInput}, "clean absolute path"},
		{"outside allowed paths", MountRequest{Target: out, UID: u.UID, Role: RoleOutput, AllowedPaths: []string{"/scratch"}}, "not in a directory RSA mounts in"},
		{"a refused file system", MountRequest{Target: out, UID: u.UID, Role: RoleOutput, RefuseFSTypes: []string{fsTypeOf(t, out)}}, "file system"},
		{"for root", MountRequest{Target: out, UID: 0, Role: RoleOutput}, "never mounts for root"},
		{"no role", MountRequest{Target: out, UID: u.UID}, "neither input nor output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Mount(ctx, v, tc.req)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) || Transient(err) {
				t.Fatalf("Mount(%+v): %v, want ErrInvalid saying %q", tc.req, err, tc.want)
			}
			for _, p := range []string{tc.req.Target, out, rootsDir} {
				if filepath.IsAbs(p) && len(mountinfo(t, p, false)) != 0 {
					t.Errorf("a refused request mounted at %s", p)
				}
			}
		})
	}
	if _, err := c.Mount(ctx, "rsa-job-6", MountRequest{Target: out, UID: u.UID, Role: RoleOutput}); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "mount it there first") {
		t.Errorf("Mount of a volume not on the node: %v, want ErrNotFound", err)
	}

	// The switch: output bound, then input taken away.
	if m, err := c.Mount(ctx, v, MountRequest{Target: out, UID: u.UID, Role: RoleOutput}); err != nil || !slices.Equal(m.Targets, []string{in, out}) {
		t.Fatalf("Mount of the output: %+v, %v", m, err)
	}
	if err := c.Unmount(ctx, v, in, false); err != nil {
		t.Fatal(err)
	}
	if len(mountinfo(t, in, false)) != 0 || len(mountinfo(t, out, false)) != 1 {
		t.Fatal("after unbinding the input: want the output bound, the input not")
	}
	s, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Mounts) != 1 || s.Mounts[0].Volume != v || s.Mounts[0].Source != src || !slices.Equal(s.Mounts[0].Targets, []string{out}) || len(s.Bricks) != 0 || s.Role != pki.RoleCompute {
		t.Errorf("status %+v", s)
	}

	// Busy: a process inside keeps it, and the agent says so; detach
	// takes it away anyway.
	release := hold(t, out)
	err = c.Unmount(ctx, v, "", false)
	if !errors.Is(err, ErrBusy) || !Transient(err) {
		t.Fatalf("Unmount of a bind in use: %v, want a transient ErrBusy", err)
	}
	if len(mountinfo(t, out, false)) != 1 {
		t.Fatal("a bind in use was unmounted without detach")
	}
	if err := c.Unmount(ctx, v, "", true); err != nil {
		t.Fatalf("Unmount with detach: %v", err)
	}
	release()
	for _, tc := range []struct {
		volume, target string
	}{{v, ""}, {v, out}, {"rsa-job-6", ""}} {
		if err := c.Unmount(ctx, tc.volume, tc.target, false); err != nil {
			t.Errorf("Unmount(%s, %q) with nothing to unbind: %v", tc.volume, tc.target, err)
		}
	}
	if len(mountinfo(t, filepath.Join(e.dir, "home"), true)) != 0 {
		t.Errorf("binds left: %q", mountinfo(t, filepath.Join(e.dir, "home"), true))
	}
	if len(mountinfo(t, src, false)) != 1 {
		t.Error("unbinding took the volume's own mount too")
	}

	// The volume is where the job's RAMDISK path leads: behind its gate,
	// which the job's user alone passes, in a volume root anyone passes.
	gateDir := filepath.Dir(src)
	var st unix.Stat_t
	if err := unix.Lstat(gateDir, &st); err != nil || st.Uid != 0 || st.Mode&0o707 != 0o700 { // group bits: the ACL mask
		t.Errorf("gate %s: uid %d mode %o, %v; want root's, rwx for root alone", gateDir, st.Uid, st.Mode&0o777, err)
	}
	if _, err := unix.Getxattr(gateDir, "system.posix_acl_access", make([]byte, 64)); err != nil {
		t.Errorf("gate %s has no ACL for the job's user: %v", gateDir, err)
	}
	if err := unix.Lstat(e.volumeRoot, &st); err != nil || st.Mode&0o777 != 0o711 {
		t.Errorf("volume root mode %o, %v; want 0711", st.Mode&0o777, err)
	}
	for _, servers := range [][]string{{"-oexec"}, {"a,b"}, {"s1:/x"}, {"s1", "a/b"}} {
		if _, err := c.Mount(ctx, "rsa-job-7", MountRequest{Target: out, UID: u.UID, Role: RoleOutput, Servers: servers}); !errors.Is(err, ErrInvalid) {
			t.Errorf("Mount from servers %q: %v, want ErrInvalid", servers, err)
		}
	}

	// Release takes the volume off the node: binds, mount, gate.
	if _, err := c.Mount(ctx, v, inReq); err != nil {
		t.Fatal(err)
	}
	release = hold(t, in)
	if err := c.Release(ctx, v, false); !errors.Is(err, ErrBusy) || !Transient(err) {
		t.Fatalf("Release of a volume in use: %v, want a transient ErrBusy", err)
	}
	if len(mountinfo(t, src, false)) != 1 {
		t.Fatal("a volume in use was unmounted without detach")
	}
	if err := c.Release(ctx, v, true); err != nil {
		t.Fatalf("Release with detach: %v", err)
	}
	release()
	for i := range 2 {
		if err := c.Release(ctx, v, false); err != nil {
			t.Errorf("Release #%d of a released volume: %v", i+1, err)
		}
	}
	if lines := mountinfo(t, e.dir, true); len(lines) != 0 {
		t.Errorf("left in the mount table: %q", lines)
	}
	if _, err := os.Lstat(gateDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the gate is still there: %v", err)
	}
	if s, err := c.Status(ctx); err != nil || len(s.Mounts) != 0 {
		t.Errorf("status after release: %+v, %v", s, err)
	}
}

// fsTypeOf is the type of the file system dir is on.
func fsTypeOf(t *testing.T, dir string) string {
	t.Helper()
	var best, typ string
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) < 5 || !(dir == f[4] || strings.HasPrefix(dir, strings.TrimSuffix(f[4], "/")+"/")) || len(f[4]) < len(best) {
			continue
		}
		_, ft, _, _ := mountFields(t, l)
		best, typ = f[4], ft
	}
	return typ
}

// Which failures a retrying wrapper may retry.
func TestAgentTransient(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := e.start(t, "rsa1")

	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	_, downErr := e.client(t, "rsa1", closed).Status(ctx)
	// The agent answers, but its certificate does not name the node dialled.
	_, nameErr := e.client(t, "rsa2", a.addr).Status(ctx)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, ctxErr := e.client(t, "rsa1", a.addr).Status(cancelled)

	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false},
		{"agent down", downErr, true},
		{"busy", &Error{Node: "rsa1", Status: http.StatusLocked, Code: "busy"}, true},
		{"conflict", &Error{Node: "rsa1", Status: http.StatusConflict, Code: "conflict"}, false},
		{"invalid", &Error{Node: "rsa1", Status: http.StatusBadRequest, Code: "invalid"}, false},
		{"internal", &Error{Node: "rsa1", Status: http.StatusInternalServerError, Code: "internal"}, false},
		{"wrong node's certificate", nameErr, false},
		{"caller's context", ctxErr, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name != "no error" && tc.err == nil {
				t.Fatal("the request succeeded")
			}
			if got := Transient(tc.err); got != tc.want {
				t.Errorf("Transient(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// TestAgentAnswerTimeout: an agent that takes a request and never answers
// (its host stalled, the connection alive) fails the request once the
// answer's deadline passes, transient, instead of holding the caller for
// as long as the connection lives.
func TestAgentAnswerTimeout(t *testing.T) {
	e := newEnv(t)
	cert, err := tls.LoadX509KeyPair(e.files["rsa1"].Cert, e.files["rsa1"].Key)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAnyClientCert})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := make(chan struct{}, 1)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			// Read the request and keep the connection, silent, until
			// the client gives up on it.
			go func() {
				defer conn.Close()
				buf := make([]byte, 4096)
				if _, err := conn.Read(buf); err == nil {
					select {
					case taken <- struct{}{}:
					default:
					}
				}
				io.Copy(io.Discard, conn)
			}()
		}
	}()

	c := e.client(t, "rsa1", ln.Addr().String())
	c.answerWait = 500 * time.Millisecond
	start := time.Now()
	_, err = c.Volumes(context.Background())
	took := time.Since(start)
	select {
	case <-taken:
	default:
		t.Fatalf("the request never reached the silent agent: %v", err)
	}
	if err == nil {
		t.Fatal("a request the agent never answered succeeded")
	}
	if !Transient(err) {
		t.Errorf("Transient(%v) = false; an unanswered request may be sent again", err)
	}
	if !strings.Contains(err.Error(), "no answer within 500ms") {
		t.Errorf("error %q does not say that no answer came", err)
	}
	if took > 30*time.Second {
		t.Errorf("the request took %s; its answer's deadline was 500ms", took)
	}

	// The caller's own deadline stays the caller's: not transient.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	c.answerWait = time.Minute
	if _, err := c.Volumes(ctx); err == nil || Transient(err) {
		t.Errorf("a request cut by the caller's deadline: err %v, Transient %v; want an error, not transient", err, Transient(err))
	}
}
