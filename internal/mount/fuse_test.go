package mount_test

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/mounttest"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// TestFUSEOwner: a user's FUSE mount that calls itself a Gluster client of
// some volume is told from root's by its owner.
func TestFUSEOwner(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	dir := testutil.TempDir(t)
	for _, c := range []struct {
		name     string
		uid, gid uint32
	}{
		{"root's, as RSA's Gluster clients", 0, 0},
		{"a user's, named as another job's volume", u.UID, u.GID},
	} {
		t.Run(c.name, func(t *testing.T) {
			at := testutil.MkdirOwned(t, u, dir+"/"+c.name)
			mounttest.FakeFUSE(t, at, "fuse.glusterfs", "rsa1:/rsa-job-7", c.uid, c.gid)
			m, ok, err := mount.MountedAt(at)
			if err != nil || !ok {
				t.Fatalf("the mount at %s: found %v, %v", at, ok, err)
			}
			uid, ok, err := mount.FUSEOwner(m)
			if err != nil || !ok || uid != c.uid {
				t.Fatalf("FUSEOwner = %d, %v, %v; want %d", uid, ok, err, c.uid)
			}
		})
	}
}

// TestUnmountStale: a mount found, gone, and its ID (and, often, device)
// given to a mount made since: Unmount of what was found leaves the new
// one. On kernels without listmount both numbers are reused lowest first,
// so this is what happens when a user unmounts their FUSE mount just after
// RSA listed it and another job's RAMDISK is made.
func TestUnmountStale(t *testing.T) {
	testutil.RequireRoot(t)
	dir := testutil.TempDir(t)
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount("users-fuse", a, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m"); err != nil {
		t.Fatal(err)
	}
	found, ok, err := mount.MountedAt(a)
	if err != nil || !ok {
		t.Fatalf("the mount at %s: %v %v", a, ok, err)
	}
	if err := unix.Unmount(a, 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("rsa-8", b, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(b, unix.MNT_DETACH) })
	now, _, _ := mount.MountedAt(b)
	t.Logf("found mount %d (%s), the new one %d (%s)", found.ID, found.Dev, now.ID, now.Dev)
	if err := mount.Unmount(found, true); err != nil {
		t.Fatalf("Unmount of a mount gone: %v", err)
	}
	if _, ok, err := mount.MountedAt(b); err != nil || !ok {
		t.Fatalf("the mount made since at %s: present %v (%v); Unmount of the stale one took it", b, ok, err)
	}
}
