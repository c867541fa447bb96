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

// ramdisk mounts a small tmpfs for a test and removes it afterwards.
func ramdisk(t *testing.T, dir string) string {
	t.Helper()
	return ramdiskNamed(t, dir, "ramdisk")
}

// ramdiskNamed is ramdisk at dir/name.
func ramdiskNamed(t *testing.T, dir, name string) string {
	t.Helper()
	src := filepath.Join(dir, name)
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("rsa-mounttest", src, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m,mode=0755"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = Unbind(src, true)
		_ = unix.Unmount(src, unix.MNT_DETACH)
	})
	return src
}

func TestTargetChecks(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	dir := testutil.TempDir(t)
	own := testutil.MkdirOwned(t, u, filepath.Join(dir, "own"))
	testutil.MkdirOwned(t, u, filepath.Join(dir, "own", "sub"))
	// Another user's, open to everyone (a project directory that is not
	// is TestProjectDirectories').
	other := filepath.Join(dir, "other")
	os.Mkdir(other, 0o777)
	os.Chown(other, 4242, 4242)
	unix.Chmod(other, 0o777)
	if err := os.Symlink(own, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(own, "file")
	os.WriteFile(file, nil, 0o644)
	os.Chown(file, int(u.UID), int(u.GID))

	for _, c := range []struct {
		path, want string
	}{
		{own, ""},
		{filepath.Join(dir, "missing"), "does not exist"},
		{filepath.Join(dir, "link"), "symbolic link"},
		{filepath.Join(dir, "link", "sub"), "symbolic link"},
		{other, "owned by uid 4242"},
		{"/etc", "owned by uid 0"},
		{file, "not a directory"},
		{"relative/path", "absolute"},
		{own + "/../own", "clean absolute"},
		{"/", "never mounts over /"},
	} {
		err := CheckTarget("input directory", c.path, u.UID)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.path, err)
			}
			continue
		}
		var te *TargetError
		if !errors.As(err, &te) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "input directory") {
			t.Errorf("%s: error %v, want one saying %q", c.path, err, c.want)
		}
	}
}

func TestBindAndUnbind(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	dir := testutil.TempDir(t)
	src := ramdisk(t, dir)
	if err := os.WriteFile(filepath.Join(src, "staged"), []byte("in RAM"), 0o644); err != nil {
		t.Fatal(err)
	}
	target := testutil.MkdirOwned(t, u, filepath.Join(dir, "work", "in"))
	if err := Bind("input directory", src, target, u.UID); err != nil {
		t.Fatal(err)
	}
	if err := Bind("input directory", src, target, u.UID); err != nil {
		t.Fatalf("second Bind must be a no-op: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(target, "staged")); err != nil || string(b) != "in RAM" {
		t.Fatalf("target does not show the RAMDISK: %q %v", b, err)
	}
	if binds, _ := Binds(src); len(binds) != 1 {
		t.Fatalf("binds = %v, want exactly one", binds)
	}

	// Busy: a process inside the mount keeps a plain unmount from working.
	f, err := os.Open(filepath.Join(target, "staged"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Unbind(src, false); !errors.Is(err, ErrBusy) {
		t.Fatalf("Unbind with an open file: %v, want ErrBusy", err)
	}
	f.Close()

	// The user renames the parent and plants a symlink where the mount
	// was: Unbind still finds the real mount and never follows the link.
	work := filepath.Join(dir, "work")
	if err := os.Rename(work, work+"-moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", work); err != nil {
		t.Fatal(err)
	}
	if err := Unbind(src, false); err != nil {
		t.Fatal(err)
	}
	if binds, err := Binds(src); err != nil || len(binds) != 0 {
		t.Fatalf("binds left: %v %v", binds, err)
	}
	if _, ok, err := MountedAt("/etc"); err != nil || ok {
		t.Fatalf("something got mounted at /etc: %v %v", ok, err)
	}
}

func TestBindRefusesSymlinkSwap(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	dir := testutil.TempDir(t)
	src := ramdisk(t, dir)
	link := filepath.Join(dir, "in")
	if err := os.Symlink("/var", link); err != nil {
		t.Fatal(err)
	}
	if err := Bind("input directory", src, link, u.UID); err == nil {
		t.Fatal("Bind followed a symlink")
	}
	if binds, _ := Binds(src); len(binds) != 0 {
		t.Fatalf("a mount was made: %v", binds)
	}
}

func TestPubliclyReachable(t *testing.T) {
	dir := t.TempDir() // 0700: closed to others
	open := filepath.Join(dir, "open")
	if err := os.MkdirAll(filepath.Join(open, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	if PubliclyReachable(filepath.Join(open, "in")) {
		t.Errorf("%s is reachable only through a 0700 directory, yet reported public", open)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} { // t.TempDir nests two 0700 levels
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if !PubliclyReachable(filepath.Join(open, "in")) {
		t.Errorf("%s is reachable by anyone, yet reported private", open)
	}
	if PubliclyReachable("relative/path") {
		t.Error("a relative path reported public")
	}
}
