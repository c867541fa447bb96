package engine

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/erofs/erofstest"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// PinBeside keeps the device number of an image mounted beside a RAMDISK
// from passing to another file system once the image is unmounted: while
// pinned, its loop device stays bound and a new image gets another, so
// processes found by the number are only ever the job's. Unpinned, the
// loop device goes.
func TestPinBesideKeepsTheDeviceNumber(t *testing.T) {
	testutil.RequireRoot(t)
	dir := testutil.TempDir(t)
	gate := filepath.Join(dir, "7")
	if err := os.Mkdir(gate, 0o700); err != nil {
		t.Fatal(err)
	}
	r := Ramdisk{Job: 7, Dir: filepath.Join(gate, "mnt")}
	img := filepath.Join(dir, "input.erofs")
	other := filepath.Join(dir, "other.erofs")
	erofstest.WriteImage(t, img)
	erofstest.WriteImage(t, other)
	point := ImagePoint(r)
	otherPoint := filepath.Join(dir, "other")
	for _, p := range []string{point, otherPoint} {
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Unmount(p, unix.MNT_DETACH) })
	}
	if _, err := mount.MountImage(img, point, mount.ImageOptions{Loop: true}); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(point, &st); err != nil {
		t.Fatal(err)
	}

	devs, unpin, err := PinBeside(r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(unpin)
	if len(devs) != 1 || devs[0] != st.Dev {
		t.Fatalf("pinned devices %v, want the image's %d:%d", devs, unix.Major(st.Dev), unix.Minor(st.Dev))
	}
	// Node access removes the mount; the job's processes, had it any,
	// would keep it alive detached.
	if err := unix.Unmount(point, unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	if n := len(testutil.LoopsOf(img)); n != 1 {
		t.Fatalf("%d loop devices on the pinned image after its unmount, want its own still bound", n)
	}
	if _, err := mount.MountImage(other, otherPoint, mount.ImageOptions{Loop: true}); err != nil {
		t.Fatal(err)
	}
	var ost unix.Stat_t
	if err := unix.Stat(otherPoint, &ost); err != nil {
		t.Fatal(err)
	}
	if ost.Dev == devs[0] {
		t.Fatalf("another image mounted meanwhile got the pinned device %d:%d", unix.Major(ost.Dev), unix.Minor(ost.Dev))
	}

	unpin()
	deadline := time.Now().Add(10 * time.Second)
	for len(testutil.LoopsOf(img)) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the image's loop device is still bound 10 s after unpin: %v", testutil.LoopsOf(img))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
