package holders

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// Each way of holding a file system is found, and only on the file system
// held: a cwd, an open file, a mapping and a private mount namespace.
func TestFindEachWayOfHolding(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	dir := testutil.TempDir(t)
	fs := filepath.Join(dir, "fs")
	other := filepath.Join(dir, "other")
	for _, d := range []string{fs, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("rsa-holderstest", d, "tmpfs", 0, "size=1m,mode=0777"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Unmount(d, unix.MNT_DETACH) })
	}
	if err := os.WriteFile(filepath.Join(fs, "f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(fs, &st); err != nil {
		t.Fatal(err)
	}
	dev := st.Dev

	start := func(dir string, args ...string) *exec.Cmd {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.UID, Gid: u.GID}}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	cwd := start(fs, "sleep", "60")
	fd := start("/", "sh", "-c", "exec 3<"+filepath.Join(fs, "f")+"; exec sleep 60")
	// A program run from the file system is mapped from it (no fd, no cwd).
	sleep, err := os.ReadFile("/bin/sleep")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fs, "sleep"), sleep, 0o755); err != nil {
		t.Fatal(err)
	}
	mapped := start("/", filepath.Join(fs, "sleep"), "60")
	ns := exec.Command("unshare", "--mount", "--propagation", "private", "sleep", "60")
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Process.Kill(); ns.Wait() })
	bystander := start(other, "sleep", "60")

	want := map[int]string{cwd.Process.Pid: "cwd", fd.Process.Pid: "fd 3", mapped.Process.Pid: "mapping", ns.Process.Pid: "mount namespace"}
	var hs []Holder
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		if hs, err = Find(context.Background(), dev); err != nil {
			t.Fatal(err)
		}
		found := 0
		for _, h := range hs {
			if w, ok := want[h.PID]; ok && h.What == w {
				found++
			}
		}
		if found == len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // python and sh take a moment to get there
	}
	got := map[int]string{}
	for _, h := range hs {
		got[h.PID] = h.What
		if h.PID == bystander.Process.Pid {
			t.Errorf("a process on another file system was reported: %v", h)
		}
	}
	for pid, w := range want {
		if got[pid] != w {
			t.Errorf("pid %d: found %q, want %q (all: %v)", pid, got[pid], w, hs)
		}
	}
	// Signal reaches a holder, and a stale record (another start time)
	// signals nobody.
	for _, h := range hs {
		if h.PID == cwd.Process.Pid {
			stale := h
			stale.StartTime++
			if err := Signal(stale, unix.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if err := unix.Kill(h.PID, 0); err != nil {
				t.Fatal("a stale holder record killed the process")
			}
			if err := Signal(h, unix.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if err := cwd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
				t.Fatalf("holder not killed: %v", err)
			}
		}
	}
}
