package stage

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/cgroup"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

func TestRunnerAsUser(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	dir := testutil.TempDir(t)
	t.Setenv("RSA_SECRET_TEST", "1") // root's environment: must not reach the child
	who := Identity{UID: u.UID, GID: u.GID, Name: u.Name, Home: u.Home}
	data := testutil.MkdirOwned(t, u, filepath.Join(dir, "data"))
	ram := testutil.MkdirOwned(t, u, filepath.Join(dir, "ram"))
	os.WriteFile(filepath.Join(data, "f"), []byte("hello"), 0o644)
	os.Chown(filepath.Join(data, "f"), int(u.UID), int(u.GID))
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte("root only"), 0o600)

	// A custom program runs as the user, with $1 $2, a clean environment,
	// and cannot read root's file.
	prog := filepath.Join(dir, "stage-in.sh")
	os.WriteFile(prog, []byte("#!/bin/sh\nset -e\nid -u > \"$1/uid\"\nenv | sort > \"$1/env\"\ncp \"$2/f\" \"$1/f\"\ncat "+secret+" > \"$1/stolen\" 2>/dev/null || true\n"), 0o755)
	var log bytes.Buffer
	r := &Runner{Self: "/nonexistent", Cgroups: testCgroups(t)}
	err := r.Run(context.Background(), Task{Job: 1, Phase: "stage-in", User: who, Program: prog, Ramdisk: ram, Data: data, Log: &log})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if b, _ := os.ReadFile(filepath.Join(ram, "uid")); strings.TrimSpace(string(b)) != strconv.Itoa(int(u.UID)) {
		t.Fatalf("ran as uid %q", b)
	}
	env, _ := os.ReadFile(filepath.Join(ram, "env"))
	if strings.Contains(string(env), "RSA_SECRET_TEST") || !strings.Contains(string(env), "RSA_RAMDISK="+ram) {
		t.Fatalf("environment not clean:\n%s", env)
	}
	if b, _ := os.ReadFile(filepath.Join(ram, "stolen")); len(b) > 0 {
		t.Fatal("stage program read a root-only file")
	}

	// A failing program's failure and last words are reported.
	bad := filepath.Join(dir, "bad.sh")
	os.WriteFile(bad, []byte("#!/bin/sh\necho 'tar: input.tar: Cannot open' >&2\nexit 3\n"), 0o755)
	err = r.Run(context.Background(), Task{Job: 1, Phase: "stage-out", User: who, Program: bad, Ramdisk: ram, Data: data})
	if err == nil || !strings.Contains(err.Error(), "Cannot open") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("got %v", err)
	}

	// Cancel kills the whole cgroup, grandchildren in a session of their
	// own included.
	slow := filepath.Join(dir, "slow.sh")
	pidFile := filepath.Join(ram, "grandchild")
	os.WriteFile(slow, []byte("#!/bin/sh\nsetsid sleep 300 &\necho $! > "+pidFile+"\nwait\n"), 0o755)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancelled once the grandchild is there (polled for up to 30 s:
		// a loaded machine may be slow to start it).
		for range 1500 {
			if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
	}()
	if err := r.Run(ctx, Task{Job: 1, Phase: "stage-in", User: who, Program: slow, Ramdisk: ram, Data: data}); err == nil {
		t.Fatal("cancelled run succeeded")
	}
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 {
		t.Fatal("grandchild pid not recorded")
	}
	if !gone(pid, 10*time.Second) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("grandchild %d survived the cancel", pid)
	}

}

