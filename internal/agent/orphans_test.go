package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/mounttest"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// TestReleaseOrphansOwner: the binds of a volume left after its client
// ended are found by source and type, which a user's FUSE mount can copy;
// only root's are detached, and a user's neither goes nor fails the
// release.
func TestReleaseOrphansOwner(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	dir := testutil.TempDir(t)
	const volume = "rsa-job-7"
	users := testutil.MkdirOwned(t, u, filepath.Join(dir, "users"))
	roots := filepath.Join(dir, "roots")
	if err := os.Mkdir(roots, 0o700); err != nil {
		t.Fatal(err)
	}
	mounttest.FakeFUSE(t, users, "fuse.glusterfs", "rsa1:/"+volume, u.UID, u.GID)
	mounttest.FakeFUSE(t, roots, "fuse.glusterfs", "rsa1:/"+volume, 0, 0)
	if err := releaseOrphans(volume); err != nil {
		t.Fatalf("releaseOrphans: %v", err)
	}
	if _, ok, err := mount.MountedAt(users); err != nil || !ok {
		t.Errorf("the user's FUSE mount named as %s: present %v (%v), want left alone", volume, ok, err)
	}
	if _, ok, err := mount.MountedAt(roots); err != nil || ok {
		t.Errorf("root's orphan of %s: present %v (%v), want detached", volume, ok, err)
	}
}
