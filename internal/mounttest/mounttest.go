// Package mounttest helps tests clean up the mounts they made. It is a
// package of its own, not part of testutil, because package mount's own
// tests use testutil.
package mounttest

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/mount"
)

// UnmountBelow detaches every mount below dir, innermost first, and
// returns the mount table it read. Errors unmounting are ignored: a test
// that leaked a mount has already failed on it, and cleanup goes on.
func UnmountBelow(dir string) ([]mount.Info, error) {
	ms, err := mount.List()
	if err != nil {
		return nil, err
	}
	var points []string
	for _, m := range ms {
		if strings.HasPrefix(m.Point, dir+"/") {
			points = append(points, m.Point)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(points)))
	for _, p := range points {
		unix.Unmount(p, unix.MNT_DETACH)
	}
	return ms, nil
}

// FakeFUSE mounts, at dir, a FUSE file system of type fstype ("fuse.NAME")
// and source src whose super block says uid made it: what fusermount makes
// for that user (the same mount call, made by root here), with no server
// behind it. Nothing that only reads the mount table asks the server
// anything. It is detached, and its connection closed, when the test ends.
func FakeFUSE(t testing.TB, dir, fstype, src string, uid, gid uint32) {
	t.Helper()
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("opening /dev/fuse: %v", err)
	}
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=%d,group_id=%d", fd, uid, gid)
	if err := unix.Mount(src, dir, fstype, unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		unix.Close(fd)
		t.Fatalf("mounting a %s at %s: %v", fstype, dir, err)
	}
	t.Cleanup(func() {
		unix.Unmount(dir, unix.MNT_DETACH)
		unix.Close(fd)
	})
}
