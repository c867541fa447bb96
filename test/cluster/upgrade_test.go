package cluster_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// previousRelease is the release before this tree's, whose agents rsa
// serve of this tree must work with (docs/operations.md, "Across hundreds
// of hosts"), and releaseCommit the commit its tag names: the test builds
// from the commit, which every clone of main holds, while a clone need not
// carry the tags.
const (
	previousRelease = "v0.1.0"
	releaseCommit   = "b194a59e77fa34cecf8248606492dc2eb526c51f"
)

// TestOldAgentLong: the rolling upgrade's order, rsa serve first: rsa
// serve of this tree with one RSA node's agent of the release before,
// built from its tag. A job over that node and one of this tree's stages
// in over both (each its share), runs on both compute hosts, stages out
// verified and leaves nothing; rsa nodes shows the old agent's version.
func TestOldAgentLong(t *testing.T) {
	old := buildRelease(t, testutil.RepoRoot(t), previousRelease, releaseCommit)
	u := testutil.EnsureNamedUser(t, testutil.TestUserName()+"-8") // before t.Parallel: useradd takes a lock
	t.Parallel()
	c := startCluster(t, "RSA_CLUSTER_ID=7", "RSA_CLUSTER_RSA=2", "RSA_CLUSTER_CAPACITY=512M", "RSA_CLUSTER_LEAD=0")
	bin := filepath.Join(c.dir, "rsa", "rsa-"+previousRelease) // where the hosts see it
	data, err := os.ReadFile(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"kill-agent", "rsa2"}, {"start-agent", "rsa2", bin}} {
		if out, err := c.script(t, time.Minute, "cluster-up", args...); err != nil {
			t.Fatalf("cluster-up %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	testutil.WaitFor(t, "rsa2's agent of "+previousRelease+" to be up", 60*time.Second, poll, func() bool {
		a := c.nodes(t)["rsa2"].Agent
		return a != nil && a.State == "up" && a.Version == previousRelease && a.Unpooled == ""
	})
	testTwoNodes(t, c, u)
}

// buildRelease builds rsa as it was at release tag, commit commit (its
// tree from git, its version set as make sets it) and returns the
// binary's path.
func buildRelease(t *testing.T, root, tag, commit string) string {
	t.Helper()
	dir := t.TempDir()
	archive := exec.Command("bash", "-c", `set -o pipefail; git -C "$1" archive "$2" | tar -x -C "$3"`, "archive", root, commit, dir)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("unpacking %s (commit %s) from git: %v\n%s", tag, commit, err, out)
	}
	bin := filepath.Join(dir, "rsa")
	build := testutil.CommandWithin(t, 10*time.Minute, "go", "build", "-trimpath",
		"-ldflags", "-X github.com/rsa-hpc/rsa/internal/version.version="+tag, "-o", bin, "./cmd/rsa")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building rsa %s: %v\n%s", tag, err, out)
	}
	return bin
}
