package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
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
	// Sealed, it refuses every write, root's included, at every mount.
	if err := l.Seal(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := l.Seal(ctx, r); err != nil {
		t.Fatalf("Seal must be idempotent: %v", err)
	}
	for _, p := range []string{filepath.Join(r.Dir, "late"), filepath.Join(target, "late")} {
		if err := os.WriteFile(p, []byte("x"), 0o644); !errors.Is(err, unix.EROFS) {
			t.Fatalf("write to sealed RAMDISK at %s: %v, want EROFS", p, err)
		}
	}
	// A process inside keeps it: Destroy says so instead of detaching it
	// and counting its RAM free (a detached tmpfs that a process still
	// holds keeps its RAM).
	hold := exec.Command("sleep", "60")
	hold.Dir = r.Dir
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { hold.Process.Kill(); hold.Wait() }()
	if err := l.Destroy(ctx, r); !errors.Is(err, ErrBusy) {
		t.Fatalf("Destroy of a held RAMDISK: %v, want ErrBusy", err)
	}
	if _, ok, _ := mount.MountedAt(r.Dir); !ok {
		t.Fatal("a held RAMDISK was unmounted")
	}
	hold.Process.Kill()
	hold.Wait()
	if err := l.Destroy(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := l.Destroy(ctx, r); err != nil {
		t.Fatalf("Destroy must be idempotent: %v", err)
	}
	if _, ok, err := mount.MountedAt(target); err != nil || ok {
		t.Fatalf("bind mount left at the job path: %v %v", ok, err)
	}
	for _, p := range []string{r.Dir, GateFor(root, 7)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s left: %v", p, err)
		}
	}
}

// Only the job's user passes the gate: a RAMDISK whose root carries the
// 0755 of the job's input directory is still closed to everyone else
// through ramdisk_root.
func TestLocalGate(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	ctx := context.Background()
	root := filepath.Join(testutil.TempDir(t), "ramdisk")
	l, err := NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	r := Ramdisk{Job: 8, Dir: DirFor(root, 8), Parts: []job.Part{{Node: "local", Bytes: 4 << 20}}, UID: u.UID, GID: u.GID, Inodes: 1100}
	t.Cleanup(func() { _ = l.Destroy(ctx, r) })
	if err := l.Construct(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(r.Dir, 0o755); err != nil { // as bind does for a 0755 input/
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.Dir, "secret"), []byte("s"), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func(uid uint32) error {
		cmd := exec.Command("cat", filepath.Join(r.Dir, "secret"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	if err := read(u.UID); err != nil {
		t.Fatalf("the job's user cannot reach its RAMDISK: %v", err)
	}
	if err := read(4242); err == nil {
		t.Fatal("another user read a file in the RAMDISK through ramdisk_root")
	}
	// The inode table is bounded (nr_inodes).
	var st unix.Statfs_t
	if err := unix.Statfs(r.Dir, &st); err != nil || st.Files != 1100 {
		t.Fatalf("inodes %d (%v), want 1100", st.Files, err)
	}
	// Revoked, the gate admits no one but root.
	if err := l.Revoke(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := read(u.UID); err == nil {
		t.Fatal("the job's user still passes a revoked gate")
	}
}
