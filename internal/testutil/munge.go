package testutil

import (
	"crypto/rand"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// StartMunged starts a munged of the test's own, with a key of its own, as
// the munge user, and returns its socket; it is stopped (by pid) when the
// test ends. It needs root and the munge package (make deps installs it).
func StartMunged(t testing.TB) string {
	t.Helper()
	RequireRoot(t)
	bin, err := exec.LookPath("munged")
	if err != nil {
		bin = "/usr/sbin/munged"
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("munged is not installed (make deps installs the munge package): %v", err)
	}
	u, err := user.Lookup("munge")
	if err != nil {
		t.Fatalf("no munge user (make deps installs the munge package): %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	dir := filepath.Join(TempDir(t), "munge")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 1024)
	rand.Read(key)
	keyFile := filepath.Join(dir, "munge.key")
	if err := os.WriteFile(keyFile, key, 0o400); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, keyFile} {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(dir, "munge.socket")
	cmd := exec.Command(bin, "--foreground", "--socket="+sock, "--key-file="+keyFile,
		"--pid-file="+filepath.Join(dir, "munged.pid"), "--log-file="+filepath.Join(dir, "munged.log"),
		"--seed-file="+filepath.Join(dir, "munged.seed"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	out, err := os.Create(filepath.Join(TempDir(t), "munged.out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting munged: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		out.Close()
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Stat(sock); err == nil {
			return sock
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(out.Name())
			t.Fatalf("munged did not come up:\n%s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
