package asuser

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// A check inside Do sees what the user sees: a root-only directory is
// closed to it, the user's own is open, and the daemon's other threads keep
// root's rights throughout.
func TestDoChecksWithTheUsersRights(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	dir := testutil.TempDir(t)
	secret := filepath.Join(dir, "secret")
	if err := os.MkdirAll(filepath.Join(secret, "inside"), 0o700); err != nil {
		t.Fatal(err)
	}
	own := testutil.MkdirOwned(t, u, filepath.Join(dir, "own"))
	id := Identity{UID: u.UID, GID: u.GID}
	for _, c := range []struct {
		path string
		want error
	}{
		{filepath.Join(secret, "inside"), unix.EACCES},
		{filepath.Join(secret, "missing"), unix.EACCES}, // not ENOENT: no oracle
		{own, nil},
	} {
		err := Do(id, func() error {
			var st unix.Stat_t
			return unix.Stat(c.path, &st)
		})
		if !errors.Is(err, c.want) && !(c.want == nil && err == nil) {
			t.Errorf("stat %s as %s: %v, want %v", c.path, u.Name, err, c.want)
		}
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(secret, "inside"), &st); err != nil {
			t.Fatalf("root lost its rights after Do: %v", err)
		}
	}
	if err := Do(Identity{}, func() error { return nil }); err == nil {
		t.Error("Do as uid 0 was allowed")
	}
}
