package erofs

import (
	"archive/tar"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestBadStreams(t *testing.T) {
	good := []member{dir("./", 0o755, 0, t0), file("a", bytesOf(10000, 1)), file("b", []byte("b"))}
	whole := tarOf(t, good)
	tests := []struct {
		name    string
		tar     []byte
		lim     Limits
		wantErr error
		wantMsg []string // substrings the message must hold
	}{
		{
			name: "truncated in a file's data", tar: whole[:512*3+4000],
			wantErr: ErrTruncated, wantMsg: []string{`"a"`, "truncated"},
		},
		{
			name: "truncated between entries", tar: whole[:len(whole)-1024],
			wantErr: ErrTruncated, wantMsg: []string{`after tar entry "b"`, "end-of-archive"},
		},
		{name: "empty stream", tar: nil, wantErr: ErrTruncated},
		{
			name: "dot-dot", tar: tarOf(t, []member{file("a/../../etc/passwd", nil)}),
			wantErr: ErrInvalidEntry, wantMsg: []string{`"a/../../etc/passwd"`, "'..'"},
		},
		{
			name: "absolute", tar: tarOf(t, []member{file("/etc/passwd", nil)}),
			wantErr: ErrInvalidEntry, wantMsg: []string{`"/etc/passwd"`, "absolute"},
		},
		{
			name: "component over 255 bytes", tar: tarOf(t, []member{file("d/"+strings.Repeat("n", 256), nil)}),
			wantErr: ErrInvalidEntry, wantMsg: []string{"256 bytes"},
		},
		{
			name: "duplicate file", tar: tarOf(t, []member{file("x/a", nil), file("x/a", []byte("2"))}),
			wantErr: ErrInvalidEntry, wantMsg: []string{`"x/a"`, "duplicate"},
		},
		{
			name: "duplicate directory", tar: tarOf(t, []member{dir("d/", 0o755, 0, t0), dir("d/", 0o700, 0, t0)}),
			wantErr: ErrInvalidEntry, wantMsg: []string{`"d/"`, "duplicate"},
		},
		{
			name: "directory over a file", tar: tarOf(t, []member{file("d", nil), dir("d/", 0o700, 0, t0)}),
			wantErr: ErrInvalidEntry, wantMsg: []string{`"d/"`, "duplicate"},
		},
		{
			name: "path through a file", tar: tarOf(t, []member{file("f", nil), file("f/x", nil)}),
			wantErr: ErrInvalidEntry, wantMsg: []string{`"f/x"`, "not a directory"},
		},
		{
			name: "hard link to nothing", tar: tarOf(t, []member{hardlink("l", "missing")}),
			wantErr: ErrInvalidEntry, wantMsg: []string{`"l"`, `"missing"`, "not earlier"},
		},
		{
			name: "hard link to a later file", tar: tarOf(t, []member{hardlink("l", "f"), file("f", nil)}),
			wantErr: ErrInvalidEntry, wantMsg: []string{`"l"`, "not earlier"},
		},
		{
			name: "hard link to a directory", tar: tarOf(t, []member{dir("d/", 0o755, 0, t0), hardlink("l", "d")}),
			wantErr: ErrInvalidEntry, wantMsg: []string{`"l"`, "not a regular file"},
		},
		{
			name: "hard link to a symlink", tar: tarOf(t, []member{symlink("s", "x"), hardlink("l", "s")}),
			wantErr: ErrInvalidEntry, wantMsg: []string{"not a regular file"},
		},
		{
			name: "hard link climbing out", tar: tarOf(t, []member{hardlink("l", "../x")}),
			wantErr: ErrInvalidEntry, wantMsg: []string{"'..'"},
		},
		{
			name: "device node", tar: tarOf(t, []member{{name: "dev/sda", typ: tar.TypeBlock, mode: 0o600, mtime: t0}}),
			wantErr: ErrInvalidEntry, wantMsg: []string{`"dev/sda"`, "device"},
		},
		{
			name: "char device", tar: tarOf(t, []member{{name: "null", typ: tar.TypeChar, mode: 0o666, mtime: t0}}),
			wantErr: ErrInvalidEntry, wantMsg: []string{"device"},
		},
		{
			name: "empty symlink", tar: tarOf(t, []member{symlink("s", "")}),
			wantErr: ErrInvalidEntry, wantMsg: []string{"empty target"},
		},
		{
			name: "image over MaxImageBytes", tar: whole, lim: Limits{MaxImageBytes: 8192},
			wantErr: ErrLimit, wantMsg: []string{`"a"`, "MaxImageBytes", "8 KiB"},
		},
		{
			name: "metadata over MaxImageBytes", tar: tarOf(t, []member{file("a", nil)}), lim: Limits{MaxImageBytes: 4096},
			wantErr: ErrLimit, wantMsg: []string{"MaxImageBytes"},
		},
		{
			name: "entries over MaxEntries", tar: whole, lim: Limits{MaxEntries: 1},
			wantErr: ErrLimit, wantMsg: []string{`"b"`, "MaxEntries 1"},
		},
		{
			name: "implicit directories over MaxEntries", tar: tarOf(t, []member{file("a/b/c", nil)}), lim: Limits{MaxEntries: 2},
			wantErr: ErrLimit, wantMsg: []string{`"a/b/c"`, "MaxEntries 2"},
		},
		{
			name: "depth over MaxDepth", tar: tarOf(t, []member{file("a/b/c", nil)}), lim: Limits{MaxDepth: 2},
			wantErr: ErrLimit, wantMsg: []string{`"a/b/c"`, "MaxDepth 2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img, st, err := buildImage(t, t.TempDir(), tt.tar, tt.lim)
			if err == nil {
				t.Fatalf("FromTar succeeded (%+v), want an error", st)
			}
			t.Log(err)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("error %q is not %v", err, tt.wantErr)
			}
			for _, s := range tt.wantMsg {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if st != (Stats{}) {
				t.Errorf("Stats %+v with an error", st)
			}
			if fi, serr := os.Stat(img); serr != nil || fi.Size() != 0 {
				t.Errorf("the failed image was not truncated to nothing: %v, %v", fi.Size(), serr)
			}
			if cerr := checkFile(img); cerr == nil {
				t.Error("Check accepts the failed image")
			}
		})
	}
}

// A writer without Truncate still never holds a superblock after a
// failure: block 0 is zeroed first and the superblock written last.
func TestFailedImageHasNoSuperblock(t *testing.T) {
	f, err := os.Create(t.TempDir() + "/img")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// An old, valid image in the file.
	if _, err := FromTar(context.Background(), strings.NewReader(string(tarOf(t, []member{file("a", []byte("x"))}))), f, Limits{}); err != nil {
		t.Fatal(err)
	}
	bad := tarOf(t, []member{file("a", bytesOf(9000, 1)), file("a", nil)})
	if _, err := FromTar(context.Background(), strings.NewReader(string(bad)), onlyWriterAt{f}, Limits{}); err == nil {
		t.Fatal("FromTar accepted a duplicate")
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(f, fi.Size()); err == nil || !errors.Is(err, ErrCorrupt) {
		t.Errorf("Check after a failed build: %v, want ErrCorrupt", err)
	}
}

func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f, err := os.Create(t.TempDir() + "/img")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = FromTar(ctx, strings.NewReader(string(tarOf(t, []member{file("a", nil)}))), f, Limits{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("FromTar with a canceled context: %v", err)
	}
}

// onlyWriterAt hides the file's Truncate method.
type onlyWriterAt struct{ f *os.File }

func (o onlyWriterAt) WriteAt(p []byte, off int64) (int, error) { return o.f.WriteAt(p, off) }
