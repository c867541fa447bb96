package mount

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

func TestPrefetch(t *testing.T) {
	dir := testutil.TempDir(t)
	path := filepath.Join(dir, "image")
	const size = 3*prefetchChunk + 5 // more chunks than one reader takes, a short last one
	if err := os.WriteFile(path, bytes.Repeat([]byte{7}, size), 0o600); err != nil {
		t.Fatal(err)
	}
	open := func() *os.File {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, c := range []struct {
		name     string
		n        int64
		cancel   bool
		wantRead int64
		wantErr  error
	}{
		{"whole", size, false, size, nil},
		{"a prefix", prefetchChunk + 1, false, prefetchChunk + 1, nil},
		{"past the end", size + 1, false, size, io.EOF},
		{"stopped", size, true, 0, context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &Prefetch{}
			ctx, cancel := context.WithCancel(context.Background())
			if c.cancel {
				cancel()
			}
			defer cancel()
			f := open()
			defer f.Close()
			err := p.run(ctx, f, c.n)
			if !errors.Is(err, c.wantErr) || (err == nil) != (c.wantErr == nil) {
				t.Fatalf("err %v, want %v", err, c.wantErr)
			}
			if got := p.read.Load(); got != c.wantRead {
				t.Fatalf("read %d bytes, want %d", got, c.wantRead)
			}
		})
	}

	t.Run("closes its file", func(t *testing.T) {
		f := open()
		ended := make(chan error, 1)
		p := StartPrefetch(f, size, func(_ int64, _ time.Duration, err error) { ended <- err })
		if !p.Stop(10 * time.Second) {
			t.Fatal("Stop did not end the prefetch")
		}
		if err := <-ended; err != nil && !errors.Is(err, context.Canceled) {
			// Either is right: Stop may come before or after the last read.
			t.Fatal(err)
		}
		if _, err := f.Stat(); !errors.Is(err, os.ErrClosed) {
			t.Fatalf("the file is still open after Stop: %v", err)
		}
	})
	if (*Prefetch)(nil).Stop(0) != true {
		t.Fatal("Stop of no prefetch")
	}
}
