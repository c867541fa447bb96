package stage

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// TestMain lets the test binary act as `rsa stage-worker` for Runner tests.
func TestMain(m *testing.M) {
	if os.Getenv("RSA_TEST_WORKER") == "1" {
		a := os.Args
		verify := len(a) > 6 && a[6] == "--verify"
		if err := Worker(context.Background(), a[3], a[5], verify, os.Stdout, os.Stderr); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func mkTree(t *testing.T, root string) {
	t.Helper()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "a", "b", "empty"), 0o750))
	must(os.WriteFile(filepath.Join(root, "a", "b", "data"), bytes.Repeat([]byte("x"), 3<<20), 0o640))
	must(os.WriteFile(filepath.Join(root, "top"), []byte("top"), 0o600))
	must(os.Symlink("/etc/shadow", filepath.Join(root, "a", "outside")))
	must(os.Symlink("missing", filepath.Join(root, "dangling")))
	old := time.Date(2001, 2, 3, 4, 5, 6, 789, time.UTC)
	must(os.Chtimes(filepath.Join(root, "top"), old, old))
	must(os.Chtimes(filepath.Join(root, "a", "b"), old, old))
}

func TestCopyAndVerify(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	mkTree(t, src)
	var last Progress
	c := &Copier{Progress: func(p Progress) { last = p }}
	st, err := c.Copy(context.Background(), src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != 2 || st.Links != 2 || st.Bytes != 3<<20+3 {
		t.Fatalf("stats %+v", st)
	}
	if last.Bytes != st.Bytes || last.TotalBytes != st.Bytes {
		t.Fatalf("progress %+v", last)
	}
	if err := Verify(context.Background(), src, dst); err != nil {
		t.Fatal(err)
	}
	// Attributes: modes, nanosecond times (directories too), links unfollowed.
	for _, rel := range []string{"top", "a/b"} {
		a, _ := os.Lstat(filepath.Join(src, rel))
		b, _ := os.Lstat(filepath.Join(dst, rel))
		if a.Mode() != b.Mode() || !a.ModTime().Equal(b.ModTime()) {
			t.Errorf("%s: %v %v vs %v %v", rel, a.Mode(), a.ModTime(), b.Mode(), b.ModTime())
		}
	}
	if l, err := os.Readlink(filepath.Join(dst, "a", "outside")); err != nil || l != "/etc/shadow" {
		t.Fatalf("symlink %q %v", l, err)
	}
	if _, err := os.Stat(filepath.Join(dst, "a", "b", "empty")); err != nil {
		t.Fatal("empty directory not copied")
	}
	// Resume: a second copy skips what is in place.
	st, err = c.Copy(context.Background(), src, dst)
	if err != nil || st.Skipped != 2 {
		t.Fatalf("resume: %+v %v", st, err)
	}
	// Verify catches a changed byte.
	os.WriteFile(filepath.Join(dst, "top"), []byte("tOp"), 0o600)
	if err := Verify(context.Background(), src, dst); err == nil || !strings.Contains(err.Error(), "differs") {
		t.Fatalf("verify missed a change: %v", err)
	}
	os.Remove(filepath.Join(dst, "top"))
	if err := Verify(context.Background(), src, dst); err == nil {
		t.Fatal("verify missed a missing file")
	}
}

func TestCopyCancel(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	mkTree(t, src)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (&Copier{}).Copy(ctx, src, dst); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

// selfAsWorker copies the test binary where the test user can run it.
func selfAsWorker(t *testing.T, dir string) string {
	t.Helper()
	self, _ := os.Executable()
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	p := filepath.Join(dir, "rsa-worker")
	out, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(out, in)
	out.Close()
	return p
}

func TestRunnerAsUser(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t, testutil.TestUserName)
	dir := testutil.TempDir(t)
	t.Setenv("RSA_TEST_WORKER", "1") // read by the child: cleanEnv drops it, so pass it below
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
	r := &Runner{Self: "/nonexistent"}
	err := r.Run(context.Background(), Task{Job: 1, Phase: "stage-in", User: who, Program: prog, Ramdisk: ram, Data: data, Log: &log})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if b, _ := os.ReadFile(filepath.Join(ram, "uid")); strings.TrimSpace(string(b)) != strconv.Itoa(int(u.UID)) {
		t.Fatalf("ran as uid %q", b)
	}
	env, _ := os.ReadFile(filepath.Join(ram, "env"))
	if strings.Contains(string(env), "RSA_TEST_WORKER") || !strings.Contains(string(env), "RSA_RAMDISK="+ram) {
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

	// Cancel kills the whole process group, grandchildren included.
	slow := filepath.Join(dir, "slow.sh")
	pidFile := filepath.Join(ram, "grandchild")
	os.WriteFile(slow, []byte("#!/bin/sh\nsleep 300 &\necho $! > "+pidFile+"\nwait\n"), 0o755)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for range 100 {
			if _, err := os.Stat(pidFile); err == nil {
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
	if !gone(pid, 2*time.Second) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("grandchild %d survived the cancel", pid)
	}

	// The built-in copy runs the worker as the user: it cannot read the
	// root-only file, and says so.
	worker := selfAsWorker(t, dir)
	os.Symlink(secret, filepath.Join(data, "link-to-secret"))
	r = &Runner{Self: worker}
	var prog2 []Progress
	envTask := Task{Job: 2, Phase: "stage-out", User: who, Ramdisk: data, Data: testutil.MkdirOwned(t, u, filepath.Join(dir, "out")),
		Progress: func(p Progress) { prog2 = append(prog2, p) }, Log: &log}
	// The worker needs RSA_TEST_WORKER, which a clean environment drops:
	// a wrapper script sets it.
	wrap := filepath.Join(dir, "wrap.sh")
	os.WriteFile(wrap, []byte("#!/bin/sh\nRSA_TEST_WORKER=1 exec "+worker+" \"$@\"\n"), 0o755)
	r.Self = wrap
	if err := r.Run(context.Background(), envTask); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if b, _ := os.ReadFile(filepath.Join(envTask.Data, "f")); string(b) != "hello" {
		t.Fatalf("copy result %q", b)
	}
	if l, _ := os.Readlink(filepath.Join(envTask.Data, "link-to-secret")); l != secret {
		t.Fatal("symlink not copied as a symlink")
	}
	var st syscall.Stat_t
	syscall.Stat(filepath.Join(envTask.Data, "f"), &st)
	if st.Uid != u.UID {
		t.Fatalf("copy owned by %d", st.Uid)
	}
	if len(prog2) == 0 {
		t.Fatal("no progress reported")
	}
	os.WriteFile(filepath.Join(data, "unreadable"), []byte("x"), 0o600) // root-owned, in the user's dir
	err = r.Run(context.Background(), envTask)
	if err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("reading a root-only file should fail as the user: %v", err)
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
