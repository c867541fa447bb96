package e2e

// What an administrator meets installing and running RSA.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/rsatest"
	"github.com/rsa-hpc/rsa/internal/store"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// rsa serve refuses a node capacity the host's RAM cannot hold, naming
// both sizes and the key to change, before it creates anything.
func TestServeRefusesMoreRAMThanTheHostHas(t *testing.T) {
	t.Parallel()
	testutil.RequireRoot(t)
	dir := testutil.TempDir(t)
	cfg := filepath.Join(dir, "rsa.toml")
	conf := fmt.Sprintf("state_dir = %q\nsocket = %q\nramdisk_root = %q\n[[nodes]]\nname = \"big\"\ncapacity = \"64T\"\n",
		filepath.Join(dir, "state"), filepath.Join(dir, "rsa.sock"), filepath.Join(dir, "ramdisk"))
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := testutil.Command(t, rsaBin, "serve", "--config", cfg).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "promise 64.0T") || !strings.Contains(string(out), "nodes[].capacity") {
		t.Fatalf("rsa serve with 64T on this host: %v\n%s", err, out)
	}
	for _, p := range []string{"state", "rsa.sock", "ramdisk"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("the refused daemon created %s", p)
		}
	}
}

// A job argument may be a Slurm job id (slurm:ID); a plain number that is
// no RSA job says so.
func TestJobArgumentsTakeSlurmIDs(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	for _, c := range []struct{ args, want []string }{
		{[]string{"retry", "99"}, []string{"job 99", "write slurm:99"}},
		{[]string{"cancel", "slurm:99"}, []string{"no RSA job of Slurm job 99"}},
		{[]string{"wait", "slurm:9;x"}, []string{`"slurm:9;x"`}},
		{[]string{"log", "x"}, []string{"not a job id", "slurm:ID"}},
	} {
		_, stderr, err := e.rsa(true, c.args...)
		for _, w := range c.want {
			if err == nil || !strings.Contains(stderr, w) {
				t.Errorf("rsa %s: %v %q, want %q", strings.Join(c.args, " "), err, stderr, w)
			}
		}
	}
}

// rsa version is a health check: exit 0 while the daemon answers, 1 when
// it does not.
func TestVersionIsAHealthCheck(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	if out, _, err := e.rsa(false, "version"); err != nil || !strings.Contains(out, "rsa daemon ") {
		t.Fatalf("version with the daemon up: %v %q", err, out)
	}
	e.kill(syscall.SIGTERM)
	out, _, err := e.rsa(false, "version")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(out, "rsa daemon: ") {
		t.Fatalf("version with the daemon down: %v %q, want exit 1 and the reason", err, out)
	}
	e.start()
}

// Draining an RSA node: jobs on it finish, no new job gets RAM on it (it
// waits, saying why), the drain outlives a restart, only root may drain,
// and undrain lets the waiting job in.
func TestDrain(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	if _, stderr, err := e.rsa(false, "drain", "local", "--reason", "x"); err == nil || !strings.Contains(stderr, "only root") {
		t.Fatalf("a user drained a node: %v %q", err, stderr)
	}
	if _, stderr, err := e.rsa(true, "drain", "local"); err == nil || !strings.Contains(stderr, "say why") {
		t.Fatalf("drain without a reason: %v %q", err, stderr)
	}
	if _, stderr, err := e.rsa(true, "drain", "nosuch", "--reason", "x"); err == nil || !strings.Contains(stderr, `no RSA node "nosuch"`) {
		t.Fatalf("drain of an unknown node: %v %q", err, stderr)
	}
	if _, stderr, err := e.rsa(false, "submit", "--out", e.mkdir("o1"), "--capacity", "64M"); err != nil {
		t.Fatal(err, stderr)
	}
	testutil.WaitFor(t, "job 1 ready", step, poll, func() bool { return e.job(1).RSA == lifecycle.Ready })
	if out, stderr, err := e.rsa(true, "drain", "local", "--reason", "memory test"); err != nil || !strings.Contains(out, "draining (memory test, by root") {
		t.Fatalf("drain: %v %q %q", err, out, stderr)
	}
	if _, stderr, err := e.rsa(false, "submit", "--out", e.mkdir("o2"), "--capacity", "64M"); err != nil {
		t.Fatal(err, stderr)
	}
	testutil.WaitFor(t, "job 2 to wait for the drained node", step, poll, func() bool { return strings.Contains(e.job(2).Waiting, "1 of 1 RSA nodes drained") })
	e.cancelAndWait(false, 1)
	// The drain is kept across a restart; the empty node is "drained".
	e.kill(syscall.SIGTERM)
	e.start()
	if out, _, err := e.rsa(false, "nodes"); err != nil || !strings.Contains(out, "drained (memory test") {
		t.Fatalf("nodes after a restart: %v\n%s", err, out)
	}
	if j := e.job(2); j.RSA != lifecycle.Initial {
		t.Fatalf("job 2 got RAM on a drained node: %s", j.RSA)
	}
	if out, stderr, err := e.rsa(true, "undrain", "local"); err != nil || !strings.Contains(out, "local: up") {
		t.Fatalf("undrain: %v %q %q", err, out, stderr)
	}
	testutil.WaitFor(t, "job 2 ready after undrain", step, poll, func() bool { return e.job(2).RSA == lifecycle.Ready })
	e.cancelAndWait(false, 2)
	e.noLeaks()
}

