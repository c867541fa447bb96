package metabench

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// entryTime is every test entry's modification time, which Extract restores.
var entryTime = time.Date(2003, 3, 1, 12, 0, 0, 0, time.UTC)

// entry is one tar entry for a test archive.
type tarEntry struct {
	name, link string
	typ        byte
	data       string
}

func archive(t *testing.T, entries ...tarEntry) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.data)), ModTime: entryTime}
		if e.typ != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

func TestExtractRefuses(t *testing.T) {
	tests := []struct {
		name    string
		entries []tarEntry
		want    string
	}{
		{"dot-dot", []tarEntry{{name: "../x", typ: tar.TypeReg, data: "x"}}, `".."`},
		{"dot-dot inside", []tarEntry{{name: "a/../../x", typ: tar.TypeReg, data: "x"}}, `".."`},
		{"absolute", []tarEntry{{name: "/tmp/x", typ: tar.TypeReg, data: "x"}}, "absolute"},
		{"through a symlink inside", []tarEntry{
			{name: "l", link: ".", typ: tar.TypeSymlink},
			{name: "l/x", typ: tar.TypeReg, data: "x"},
		}, "symbolic link"},
		{"through a symlink outside", []tarEntry{
			{name: "l", link: "/", typ: tar.TypeSymlink},
			{name: "l/etc/x", typ: tar.TypeReg, data: "x"},
		}, "symbolic link"},
		{"onto a symlink", []tarEntry{
			{name: "l", link: "/etc/passwd", typ: tar.TypeSymlink},
			{name: "l", typ: tar.TypeReg, data: "x"},
		}, "exists"},
		{"hard link out", []tarEntry{{name: "h", link: "../x", typ: tar.TypeLink}}, `".."`},
		{"device", []tarEntry{{name: "dev", typ: tar.TypeChar}}, "not unpacked"},
	}
	for _, tt := range tests {
		parent := t.TempDir()
		dest := filepath.Join(parent, "dest")
		if err := os.Mkdir(dest, 0o755); err != nil {
			t.Fatal(err)
		}
		_, err := Extract(context.Background(), archive(t, tt.entries...), dest)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one saying %q", tt.name, err, tt.want)
		}
		for _, escaped := range []string{filepath.Join(parent, "x"), filepath.Join(dest, "x")} {
			if _, err := os.Lstat(escaped); err == nil {
				t.Errorf("%s: %s was written", tt.name, escaped)
			}
		}
	}
}

func TestExtract(t *testing.T) {
	dest := t.TempDir()
	files, err := Extract(context.Background(), archive(t,
		tarEntry{name: "./", typ: tar.TypeDir},
		tarEntry{name: "a/b/c.txt", typ: tar.TypeReg, data: "hello"}, // parents not yet made
		tarEntry{name: "a/", typ: tar.TypeDir},
		tarEntry{name: "a/link", link: "b/c.txt", typ: tar.TypeSymlink},
		tarEntry{name: "a/hard", link: "a/b/c.txt", typ: tar.TypeLink},
	), dest)
	if err != nil {
		t.Fatal(err)
	}
	if files != 2 {
		t.Errorf("%d files written, want 2 (a file and a hard link)", files)
	}
	for _, name := range []string{"a/b/c.txt", "a/link", "a/hard"} {
		if got, err := os.ReadFile(filepath.Join(dest, name)); err != nil || string(got) != "hello" {
			t.Errorf("%s: %q, %v", name, got, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dest, "a/b/c.txt")); err != nil {
		t.Error(err)
	} else if !fi.ModTime().Equal(entryTime) {
		t.Errorf("a/b/c.txt: modification time %v, want the archive's %v", fi.ModTime(), entryTime)
	}
}

func TestExtractTree(t *testing.T) {
	tree := GlibcTree().Scaled(100)
	var buf bytes.Buffer
	if err := tree.WriteTar(&buf); err != nil {
		t.Fatal(err)
	}
	dest := t.TempDir()
	files, err := Extract(context.Background(), &buf, dest)
	if err != nil {
		t.Fatal(err)
	}
	dirs, regular, size := countTree(t, dest)
	if files != tree.Files || regular != tree.Files || dirs != tree.Dirs || size != tree.Bytes {
		t.Errorf("unpacked %d files (%d counted), %d dirs, %d bytes; want %d, %d, %d",
			files, regular, dirs, size, tree.Files, tree.Dirs, tree.Bytes)
	}
}

// countTree counts the directories (root excluded) and regular files
// under root and sums the files' sizes.
func countTree(t *testing.T, root string) (dirs, files int, size int64) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == root {
			return err
		}
		if d.IsDir() {
			dirs++
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		files++
		size += fi.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs, files, size
}
