package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

func TestLocalLifecycle(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	ctx := context.Background()
	root := filepath.Join(testutil.TempDir(t), "ramdisk")
	l, err := NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	r := Ramdisk{Job: 7, Dir: DirFor(root, 7), Parts: []job.Part{{Node: "local", Bytes: 8 << 20}}, UID: u.UID, GID: u.GID}
	t.Cleanup(func() { _ = l.Destroy(ctx, r) })
	if err := l.Construct(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := l.Construct(ctx, r); err != nil {
		t.Fatalf("Construct must be idempotent: %v", err)
	}
	var st unix.Stat_t
	if err := unix.Stat(r.Dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Uid != u.UID || st.Mode&0o777 != 0o700 {
		t.Fatalf("RAMDISK root owned by %d mode %o; want %d and 0700", st.Uid, st.Mode&0o777, u.UID)
	}
	m, ok, _ := mount.MountedAt(r.Dir)
	if !ok || m.FSType != "tmpfs" || m.Source != "rsa-7" {
		t.Fatalf("mount = %+v", m)
	}
	use, err := l.Usage(r)
	if err != nil || use.Size != 8<<20 {
		t.Fatalf("usage %+v %v", use, err)
	}
	// The size is a hard limit.
	big := make([]byte, 9<<20)
	if err := os.WriteFile(filepath.Join(r.Dir, "big"), big, 0o644); err == nil {
		t.Fatal("wrote 9M into an 8M RAMDISK")
	}
	found, _ := l.List(ctx)
	if len(found) != 1 || found[0].Job != 7 {
		t.Fatalf("List = %v", found)
	}
	// A bind mount at a job path goes with the RAMDISK.
	target := testutil.MkdirOwned(t, u, filepath.Join(filepath.Dir(root), "in"))
	if err := mount.Bind("input directory", r.Dir, target, u.UID); err != nil {
		t.Fatal(err)
	}
	if err := l.Destroy(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := l.Destroy(ctx, r); err != nil {
		t.Fatalf("Destroy must be idempotent: %v", err)
	}
	if _, ok, _ := mount.MountedAt(target); ok {
		t.Fatal("bind mount left at the job path")
	}
	if _, err := os.Stat(r.Dir); !os.IsNotExist(err) {
		t.Fatalf("mount point left: %v", err)
	}
}
