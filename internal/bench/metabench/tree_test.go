package metabench

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"strings"
	"testing"
)

// tarStats counts an archive's directories and files, sums its file data
// and finds its deepest directory.
func tarStats(t *testing.T, r io.Reader) (dirs, files int, size int64, depth int) {
	t.Helper()
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			dirs++
			depth = max(depth, strings.Count(strings.TrimSuffix(hdr.Name, "/"), "/"))
		case tar.TypeReg:
			files++
			size += hdr.Size
		default:
			t.Errorf("%s: unexpected type %q", hdr.Name, hdr.Typeflag)
		}
	}
}

func TestTreeShape(t *testing.T) {
	tests := []struct {
		name  string
		tree  Tree
		dirs  int
		files int
		size  int64
	}{
		{"glibc 2.3", GlibcTree(), 459, 9188, 75_800_000},
		{"quick, 1/10", GlibcTree().Scaled(10), 46, 919, 7_580_000},
		{"tiny", GlibcTree().Scaled(1000), 1, 9, 75_800},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		if err := tt.tree.WriteTar(&buf); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		dirs, files, size, depth := tarStats(t, &buf)
		if dirs != tt.dirs || files != tt.files || size != tt.size {
			t.Errorf("%s: %d dirs, %d files, %d bytes; want %d, %d, %d", tt.name, dirs, files, size, tt.dirs, tt.files, tt.size)
		}
		if depth > maxDepth {
			t.Errorf("%s: a directory %d levels deep, more than %d", tt.name, depth, maxDepth)
		}
	}
}

func TestTreeDeterministic(t *testing.T) {
	sum := func(tree Tree) [32]byte {
		h := sha256.New()
		if err := tree.WriteTar(h); err != nil {
			t.Fatal(err)
		}
		return [32]byte(h.Sum(nil))
	}
	tree := GlibcTree()
	if a, b := sum(tree), sum(tree); a != b {
		t.Error("the same seed gave two different archives")
	}
	other := tree
	other.Seed++
	if sum(tree) == sum(other) {
		t.Error("two seeds gave the same archive")
	}
}
