package rsatest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// exitError is the error of a process that exited with code.
func exitError(t *testing.T, code int) error {
	t.Helper()
	err := exec.Command("sh", "-c", "exit "+strconv.Itoa(code)).Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != code {
		t.Fatalf("sh -c 'exit %d': %v, want that exit status", code, err)
	}
	return err
}

func TestAccountToolRetries(t *testing.T) {
	const (
		groupLock  = "useradd: cannot lock /etc/group; try again later.\n"
		passwdLock = "userdel: cannot lock /etc/passwd; try again later.\n"
	)
	for _, c := range []struct {
		name, tool string
		code       int // -1: the tool did not start
		out        string
		want       bool
	}{
		{"group file locked", "useradd", 10, groupLock, true},
		{"passwd file locked", "userdel", 1, passwdLock, true},
		{"user's process still exiting", "userdel", 8, "userdel: user rsatest-x is currently used by process 42\n", true},
		{"group file not written", "useradd", 10, "useradd: failure while writing changes to /etc/group\n", false},
		{"name taken", "useradd", 9, "useradd: user 'rsatest-x' already exists\n", false},
		{"exit 8 is not useradd's lock", "useradd", 8, groupLock, false},
		{"no such user", "userdel", 6, "userdel: user 'rsatest-x' does not exist\n", false},
		{"not started", "useradd", -1, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := errors.New("exec: \"useradd\": executable file not found in $PATH")
			if c.code >= 0 {
				err = exitError(t, c.code)
			}
			if got := accountToolRetries(c.tool, err, []byte(c.out)); got != c.want {
				t.Errorf("accountToolRetries(%s, exit %d, %q) = %v, want %v", c.tool, c.code, c.out, got, c.want)
			}
		})
	}
}

// TestRunAccountToolRetriesTheLock runs a stand-in useradd from PATH that
// finds the group file locked on its first two runs: RunAccountTool runs
// it three times and succeeds. One that fails otherwise is run once.
func TestRunAccountToolRetriesTheLock(t *testing.T) {
	bin := t.TempDir()
	count := filepath.Join(bin, "count")
	script := `#!/bin/sh
n=$(cat "$RSA_TEST_COUNT" 2>/dev/null || echo 0)
echo $((n + 1)) >"$RSA_TEST_COUNT"
case $1 in
locked) [ "$n" -ge 2 ] && exit 0; echo "useradd: cannot lock /etc/group; try again later." >&2; exit 10 ;;
taken) echo "useradd: user 'taken' already exists" >&2; exit 9 ;;
esac
`
	if err := os.WriteFile(filepath.Join(bin, "useradd"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("RSA_TEST_COUNT", count)
	runs := func() string {
		b, err := os.ReadFile(count)
		if err != nil {
			t.Fatal(err)
		}
		os.Remove(count)
		return strings.TrimSpace(string(b))
	}

	if err := RunAccountTool("useradd", "locked"); err != nil {
		t.Errorf("a lock held for two runs: %v", err)
	}
	if n := runs(); n != "3" {
		t.Errorf("a lock held for two runs: useradd ran %s times, want 3", n)
	}

	err := RunAccountTool("useradd", "taken")
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a name taken: %v, want the tool's error with its output", err)
	}
	if n := runs(); n != "1" {
		t.Errorf("a name taken: useradd ran %s times, want 1", n)
	}
}