// cancelAndWait cancels job id and waits for its end, as its user or as
// root; either failing fails the test.
func (e *env) cancelAndWait(root bool, id int) {
	e.t.Helper()
	for _, verb := range []string{"cancel", "wait"} {
		if stdout, stderr, err := e.rsa(root, verb, itoa(id)); err != nil {
			e.t.Fatalf("rsa %s %d: %v\n%s%s", verb, id, err, stdout, stderr)
		}
	}
}

// Without a scheduler and without --capacity, rsa run sizes the RAMDISK
// from the input plus output_headroom and says so; the job gets its input
// in RAM (before: the proportion rule left it on disk). A capacity no RSA
// node can ever hold is refused before anything happens.
func TestRunSizesByInput(t *testing.T) {
	t.Parallel()
	e := setup(t, `output_headroom = "16M"`)
	in, out := e.mkdir("in"), e.mkdir("out")
	e.fill(in, 3, 1<<20)
	if _, stderr, err := e.rsa(false, "run", "--in", in, "--capacity", "100G", "--", "true"); err == nil || !strings.Contains(stderr, "more than all RSA nodes hold together (512M)") {
		t.Fatalf("run asking for 100G of 512M: %v %q", err, stderr)
	}
	job := e.script("job.sh", inRAM+`ram "$1" || { echo "input not in RAM" >&2; exit 10; }
`)
	b := e.runBG("--in", in, "--out", out, "--", job, in)
	if code := b.wait(t); code != 0 {
		t.Fatalf("exit %d: %s", code, b.errb.String())
	}
	if !strings.Contains(b.errb.String(), "RAMDISK of 19.0M: the input's 3.0M + output_headroom 16.0M") {
		t.Fatalf("rsa run did not say how it sized the RAMDISK:\n%s", b.errb.String())
	}
	if j := e.job(1); j.Capacity() != 19<<20 {
		t.Fatalf("job 1 holds %d bytes, want 19M", j.Capacity())
	}
	e.rsa(false, "wait", "1")
	e.noLeaks()
}

