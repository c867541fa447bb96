// Package mounttest helps tests clean up the mounts they made. It is a
// package of its own, not part of testutil, because package mount's own
// tests use testutil.
package mounttest

import (
	"sort"
	"strings"

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
