package erofs

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// member is one tar entry a test writes.
type member struct {
	name     string
	typ      byte
	mode     int64
	uid, gid int
	mtime    time.Time
	data     []byte
	link     string // symlink target or hard link target
	xattrs   map[string]string
}

// tarOf writes members as a PAX tar, as the mover does.
func tarOf(t testing.TB, members []member) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range members {
		hdr := &tar.Header{
			Name: m.name, Typeflag: m.typ, Mode: m.mode, Uid: m.uid, Gid: m.gid,
			ModTime: m.mtime, Linkname: m.link, Format: tar.FormatPAX,
		}
		if m.typ == tar.TypeReg {
			hdr.Size = int64(len(m.data))
		}
		for k, v := range m.xattrs {
			if hdr.PAXRecords == nil {
				hdr.PAXRecords = map[string]string{}
			}
			hdr.PAXRecords["SCHILY.xattr."+k] = v
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatalf("tar header %q: %v", m.name, err)
		}
		if _, err := tw.Write(m.data); err != nil {
			t.Fatalf("tar data %q: %v", m.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// buildImage runs FromTar on a tar into a file in dir.
func buildImage(t testing.TB, dir string, tarBytes []byte, lim Limits) (string, Stats, error) {
	t.Helper()
	path := filepath.Join(dir, "image.erofs")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := FromTar(context.Background(), bytes.NewReader(tarBytes), f, lim)
	return path, st, err
}

// want is what a path in the image must look like.
type want struct {
	typ       fs.FileMode
	perm      uint32 // permission bits with setuid, setgid, sticky
	uid, gid  uint32
	size      int64
	sum       [32]byte
	target    string
	mtime     int64
	mtimeNsec int64
	linkGroup string // hard links share an inode: the first name of the group
	xattrs    map[string]string
}

// expected derives the tree the image must hold from the members,
// implicit parents included (mode 0755, the first child's owner and
// mtime).
func expected(members []member) map[string]*want {
	ws := map[string]*want{}
	rootGiven := false
	var first *member
	add := func(p string, w *want) { ws[p] = w }
	for i := range members {
		m := &members[i]
		p := strings.TrimSuffix(strings.TrimPrefix(m.name, "./"), "/")
		if p == "" || p == "." {
			p = "."
		}
		if p != "." && first == nil {
			first = m
		}
		// implicit parents
		if p != "." {
			parts := strings.Split(p, "/")
			for j := 1; j < len(parts); j++ {
				dp := strings.Join(parts[:j], "/")
				if _, ok := ws[dp]; !ok {
					add(dp, &want{typ: fs.ModeDir, perm: 0o755, uid: uint32(m.uid), gid: uint32(m.gid), mtime: m.mtime.Unix(), mtimeNsec: int64(m.mtime.Nanosecond())})
				}
			}
		}
		w := &want{perm: uint32(m.mode & 0o7777), uid: uint32(m.uid), gid: uint32(m.gid),
			mtime: m.mtime.Unix(), mtimeNsec: int64(m.mtime.Nanosecond()), xattrs: m.xattrs}
		switch m.typ {
		case tar.TypeReg:
			w.size = int64(len(m.data))
			w.sum = sha256.Sum256(m.data)
		case tar.TypeDir:
			w.typ = fs.ModeDir
			if p == "." {
				rootGiven = true
			}
		case tar.TypeSymlink:
			w.typ = fs.ModeSymlink
			w.target = m.link
			w.perm = 0o777 // Linux shows symlinks as 0777 whatever the header says
			w.size = int64(len(m.link))
		case tar.TypeLink:
			target := ws[strings.TrimPrefix(m.link, "./")]
			c := *target
			if c.linkGroup == "" {
				c.linkGroup = strings.TrimPrefix(m.link, "./")
				target.linkGroup = c.linkGroup
			}
			w = &c
		case tar.TypeFifo:
			continue
		}
		add(p, w)
	}
	if !rootGiven {
		r := &want{typ: fs.ModeDir, perm: 0o755}
		if first != nil {
			r.uid, r.gid = uint32(first.uid), uint32(first.gid)
			r.mtime, r.mtimeNsec = first.mtime.Unix(), int64(first.mtime.Nanosecond())
		}
		ws["."] = r
	}
	return ws
}

// compared says what compareTree checks beyond type, mode, owner, size,
// content and symlink target: a kernel mount shows everything, an
// fsck.erofs 1.5 extraction neither hard links, xattrs nor the setuid and
// setgid bits (it chowns after chmod, which clears them).
type compared struct {
	mtime, hardLinks, xattrs, setid bool
}

// compareTree walks root and checks every entry against ws, and that
// nothing is missing or extra.
func compareTree(t testing.TB, root string, ws map[string]*want, cmp compared) {
	t.Helper()
	seen := map[string]bool{}
	inodes := map[string]uint64{} // link group -> inode
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		seen[rel] = true
		w, ok := ws[rel]
		if !ok {
			t.Errorf("%s: in the image, not in the stream", rel)
			return nil
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if got := fi.Mode().Type(); got != w.typ {
			t.Errorf("%s: type %v, want %v", rel, got, w.typ)
			return nil
		}
		mask := uint32(0o7777)
		if !cmp.setid {
			mask = 0o1777
		}
		if got := st.Mode & mask; got != w.perm&mask {
			t.Errorf("%s: mode %o, want %o", rel, got, w.perm&mask)
		}
		if st.Uid != w.uid || st.Gid != w.gid {
			t.Errorf("%s: owner %d:%d, want %d:%d", rel, st.Uid, st.Gid, w.uid, w.gid)
		}
		if cmp.mtime && (st.Mtim.Sec != w.mtime || st.Mtim.Nsec != w.mtimeNsec) {
			t.Errorf("%s: mtime %d.%09d, want %d.%09d", rel, st.Mtim.Sec, st.Mtim.Nsec, w.mtime, w.mtimeNsec)
		}
		switch w.typ {
		case 0:
			if st.Size != w.size {
				t.Errorf("%s: size %d, want %d", rel, st.Size, w.size)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Errorf("%s: %v", rel, err)
			} else if sha256.Sum256(b) != w.sum {
				t.Errorf("%s: content differs", rel)
			}
			if cmp.hardLinks && w.linkGroup != "" {
				if ino, ok := inodes[w.linkGroup]; ok && ino != st.Ino {
					t.Errorf("%s: inode %d, want %d (hard link of %s)", rel, st.Ino, ino, w.linkGroup)
				}
				inodes[w.linkGroup] = st.Ino
			}
		case fs.ModeSymlink:
			target, err := os.Readlink(p)
			if err != nil || target != w.target {
				t.Errorf("%s: symlink to %q (%v), want %q", rel, target, err, w.target)
			}
		}
		for k, v := range w.xattrs {
			if !cmp.xattrs {
				break
			}
			buf := make([]byte, 65536)
			n, err := unix.Lgetxattr(p, k, buf)
			if err != nil || string(buf[:n]) != v {
				t.Errorf("%s: xattr %s = %q (%v), want %q", rel, k, buf[:max(n, 0)], err, v)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for p := range ws {
		if !seen[p] {
			missing = append(missing, p)
		}
	}
	sort.Strings(missing)
	for _, p := range missing {
		t.Errorf("%s: in the stream, not in the image", p)
	}
}

// fsck runs fsck.erofs on an image, extracting it to a new directory if
// extract is set, and returns that directory.
func fsck(t testing.TB, image string, extract bool) string {
	t.Helper()
	tool := testutil.RequireTool(t, "fsck.erofs")
	args := []string{image}
	dir := ""
	if extract {
		dir = filepath.Join(t.TempDir(), "x")
		args = []string{"--extract=" + dir, "--preserve", image}
	}
	out, err := exec.Command(tool, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("fsck.erofs %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return dir
}

// mountImage mounts image read-only at a new directory and returns it.
// The kernel mounts a regular file directly since 6.12; before that, a
// read-only loop device is set up. Cleanup unmounts and detaches, even if
// the test fails.
func mountImage(t testing.TB, image string) string {
	t.Helper()
	testutil.RequireRoot(t)
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const flags = unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	err := unix.Mount(image, dir, "erofs", flags, "")
	if err == nil {
		t.Cleanup(func() { unmount(t, dir) })
		return dir
	}
	if !errors.Is(err, syscall.ENOTBLK) {
		t.Fatalf("mount -t erofs %s: %v (dmesg may say why)", image, err)
	}
	losetup := testutil.RequireTool(t, "losetup")
	out, lerr := exec.Command(losetup, "--find", "--show", "--read-only", image).Output()
	if lerr != nil {
		t.Fatalf("losetup %s: %v", image, lerr)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command(losetup, "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v\n%s", dev, err, out)
		}
	})
	if err := unix.Mount(dev, dir, "erofs", flags, ""); err != nil {
		t.Fatalf("mount -t erofs %s (loop of %s): %v", dev, image, err)
	}
	t.Cleanup(func() { unmount(t, dir) })
	return dir
}

func unmount(t testing.TB, dir string) {
	if err := unix.Unmount(dir, 0); err != nil {
		t.Errorf("unmount %s: %v", dir, err)
		unix.Unmount(dir, unix.MNT_DETACH)
	}
}

func bytesOf(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7+i/4096)
	}
	return b
}

func name255(c byte) string { return strings.Repeat(string(c), 255) }
