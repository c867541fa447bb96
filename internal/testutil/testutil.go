// Package testutil holds what the tests share: the rule that a test
// needing root fails instead of skipping under CI=true, real unprivileged
// test users, and the test-facing side of the integration suites' harness
// (WaitFor, RepoRoot, KeepLogs, Sbatch, WaitJob). It is imported only by
// tests: it fails a test (t.Fatal) and cleans up after it (t.Cleanup) on
// top of internal/rsatest, which does the work without importing testing.
package testutil

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/rsatest"
)

// RequireRoot skips a test that needs root, unless CI=true, where a skipped
// test would hide a gap and so fails.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("this test needs root and CI runs as root: run it as root")
	}
	t.Skip("needs root (run make test as root)")
}

// CannotRun stops a test that cannot run on this host, for the reason
// given: under CI=true it fails, since CI has everything the tests need
// (make deps installs it) and a skip there would hide a gap; elsewhere
// (go test by hand, on a machine without a tool) it skips.
func CannotRun(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// RequireTool returns the path of the program name, which the test runs.
// Without it the test cannot run (CannotRun): it fails under CI=true.
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		CannotRun(t, "%s is not installed (make deps installs it): %v", name, err)
	}
	return p
}

// User is an unprivileged account for tests.
type User = rsatest.Account

// TestUserName names the account the tests of the calling package run
// jobs as: one per package ("rsatest-internal-mount", "rsatest-test-e2e",
// ...), because go test runs packages in parallel and one package's
// cleanup must not remove a user another package is using. The name comes
// from the package's path in the module, so internal/slurm and test/slurm
// get different ones.
func TestUserName() string {
	wd, _ := os.Getwd()
	rel := filepath.Base(wd)
	if root, err := rsatest.ModuleRoot(); err == nil {
		if r, err := filepath.Rel(root, wd); err == nil {
			rel = r
		}
	}
	return "rsatest-" + strings.ReplaceAll(rel, string(filepath.Separator), "-")
}

// EnsureUser returns the package's test account, creating it if it does
// not exist and then removing it when the test ends.
func EnsureUser(t testing.TB) User {
	t.Helper()
	return EnsureNamedUser(t, TestUserName())
}

// EnsureOtherUser is a second account of the package's, for tests of what
// one user can do to another's jobs.
func EnsureOtherUser(t testing.TB) User {
	t.Helper()
	return EnsureNamedUser(t, TestUserName()+"-b")
}

// EnsureUsers returns n accounts of the package's, distinct from the
// others ("rsatest-test-slurm-1", ...), for tests of several users' jobs at
// once. Each is created if it does not exist and then removed when the test
// ends, also when a later one cannot be created or the test fails.
func EnsureUsers(t testing.TB, n int) []User {
	t.Helper()
	us := make([]User, n)
	for i := range us {
		us[i] = EnsureNamedUser(t, fmt.Sprintf("%s-%d", TestUserName(), i+1))
	}
	return us
}

// EnsureNamedUser returns the account name, creating it if it does not
// exist and then removing it when the test ends. useradd and userdel take
// the account files' locks without waiting for them, so while another
// package creates or removes its own users they fail; they are then run
// again (RunAccountTool).
func EnsureNamedUser(t testing.TB, name string) User {
	t.Helper()
	RequireRoot(t)
	u, made, err := rsatest.EnsureAccount(name, "--create-home", "--shell", "/bin/sh")
	if made {
		t.Cleanup(func() {
			if err := rsatest.RemoveAccount(name, "--remove"); err != nil {
				t.Errorf("removing test user %s: %v", name, err)
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// MkdirOwned makes dir owned by u with mode 0755.
func MkdirOwned(t testing.TB, u User, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, int(u.UID), int(u.GID)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TempDir is a 0755 temporary directory (t.TempDir is 0700, which a test
// user cannot enter), removed after the test.
func TempDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "rsa-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// BuildRSA builds the rsa binary into a fresh 0755 directory, where an
// unprivileged test user can run it, for a TestMain. The returned function
// removes it. With RSA_TEST_BIN set (scripts/go-test.sh builds rsa once for
// every package), that binary is copied there instead: linking rsa anew in
// each of eight packages cost make test half a minute.
func BuildRSA() (string, func(), error) {
	dir, err := os.MkdirTemp("", "rsa-test-bin-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	if err := os.Chmod(dir, 0o755); err != nil {
		cleanup()
		return "", nil, err
	}
	bin := filepath.Join(dir, "rsa")
	if built := os.Getenv("RSA_TEST_BIN"); built != "" {
		if out, err := exec.Command("cp", built, bin).CombinedOutput(); err != nil {
			cleanup()
			return "", nil, fmt.Errorf("copying RSA_TEST_BIN: %v\n%s", err, out)
		}
		return bin, cleanup, nil
	}
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/rsa-hpc/rsa/cmd/rsa").CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("building rsa: %v\n%s", err, out)
	}
	return bin, cleanup, nil
}

// RunWithRSA is a TestMain body: it builds rsa (BuildRSA), stores its path
// in *bin, runs the package's tests, removes the binary and exits.
func RunWithRSA(m *testing.M, bin *string) {
	path, cleanup, err := BuildRSA()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*bin = path
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// RunWithLab is RunWithRSA for tests of the lab: it builds rsa-lab
// (cmd/rsa-lab) beside rsa, where the lab finds the product binary its
// benchmarks run jobs through, and stores rsa-lab's path in *lab.
func RunWithLab(m *testing.M, lab *string) {
	path, cleanup, err := BuildRSA()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	labPath := filepath.Join(filepath.Dir(path), "rsa-lab")
	if out, err := exec.Command("go", "build", "-o", labPath, "github.com/rsa-hpc/rsa/cmd/rsa-lab").CombinedOutput(); err != nil {
		cleanup()
		fmt.Fprintf(os.Stderr, "building rsa-lab: %v\n%s\n", err, out)
		os.Exit(1)
	}
	*lab = labPath
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// Command is name with args, killed if it still runs 90 s on (or when t
// ends): a hung client fails its test, which then cleans up, instead of
// running into the package's timeout, which cleans up nothing.
func Command(t testing.TB, name string, args ...string) *exec.Cmd {
	return CommandWithin(t, 90*time.Second, name, args...)
}

// CommandWithin is Command for a program whose work takes longer: killed
// if it still runs limit on.
func CommandWithin(t testing.TB, limit time.Duration, name string, args ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// LoopsOf lists the loop devices bound to file (their sysfs
// backing_file), as the kernel names it.
func LoopsOf(file string) []string {
	var on []string
	for _, l := range rsatest.Loops() {
		if l.Backing == file {
			on = append(on, l.Device)
		}
	}
	return on
}
