package stage

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// fileSystems returns a directory on the machine's disk (ext4 here) and one
// on a fresh tmpfs, the two kinds RSA copies between.
func fileSystems(t *testing.T) map[string]string {
	t.Helper()
	testutil.RequireRoot(t)
	disk, err := os.MkdirTemp("/var/tmp", "rsa-mover-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(disk) })
	ram := filepath.Join(testutil.TempDir(t), "tmpfs")
	os.Mkdir(ram, 0o755)
	if err := unix.Mount("rsa-movertest", ram, "tmpfs", 0, "size=512m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(ram, unix.MNT_DETACH) })
	return map[string]string{"disk": disk, "tmpfs": ram}
}

var ts = time.Date(2001, 2, 3, 4, 5, 6, 789012345, time.UTC)

// tree builds a source with every kind of entry the mover must keep.
func tree(t *testing.T, root string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	w := func(rel string, b []byte, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(root, rel)
		must(os.MkdirAll(filepath.Dir(p), 0o755))
		must(os.WriteFile(p, b, mode))
		must(os.Chmod(p, mode))
		must(os.Chtimes(p, ts, ts))
	}
	w("small", []byte("small"), 0o640)
	w("exec", []byte("#!/bin/sh\n"), 0o755)
	w("empty", nil, 0o600)
	w("dir/a/b/c", bytes.Repeat([]byte("abc"), 100000), 0o644)
	big := make([]byte, 9<<20+123) // chunked: BigFile is lowered below
	for i := range big {
		big[i] = byte(i * 7)
	}
	w("big", big, 0o644)
	must(os.MkdirAll(filepath.Join(root, "emptydir", "inner"), 0o711))
	// Sparse: a hole of 64 MiB between two small extents.
	f, err := os.Create(filepath.Join(root, "sparse"))
	must(err)
	f.Write([]byte("head"))
	f.WriteAt([]byte("tail"), 64<<20)
	f.Close()
	must(os.Chtimes(filepath.Join(root, "sparse"), ts, ts))
	// Hard links, also across directories.
	must(os.Link(filepath.Join(root, "small"), filepath.Join(root, "dir", "small-link")))
	must(os.Link(filepath.Join(root, "small"), filepath.Join(root, "small-link2")))
	// Symlinks: relative, absolute out of the tree, dangling, looping.
	must(os.Symlink("dir/a/b/c", filepath.Join(root, "rel-link")))
	must(os.Symlink("/etc/shadow", filepath.Join(root, "out-link")))
	must(os.Symlink("nowhere", filepath.Join(root, "dangling")))
	must(os.Symlink("loop2", filepath.Join(root, "loop1")))
	must(os.Symlink("loop1", filepath.Join(root, "loop2")))
	must(unix.Mkfifo(filepath.Join(root, "fifo"), 0o620))
	// Names with a newline, with non-UTF-8 bytes, and of 255 bytes.
	w("new\nline", []byte("nl"), 0o644)
	w("bad-\xff\xfe-utf8", []byte("bytes"), 0o644)
	w(strings.Repeat("n", 255), []byte("long"), 0o644)
	// 48 levels deep.
	deep := root
	for i := range 48 {
		deep = filepath.Join(deep, strings.Repeat(string(rune('a'+i%26)), 40))
	}
	must(os.MkdirAll(deep, 0o755))
	w(strings.TrimPrefix(deep, root+"/")+"/bottom", []byte("deep"), 0o644)
	// A user.* extended attribute where the file system has them
	// (TestMoverKeepsEverything fails if none of its directions has).
	if err := unix.Setxattr(filepath.Join(root, "small"), "user.rsa.test", []byte("kept"), 0); err != nil && !errors.Is(err, unix.EOPNOTSUPP) {
		t.Fatalf("setxattr: %v", err)
	}
	// Directory times last.
	must(os.Chtimes(filepath.Join(root, "dir", "a"), ts, ts))
	must(os.Chtimes(filepath.Join(root, "emptydir"), ts, ts))
}

// sameTree compares two trees entry by entry, with every preserved property.
func sameTree(t *testing.T, src, dst string) {
	t.Helper()
	n := 0
	err := filepath.Walk(src, func(p string, a os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		q := filepath.Join(dst, rel)
		b, err := os.Lstat(q)
		if err != nil {
			t.Errorf("%q missing in the copy", rel)
			return nil
		}
		n++
		if a.Mode() != b.Mode() {
			t.Errorf("%q: mode %v, want %v", rel, b.Mode(), a.Mode())
		}
		if a.Mode()&os.ModeSymlink == 0 && !a.ModTime().Equal(b.ModTime()) && rel != "." {
			t.Errorf("%q: mtime %v, want %v", rel, b.ModTime(), a.ModTime())
		}
		switch {
		case a.Mode().IsRegular():
			x, _ := os.ReadFile(p)
			y, _ := os.ReadFile(q)
			if !bytes.Equal(x, y) {
				t.Errorf("%q: content differs", rel)
			}
		case a.Mode()&os.ModeSymlink != 0:
			x, _ := os.Readlink(p)
			y, _ := os.Readlink(q)
			if x != y {
				t.Errorf("%q: link %q, want %q", rel, y, x)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Fatalf("only %d entries compared", n)
	}
}

func TestMoverKeepsEverything(t *testing.T) {
	fss := fileSystems(t)
	xattrsCompared := 0
	defer func() {
		if xattrsCompared == 0 && !t.Failed() {
			t.Error("no direction kept an extended attribute: neither file system under test supports user.* xattrs")
		}
	}()
	for _, dir := range [][2]string{{"disk", "tmpfs"}, {"tmpfs", "disk"}, {"disk", "disk"}} {
		t.Run(dir[0]+"-to-"+dir[1], func(t *testing.T) {
			src := filepath.Join(fss[dir[0]], "src-"+dir[1])
			dst := filepath.Join(fss[dir[1]], "dst-"+dir[0])
			os.Mkdir(src, 0o750)
			os.Mkdir(dst, 0o700)
			tree(t, src)
			var warned []string
			// Into tmpfs with Private (final names at once), as a
			// stage-in into a new RAMDISK could copy.
			m := &Mover{Workers: 4, ChunkSize: 1 << 20, BigFile: 4 << 20, Verify: true, Atomic: dir[1] != "tmpfs",
				Warn: func(p, why string) { warned = append(warned, p) }}
			st, err := m.Copy(context.Background(), src, dst)
			if err != nil {
				t.Fatal(err)
			}
			sameTree(t, src, dst)
			// Hard links stay links.
			var a, b, c unix.Stat_t
			unix.Stat(filepath.Join(dst, "small"), &a)
			unix.Stat(filepath.Join(dst, "dir", "small-link"), &b)
			unix.Stat(filepath.Join(dst, "small-link2"), &c)
			if a.Ino != b.Ino || a.Ino != c.Ino || a.Nlink != 3 || st.HardLinks != 2 {
				t.Errorf("hard links not kept: %d %d %d nlink %d, stats %+v", a.Ino, b.Ino, c.Ino, a.Nlink, st)
			}
			// Sparse stays sparse.
			var sp unix.Stat_t
			unix.Stat(filepath.Join(dst, "sparse"), &sp)
			if sp.Size != 64<<20+4 || sp.Blocks*512 > 1<<20 {
				t.Errorf("sparse file: size %d, %d bytes allocated", sp.Size, sp.Blocks*512)
			}
			// The FIFO is recreated.
			if fi, err := os.Lstat(filepath.Join(dst, "fifo")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
				t.Errorf("fifo: %v %v", fi, err)
			}
			// xattrs where both sides support them.
			want := make([]byte, 16)
			if n, err := unix.Getxattr(filepath.Join(src, "small"), "user.rsa.test", want); err == nil {
				got := make([]byte, 16)
				m, err := unix.Getxattr(filepath.Join(dst, "small"), "user.rsa.test", got)
				switch {
				case errors.Is(err, unix.EOPNOTSUPP):
				case err != nil || string(got[:m]) != string(want[:n]):
					t.Errorf("xattr: %q %v", got[:max(m, 0)], err)
				default:
					xattrsCompared++
				}
			}
			// Nothing temporary is left.
			filepath.Walk(dst, func(p string, _ os.FileInfo, _ error) error {
				if strings.Contains(filepath.Base(p), ".rsa-tmp") {
					t.Errorf("temporary file left: %q", p)
				}
				return nil
			})
			// Resume: a second run copies nothing and changes nothing.
			st2, err := m.Copy(context.Background(), src, dst)
			if err != nil || st2.Skipped != st.Files-st.HardLinks && st2.Skipped < st.Files-2 {
				t.Errorf("resume: %+v, %v (first run %+v)", st2, err, st)
			}
			sameTree(t, src, dst)
		})
	}
}

func TestMoverSocketsSkippedWithWarning(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	fd, _ := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: filepath.Join(src, "sock")}); err != nil {
		testutil.CannotRun(t, "cannot make a socket here: %v", err)
	}
	var warned []string
	_, err := (&Mover{Warn: func(p, why string) { warned = append(warned, p+": "+why) }}).Copy(context.Background(), src, dst)
	if err != nil || len(warned) != 1 || !strings.Contains(warned[0], "sock") {
		t.Fatalf("err %v, warnings %v", err, warned)
	}
}

func TestMoverResumesAfterInterruption(t *testing.T) {
	for _, private := range []bool{false, true} {
		t.Run(fmt.Sprintf("private=%v", private), func(t *testing.T) { testResume(t, private) })
	}
}

// testResume interrupts a copy, once cancelled and once as if killed, and
// checks that a second run completes it. Private or not, a file is in
// place (name, size and time) only when it is complete.
func testResume(t *testing.T, private bool) {
	src, dst := t.TempDir(), t.TempDir()
	for i := range 300 {
		os.WriteFile(filepath.Join(src, "f"+string(rune('a'+i%26))+strings.Repeat("x", i%7)+"-"+itoa(i)), bytes.Repeat([]byte{byte(i)}, 20000), 0o644)
	}
	// Cancelled after the 20th file is in place, while workers still
	// copy others: the copy stops part-way and leaves no partial file,
	// under its final name or a temporary one.
	ctx, cancel := context.WithCancel(context.Background())
	m := &Mover{Workers: 2, Atomic: !private, fileDone: func(n int64) {
		if n == 20 {
			cancel()
		}
	}}
	if _, err := m.Copy(ctx, src, dst); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled copy: %v, want context.Canceled", err)
	}
	entries, err := os.ReadDir(dst)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".rsa-tmp") {
			t.Errorf("the cancelled copy left %s", e.Name())
		} else if b, err := os.ReadFile(filepath.Join(dst, e.Name())); err != nil || len(b) != 20000 {
			t.Errorf("the cancelled copy left %s with %d bytes (%v)", e.Name(), len(b), err)
		}
	}
	if len(entries) < 20 || len(entries) >= 300 {
		t.Fatalf("the cancelled copy left %d of 300 files, want it stopped part-way after 20", len(entries))
	}
	inPlace := int64(len(entries))
	// A copy killed mid-file leaves it partial: under its final name when
	// private, with the time of the kill (a copy's times are set last).
	// Another, killed after its write but before its times, looks whole.
	partial, unstamped := filepath.Join(dst, "zz-partial"), filepath.Join(dst, "zz-unstamped")
	os.WriteFile(filepath.Join(src, "zz-partial"), bytes.Repeat([]byte{7}, 20000), 0o644)
	os.WriteFile(filepath.Join(src, "zz-unstamped"), bytes.Repeat([]byte{8}, 20000), 0o644)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(src, "zz-partial"), old, old)
	os.Chtimes(filepath.Join(src, "zz-unstamped"), old, old)
	os.WriteFile(partial, bytes.Repeat([]byte{7}, 5000), 0o644)
	os.WriteFile(unstamped, bytes.Repeat([]byte{0}, 20000), 0o644)
	st, err := (&Mover{Workers: 2, Atomic: !private}).Copy(context.Background(), src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyTree(context.Background(), src, dst, 2); err != nil {
		t.Fatal(err)
	}
	if st.Files != 302 || st.Skipped != inPlace {
		t.Fatalf("resumed: %+v, want 302 files of which the %d in place skipped", st, inPlace)
	}
	if private { // the rest is the same either way
		return
	}
	// Content-level resume: same size and time, different bytes.
	victim := filepath.Join(dst, "fa-0")
	info, _ := os.Stat(victim)
	os.WriteFile(victim, bytes.Repeat([]byte{9}, 20000), 0o644)
	os.Chtimes(victim, info.ModTime(), info.ModTime())
	if _, err := (&Mover{}).Copy(context.Background(), src, dst); err != nil {
		t.Fatal(err)
	}
	if VerifyTree(context.Background(), src, dst, 2) == nil {
		t.Fatal("size+mtime resume should have kept the changed file; verify must catch it")
	}
	if _, err := (&Mover{Verify: true}).Copy(context.Background(), src, dst); err != nil {
		t.Fatalf("--verify resume should repair it: %v", err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestMoverReportsFailures(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	dir := testutil.TempDir(t)
	src := testutil.MkdirOwned(t, u, filepath.Join(dir, "src"))
	dst := testutil.MkdirOwned(t, u, filepath.Join(dir, "dst"))
	os.WriteFile(filepath.Join(src, "readable"), []byte("ok"), 0o644)
	os.WriteFile(filepath.Join(src, "secret"), []byte("root only"), 0o600) // root-owned
	// Run as the user, in a child, as the daemon does.
	out, err := runAsUser(t, u, "copy", src, dst)
	if err == nil || !strings.Contains(out, "secret") || !strings.Contains(out, "permission denied") {
		t.Fatalf("an unreadable file must fail the copy with its path and reason: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "readable")); string(b) != "ok" {
		t.Fatal("the readable file should still be copied")
	}
	if _, err := os.Stat(filepath.Join(dst, "secret")); err == nil {
		t.Fatal("a file appeared for the unreadable source")
	}
}

func TestMoverNoSpace(t *testing.T) {
	fss := fileSystems(t)
	small := filepath.Join(filepath.Dir(fss["tmpfs"]), "small")
	os.Mkdir(small, 0o755)
	if err := unix.Mount("rsa-small", small, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(small, unix.MNT_DETACH)
	src := filepath.Join(fss["disk"], "src")
	os.Mkdir(src, 0o755)
	for i := range 8 {
		os.WriteFile(filepath.Join(src, "f"+itoa(i)), make([]byte, 512<<10), 0o644)
	}
	_, err := (&Mover{}).Copy(context.Background(), src, small)
	var ns *NoSpaceError
	if !errors.As(err, &ns) || ns.Need != 4<<20 || ns.Room != 1<<20 || !strings.Contains(err.Error(), "request more RAM") {
		t.Fatalf("got %v", err)
	}
}

func TestPackUnpackRoundTrip(t *testing.T) {
	fss := fileSystems(t)
	src := filepath.Join(fss["disk"], "src")
	os.Mkdir(src, 0o750)
	tree(t, src)
	os.Remove(filepath.Join(src, "fifo")) // FIFOs round-trip too, but make the tree readable by tar tools
	archive := filepath.Join(fss["disk"], "out.tar")
	m := &Mover{Workers: 4}
	st, err := m.Pack(context.Background(), src, archive)
	if err != nil {
		t.Fatal(err)
	}
	if st.HardLinks != 2 {
		t.Errorf("pack stats %+v", st)
	}
	// GNU tar reads it.
	if out, err := runCmd("tar", "-tf", archive); err != nil || !strings.Contains(out, "dir/a/b/c") {
		t.Fatalf("tar -t: %v\n%s", err, out)
	}
	// Into a new directory, under final names at once and (Atomic) under
	// temporary names: the same tree, and nothing temporary left.
	for _, private := range []bool{false, true} {
		dst := filepath.Join(fss["tmpfs"], fmt.Sprintf("unpacked-private=%v", private))
		if _, err := (&Mover{Workers: 4, Atomic: !private}).Unpack(context.Background(), archive, dst); err != nil {
			t.Fatal(err)
		}
		sameTree(t, src, dst)
		filepath.Walk(dst, func(p string, _ os.FileInfo, _ error) error {
			if strings.Contains(filepath.Base(p), ".rsa-tmp") {
				t.Errorf("temporary file left: %q", p)
			}
			return nil
		})
	}
}

// TestPackReadAheadOverdrawn: files whose records outgrow what the walk
// took for them (it stats only a directory's first regular files, here
// tiny ones) make the readers take more of a read-ahead that holds a few
// at once; the batch the writer waits for overdraws it, so the pack
// ends, whole, instead of the writer and a reader waiting for each
// other.
func TestPackReadAheadOverdrawn(t *testing.T) {
	fss := fileSystems(t)
	src := filepath.Join(fss["tmpfs"], "mid")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range walkSamples {
		if err := os.WriteFile(filepath.Join(src, fmt.Sprintf("a-tiny%d", i)), []byte("sample"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	body := bytes.Repeat([]byte("0123456789abcdef"), 300<<10/16)
	for i := range 300 {
		if err := os.WriteFile(filepath.Join(src, fmt.Sprintf("f%03d", i)), body[:len(body)-i], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	archive := filepath.Join(fss["tmpfs"], "mid.tar")
	done := make(chan error, 1)
	go func() {
		_, err := (&Mover{Workers: 4, readAhead: 2 << 20}).Pack(context.Background(), src, archive)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Pack of 300 files of 300 KiB under a read-ahead of 2 MiB did not end in 2 minutes: its readers and writer wait for each other")
	}
	dst := filepath.Join(fss["tmpfs"], "mid-out")
	if _, err := (&Mover{Workers: 4}).Unpack(context.Background(), archive, dst); err != nil {
		t.Fatal(err)
	}
	sameTree(t, src, dst)
}

func TestUnpackRefusesEscapes(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(dir, "outside")
	os.Mkdir(outside, 0o755)
	// An archive with a symlink out of the target and a file written
	// through it, plus a '..' member.
	arc := filepath.Join(dir, "evil.tar")
	build := filepath.Join(dir, "build")
	os.Mkdir(build, 0o755)
	os.Symlink(outside, filepath.Join(build, "link"))
	if out, err := runCmd("tar", "-C", build, "-cf", arc, "link"); err != nil {
		t.Fatal(out)
	}
	os.Remove(filepath.Join(build, "link"))
	os.Mkdir(filepath.Join(build, "link"), 0o755)
	os.WriteFile(filepath.Join(build, "link", "pwned"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "up"), []byte("x"), 0o644)
	if out, err := runCmd("tar", "-C", build, "-rf", arc, "link/pwned"); err != nil {
		t.Fatal(out)
	}
	if out, err := runCmd("tar", "-C", build, "-rf", arc, "--absolute-names", "../up"); err != nil {
		t.Fatal(out)
	}
	dst := filepath.Join(dir, "dst")
	_, err := (&Mover{}).Unpack(context.Background(), arc, dst)
	if err == nil {
		t.Fatal("unpacking an escaping archive reported success")
	}
	if _, err := os.Stat(filepath.Join(outside, "pwned")); err == nil {
		t.Fatal("unpack wrote through a symlink out of the target")
	}
}

// TestUnpackRefusesSparse: a sparse member (GNU tar --sparse) is refused,
// not written out at its full size: FuzzUnpack found a 3.5 KiB archive
// that filled the file system with a terabyte of zeros.
func TestUnpackRefusesSparse(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	os.Mkdir(src, 0o755)
	os.WriteFile(filepath.Join(src, "after"), []byte("kept"), 0o644)
	f, err := os.Create(filepath.Join(src, "holes"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("x"), 64<<20)
	f.Close()
	archives := map[string]string{"bomb": filepath.Join(dir, "bomb.tar")}
	bomb := paxSparse(t, "holes", 1<<40)
	bomb = append(bomb[:len(bomb)-1024], buildTar(t, tar.FormatUnknown, tarReg("after", "kept"))...) // past its end blocks
	os.WriteFile(archives["bomb"], bomb, 0o644)
	for _, format := range []string{"gnu", "posix"} {
		archives[format] = filepath.Join(dir, format+".tar")
		if out, err := runCmd("tar", "-C", src, "--sparse", "--format="+format, "-cf", archives[format], "holes", "after"); err != nil {
			t.Fatal(out)
		}
	}
	for name, arc := range archives {
		t.Run(name, func(t *testing.T) {
			dst := filepath.Join(dir, "dst-"+name)
			_, err := (&Mover{}).Unpack(context.Background(), arc, dst)
			var ce *CopyError
			if !errors.As(err, &ce) || ce.Total != 1 || !strings.Contains(err.Error(), "sparse") {
				t.Fatalf("got %v, want the sparse member refused", err)
			}
			if _, err := os.Lstat(filepath.Join(dst, "holes")); err == nil {
				t.Error("the sparse member was written")
			}
			if b, err := os.ReadFile(filepath.Join(dst, "after")); string(b) != "kept" {
				t.Errorf("the member after it: %q %v", b, err)
			}
		})
	}
}

var rsaBin string

// TestMain builds the rsa binary where the test user can run it: the
// failure and security tests run `rsa copy --user` exactly as the daemon's
// staging does.
// TestMain keeps the main thread to the main goroutine, as rsa's main
// package does: the stage runner refuses to fork a stage from it.
func TestMain(m *testing.M) {
	runtime.LockOSThread()
	testutil.RunWithRSA(m, &rsaBin)
}

func runCmd(name string, args ...string) (string, error) {
	out, err := osexec.Command(name, args...).CombinedOutput()
	return string(out), err
}

// runAsUser runs `rsa <args> --user NAME` as root, which drops to the user.
func runAsUser(t *testing.T, u testutil.User, args ...string) (string, error) {
	t.Helper()
	return runCmd(rsaBin, append([]string{args[0], "--user", u.Name}, args[1:]...)...)
}

// TestCopyAsUserNeverUsesRootRights: as root with --user, a symlink in SRC
// to a root-only file is copied as a symlink (the file is never read), and
// a symlink the user planted in DST is replaced, never written through.
func TestCopyAsUserNeverUsesRootRights(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	dir := testutil.TempDir(t)
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte("root only"), 0o600)
	src := testutil.MkdirOwned(t, u, filepath.Join(dir, "src"))
	dst := testutil.MkdirOwned(t, u, filepath.Join(dir, "dst"))
	os.Symlink(secret, filepath.Join(src, "to-secret"))
	os.Lchown(filepath.Join(src, "to-secret"), int(u.UID), int(u.GID))
	os.WriteFile(filepath.Join(src, "data"), []byte("new content"), 0o644)
	os.Chown(filepath.Join(src, "data"), int(u.UID), int(u.GID))
	os.MkdirAll(filepath.Join(src, "sub"), 0o755)
	os.Chown(filepath.Join(src, "sub"), int(u.UID), int(u.GID))
	os.WriteFile(filepath.Join(src, "sub", "f"), []byte("in sub"), 0o644)
	os.Chown(filepath.Join(src, "sub", "f"), int(u.UID), int(u.GID))
	// Planted in DST: a symlink where a file goes, and one where a
	// directory goes, both pointing at a file and a directory outside.
	victim := testutil.MkdirOwned(t, u, filepath.Join(dir, "victim"))
	os.WriteFile(filepath.Join(victim, "file"), []byte("untouched"), 0o644)
	os.Chown(filepath.Join(victim, "file"), int(u.UID), int(u.GID))
	os.Symlink(filepath.Join(victim, "file"), filepath.Join(dst, "data"))
	os.Symlink(victim, filepath.Join(dst, "sub"))
	if out, err := runAsUser(t, u, "copy", "--verify", src, dst); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if l, err := os.Readlink(filepath.Join(dst, "to-secret")); err != nil || l != secret {
		t.Fatalf("the symlink to the root-only file was not copied as a symlink: %q %v", l, err)
	}
	if b, _ := os.ReadFile(filepath.Join(victim, "file")); string(b) != "untouched" {
		t.Fatal("wrote through a symlink planted in DST")
	}
	if _, err := os.Stat(filepath.Join(victim, "f")); err == nil {
		t.Fatal("created a file through a directory symlink planted in DST")
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "data")); string(b) != "new content" {
		t.Fatalf("data = %q", b)
	}
	var st unix.Stat_t
	unix.Lstat(filepath.Join(dst, "data"), &st)
	if st.Uid != u.UID {
		t.Fatalf("copy owned by uid %d, want the user's %d", st.Uid, u.UID)
	}
	if out, err := runCmd(rsaBin, "copy", "--user", "root", src, dst); err == nil {
		t.Fatalf("--user root must be refused: %s", out)
	}
}

// TestBWLimit: with --bwlimit the copy cannot read faster than the cap. Only
// a lower bound on the time is checked, which slowness cannot break.
func TestBWLimit(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	for i := range 6 {
		os.WriteFile(filepath.Join(src, "f"+itoa(i)), make([]byte, 1<<20), 0o644)
	}
	start := time.Now()
	if _, err := (&Mover{BWLimit: 4 << 20}).Copy(context.Background(), src, dst); err != nil {
		t.Fatal(err)
	}
	// 6 MiB at 4 MiB/s after a 1 MiB burst: at least 1.25 s.
	if el := time.Since(start); el < 1200*time.Millisecond {
		t.Fatalf("6 MiB copied in %v despite a 4 MiB/s cap", el)
	}
	if err := VerifyTree(context.Background(), src, dst, 2); err != nil {
		t.Fatal(err)
	}
}

// TestBWLimitChargesWhatIsRead: the cap is charged the bytes each read
// returns, on both ways a file's range is copied (copy_file_range, and
// pread and pwrite where it does not work, as from tmpfs to another file
// system), and each way copies the range whole. Charging what was asked
// for held a copy through pread to an eighth of its cap (8 MiB asked, one
// buffer read).
func TestBWLimitChargesWhatIsRead(t *testing.T) {
	const size = 20<<20 + 12345
	for _, c := range []struct {
		name     string
		src, dst string
		noCFR    bool
	}{
		{"copy_file_range", t.TempDir(), t.TempDir(), false},
		{"pread and pwrite", t.TempDir(), t.TempDir(), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, err := os.Create(filepath.Join(c.src, "f"))
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			if _, err := in.Write(bytes.Repeat([]byte("x"), size)); err != nil {
				t.Fatal(err)
			}
			out, err := os.Create(filepath.Join(c.dst, "f"))
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			r := &copyRun{ctx: context.Background(), limit: newLimiter(1 << 40)}
			r.noCFR.Store(c.noCFR)
			f := &fileCopy{r: r, in: int(in.Fd()), out: int(out.Fd())}
			if err := f.copyRange(0, size, false); err != nil {
				t.Fatal(err)
			}
			if got := r.bytes.Load(); got != size {
				t.Fatalf("copied %d bytes, want %d", got, size)
			}
			if r.limit.total != size {
				t.Errorf("the cap was charged %d bytes for %d read", r.limit.total, size)
			}
			got, err := os.ReadFile(out.Name())
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != size || bytes.Count(got, []byte("x")) != size {
				t.Errorf("the copy holds %d bytes, %d of them the source's; want %d", len(got), bytes.Count(got, []byte("x")), size)
			}
		})
	}
}

// TestPackVerifies: with Verify, Pack re-reads the archive against its
// source before giving it its name; a source file that changed after it
// was packed (same size, other bytes) fails the pack and leaves no archive,
// under its name or a temporary one.
func TestPackVerifies(t *testing.T) {
	src, out := t.TempDir(), t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		if err := os.WriteFile(filepath.Join(src, n), bytes.Repeat([]byte(n), 5000), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(out, "x.tar")
	changeAll := func(n int64) {
		if n == 3 {
			for _, f := range []string{"a", "b", "c"} {
				os.WriteFile(filepath.Join(src, f), bytes.Repeat([]byte("z"), 5000), 0o644)
			}
		}
	}
	_, err := (&Mover{Verify: true, fileDone: changeAll}).Pack(context.Background(), src, dst)
	if err == nil || !strings.Contains(err.Error(), "differs in the archive") {
		t.Fatalf("pack of a source that changed: %v, want a verification error", err)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Fatalf("a failed pack left %v", entries)
	}
	// Unchanged, the same pack verifies and is in place.
	if _, err := (&Mover{Verify: true}).Pack(context.Background(), src, dst); err != nil {
		t.Fatal(err)
	}
	if err := VerifyArchive(context.Background(), src, dst); err != nil {
		t.Fatal(err)
	}
}

// TestCopyVerifies: with Verify, Copy re-reads both sides at the end; a
// source file that changed after it was copied (same size and time, other
// bytes) fails the copy.
func TestCopyVerifies(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		if err := os.WriteFile(filepath.Join(src, n), bytes.Repeat([]byte(n), 5000), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	change := func(n int64) {
		if n == 3 {
			p := filepath.Join(src, "b")
			info, _ := os.Stat(p)
			os.WriteFile(p, bytes.Repeat([]byte("z"), 5000), 0o644)
			os.Chtimes(p, info.ModTime(), info.ModTime())
		}
	}
	_, err := (&Mover{Verify: true, fileDone: change}).Copy(context.Background(), src, dst)
	if err == nil || !strings.Contains(err.Error(), "verify") {
		t.Fatalf("copy of a source that changed: %v, want a verification error", err)
	}
	if _, err := (&Mover{Verify: true}).Copy(context.Background(), src, dst); err != nil {
		t.Fatalf("verified copy again: %v", err)
	}
}

// TestCopyChecksListing: a private copy into a file system that loses
// files it wrote, every write having succeeded (a distribute RAMDISK whose
// brick came back empty), fails with CheckListing and names what is
// missing, in a subdirectory too; without the check nothing tells, which
// is what the check is for.
func TestCopyChecksListing(t *testing.T) {
	for _, check := range []bool{true, false} {
		t.Run(fmt.Sprintf("check=%v", check), func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			if err := os.Mkdir(filepath.Join(src, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			for i := range 40 {
				dir := src
				if i%2 == 1 {
					dir = filepath.Join(src, "sub")
				}
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d", i)), bytes.Repeat([]byte{byte(i)}, 3000), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// When the last file is in place, the lost part takes
			// two that were written before.
			lose := func(n int64) {
				if n == 40 {
					os.Remove(filepath.Join(dst, "f00"))
					os.Remove(filepath.Join(dst, "sub", "f01"))
				}
			}
			_, err := (&Mover{Workers: 2, CheckListing: check, fileDone: lose}).Copy(context.Background(), src, dst)
			if !check {
				if err != nil {
					t.Fatalf("copy without the check: %v", err)
				}
				return
			}
			var ce *CopyError
			if !errors.As(err, &ce) || ce.Total != 2 || !strings.Contains(err.Error(), "listing check") ||
				!strings.Contains(err.Error(), "f00") || !strings.Contains(err.Error(), "sub/f01") {
				t.Fatalf("copy that lost two files: %v; want the listing check to name f00 and sub/f01", err)
			}
			if err := CheckListing(context.Background(), src, dst, 2); err == nil {
				t.Fatal("CheckListing passed a copy that lacks two files")
			}
			if _, err := (&Mover{CheckListing: true}).Copy(context.Background(), src, dst); err != nil {
				t.Fatalf("the copy run again: %v", err)
			}
			if err := os.Truncate(filepath.Join(dst, "sub", "f03"), 10); err != nil {
				t.Fatal(err)
			}
			if err := CheckListing(context.Background(), src, dst, 2); err == nil || !strings.Contains(err.Error(), "size 10 in the copy") {
				t.Fatalf("CheckListing of a copy with a short file: %v, want its size named", err)
			}
		})
	}
}

// TestProgressTotalsCountedOnce: the totals a copy reports are the
// source's, counted once, never a count that grows as the copy goes.
func TestProgressTotalsCountedOnce(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	var want int64
	for i := range 30 {
		b := bytes.Repeat([]byte{byte(i)}, 1000+i)
		want += int64(len(b))
		if err := os.WriteFile(filepath.Join(src, "f"+itoa(i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var seen []Progress
	m := &Mover{Workers: 2,
		// Slow enough that the count ends long before the copy.
		fileDone: func(int64) { time.Sleep(30 * time.Millisecond) },
		Progress: func(p Progress) { mu.Lock(); seen = append(seen, p); mu.Unlock() }}
	if _, err := m.Copy(context.Background(), src, dst); err != nil {
		t.Fatal(err)
	}
	if len(seen) < 2 {
		t.Fatalf("%d progress reports", len(seen))
	}
	for _, p := range seen {
		if p.TotalFiles != 0 && (p.TotalFiles != 30 || p.TotalBytes != want) {
			t.Fatalf("progress %+v: totals are not the source's 30 files, %d bytes", p, want)
		}
	}
	if last := seen[len(seen)-1]; last.Files != 30 || last.TotalFiles != 30 {
		t.Fatalf("last progress %+v", last)
	}
}

// TestMoverChunkLanes copies large files into tmpfs in chunks, one lane a
// file (tmpfs' own choice) and several, also more lanes than chunks: every
// lane's chunks land at their offsets and the file is finished once. Each
// file at least BigFile is copied chunk by chunk, every chunk once, in as
// many lanes as Lanes asks (no more than it has chunks), lane i taking
// every lanes-th chunk from chunk i; a smaller file is copied whole.
func TestMoverChunkLanes(t *testing.T) {
	fss := fileSystems(t)
	var fs unix.Statfs_t
	if err := unix.Statfs(fss["tmpfs"], &fs); err != nil {
		t.Fatal(err)
	}
	if lanes := chunkLanes(int64(fs.Type)); lanes != 1 {
		t.Errorf("chunkLanes(tmpfs) = %d, want 1: its writes hold the inode lock", lanes)
	}
	src := filepath.Join(fss["disk"], "src")
	os.Mkdir(src, 0o755)
	sizes := map[string]int{"unaligned": 9<<20 + 123, "aligned": 4 << 20, "below": 4<<20 - 1}
	for name, size := range sizes {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(i*31 + len(name))
		}
		if err := os.WriteFile(filepath.Join(src, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const chunk, big = 1 << 20, 4 << 20
	// One copy of a chunk: how many lanes its file went in, and which
	// lane copied it.
	type chunkCopy struct {
		lanes, lane int64
	}
	for _, lanes := range []int{0, 2, 3, 16} {
		t.Run(fmt.Sprintf("lanes=%d", lanes), func(t *testing.T) {
			dst := filepath.Join(fss["tmpfs"], fmt.Sprintf("dst-%d", lanes))
			os.Mkdir(dst, 0o755)
			var mu sync.Mutex
			copied := map[string]map[int64][]chunkCopy{} // file -> chunk -> its copies
			m := &Mover{Workers: 4, ChunkSize: chunk, BigFile: big, Lanes: lanes}
			m.chunkCopied = func(rel string, fileLanes, lane, i int64) {
				mu.Lock()
				defer mu.Unlock()
				if copied[rel] == nil {
					copied[rel] = map[int64][]chunkCopy{}
				}
				copied[rel][i] = append(copied[rel][i], chunkCopy{fileLanes, lane})
			}
			st, err := m.Copy(context.Background(), src, dst)
			if err != nil {
				t.Fatal(err)
			}
			asked := int64(lanes)
			if lanes == 0 {
				asked = 1 // tmpfs' own choice, checked above
			}
			for name, size := range sizes {
				chunks := copied[name]
				if size < big {
					if len(chunks) > 0 {
						t.Errorf("%s (%d bytes, below BigFile): copied in %d chunks, want whole", name, size, len(chunks))
					}
					continue
				}
				n := (int64(size) + chunk - 1) / chunk
				want := min(asked, n)
				if int64(len(chunks)) != n {
					t.Errorf("%s (%d bytes): %d chunks copied, want %d", name, size, len(chunks), n)
				}
				lanesUsed := map[int64]bool{}
				for i := range n {
					cs := chunks[i]
					if len(cs) != 1 {
						t.Errorf("%s: chunk %d copied %d times, want once", name, i, len(cs))
						continue
					}
					if c := cs[0]; c.lanes != want || c.lane != i%want {
						t.Errorf("%s: chunk %d copied by lane %d of %d, want lane %d of %d", name, i, c.lane, c.lanes, i%want, want)
					}
					lanesUsed[cs[0].lane] = true
				}
				if int64(len(lanesUsed)) != want {
					t.Errorf("%s: %d lanes copied its chunks, want %d", name, len(lanesUsed), want)
				}
			}
			if st.Files != int64(len(sizes)) {
				t.Errorf("%d files copied, want %d", st.Files, len(sizes))
			}
			for name := range sizes {
				x, _ := os.ReadFile(filepath.Join(src, name))
				y, err := os.ReadFile(filepath.Join(dst, name))
				if err != nil || !bytes.Equal(x, y) {
					t.Errorf("%s: %d bytes copied of %d, equal %v (%v)", name, len(y), len(x), bytes.Equal(x, y), err)
				}
			}
			if left, _ := filepath.Glob(filepath.Join(dst, ".*"+tmpSuffix)); len(left) > 0 {
				t.Errorf("temporary names left: %v", left)
			}
		})
	}
}

// A copy split in shares (Mover.Part), all running at once into one DST
// as the RSA nodes of a job do, then finished: the same tree as one copy
// makes, hard links across directories and shares kept, each share having
// copied a part of the files and no share a directory's attributes (a
// read-only directory would stop the others), with the listing checked.
func TestMoverSplitIntoShares(t *testing.T) {
	fss := fileSystems(t)
	src := filepath.Join(fss["disk"], "src-split")
	dst := filepath.Join(fss["tmpfs"], "dst-split")
	os.Mkdir(src, 0o750)
	os.Mkdir(dst, 0o700)
	tree(t, src)
	for i := range 60 {
		p := filepath.Join(src, "many", itoa(i%6), "f"+itoa(i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(itoa(i)), 0o644)
	}
	os.Chmod(filepath.Join(src, "many", "0"), 0o555) // no share may set it before the others are done
	defer os.Chmod(filepath.Join(src, "many", "0"), 0o755)
	const shares = 3
	var wg sync.WaitGroup
	stats := make([]Stats, shares)
	errs := make([]error, shares)
	for k := range shares {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := &Mover{Workers: 4, ChunkSize: 1 << 20, BigFile: 4 << 20, Part: Part{Index: k, Of: shares}}
			stats[k], errs[k] = m.Copy(context.Background(), src, dst)
		}()
	}
	wg.Wait()
	var files int64
	for k := range shares {
		if errs[k] != nil {
			t.Fatalf("share %d: %v", k, errs[k])
		}
		if stats[k].Files == 0 || stats[k].HardLinks != 0 {
			t.Errorf("share %d copied %+v: want some files and no hard link", k, stats[k])
		}
		files += stats[k].Files
	}
	var dirSt unix.Stat_t
	unix.Stat(filepath.Join(dst, "many", "0"), &dirSt)
	if dirSt.Mode&0o777 != 0o700 {
		t.Errorf("a share set a directory's mode (%#o) before the finish", dirSt.Mode&0o777)
	}
	fin := &Mover{Workers: 4, Part: Part{Finish: true}, CheckListing: true}
	st, err := fin.Copy(context.Background(), src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if st.Files+st.HardLinks != 3 || st.HardLinks != 2 {
		t.Errorf("the finish copied %+v: want the one file of three names", st)
	}
	sameTree(t, src, dst)
	var a, b, c unix.Stat_t
	unix.Stat(filepath.Join(dst, "small"), &a)
	unix.Stat(filepath.Join(dst, "dir", "small-link"), &b)
	unix.Stat(filepath.Join(dst, "small-link2"), &c)
	if a.Ino != b.Ino || a.Ino != c.Ino || a.Nlink != 3 {
		t.Errorf("hard links not kept across shares: %d %d %d nlink %d", a.Ino, b.Ino, c.Ino, a.Nlink)
	}
	// A share missing: the finish's listing fails.
	dst2 := filepath.Join(fss["tmpfs"], "dst-split2")
	os.Mkdir(dst2, 0o700)
	for k := range shares - 1 {
		m := &Mover{Workers: 4, Part: Part{Index: k, Of: shares}}
		if _, err := m.Copy(context.Background(), src, dst2); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := fin.Copy(context.Background(), src, dst2); err == nil {
		t.Error("the finish of a split copy with a share missing passed its listing check")
	}
}
