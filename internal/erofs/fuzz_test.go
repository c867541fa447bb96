package erofs

import (
	"archive/tar"
	"bytes"
	"context"
	"sync"
	"testing"
)

// fuzzLimits keep a fuzzed stream from asking for much memory or disk.
func fuzzLimits() Limits { return Limits{MaxImageBytes: 64 << 20, MaxEntries: 10000, MaxDepth: 64} }

// fuzzSeeds are small tars, good and bad, that the fuzzer starts from.
// They are kept to a few KiB: Go's mutator slows to a crawl on inputs of
// tens of KiB.
func fuzzSeeds(t testing.TB) [][]byte {
	trees := roundTripTrees()
	seeds := [][]byte{
		tarOf(t, trees["odd"]),
		tarOf(t, trees["implicit"]),
		tarOf(t, []member{file("a", []byte("x")), hardlink("b", "a"), hardlink("d/e", "a"), symlink("c", "a"), {name: "fifo", typ: tar.TypeFifo}}),
		tarOf(t, []member{dir("./", 0o755, 0, t0), dir("d/", 0o700, 70000, tn), file("d/f", bytesOf(4097, 9))}),
		tarOf(t, []member{file("a/../b", nil)}),
		tarOf(t, []member{file("x", nil), file("x", nil)}),
	}
	return seeds
}

// memImage is an image in memory; FromTar writes it from several
// goroutines at once, as io.WriterAt allows.
type memImage struct {
	mu sync.Mutex
	b  []byte
}

func (m *memImage) WriteAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if end := off + int64(len(p)); end > int64(len(m.b)) {
		m.b = append(m.b, make([]byte, end-int64(len(m.b)))...)
	}
	return copy(m.b[off:], p), nil
}

func (m *memImage) Truncate(size int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.b = m.b[:size]
	return nil
}

// FuzzFromTar: no stream makes FromTar panic or hang, and every image it
// accepts passes Check.
func FuzzFromTar(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var img memImage
		st, err := FromTar(context.Background(), bytes.NewReader(data), &img, fuzzLimits())
		if err != nil {
			if len(img.b) != 0 {
				t.Fatalf("failed build left %d bytes", len(img.b))
			}
			return
		}
		if int64(len(img.b)) != st.ImageBytes {
			t.Fatalf("image has %d bytes, Stats say %d", len(img.b), st.ImageBytes)
		}
		if err := Check(bytes.NewReader(img.b), int64(len(img.b))); err != nil {
			t.Fatalf("Check refuses an image FromTar built: %v", err)
		}
	})
}

// The fuzz seeds that FromTar accepts also pass fsck.erofs.
func TestFuzzSeedsPassFsck(t *testing.T) {
	for i, s := range fuzzSeeds(t) {
		img, _, err := buildImage(t, t.TempDir(), s, fuzzLimits())
		if err != nil {
			t.Logf("seed %d refused: %v", i, err)
			continue
		}
		fsck(t, img, false)
	}
}
