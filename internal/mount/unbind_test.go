package mount

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// These tests use only what callers used before mount IDs (List, Binds,
// Unbind, MountedAt, Unmount), so that they also run against the
// mountinfo implementation they were written to catch.

// chain is a directory nested so deep below a test's directory that its
// path is longer than path system calls take: it is made and entered
// through descriptors.
type chain struct {
	fd   int // the deepest directory (O_PATH)
	path string
}

// deepDir makes a chain of directories below dir whose path is at least n
// bytes long.
func deepDir(t *testing.T, dir string, n int) chain {
	t.Helper()
	top, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(top) })
	c := chain{fd: top}
	var path strings.Builder
	path.WriteString(dir)
	for name := "deep"; path.Len() < n; name = strings.Repeat("d", 255) {
		if err := unix.Mkdirat(c.fd, name, 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(c.fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if c.fd != top {
			unix.Close(c.fd)
		}
		c.fd = next
		path.WriteString("/" + name)
	}
	c.path = path.String()
	t.Cleanup(func() { unix.Close(c.fd) })
	return c
}

// moveIn renames dir/name into the chain, as a user may rename their own
// directories, and returns its new path.
func (c chain) moveIn(t *testing.T, dir, name string) string {
	t.Helper()
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	if err := unix.Renameat(dfd, name, c.fd, name); err != nil {
		t.Fatal(err)
	}
	return c.path + "/" + name
}

// bindAt binds src over a new directory dir/rel owned by u.
func bindAt(t *testing.T, u testutil.User, src, dir, rel string) string {
	t.Helper()
	target := testutil.MkdirOwned(t, u, filepath.Join(dir, rel))
	if err := Bind("input directory", src, target, u.UID); err != nil {
		t.Fatal(err)
	}
	return target
}

// mountStandIn mounts a tmpfs at path, as a user's FUSE mount would be.
func mountStandIn(t *testing.T, path string) {
	t.Helper()
	if err := unix.Mount("user-standin", path, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	m, ok, err := MountedAt(path)
	if err != nil || !ok {
		t.Fatalf("the stand-in at %s is not in the mount table: %v", path, err)
	}
	t.Cleanup(func() { Unmount(m, true) }) // wherever the test moved it
}

// testDir is a fresh tmpfs on a testutil.TempDir (on which directories
// thousands deep are made quickly and removed at once), with a check when
// the test ends that it left nothing mounted in it (or, where the path is
// too long for List to give, anywhere with a test's source).
func testDir(t *testing.T) string {
	t.Helper()
	dir := testutil.TempDir(t)
	if err := unix.Mount("mounttest-scratch", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=64m,mode=0755"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer unix.Unmount(dir, unix.MNT_DETACH)
		ms, err := List()
		if err != nil {
			t.Errorf("List: %v", err)
			return
		}
		for _, m := range ms {
			if strings.HasPrefix(m.Point, dir+"/") || m.Point == "" && (m.Source == "rsa-mounttest" || m.Source == "user-standin") {
				t.Errorf("left mounted: %s at %.200s", m.Source, m.Point)
				Unmount(m, true)
			}
		}
	})
	return dir
}

// TestUnbindMovedDeep: a user renames a parent of their bound job directory
// so deep that its path is longer than PATH_MAX (which path system calls
// refuse), or than a mountinfo line may be: the table still reads, and
// Unbind still finds and removes the bind.
func TestUnbindMovedDeep(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	for _, c := range []struct {
		name   string
		length int
	}{
		{"longer than PATH_MAX", 5000},
		{"longer than 1 MiB", 1<<20 + 4096},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := testDir(t)
			deep := deepDir(t, dir, c.length)
			src := ramdisk(t, dir)
			bindAt(t, u, src, dir, "work/in")
			binds, err := Binds(src)
			if err != nil || len(binds) != 1 {
				t.Fatalf("binds = %v, %v; want one", binds, err)
			}
			moved := deep.moveIn(t, dir, "work") + "/in"

			ms, err := List()
			if err != nil {
				t.Fatalf("List with a mount point of %d bytes: %v", len(moved), err)
			}
			found := false
			for _, m := range ms {
				if m.ID == binds[0].ID {
					found = true
					if len(moved) < 1<<20 && m.Point != moved {
						t.Errorf("List gives the bind's point as %d bytes %.40q..., want the %d bytes it moved to", len(m.Point), m.Point, len(moved))
					}
				}
			}
			if !found {
				t.Errorf("List misses the moved bind %d", binds[0].ID)
			}

			if err := Unbind(src, false); err != nil {
				t.Fatalf("Unbind of a bind %d bytes deep: %v", len(moved), err)
			}
			if b, err := Binds(src); err != nil || len(b) != 0 {
				t.Fatalf("binds left: %v, %v", b, err)
			}
			var st unix.Stat_t
			if err := unix.Fstatat(deep.fd, "work/in", &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Uid != u.UID {
				t.Fatalf("the user's own directory is not back: uid %d, %v", st.Uid, err)
			}
		})
	}
}

