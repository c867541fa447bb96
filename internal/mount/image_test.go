package mount

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/erofs/erofstest"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// MountImage mounts a checked image read-only, nosuid, nodev by either
// backing, leaves no loop device once unmounted, and refuses an image it
// must not hand to the kernel: a user's, a writable one, a symlink, a
// truncated or corrupted one.
func TestMountImage(t *testing.T) {
	testutil.RequireRoot(t)
	dir := testutil.TempDir(t)
	img := filepath.Join(dir, "input.erofs")
	erofstest.WriteImage(t, img)
	point := filepath.Join(dir, "point")
	os.Mkdir(point, 0o700)

	for _, c := range []struct {
		name string
		opt  ImageOptions
		want ImageBacking
	}{{"file or loop", ImageOptions{}, ""}, {"loop", ImageOptions{Loop: true}, BackingLoop}} {
		t.Run(c.name, func(t *testing.T) {
			got, err := MountImage(img, point, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("backing: %s", got)
			if c.want != "" && got != c.want {
				t.Fatalf("backing %s, want %s", got, c.want)
			}
			b, err := os.ReadFile(filepath.Join(point, "hello"))
			if err != nil || string(b) != "world" {
				t.Fatalf("read %q, %v", b, err)
			}
			var sfs unix.Statfs_t
			unix.Statfs(point, &sfs)
			const want = unix.ST_RDONLY | unix.ST_NOSUID | unix.ST_NODEV
			if sfs.Flags&want != want {
				t.Fatalf("mount flags %#x lack ro,nosuid,nodev", sfs.Flags)
			}
			if got == BackingLoop && len(testutil.LoopsOf(img)) != 1 {
				t.Fatalf("loop devices on the image while mounted: %v", testutil.LoopsOf(img))
			}
			if err := unix.Unmount(point, 0); err != nil {
				t.Fatal(err)
			}
			if l := testutil.LoopsOf(img); len(l) != 0 {
				t.Fatalf("loop device left after the unmount: %v", l)
			}
		})
	}

	refuse := []struct {
		name, want string
		make       func(path string)
	}{
		{"user's", "root's", func(p string) { erofstest.WriteImage(t, p); os.Chown(p, 65534, 65534) }},
		{"writable", "no one else may write", func(p string) { erofstest.WriteImage(t, p); os.Chmod(p, 0o666) }},
		{"symlink", "symbolic link", func(p string) { os.Symlink(img, p) }},
		{"truncated", "not a valid image", func(p string) {
			erofstest.WriteImage(t, p)
			fi, _ := os.Stat(p)
			os.Truncate(p, fi.Size()-4096)
		}},
		{"corrupt", "not a valid image", func(p string) {
			erofstest.WriteImage(t, p)
			f, _ := os.OpenFile(p, os.O_WRONLY, 0)
			f.WriteAt(bytes.Repeat([]byte{0xff}, 64), 1024+64) // superblock fields after the checksum
			f.Close()
		}},
	}
	for i, c := range refuse {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, "bad"+string(rune('a'+i)))
			c.make(p)
			_, err := MountImage(p, point, ImageOptions{Loop: i%2 == 0})
			if err == nil {
				unix.Unmount(point, unix.MNT_DETACH)
				t.Fatalf("mounted a %s image", c.name)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("refused with %q, want it to say %q", err, c.want)
			}
			t.Log(err)
			if m, ok, _ := MountedAt(point); ok {
				t.Fatalf("something is mounted after a refusal: %+v", m)
			}
		})
	}
}