// A job's history belongs to the account, not to the bare uid: a new
// account given a deleted account's uid reads none of its jobs.
func TestHistoryBoundToTheAccount(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	// Accounts of this test's own, made and removed here (the removal is
	// the point).
	name, heir := testutil.TestUserName()+"-gone", testutil.TestUserName()+"-heir"
	for _, n := range []string{name, heir} {
		exec.Command("userdel", n).Run() // left by a killed run
		t.Cleanup(func() { exec.Command("userdel", n).Run() })
	}
	gone, _, err := rsatest.EnsureAccount(name, "--no-create-home", "--shell", "/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	gone.Home = "/"
	out := testutil.MkdirOwned(t, gone, filepath.Join(e.dir, "gone-out"))
	if b, err := e.as(gone, rsaBin, "--config", e.cfg, "submit", "--out", out, "--capacity", "16M").CombinedOutput(); err != nil {
		t.Fatalf("submit: %v %s", err, b)
	}
	e.cancelAndWait(true, 1)
	// The control: while the account lives, its uid reads the job's log
	// and sees its paths. Refused below, the uid is refused as the new
	// account, not as anyone.
	if b, err := e.as(gone, rsaBin, "--config", e.cfg, "log", "1").CombinedOutput(); err != nil || !strings.Contains(string(b), "submitted by "+name) {
		t.Fatalf("the account cannot read its own job's log: %v %s", err, b)
	}
	if b, err := e.as(gone, rsaBin, "--config", e.cfg, "status", "--all", "--json").CombinedOutput(); err != nil || !strings.Contains(string(b), out) {
		t.Fatalf("the account does not see its own job's paths: %v %s", err, b)
	}
	// The account goes; another is made with its uid.
	if err := rsatest.RemoveAccount(name); err != nil {
		t.Fatal(err)
	}
	if _, _, err := rsatest.EnsureAccount(heir, "--no-create-home", "--shell", "/bin/sh", "--uid", fmt.Sprint(gone.UID)); err != nil {
		t.Fatal(err)
	}
	b, err := e.as(gone, rsaBin, "--config", e.cfg, "log", "1").CombinedOutput()
	if err == nil || !strings.Contains(string(b), "belongs to "+name) {
		t.Fatalf("the uid's new account read the old account's log: %v %s", err, b)
	}
	b, err = e.as(gone, rsaBin, "--config", e.cfg, "status", "--all", "--json").CombinedOutput()
	if err != nil || strings.Contains(string(b), out) || !strings.Contains(string(b), `"private": true`) {
		t.Fatalf("the uid's new account sees the old account's job: %v %s", err, b)
	}
}

// The record of a job that ended longer than history_retention ago goes,
// with its events and its log; a younger one and a job that waits for an
// administrator stay.
func TestHistoryRetention(t *testing.T) {
	t.Parallel()
	e := setup(t, `history_retention = "1h"`)
	// Job 1 runs and stages out (so it has a log); job 2 is cancelled.
	if b := e.runBG("--out", e.mkdir("o1"), "--capacity", "16M", "--", e.script("job.sh", "true\n")); b.wait(t) != 0 {
		t.Fatalf("rsa run: %s", b.errb.String())
	}
	if _, stderr, err := e.rsa(false, "submit", "--out", e.mkdir("o2"), "--capacity", "16M"); err != nil {
		t.Fatal(err, stderr)
	}
	e.rsa(false, "cancel", "2")
	for _, id := range []string{"1", "2"} {
		if _, stderr, err := e.rsa(false, "wait", id); err != nil {
			t.Fatal(err, stderr)
		}
	}
	logs, _ := filepath.Glob(filepath.Join(e.dir, "state", "logs", "1-*.log"))
	if len(logs) != 1 {
		t.Fatalf("job 1's log: %v", logs)
	}
	// Job 1 ended two hours ago, as far as the record says.
	e.kill(syscall.SIGTERM)
	st, err := store.Open(context.Background(), filepath.Join(e.dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	j, err := st.Get(context.Background(), 1)
	if err == nil {
		j.UpdatedAt = time.Now().Add(-2 * time.Hour)
		err = st.Commit(context.Background(), j, nil)
	}
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	e.start()
	if _, stderr, err := e.rsa(false, "log", "1"); err == nil || !strings.Contains(stderr, "not found") && !strings.Contains(stderr, "no such job") {
		t.Errorf("job 1's history outlived history_retention: %v %q", err, stderr)
	}
	if _, err := os.Stat(logs[0]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("job 1's log file outlived history_retention: %v", err)
	}
	if _, stderr, err := e.rsa(false, "log", "2"); err != nil {
		t.Errorf("job 2, ended just now, lost its history: %v %q", err, stderr)
	}
	if !strings.Contains(e.daemonLog(), "purged the history of ended jobs") {
		t.Errorf("the daemon does not log the purge")
	}
}

// A reboot of the RSA host (simulated: the daemon killed, every mount
// below the test gone) takes the RAMDISKs with it. Output that only RAM
// held is reported lost, with the files it held, and no RAM stays held for
// it (the job does not call it "kept"); a RAMDISK that held nothing
// unsaved is rebuilt.
func TestRebootLosesRamdisk(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	out := e.mkdir("out")
	so := e.script("so.sh", "echo \"archive server unreachable\" >&2; exit 4\n")
	job := e.script("job.sh", inRAM+`waitram "$1"; echo precious > "$1/result"; echo more > "$1/second"
`)
	b := e.runBG("--out", out, "--stage-out", so, "--capacity", "64M", "--", job, out)
	if code := b.wait(t); code != 0 {
		t.Fatalf("exit %d: %s", code, b.errb.String())
	}
	testutil.WaitFor(t, "job 1's stage-out to fail", step, poll, func() bool { return e.job(1).RSA == lifecycle.StageOutFailed })
	if j := e.job(1); !strings.Contains(j.Error, "holds 2 files") {
		t.Errorf("the failed stage-out does not say what RAM holds: %q", j.Error)
	}
	if _, stderr, err := e.rsa(false, "submit", "--out", e.mkdir("o2"), "--capacity", "64M"); err != nil {
		t.Fatal(err, stderr)
	}
	testutil.WaitFor(t, "job 2 ready", step, poll, func() bool { return e.job(2).RSA == lifecycle.Ready })
	e.health(1, "WARNING: 1 jobs need", "job 1 of "+e.user.Name+": STAGE_OUT_FAILED: stage-out program")

	e.kill(syscall.SIGKILL)
	e.health(2, "CRITICAL: rsa serve does not answer")
	ms, err := mount.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if strings.HasPrefix(m.Point, e.root+"/") {
			if err := unix.Unmount(m.Point, unix.MNT_DETACH); err != nil {
				t.Fatalf("unmounting %s: %v", m.Point, err)
			}
		}
	}
	e.start()

	testutil.WaitFor(t, "job 1's output to be reported lost", step, poll, func() bool { return e.job(1).RSA == lifecycle.OutputLost })
	j := e.job(1)
	if !strings.Contains(j.Error, "RAMDISK is gone") || !strings.Contains(j.Error, "archive server unreachable") {
		t.Errorf("job 1's reason does not say what happened: %q", j.Error)
	}
	_, stderr, err := e.rsa(false, "wait", "1")
	if err == nil || !strings.Contains(stderr, "lost its output") || strings.Contains(stderr, "kept") {
		t.Errorf("rsa wait 1: %v %q; want the output reported lost", err, stderr)
	}
	e.logHas(1, "RAMDISK lost", "files only in RAM after the failed stage-out: 2", "result", "second")
	e.health(1, "WARNING: 1 jobs need", "job 1 of "+e.user.Name+": OUTPUT_LOST: its RAMDISK is gone")
	// Job 2 held nothing unsaved: its RAMDISK is simply built again.
	testutil.WaitFor(t, "job 2's RAMDISK to be rebuilt", step, poll, func() bool { return e.job(2).RSA == lifecycle.Ready })
	// Rebuilt once: the lost event starts the construct, and a resume of
	// the same job would start a second one racing it to the mount point.
	if log := e.daemonLog(); strings.Contains(log, "job=2 event=resume") {
		t.Errorf("job 2 was both rebuilt and resumed after the restart:\n%s", log)
	}
	if _, err := os.Stat(filepath.Join(e.root, "2", "ram")); err != nil {
		t.Errorf("job 2's RAMDISK: %v", err)
	}
	// Only job 2 holds RAM now.
	nodes, _, err := e.rsa(false, "nodes", "--json")
	if err != nil || !strings.Contains(nodes, `"allocated": 67108864`) || strings.Contains(nodes, `"allocated": 134217728`) {
		t.Errorf("after the reboot RSA's nodes are:\n%s (%v); want job 2's 64M alone allocated", nodes, err)
	}
	e.rsa(false, "cancel", "2")
	if _, stderr, err := e.rsa(false, "wait", "2"); err != nil {
		t.Fatal(err, stderr)
	}
	if out, stderr, err := e.rsa(true, "health", "--lost-within", "1ns"); err != nil || !strings.HasPrefix(out, "OK: rsa serve") {
		t.Errorf("rsa health once the loss is old news: %v %q %q", err, out, stderr)
	}
	e.noLeaks()
}

// health runs rsa health as root and checks its exit status and output.
func (e *env) health(code int, phrases ...string) {
	e.t.Helper()
	out, stderr, err := e.rsa(true, "health")
	var ee *exec.ExitError
	got := 0
	if errors.As(err, &ee) {
		got = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("rsa health: %v", err)
	}
	if got != code {
		e.t.Errorf("rsa health exited %d, want %d:\n%s%s", got, code, out, stderr)
	}
	for _, p := range phrases {
		if !strings.Contains(out, p) {
			e.t.Errorf("rsa health does not say %q:\n%s", p, out)
		}
	}
}
