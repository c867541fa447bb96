package stage

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

var writeSeeds = flag.Bool("write-seeds", false, "FuzzUnpack: rewrite testdata/fuzz/FuzzUnpack/seed-* from unpackSeeds")

// fuzzParent is where FuzzUnpack unpacks, on a small tmpfs of its own: a
// fixed path, so that seeds can aim absolute symlinks and hard links at its
// sentinel directory, and a small file system, so that an archive that
// expands without bound stops at ENOSPC instead of filling the disk.
const fuzzParent = "/tmp/rsa-fuzz-unpack"

// FuzzUnpack unpacks an archive, as `rsa copy --unpack` and the built-in
// stage-in "unpack" do (UnpackAll), into a fresh directory beside a
// sentinel directory, and checks what a hostile archive must not achieve:
// a panic or a hang, a change outside the destination (the sentinel, its
// siblings, the archive itself), a symlink followed out of the destination,
// or more bytes written than the archive holds. The seeds in
// testdata/fuzz/FuzzUnpack are built by unpackSeeds (-write-seeds).
func FuzzUnpack(f *testing.F) {
	testutil.RequireRoot(f) // mounts a tmpfs
	if *writeSeeds {
		writeUnpackSeeds(f)
	}
	if err := os.MkdirAll(fuzzParent, 0o755); err != nil {
		f.Fatal(err)
	}
	// The lock is a file beside the mount point, not the directory: a
	// worker that opened the directory while another's tmpfs was mounted
	// on it would lock that tmpfs, and both would unpack at once.
	lock, err := os.OpenFile(fuzzParent+".lock", os.O_CREATE|os.O_RDONLY, 0o600)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { lock.Close() })
	f.Fuzz(func(t *testing.T, archive []byte) {
		// One unpack at a time on this machine, the path being fixed;
		// locked for each input, not for the test: when fuzzing, this
		// process is the coordinator and its workers (processes of
		// their own) run the inputs.
		if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
			t.Fatal(err)
		}
		defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)
		for unix.Unmount(fuzzParent, unix.MNT_DETACH) == nil {
			// left mounted by a run that was killed
		}
		if err := unix.Mount("rsa-fuzz", fuzzParent, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=64m,mode=755"); err != nil {
			t.Fatal(err)
		}
		defer unix.Unmount(fuzzParent, unix.MNT_DETACH)
		unpackContained(t, archive)
	})
}

func unpackContained(t *testing.T, archive []byte) {
	sentinel := filepath.Join(fuzzParent, "sentinel")
	arc := filepath.Join(fuzzParent, "in.tar")
	dst := filepath.Join(fuzzParent, "dst")
	mkSentinel(t, sentinel)
	if err := os.WriteFile(arc, archive, 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, fuzzParent, "dst")

	done := make(chan error, 1)
	go func() {
		_, err := (&Mover{Workers: 2}).UnpackAll(context.Background(), arc, dst)
		done <- err
	}()
	select {
	case err := <-done:
		// The tmpfs holds 64 MiB; the archive, at most a few.
		if errors.Is(err, unix.ENOSPC) {
			t.Fatalf("an archive of %d bytes filled 64 MiB: %v", len(archive), err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("unpacking has not ended after 30s")
	}

	if after := snapshot(t, fuzzParent, "dst"); !reflect.DeepEqual(before, after) {
		for k, v := range after {
			if before[k] != v {
				t.Errorf("%s: %s, was %s", k, v, before[k])
			}
		}
		for k := range before {
			if _, ok := after[k]; !ok {
				t.Errorf("%s: removed", k)
			}
		}
		t.Fatal("unpacking changed what is outside the destination")
	}
	if fi, err := os.Lstat(dst); err != nil || !fi.IsDir() {
		t.Fatalf("the destination is not a directory: %v %v", fi, err)
	}
	// Every byte in the destination comes from the archive: there is no
	// compression, so more would be a bomb (a sparse member, say).
	var written int64
	seen := map[uint64]bool{}
	filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() {
			if st := fi.Sys().(*syscall.Stat_t); !seen[st.Ino] {
				seen[st.Ino] = true
				written += fi.Size()
			}
		}
		return nil
	})
	if written > int64(len(archive)) {
		t.Fatalf("%d bytes unpacked from an archive of %d", written, len(archive))
	}
}

