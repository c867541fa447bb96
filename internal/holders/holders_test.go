package holders

import (
	"bufio"
	"context"
	"fmt"
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

// holdEnv makes the test binary a holder for TestFindWhose (see hold).
const holdEnv = "RSA_HOLDERS_TEST_HOLD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(holdEnv); spec != "" {
		hold(spec)
	}
	os.Exit(m.Run())
}

// hold is the test binary started as root with holdEnv "RUID EUID SUID
// DUMPABLE PATH": it takes those uids (setresuid) and that dumpable flag,
// opens PATH, says "ready" and holds it until it is killed.
func hold(spec string) {
	var r, e, s, dumpable int
	var path string
	if _, err := fmt.Sscan(spec, &r, &e, &s, &dumpable, &path); err != nil {
		fmt.Fprintln(os.Stderr, "bad", holdEnv, err)
		os.Exit(2)
	}
	// setresuid resets the dumpable flag (to fs.suid_dumpable): set it after.
	if err := syscall.Setresuid(r, e, s); err != nil {
		fmt.Fprintln(os.Stderr, "setresuid:", err)
		os.Exit(2)
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, uintptr(dumpable), 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "prctl:", err)
		os.Exit(2)
	}
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer f.Close()
	fmt.Println("ready")
	time.Sleep(time.Hour)
	os.Exit(0)
}

// A holder is root's only when its real, effective and saved uids are all
// 0. A process whose real uid is a user's is the user's, also when it runs
// a setuid-root program (effective and saved uid 0) or is not dumpable
// (the files in its /proc/PID then belong to root); so is one root started
// that is a user in its effective or saved uid.
func TestFindWhose(t *testing.T) {
	testutil.RequireRoot(t)
	u := int(testutil.EnsureUser(t).UID)
	fs := filepath.Join(testutil.TempDir(t), "fs")
	if err := os.Mkdir(fs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("rsa-holderstest", fs, "tmpfs", 0, "size=1m,mode=0777"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(fs, unix.MNT_DETACH) })
	file := filepath.Join(fs, "f")
	if err := os.WriteFile(file, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(fs, &st); err != nil {
		t.Fatal(err)
	}

	type want struct {
		uid, euid int
		root      bool
	}
	cases := []struct {
		name             string
		ruid, euid, suid int
		dumpable         int
		want             want
	}{
		{"the user's", u, u, u, 1, want{u, u, false}},
		{"the user's, made not dumpable", u, u, u, 0, want{u, u, false}},
		// What execve of a setuid-root program gives (and not dumpable).
		{"a setuid-root program the user started", u, 0, 0, 0, want{u, 0, false}},
		{"the user's setuid program that root started", 0, u, u, 0, want{u, u, false}},
		{"root's acting as the user (seteuid)", 0, u, 0, 0, want{u, u, false}},
		{"root's", 0, 0, 0, 1, want{0, 0, true}},
		{"root's, not dumpable", 0, 0, 0, 0, want{0, 0, true}},
	}
	byPID := map[int]int{} // pid -> case
	for i, c := range cases {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d %d %d %d %s", holdEnv, c.ruid, c.euid, c.suid, c.dumpable, file))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
			t.Fatalf("%s: the holder did not start: %q, %v", c.name, line, err)
		}
		byPID[cmd.Process.Pid] = i
	}
	hs, err := Find(context.Background(), st.Dev)
	if err != nil {
		t.Fatal(err)
	}
	found := map[int]bool{}
	for _, h := range hs {
		i, ok := byPID[h.PID]
		if !ok {
			continue
		}
		found[i] = true
		c := cases[i]
		if got := (want{int(h.UID), int(h.EUID), h.Root()}); got != c.want {
			t.Errorf("%s (uids %d %d %d): found uid %d, euid %d, root's %v; want uid %d, euid %d, root's %v",
				c.name, c.ruid, c.euid, c.suid, got.uid, got.euid, got.root, c.want.uid, c.want.euid, c.want.root)
		}
	}
	for i, c := range cases {
		if !found[i] {
			t.Errorf("%s: not found among the holders %v", c.name, hs)
		}
	}
}

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
