package erofs

import (
	"archive/tar"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

var (
	t0 = time.Unix(1700000000, 0)
	tn = time.Unix(1700000123, 456789012)
)

func dir(name string, mode int64, uid int, mtime time.Time) member {
	return member{name: name, typ: tar.TypeDir, mode: mode, uid: uid, gid: uid, mtime: mtime}
}

func file(name string, data []byte) member {
	return member{name: name, typ: tar.TypeReg, mode: 0o644, uid: 4242, gid: 4242, mtime: t0, data: data}
}

func symlink(name, target string) member {
	return member{name: name, typ: tar.TypeSymlink, mode: 0o777, uid: 4242, gid: 4242, mtime: t0, link: target}
}

func hardlink(name, target string) member {
	return member{name: name, typ: tar.TypeLink, uid: 4242, gid: 4242, mtime: t0, link: target}
}

// roundTripTrees are the trees every round trip builds.
func roundTripTrees() map[string][]member {
	sizes := []member{dir("./", 0o755, 4242, t0)}
	for _, n := range []int{0, 1, 4095, 4096, 4097, 1<<20 + 3} {
		sizes = append(sizes, file(fmt.Sprintf("size-%d", n), bytesOf(n, byte(n))))
	}

	wide := []member{dir("./", 0o755, 0, t0), dir("wide/", 0o755, 4242, t0)}
	for i := range 5000 {
		wide = append(wide, file(fmt.Sprintf("wide/file-%05d-%s", i, strings.Repeat("x", i%40)), []byte(fmt.Sprint(i))))
	}

	deep := []member{dir("./", 0o700, 4242, t0)}
	p := ""
	for i := range 40 {
		p += fmt.Sprintf("d%d/", i)
		deep = append(deep, dir(p, 0o755, 4242, t0))
	}
	deep = append(deep, file(p+"leaf", []byte("leaf")), dir("empty/", 0o750, 4242, t0))

	odd := []member{
		dir("./", 0o1777, 0, tn),
		{name: "setuid", typ: tar.TypeReg, mode: 0o4755, uid: 0, gid: 0, mtime: tn, data: []byte("#!/bin/sh\n")},
		{name: "setgid", typ: tar.TypeReg, mode: 0o2710, uid: 4242, gid: 70000, mtime: tn, data: []byte("g")},
		{name: "sticky", typ: tar.TypeDir, mode: 0o1777, uid: 70000, gid: 4242, mtime: tn},
		{name: "noperm", typ: tar.TypeReg, mode: 0, uid: 70000, gid: 70000, mtime: time.Unix(5, 999999999), data: []byte("x")},
		{name: "old", typ: tar.TypeReg, mode: 0o444, uid: 1, gid: 2, mtime: time.Unix(-86400, 1), data: []byte("y")},
		{name: "xattr", typ: tar.TypeReg, mode: 0o644, uid: 4242, gid: 4242, mtime: tn, data: []byte("z"),
			xattrs: map[string]string{"user.a": "1", "user.long": strings.Repeat("v", 300)}},
		{name: "-sorts-before-dot", typ: tar.TypeReg, mode: 0o600, uid: 4242, gid: 4242, mtime: tn},
	}

	links := []member{
		dir("./", 0o755, 4242, t0),
		file("a/f", bytesOf(5000, 3)),
		hardlink("a/g", "a/f"),
		hardlink("b/h", "a/f"),
		symlink("short", "a/f"),
		symlink("long", strings.Repeat("abcdefgh/", 455)+"abcdefgh"), // 4103? trimmed below
		symlink("dangling", "/nowhere"),
		file(name255('n'), []byte("long name")),
		dir(name255('d')+"/", 0o755, 4242, t0),
		file(name255('d')+"/"+name255('e'), []byte("nested long names")),
		{name: "fifo", typ: tar.TypeFifo, mode: 0o644, mtime: t0},
	}
	// The longest target Linux allows: 4095 bytes.
	links[5].link = strings.Repeat("x", 4095)

	implicit := []member{
		{name: "p/q/r/file", typ: tar.TypeReg, mode: 0o640, uid: 4242, gid: 70000, mtime: tn, data: []byte("deep")},
		file("p/other", []byte("o")),
		dir("p/q/", 0o711, 4242, t0), // attributes for an implicit directory, given later
	}

	return map[string][]member{
		"sizes": sizes, "wide": wide, "deep": deep, "odd": odd, "links": links, "implicit": implicit,
	}
}

func TestRoundTrip(t *testing.T) {
	for name, members := range roundTripTrees() {
		t.Run(name, func(t *testing.T) {
			img, st, err := buildImage(t, t.TempDir(), tarOf(t, members), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(img)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() != st.ImageBytes {
				t.Errorf("image file is %d bytes, Stats.ImageBytes %d", fi.Size(), st.ImageBytes)
			}
			if err := checkFile(img); err != nil {
				t.Errorf("Check: %v", err)
			}
			ws := expected(members)
			fsck(t, img, false)
			extracted := fsck(t, img, true)
			compareTree(t, extracted, ws, compared{mtime: true})
			mnt := mountImage(t, img)
			compareTree(t, mnt, ws, compared{mtime: true, hardLinks: true, xattrs: true, setid: true})
		})
	}
}

func checkFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return Check(f, fi.Size())
}
