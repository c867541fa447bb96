package e2e

// What an administrator meets installing and running RSA.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// rsa serve refuses a node capacity the host's RAM cannot hold, naming
// both sizes and the key to change, before it creates anything.
func TestServeRefusesMoreRAMThanTheHostHas(t *testing.T) {
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