// TestUnbindOthersUnaffected: however long a path another mount has (a
// user moved their own mount, RSA's or not, deep), the table reads and
// another job's RAMDISK is found and unbound as always.
func TestUnbindOthersUnaffected(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	for _, c := range []struct {
		name   string
		rsa    bool // the deep mount is another job's bind, not the user's own mount
		length int
	}{
		{"another job's bind, longer than PATH_MAX", true, 5000},
		{"another job's bind, longer than 1 MiB", true, 1<<20 + 4096},
		{"a user's mount, longer than 1 MiB", false, 1<<20 + 4096},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := testDir(t)
			deep := deepDir(t, dir, c.length)
			if c.rsa {
				other := ramdiskNamed(t, dir, "other")
				bindAt(t, u, other, dir, "work/in")
			} else {
				mountStandIn(t, testutil.MkdirOwned(t, u, filepath.Join(dir, "work", "in")))
			}
			deep.moveIn(t, dir, "work")

			src := ramdisk(t, dir)
			target := bindAt(t, u, src, dir, "job/in")
			if _, err := List(); err != nil {
				t.Fatalf("List: %v", err)
			}
			if m, ok, err := MountedAt(target); err != nil || !ok {
				t.Fatalf("MountedAt(%s) = %v, %v, %v; want the bind", target, m, ok, err)
			}
			if err := Unbind(src, false); err != nil {
				t.Fatalf("Unbind: %v", err)
			}
			if _, ok, err := MountedAt(target); err != nil || ok {
				t.Fatalf("still mounted at %s (%v)", target, err)
			}
		})
	}
}

// TestUnbindStacked: a user mounts something over their bound job
// directory, or inside it. A plain Unbind finds the bind busy and leaves
// it; a detaching one removes the bind and what is mounted on it.
func TestUnbindStacked(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	for _, c := range []struct {
		name string
		at   []string // where stand-ins are mounted, below the target
	}{
		{"over the bind", []string{""}},
		{"twice over the bind", []string{"", ""}},
		{"inside the bind", []string{"sub"}},
		{"inside and over the bind", []string{"sub", ""}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := testDir(t)
			src := ramdisk(t, dir)
			if err := os.Mkdir(filepath.Join(src, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			target := bindAt(t, u, src, dir, "work/in")
			for _, at := range c.at {
				mountStandIn(t, filepath.Join(target, at))
			}

			if err := Unbind(src, false); !errors.Is(err, ErrBusy) {
				t.Fatalf("Unbind with a mount on the bind: %v, want ErrBusy", err)
			}
			if b, _ := Binds(src); len(b) != 1 {
				t.Fatalf("a plain Unbind took the busy bind: binds %v", b)
			}
			if err := Unbind(src, true); err != nil {
				t.Fatalf("detaching Unbind: %v", err)
			}
			if b, err := Binds(src); err != nil || len(b) != 0 {
				t.Fatalf("binds left: %v %v", b, err)
			}
			if m, ok, err := MountedAt(target); err != nil || ok {
				t.Fatalf("left mounted at %s: %v (%v)", target, m, err)
			}
		})
	}
}

// TestUnmountAfterMove: a mount found in the table is unmounted where it is
// now, not where it was when it was found.
func TestUnmountAfterMove(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	dir := testDir(t)
	src := ramdisk(t, dir)
	bindAt(t, u, src, dir, "work/in")
	binds, err := Binds(src)
	if err != nil || len(binds) != 1 {
		t.Fatalf("binds = %v, %v; want one", binds, err)
	}
	work := filepath.Join(dir, "work")
	if err := os.Rename(work, work+"-moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", work); err != nil {
		t.Fatal(err)
	}
	if err := Unmount(binds[0], false); err != nil {
		t.Fatalf("Unmount after the user moved it: %v", err)
	}
	if b, err := Binds(src); err != nil || len(b) != 0 {
		t.Fatalf("binds left: %v %v", b, err)
	}
}

// TestUnbindHidden: a user mounts something over a directory above their
// bound job directory. RSA neither walks into that mount nor unmounts it;
// it says what hides its bind, and unbinds once it is gone.
func TestUnbindHidden(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	dir := testDir(t)
	src := ramdisk(t, dir)
	bindAt(t, u, src, dir, "work/in")
	work := filepath.Join(dir, "work")
	mountStandIn(t, work)

	err := Unbind(src, true)
	if err == nil || !strings.Contains(err.Error(), "hidden") || !strings.Contains(err.Error(), "tmpfs") {
		t.Fatalf("Unbind of a hidden bind: %v, want an error saying a tmpfs hides it", err)
	}
	if b, _ := Binds(src); len(b) != 1 {
		t.Fatalf("binds = %v, want the hidden one still there", b)
	}
	if _, ok, _ := MountedAt(work); !ok {
		t.Fatal("RSA unmounted the user's mount above its bind")
	}
	if err := unix.Unmount(work, 0); err != nil {
		t.Fatal(err)
	}
	if err := Unbind(src, true); err != nil {
		t.Fatalf("Unbind once uncovered: %v", err)
	}
}
