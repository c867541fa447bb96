// Package e2e runs the real rsa binary as root against real tmpfs and bind
// mounts, with jobs submitted by a real unprivileged user. Each test gets
// its own daemon, state, socket, RAMDISK root and listening addresses, and
// removes all of them (daemon by pid, mounts innermost first) even when it
// fails; so the tests run in parallel (t.Parallel), except where a comment
// says why one must run alone.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/mounttest"
	"github.com/rsa-hpc/rsa/internal/rsatest"
	"github.com/rsa-hpc/rsa/internal/rsatest/live"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

var rsaBin string

// TestMain builds rsa and creates the package's accounts (testutil.EnsureUser
// and EnsureOtherUser) once, before any test runs, and removes them once
// every test has ended. Made by a test instead, an account would be removed
// when that test ends (testutil removes what it made), under a parallel test
// still running jobs as it.
func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	bin, removeBin, err := testutil.BuildRSA()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer removeBin()
	rsaBin = bin
	// Without root the tests skip (or fail, under CI) in RequireRoot, and
	// no account can be made.
	if os.Geteuid() == 0 {
		for _, name := range []string{testutil.TestUserName(), testutil.TestUserName() + "-b"} {
			_, made, err := rsatest.EnsureAccount(name, "--create-home", "--shell", "/bin/sh")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			if made {
				defer func() {
					if err := rsatest.RemoveAccount(name, "--remove"); err != nil {
						fmt.Fprintln(os.Stderr, err)
					}
				}()
			}
		}
	}
	return m.Run()
}

type env struct {
	t      *testing.T
	dir    string // 0755, holds everything of this test
	cfg    string
	root   string // RAMDISK root
	user   testutil.User
	home   string // the user's work area inside dir
	daemon *live.Daemon
	// groups are the supplementary groups of the user's commands (rsa
	// run, rsa as the user), as a login gives them; none by default.
	groups []uint32
}

// setup starts a daemon with a config of its own; extra goes after its
// top-level keys (so it may hold top-level keys, then tables).
func setup(t *testing.T, extra string) *env {
	t.Helper()
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	dir := testutil.TempDir(t)
	e := &env{t: t, dir: dir, user: u, root: filepath.Join(dir, "run", "ramdisk"), cfg: filepath.Join(dir, "rsa.toml")}
	e.home = testutil.MkdirOwned(t, u, filepath.Join(dir, "home"))
	// The tests of the read-write input tree run with input=files; those
	// of input images (the product's default) ask for images in extra.
	if !strings.Contains(extra, "input_mode") {
		extra = "input_mode = \"files\"\n" + extra
	}
	conf := fmt.Sprintf(`state_dir = %q
socket = %q
ramdisk_root = %q
proportion = 1
tick = "50ms"
default_delay = "1"
%s
[[nodes]]
name = "local"
capacity = "512M"
`, filepath.Join(dir, "state"), filepath.Join(dir, "run", "rsa.sock"), e.root, extra)
	if err := os.WriteFile(e.cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.cleanup)
	e.start()
	return e
}

// freeAddr is a loopback TCP address no one listens on now, for a
// daemon's metrics or remote access.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// metricsAddr is where the daemon, told to listen on port 0, serves its
// metrics: the port the kernel chose, from the daemon's log. A port picked
// free by the test and bound later by the daemon can be taken meanwhile by
// a parallel test's connection.
func (e *env) metricsAddr() string {
	e.t.Helper()
	// The socket may answer a moment before the metrics listener's line
	// is written: both start as rsa serve starts.
	line := regexp.MustCompile(`msg="metrics for Prometheus and the dashboard" listen=(\S+)`)
	for deadline := time.Now().Add(step); ; time.Sleep(20 * time.Millisecond) {
		if m := line.FindStringSubmatch(e.daemonLog()); m != nil {
			return m[1]
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the daemon's log does not say where it serves its metrics:\n%s", e.daemonLog())
		}
	}
}

// start starts the daemon and waits up to a step for its socket.
func (e *env) start() {
	e.t.Helper()
	d, err := live.Serve(context.Background(), rsaBin, e.cfg, filepath.Join(e.dir, "run", "rsa.sock"), filepath.Join(e.dir, "daemon.log"), step)
	if err != nil {
		e.t.Fatalf("%v:\n%s", err, e.daemonLog())
	}
	e.daemon = d
}