// mkSentinel makes the directory an escape would write into.
func mkSentinel(t *testing.T, dir string) {
	t.Helper()
	for _, err := range []error{
		os.MkdirAll(filepath.Join(dir, "dir"), 0o755),
		os.WriteFile(filepath.Join(dir, "file"), []byte("sentinel"), 0o644),
		os.WriteFile(filepath.Join(dir, "dir", "file"), []byte("sentinel"), 0o600),
		os.Symlink("file", filepath.Join(dir, "link")),
		os.Chtimes(filepath.Join(dir, "file"), ts, ts),
		os.Chtimes(filepath.Join(dir, "dir", "file"), ts, ts),
		os.Chtimes(filepath.Join(dir, "dir"), ts, ts),
		os.Chtimes(dir, ts, ts),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// snapshot describes every entry under root but skip: type and mode,
// owner, link count, size, times, content, link target and extended
// attributes.
func snapshot(t *testing.T, root, skip string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch rel {
		case skip:
			return fs.SkipDir
		case ".":
			return nil // its times change as the destination is made
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		desc := fmt.Sprintf("mode %o uid %d gid %d nlink %d size %d mtime %d.%d", st.Mode, st.Uid, st.Gid, st.Nlink, st.Size, st.Mtim.Sec, st.Mtim.Nsec)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" sha256 %x", sha256.Sum256(b))
		case unix.S_IFLNK:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + strconv.Quote(l)
		}
		buf := make([]byte, 4096)
		if n, err := unix.Llistxattr(p, buf); err == nil && n > 0 {
			names := strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00")
			slices.Sort(names)
			desc += " xattrs " + strings.Join(names, ",")
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// seedTime has no fraction of a second: USTAR holds it, and the seeds need
// no PAX record for it.
var seedTime = ts.Truncate(time.Second)

// tarEntry is one member of a seed archive.
type tarEntry struct {
	hdr  tar.Header
	body string
}

func tarReg(name, body string) tarEntry {
	return tarEntry{tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: seedTime}, body}
}

func tarDir(name string) tarEntry {
	return tarEntry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: seedTime}}
}

func tarSymlink(name, target string) tarEntry {
	return tarEntry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777, ModTime: seedTime}}
}

func tarLink(name, target string) tarEntry {
	return tarEntry{hdr: tar.Header{Typeflag: tar.TypeLink, Name: name, Linkname: target, Mode: 0o644, ModTime: seedTime}}
}

