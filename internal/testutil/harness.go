package testutil

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/rsatest"
)

// WaitFor calls cond every interval until it holds, and fails the test if
// it does not within. A suite polls a condition that reads a file or a
// socket often (20 ms) and one that runs a program (squeue, rsa status, a
// command on a cluster host) less often (100 ms), so as not to load the
// machine that runs its daemons.
func WaitFor(t testing.TB, what string, within, every time.Duration, cond func() bool) {
	t.Helper()
	if !rsatest.Poll(within, every, cond) {
		t.Fatalf("timed out after %v waiting for %s", within, what)
	}
}

// RepoRoot is the repository's root (rsatest.ModuleRoot), where a suite
// finds scripts/.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := rsatest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// logTail is how much of a log DumpLogs shows: the end, where a failure
// is, and short enough for a CI page.
const logTail = 6000

// KeepLogs copies the directory logs of a cluster the test brought up to
// /tmp/PREFIX-UNIXTIME (rsatest.KeepLogs), where it stays after the
// cluster's directory is removed, and says where; it returns that path.
func KeepLogs(t testing.TB, logs, prefix string) string {
	t.Helper()
	keep, err := rsatest.KeepLogs(logs, prefix)
	if err != nil {
		t.Logf("keeping the logs: %v", err)
	} else {
		t.Logf("the cluster's logs are kept in %s", keep)
	}
	return keep
}

// LogTails logs the end of each of the files in the directory logs, in
// order: the one to read first goes last, where a CI page ends.
func LogTails(t testing.TB, logs string, files ...string) {
	t.Helper()
	for _, f := range files {
		t.Logf("--- %s (tail) ---\n%s", f, rsatest.Tail(filepath.Join(logs, f), logTail))
	}
}
