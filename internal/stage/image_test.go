package stage

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/erofs"
)

// rootTmpfs mounts a tmpfs of size owned by root, mode 0700, as an engine
// builds the RAMDISK of an input image.
func rootTmpfs(t *testing.T, sd stageDirs, name, size string) string {
	t.Helper()
	dir := filepath.Join(sd.dir, name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size="+size+",mode=0700"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// The built-in stage-in with Task.Image: the user's pack streams the input
// into one erofs image, root's, in the RAMDISK's root, which checks and
// reads back whole; a file the user may not read fails the stage and
// leaves no image; a RAMDISK a user owns, or one too small, is refused.
func TestRunnerBuildsInputImage(t *testing.T) {
	sd := newStageDirs(t)
	r := &Runner{Self: rsaBin, Cgroups: testCgroups(t)}
	for i := range 50 {
		sub := filepath.Join(sd.data, fmt.Sprintf("d%d", i%5))
		os.MkdirAll(sub, 0o755)
		os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%d", i)), bytes.Repeat([]byte{byte(i)}, 100*i), 0o644)
	}
	os.Symlink("d0/f0", filepath.Join(sd.data, "link"))
	chownTree(t, sd.data, sd.who)

	ram := rootTmpfs(t, sd, "ram-img", "64M")
	var log bytes.Buffer
	var built ImageStats
	task := Task{Job: 9, Phase: "stage-in", User: sd.who, Ramdisk: ram, Data: sd.data, Log: &log, Image: true,
		Built: func(s ImageStats) { built = s }}
	if err := r.Run(context.Background(), task); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	img := filepath.Join(ram, ImageName)
	fi, err := os.Lstat(img)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || fi.Mode().Perm() != 0o400 {
		t.Fatalf("image is uid %d mode %v, want root's, 0400", st.Uid, fi.Mode())
	}
	if built.Bytes != fi.Size() || built.Entries != 50+5+1 {
		t.Fatalf("reported %+v for an image of %d bytes (want 56 entries)", built, fi.Size())
	}
	if !strings.Contains(log.String(), "input image of 56 entries") {
		t.Fatalf("log does not say what was built:\n%s", log.String())
	}
	f, _ := os.Open(img)
	err = erofs.Check(f, fi.Size())
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Read back through the kernel, as a compute node will.
	mnt := filepath.Join(sd.dir, "mnt")
	os.Mkdir(mnt, 0o755)
	if out, err := runCmd("mount", "-t", "erofs", "-o", "ro,nosuid,nodev,loop", img, mnt); err != nil {
		t.Fatalf("mounting the image: %v\n%s", err, out)
	}
	defer unix.Unmount(mnt, unix.MNT_DETACH)
	if out, err := runCmd("diff", "-r", "--no-dereference", sd.data, mnt); err != nil {
		t.Fatalf("the image differs from the input: %v\n%s", err, out)
	}
	unix.Unmount(mnt, 0)

	t.Run("unreadable input", func(t *testing.T) {
		secret := filepath.Join(sd.data, "d1", "secret")
		os.WriteFile(secret, []byte("root's"), 0o600)
		defer os.Remove(secret)
		log.Reset()
		err := r.Run(context.Background(), task)
		if err == nil || !strings.Contains(err.Error(), "secret") {
			t.Fatalf("a stage-in whose user cannot read a file: %v\n%s", err, log.String())
		}
		t.Log(err)
		if _, err := os.Lstat(img); !os.IsNotExist(err) {
			t.Fatalf("a failed build left its image: %v", err)
		}
	})
	t.Run("too small", func(t *testing.T) {
		os.WriteFile(filepath.Join(sd.data, "big"), make([]byte, 3<<20), 0o644)
		os.Chown(filepath.Join(sd.data, "big"), int(sd.who.UID), int(sd.who.GID))
		defer os.Remove(filepath.Join(sd.data, "big"))
		small := rootTmpfs(t, sd, "ram-small", "2M")
		tk := task
		tk.Ramdisk = small
		err := r.Run(context.Background(), tk)
		if err == nil || !strings.Contains(err.Error(), "input=files") || !strings.Contains(err.Error(), "capacity") {
			t.Fatalf("an input larger than its RAMDISK: %v", err)
		}
		t.Log(err)
		if _, err := os.Lstat(filepath.Join(small, ImageName)); !os.IsNotExist(err) {
			t.Fatalf("a refused build left its image: %v", err)
		}
	})
	t.Run("user's RAMDISK", func(t *testing.T) {
		tk := task
		tk.Ramdisk = sd.ram // the user's own directory
		err := r.Run(context.Background(), tk)
		if err == nil || !strings.Contains(err.Error(), "root's alone") {
			t.Fatalf("an image into a RAMDISK the user owns: %v", err)
		}
	})
}

func chownTree(t *testing.T, dir string, who Identity) {
	t.Helper()
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(who.UID), int(who.GID))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// An image stage-in runs the user's pack into the builder's pipe, with
// none of the flags that are about names in the RAMDISK (no --atomic,
// --check-listing or --sync, even on a RAMDISK that can lose a part:
// the image is checked whole), and a stream that is no tar is no image.
func TestImageStageInArgs(t *testing.T) {
	sd := newStageDirs(t)
	r, args := sd.fakeMover(t)
	ram := rootTmpfs(t, sd, "ram-args", "8M")
	err := r.Run(context.Background(), Task{Job: 4, Phase: "stage-in", User: sd.who, Ramdisk: ram, Data: sd.data,
		Private: true, Partial: true, Image: true})
	if err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("a pack that wrote nothing: %v, want the stream called truncated", err)
	}
	a := args()
	if !strings.Contains(a, "--pack --pack-fd=3 -- "+sd.data) || strings.Contains(a, "--atomic") || strings.Contains(a, "--check-listing") || strings.Contains(a, "--sync") {
		t.Errorf("the image's pack ran as %q", a)
	}
	if _, err := os.Lstat(filepath.Join(ram, ImageName)); !os.IsNotExist(err) {
		t.Errorf("no image, yet a file: %v", err)
	}
	if err := r.Run(context.Background(), Task{Job: 4, Phase: "stage-in", User: sd.who, Program: ModeUnpack, Ramdisk: ram, Data: sd.data, Image: true}); err == nil {
		t.Error("an image built by unpack")
	}
}