// kill stops the daemon: SIGKILL to test crash recovery, SIGTERM otherwise.
func (e *env) kill(sig syscall.Signal) {
	if e.daemon == nil {
		return
	}
	e.daemon.Stop(sig, 0)
	e.daemon = nil
}

func (e *env) daemonLog() string {
	b, _ := os.ReadFile(filepath.Join(e.dir, "daemon.log"))
	return string(b)
}

func (e *env) cleanup() {
	e.kill(syscall.SIGTERM)
	if e.t.Failed() {
		e.t.Logf("daemon log:\n%s", e.daemonLog())
	}
	// Whatever is still mounted below the test's directory goes; a test
	// that leaked a mount has already failed on it.
	mounttest.UnmountBelow(e.dir)
}

// leaks lists mounts and RAMDISK directories left below the test's dir.
// An error reading them fails the test: a leak check that cannot look must
// not pass.
func (e *env) leaks() []string {
	e.t.Helper()
	ms, err := mount.List()
	if err != nil {
		e.t.Fatalf("reading the mount table: %v", err)
	}
	var out []string
	for _, m := range ms {
		if strings.HasPrefix(m.Point, e.dir+"/") || strings.HasPrefix(m.Source, "rsa-") && strings.HasPrefix(m.Point, e.dir) {
			out = append(out, m.Point+" ("+m.Source+")")
		}
	}
	// A loop device an input image was mounted from names its file.
	out = append(out, rsatest.LoopsBelow(e.dir)...)
	ents, err := os.ReadDir(e.root)
	if err != nil && !os.IsNotExist(err) {
		e.t.Fatalf("reading %s: %v", e.root, err)
	}
	for _, d := range ents {
		out = append(out, filepath.Join(e.root, d.Name()))
	}
	return out
}

func (e *env) noLeaks() {
	e.t.Helper()
	if l := e.leaks(); len(l) > 0 {
		e.t.Fatalf("leaked: %v", l)
	}
}

// rsa runs rsa as the test user; root=true runs it as root. Every call has
// a deadline: a hung client fails its test, which then cleans up, instead
// of running into the package's timeout, which cleans up nothing.
func (e *env) rsa(root bool, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var cmd *exec.Cmd
	if root {
		cmd = exec.CommandContext(ctx, rsaBin, append([]string{"--config", e.cfg}, args...)...)
	} else {
		cmd = e.userCmd(rsaBin, append([]string{"--config", e.cfg}, args...)...)
		cmd = exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: e.user.UID, Gid: e.user.GID, Groups: e.groups}}
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + e.user.Home}
		cmd.Dir = e.home
	}
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil { // Errorf: some tests call rsa from several goroutines
		e.t.Errorf("rsa %s did not return within 90 s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), out.String(), errb.String())
	}
	return out.String(), errb.String(), err
}

// command is a command with a deadline (see rsa).
func (e *env) command(name string, args ...string) *exec.Cmd {
	return testutil.Command(e.t, name, args...)
}

// userCmd is a command run as the test user with a plain environment.
func (e *env) userCmd(name string, args ...string) *exec.Cmd {
	cmd := e.command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: e.user.UID, Gid: e.user.GID, Groups: e.groups}}
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + e.user.Home}
	cmd.Dir = e.home
	return cmd
}

// mkdir makes a directory in the user's area, owned by the user.
func (e *env) mkdir(rel string) string {
	return testutil.MkdirOwned(e.t, e.user, filepath.Join(e.home, rel))
}

// writeFile writes a file owned by the user.
func (e *env) writeFile(path string, data []byte, mode os.FileMode) {
	e.t.Helper()
	if err := os.WriteFile(path, data, mode); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Chown(path, int(e.user.UID), int(e.user.GID)); err != nil {
		e.t.Fatal(err)
	}
}

// script writes an executable shell script owned by the user.
func (e *env) script(name, body string) string {
	p := filepath.Join(e.home, name)
	e.writeFile(p, []byte("#!/bin/sh\nset -eu\n"+body), 0o755)
	return p
}

// fill writes n files of size bytes with distinct content into dir.
func (e *env) fill(dir string, n, size int) map[string][]byte {
	want := map[string][]byte{}
	for i := range n {
		b := bytes.Repeat([]byte(fmt.Sprintf("%06d-", i)), size/7+1)[:size]
		name := fmt.Sprintf("f%04d", i)
		e.writeFile(filepath.Join(dir, name), b, 0o644)
		want[name] = b
	}
	return want
}