// testCgroups is a staging cgroup parent of the test's own, removed after.
func testCgroups(t *testing.T, owner ...string) *cgroup.Parent {
	t.Helper()
	p, err := cgroup.Open(t.Name() + strconv.Itoa(os.Getpid()) + strings.Join(owner, ""))
	if err != nil {
		t.Fatal(err)
	}
	// Release removes its directories in cgroup v1 hierarchies too.
	t.Cleanup(func() {
		if err := p.Release(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return p
}

// A stage program that puts a child in a session of its own (setsid) and
// returns leaves nothing running, and no child writes to the job's log
// after the stage; what one stage writes to the log is capped (head and
// tail kept, the cut said).
func TestRunnerLeavesNothingBehind(t *testing.T) {
	sd := newStageDirs(t)
	who, dir, ram, data := sd.who, sd.dir, sd.ram, sd.data
	r := &Runner{Self: "/nonexistent", Cgroups: testCgroups(t), LogHead: 4096, LogTail: 1024}
	pidFile := filepath.Join(ram, "escapee")
	prog := filepath.Join(dir, "escape.sh")
	os.WriteFile(prog, []byte("#!/bin/sh\nsetsid sh -c 'echo $$ > "+pidFile+"; while :; do echo still here; sleep 0.01; done' &\n"+
		"while [ ! -s "+pidFile+" ]; do sleep 0.01; done\nhead -c 10485760 /dev/zero | tr '\\0' x\necho; echo the end\n"), 0o755)
	logf, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	if err := r.Run(context.Background(), Task{Job: 2, Phase: "stage-in", User: who, Program: prog, Ramdisk: ram, Data: data, Log: logf}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 || !gone(pid, 10*time.Second) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the setsid child %d outlived its stage", pid)
	}
	st1, _ := logf.Stat()
	time.Sleep(200 * time.Millisecond)
	st2, _ := logf.Stat()
	if st2.Size() != st1.Size() {
		t.Fatalf("the log grew after the stage ended: %d -> %d", st1.Size(), st2.Size())
	}
	log, _ := os.ReadFile(filepath.Join(dir, "log"))
	// The escapee may still write a line or two between the program's
	// end and its own: "the end" is in the tail, not always last.
	if len(log) > 4096+1024+200 || !strings.Contains(string(log), "bytes of this stage's output cut here") || !strings.Contains(string(log[max(0, len(log)-1024):]), "the end\n") {
		t.Fatalf("log of %d bytes not capped with head, cut note and tail:\n%.300s ... %s", len(log), log, log[max(0, len(log)-200):])
	}
	ents, err := os.ReadDir(r.Cgroups.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() {
			t.Fatalf("staging cgroup %s left", e.Name())
		}
	}
}

// A daemon that starts after a crash kills its predecessor's staging
// cgroups, and only its own.
func TestKillAllLeftovers(t *testing.T) {
	testutil.RequireRoot(t)
	mine, other := testCgroups(t), testCgroups(t, "another daemon")
	start := func(p *cgroup.Parent, name string) *exec.Cmd {
		g, err := p.New(context.Background(), name, cgroup.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sleep", "300")
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.FD()}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go cmd.Wait()
		t.Cleanup(func() { cmd.Process.Kill() })
		return cmd // the group is left open: a crashed daemon closes nothing
	}
	left := start(mine, "job-1-stage-in")
	theirs := start(other, "job-1-stage-in")
	n, err := mine.KillAll(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("KillAll: %d, %v", n, err)
	}
	if !gone(left.Process.Pid, 10*time.Second) {
		t.Fatal("a leftover staging process survived KillAll")
	}
	if gone(theirs.Process.Pid, 100*time.Millisecond) {
		t.Fatal("KillAll killed another daemon's staging process")
	}
}

// gone waits until pid no longer runs (a zombie awaiting its reaper counts
// as gone).
func gone(pid int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && len(b) > i+2 && b[i+2] == 'Z' {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// stageDirs is a stage's setup in tests: the test user, a scratch
// directory, and a RAMDISK and a data directory of the user's in it.
type stageDirs struct {
	who            Identity
	dir, ram, data string
}

func newStageDirs(t *testing.T) stageDirs {
	t.Helper()
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	dir := testutil.TempDir(t)
	return stageDirs{who: Identity{UID: u.UID, GID: u.GID, Name: u.Name, Home: u.Home}, dir: dir,
		ram: testutil.MkdirOwned(t, u, filepath.Join(dir, "ram")), data: testutil.MkdirOwned(t, u, filepath.Join(dir, "data"))}
}

// fakeMover is a Runner whose rsa only writes down its arguments, and the
// function that returns what the last run wrote ("" if it did not run).
func (sd stageDirs) fakeMover(t *testing.T) (*Runner, func() string) {
	t.Helper()
	argsFile := filepath.Join(sd.ram, "args")
	fake := filepath.Join(sd.dir, "rsa")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"$@\" > "+argsFile+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return &Runner{Self: fake, Cgroups: testCgroups(t)}, func() string {
		b, _ := os.ReadFile(argsFile)
		os.Remove(argsFile)
		return string(b)
	}
}