func buildTar(t testing.TB, format tar.Format, es ...tarEntry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range es {
		h := e.hdr
		if h.Format == tar.FormatUnknown {
			h.Format = format
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatalf("%s: %v", h.Name, err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// paxSparse is an archive of one member in GNU tar's PAX sparse format 1.0
// (tar --sparse --format=pax): one data byte, in a file of size bytes.
// archive/tar writes no sparse member, so the PAX header is written as a
// plain member whose type is then changed.
func paxSparse(t testing.TB, name string, size int64) []byte {
	t.Helper()
	records := ""
	for _, kv := range [][2]string{
		{"GNU.sparse.major", "1"}, {"GNU.sparse.minor", "0"},
		{"GNU.sparse.name", name}, {"GNU.sparse.realsize", strconv.FormatInt(size, 10)},
	} {
		rec := " " + kv[0] + "=" + kv[1] + "\n"
		n := len(rec)
		for len(strconv.Itoa(n))+len(rec) != n {
			n = len(strconv.Itoa(n)) + len(rec)
		}
		records += strconv.Itoa(n) + rec
	}
	// The 1.0 map leads the data: one entry (offset size-1, 1 byte),
	// padded to a block, then the data.
	data := fmt.Sprintf("1\n%d\n1\n", size-1)
	data += strings.Repeat("\x00", 512-len(data)) + "x"
	b := buildTar(t, tar.FormatUSTAR,
		tarEntry{tar.Header{Typeflag: tar.TypeReg, Name: "PaxHeaders/" + name, Mode: 0o644, Size: int64(len(records)), ModTime: seedTime}, records},
		tarReg("GNUSparseFile/"+name, data))
	hdr := b[:512]
	hdr[156] = tar.TypeXHeader
	copy(hdr[148:156], "        ")
	sum := 0
	for _, c := range hdr {
		sum += int(c)
	}
	copy(hdr[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return b
}

// unpackSeeds are archives of what an unpacker must survive.
func unpackSeeds(t testing.TB) map[string][]byte {
	long := strings.Repeat("d123456789/", 30) + "file" // > 255 bytes: PAX path
	pax := tarReg("pax-path", "pax")
	pax.hdr.PAXRecords = map[string]string{"path": "../sentinel/pax", "SCHILY.xattr.user.rsa": "x", "SCHILY.xattr.trusted.rsa": "x"}
	paxLink := tarSymlink("pax-link", "file")
	paxLink.hdr.PAXRecords = map[string]string{"linkpath": "/tmp/rsa-fuzz-unpack/sentinel"}
	setuid := tarReg("setuid", "#!/bin/sh\n")
	setuid.hdr.Mode = 0o4755
	top := tarDir("./")
	top.hdr.Mode = 0o7777
	dev := tarEntry{hdr: tar.Header{Typeflag: tar.TypeChar, Name: "null", Mode: 0o666, Devmajor: 1, Devminor: 3, ModTime: seedTime}}
	fifo := tarEntry{hdr: tar.Header{Typeflag: tar.TypeFifo, Name: "fifo", Mode: 0o644, ModTime: seedTime}}
	// The format archive/tar picks: USTAR unless a member needs PAX. The
	// two blocks of zeros that end an archive are left out (archive/tar
	// reads to EOF as well): the fuzzer minimizes every input it finds
	// interesting one byte at a time, and does it faster on smaller ones.
	mk := func(es ...tarEntry) []byte {
		b := buildTar(t, tar.FormatUnknown, es...)
		return b[:len(b)-1024]
	}
	return map[string][]byte{
		"tree": buildTar(t, tar.FormatUnknown, top, tarDir("a/"), tarReg("a/f", "hello"), tarDir("a/b/"), tarReg("a/b/g", ""), tarReg("loose/file", "parents made"),
			tarSymlink("a/l", "f"), tarLink("a/h", "a/f"), fifo, dev, setuid),
		"empty":     buildTar(t, tar.FormatUnknown),
		"truncated": mk(tarReg("a", strings.Repeat("x", 2000)))[:1200],
		"gnu":       buildTar(t, tar.FormatGNU, tarDir("g/"), tarReg("g/"+strings.Repeat("n", 200), "gnu long name"), tarSymlink("g/l", strings.Repeat("../", 60))),
		// Symlinks out, then members through them.
		"symlink-then-file":     mk(tarSymlink("link", "../sentinel"), tarReg("link/pwned", "x")),
		"abs-symlink-then-file": mk(tarSymlink("abs", "/tmp/rsa-fuzz-unpack/sentinel"), tarReg("abs/pwned", "x"), tarReg("abs/file", "overwritten")),
		"symlink-then-dirs":     mk(tarSymlink("l", "../sentinel/dir"), tarDir("l/sub/"), tarReg("l/sub/f", "x"), tarDir("l/")),
		"symlink-to-file":       mk(tarSymlink("f", "../sentinel/file"), tarReg("f", "replaces the link, not the file")),
		"symlink-over-dir":      mk(tarDir("d/"), tarReg("d/f", "x"), tarSymlink("d", "../sentinel"), tarReg("d/g", "x")),
		"symlink-chain":         mk(tarSymlink("a", "b"), tarSymlink("b", "../sentinel"), tarReg("a/pwned", "x"), tarLink("c", "a/file")),
		"symlink-dotdot":        mk(tarDir("x/"), tarSymlink("x/up", ".."), tarSymlink("x/up2", "../.."), tarReg("x/up/inside", "x"), tarReg("x/up2/sentinel/pwned", "x")),
		"tmp-name-symlink":      mk(tarSymlink(".victim.rsa-tmp", "../sentinel/file"), tarReg("victim", "x")),
		"fifo-through-symlink":  mk(tarSymlink("s", "../sentinel"), tarEntry{hdr: tar.Header{Typeflag: tar.TypeFifo, Name: "s/fifo", Mode: 0o644}}),
		// Hard links out.
		"hardlink-out":           mk(tarLink("h", "../sentinel/file")),
		"hardlink-abs":           mk(tarLink("h", "/tmp/rsa-fuzz-unpack/sentinel/file")),
		"hardlink-via-symlink":   mk(tarSymlink("s", "../sentinel"), tarLink("h", "s/file")),
		"hardlink-to-symlink":    mk(tarSymlink("s", "../sentinel/file"), tarLink("h", "s"), tarReg("h", "x")),
		"hardlink-then-write":    mk(tarReg("f", "x"), tarLink("h", "f"), tarReg("h", "y")),
		"hardlink-to-dir":        mk(tarDir("d/"), tarLink("h", "d"), tarLink("h2", ".")),
		"hardlink-to-later-name": mk(tarLink("h", "later"), tarReg("later", "x")),
		// Names that climb out.
		"absolute-name": mk(tarReg("/tmp/rsa-fuzz-unpack/sentinel/pwned", "x")),
		"dotdot-names":  mk(tarReg("../sentinel/pwned", "x"), tarReg("a/../../sentinel/pwned", "x"), tarReg("./../x", "x"), tarDir("../sentinel/d/"), tarReg("..", "x")),
		"dot-names":     mk(tarReg(".", "x"), tarReg("./.", "x"), tarSymlink(".", "/"), tarReg("a/./b/.", "x")),
		"pax-records":   mk(pax, paxLink, tarReg("pax-link/pwned", "x")),
		"long-names":    mk(tarReg(long, "deep"), tarSymlink("long-link", strings.Repeat("x", 5000)), tarReg(strings.Repeat("y", 300), "too long for a name")),
		"duplicates":    mk(tarReg("d", "file"), tarDir("d/"), tarReg("d/x", "x"), tarDir("e/"), tarReg("e", "file over dir"), tarReg("d", "again")),
		// GNU tar --sparse: a few bytes that claim a terabyte.
		"sparse-bomb":  paxSparse(t, "bomb", 1<<40),
		"sparse-small": paxSparse(t, "small", 4096),
	}
}

func writeUnpackSeeds(t testing.TB) {
	dir := filepath.Join("testdata", "fuzz", "FuzzUnpack")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range unpackSeeds(t) {
		if err := os.WriteFile(filepath.Join(dir, "seed-"+name), fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
