package stage

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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
	r := &Runner{Self: "/nonexistent"}
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
