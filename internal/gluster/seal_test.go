package gluster

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// AwaitReadOnly returns at once where the probe is refused with EROFS,
// keeps trying while it is taken and fails at the deadline, and tries a
// refusal for another reason until the deadline, then accepts it. A
// tmpfs stands in for a volume's client: what AwaitReadOnly relies on in
// Gluster (a directory's setxattr answered by every brick) is in its
// comment; the cluster suite's Seal conformance test runs it on Gluster.
func TestAwaitReadOnly(t *testing.T) {
	testutil.RequireRoot(t)
	dir := testutil.TempDir(t)
	if err := unix.Mount("rsa-test", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	ctx := context.Background()

	err := AwaitReadOnly(ctx, dir, 300*time.Millisecond)
	if !errors.Is(err, ErrStillWritable) || !strings.Contains(err.Error(), "still took writes") {
		t.Errorf("AwaitReadOnly on a writable file system: %v; want an error that a brick still took writes", err)
	}

	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := AwaitReadOnly(ctx, dir, time.Minute); err != nil {
		t.Errorf("AwaitReadOnly on a read-only file system: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("AwaitReadOnly on a read-only file system took %v; want its first probe to end it", d)
	}

	// A file system without xattrs in the trusted namespace refuses the
	// probe with another error: accepted at the deadline, not before.
	proc := "/proc"
	start = time.Now()
	if err := AwaitReadOnly(ctx, proc, 300*time.Millisecond); err != nil {
		t.Errorf("AwaitReadOnly where the probe fails with another error: %v; want it accepted at the deadline", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("AwaitReadOnly accepted another error after %v, before its deadline", d)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := AwaitReadOnly(cancelled, filepath.Join(dir, "."), time.Minute); err != nil {
		t.Errorf("AwaitReadOnly, read-only, cancelled context: %v; want the refusal seen first", err)
	}
}
