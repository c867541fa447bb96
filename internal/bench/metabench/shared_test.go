package metabench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsa-hpc/rsa/internal/bench/target"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// TestRunSharedClients runs every phase and its cross-check on shared@1g
// with three client mounts, one per process, as rsa-lab bench metabench
// --target shared@1g does, on a network of its own (10.76.7) and with
// its state under a temporary directory; it leaves nothing mounted.
func TestRunSharedClients(t *testing.T) {
	testutil.RequireRoot(t)
	for _, tool := range []string{"fio", "glusterd", "mount.glusterfs"} {
		testutil.RequireTool(t, tool)
	}
	// The server's namespace has one name for every shared@1g: one that
	// is up belongs to another run, which this one must not take down.
	if _, err := os.Stat("/run/netns/rsab-shared"); err == nil {
		testutil.CannotRun(t, "shared@1g is up for another run (netns rsab-shared), which this test must not take down")
	}
	base := t.TempDir()
	tc := target.Config{RunDir: filepath.Join(base, "run"), DiskDir: filepath.Join(base, "disk"), Clients: 3, SharedNet: "10.76.7"}
	t.Cleanup(func() {
		if err := target.Down(context.Background(), tc, "shared@1g"); err != nil {
			t.Errorf("Down: %v", err)
		}
	})
	ctx := context.Background()
	tg, err := target.Up(ctx, tc, "shared@1g")
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	if len(tg.Dirs) != 3 {
		t.Fatalf("%d client mounts, want 3", len(tg.Dirs))
	}
	c := Config{
		NFile: 40, NByte: 1024, Freq: 20, NProc: 3, CrossCheck: true,
		Dirs: tg.Dirs, Tree: GlibcTree().Scaled(1000), LocalDir: t.TempDir(),
	}
	rep, err := Run(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, row := range rep.Rows(tg.Name) {
		if row.Metric != "ops_per_s" {
			continue
		}
		n++
		if row.Value <= 0 || row.CheckValue == nil {
			t.Errorf("%s: %v ops/s, check %v (note %q)", row.Case, row.Value, row.CheckValue, row.Note)
			continue
		}
		t.Logf("%-9s %8.0f ops/s  %-16s %8.0f", row.Case, row.Value, row.Check, *row.CheckValue)
		if strings.Contains(row.Note, "one client cache") {
			t.Errorf("%s: note %q, though each process had a mount", row.Case, row.Note)
		}
	}
	if n != 12 {
		t.Errorf("%d phase rows, want 12", n)
	}

	if err := target.Down(ctx, tc, "shared@1g"); err != nil {
		t.Fatalf("Down: %v", err)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mounts), base) {
		t.Errorf("mounts left under %s after Down", base)
	}
}
