package access

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// TestPreparePrivateRefusesAnInconsistentImage: an image e2fsck finds
// errors in that it leaves uncorrected (here its root inode cleared; in a
// cluster, what a full RAMDISK did to it) lacks what the job wrote: the
// stage-out's check fails with a WritebackLostError, and marks the image,
// so that a later try refuses it before e2fsck could fix it into a whole
// but lacking file system.
func TestPreparePrivateRefusesAnInconsistentImage(t *testing.T) {
	testutil.RequireRoot(t)
	debugfs := testutil.RequireTool(t, "debugfs")
	dir := testutil.TempDir(t)
	ram := filepath.Join(dir, "ram")
	if err := os.Mkdir(ram, 0o700); err != nil {
		t.Fatal(err)
	}
	rd := engine.Ramdisk{Job: 1, Dir: ram}
	image := PrivateImage(rd, "c1")
	ctx := context.Background()
	if err := mount.MakeExt4(ctx, image, 16<<20, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(debugfs, "-w", "-R", "clri <2>", image).CombinedOutput(); err != nil {
		t.Fatalf("debugfs: %v\n%s", err, out)
	}
	for try := range 2 {
		_, err := PreparePrivate(ctx, rd, []string{"c1"})
		var wl *WritebackLostError
		if !errors.As(err, &wl) || len(wl.Nodes) != 1 || wl.Nodes[0] != "c1" || !strings.Contains(wl.Error(), "its image failed its check") {
			t.Fatalf("try %d: PreparePrivate of an inconsistent image: %v; want a WritebackLostError for c1 saying its check failed", try, err)
		}
	}
	buf := make([]byte, 1024)
	if n, err := unix.Lgetxattr(image, writesLostXattr, buf); err != nil || !strings.Contains(string(buf[:n]), "failed its check") {
		t.Errorf("the image's mark: %q, %v", buf[:max(n, 0)], err)
	}
}