// sameFiles checks dir holds exactly want's contents.
func sameFiles(t *testing.T, dir string, want map[string][]byte) {
	t.Helper()
	for name, b := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("%s/%s: content differs or missing (%v)", dir, name, err)
		}
	}
}

func (e *env) job(id int) api.JobView {
	e.t.Helper()
	j, ok := e.maybeJob(id)
	if !ok {
		e.t.Fatalf("job %d not in status", id)
	}
	return j
}

// maybeJob is job id as root sees it, if it exists yet.
func (e *env) maybeJob(id int) (api.JobView, bool) {
	e.t.Helper()
	out, _, err := e.rsa(true, "status", "--all", "--json")
	if err != nil {
		e.t.Fatalf("status: %v", err)
	}
	var st struct {
		Jobs []api.JobView `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		e.t.Fatal(err)
	}
	for _, j := range st.Jobs {
		if j.ID == int64(id) {
			return j, true
		}
	}
	return api.JobView{}, false
}

// logHas fails unless job id's log (rsa log, as its user) contains every
// phrase.
func (e *env) logHas(id int, phrases ...string) {
	e.t.Helper()
	log, stderr, err := e.rsa(false, "log", itoa(id))
	if err != nil {
		e.t.Fatalf("rsa log %d: %v %s", id, err, stderr)
	}
	for _, p := range phrases {
		if !strings.Contains(log, p) {
			e.t.Errorf("log of job %d lacks %q:\n%s", id, p, log)
		}
	}
}

// step bounds a wait for what the daemon does at once: an action started
// within a tick (50 ms here) or a heartbeat (5 s), with the small copies,
// mounts and processes of these tests. It is generous because a loaded
// two-core box, running four of these tests at once, must not miss it;
// only a failing test waits it out. A wait that also waits out a period of
// the test's config (an expiry, a grace) adds that period to it.
const step = 60 * time.Second

// poll is how often a test checks the condition it waits for: most read a
// file or call the daemon's socket, and some catch a state that lasts a
// moment.
const poll = 20 * time.Millisecond

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// started runs rsa run in the background as the user.
type bg struct {
	cmd       *exec.Cmd
	out, errb bytes.Buffer
	done      chan error
	exited    chan struct{} // closed once cmd is waited for; then err is set
	err       error
}

func (e *env) runBG(args ...string) *bg {
	e.t.Helper()
	b := &bg{done: make(chan error, 1), exited: make(chan struct{})}
	b.cmd = e.userCmd(rsaBin, append([]string{"--config", e.cfg, "run"}, args...)...)
	b.cmd.Stdout, b.cmd.Stderr = &b.out, &b.errb
	b.cmd.WaitDelay = 5 * time.Second // a stray grandchild must not hold the test
	if err := b.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() {
		b.err = b.cmd.Wait()
		close(b.exited)
		b.done <- b.err
	}()
	e.t.Cleanup(func() {
		if b.cmd.ProcessState == nil {
			b.cmd.Process.Kill()
		}
	})
	return b
}

// waitFor is testutil.WaitFor for a condition that needs rsa run alive: should it
// end first, the test fails at once with what it said.
func (b *bg) waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		select {
		case <-b.exited:
			if !cond() {
				t.Fatalf("rsa run ended (%v) while waiting for %s\nstdout:\n%s\nstderr:\n%s", b.err, what, b.out.String(), b.errb.String())
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s (rsa run still runs)", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runWithin bounds a whole rsa run of these tests: a stage-in, the
// command with its switch delay, and in TestKillDaemon a restart of the
// daemon and the phase it interrupted run again; each a step or less.
const runWithin = 2 * step

// wait waits for rsa run to end, for up to runWithin, and returns its exit
// status.
func (b *bg) wait(t *testing.T) int {
	t.Helper()
	select {
	case err := <-b.done:
		if err == nil {
			return 0
		}
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		t.Fatalf("rsa run: %v", err)
	case <-time.After(runWithin):
		b.cmd.Process.Kill()
		t.Fatalf("rsa run did not end within %v\nstdout:\n%s\nstderr:\n%s", runWithin, b.out.String(), b.errb.String())
	}
	return -1
}

func itoa(n int) string { return strconv.Itoa(n) }
