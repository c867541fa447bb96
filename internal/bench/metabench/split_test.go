package metabench

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestShare(t *testing.T) {
	tests := []struct {
		n, p   int
		starts []int
		counts []int
	}{
		{n: 20000, p: 1, starts: []int{0}, counts: []int{20000}},
		{n: 20000, p: 5, starts: []int{0, 4000, 8000, 12000, 16000}, counts: []int{4000, 4000, 4000, 4000, 4000}},
		{n: 20000, p: 3, starts: []int{0, 6667, 13334}, counts: []int{6667, 6667, 6666}},
		{n: 10, p: 4, starts: []int{0, 3, 6, 8}, counts: []int{3, 3, 2, 2}},
		{n: 3, p: 3, starts: []int{0, 1, 2}, counts: []int{1, 1, 1}},
	}
	for _, tt := range tests {
		var starts, counts []int
		next := 0
		for k := range tt.p {
			start, count := share(tt.n, tt.p, k)
			if start != next {
				t.Errorf("share(%d, %d, %d) starts at %d, not where the last ended (%d)", tt.n, tt.p, k, start, next)
			}
			next = start + count
			starts, counts = append(starts, start), append(counts, count)
		}
		if next != tt.n {
			t.Errorf("shares of %d among %d cover %d files", tt.n, tt.p, next)
		}
		if !slices.Equal(starts, tt.starts) || !slices.Equal(counts, tt.counts) {
			t.Errorf("shares of %d among %d: starts %v counts %v, want %v %v", tt.n, tt.p, starts, counts, tt.starts, tt.counts)
		}
	}
}

// TestWalkStart checks Stat-B's placement: participant k, having read
// past k·(nfile/N) entries, then meets exactly its share, and together
// the participants meet every file once.
func TestWalkStart(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct{ nfile, n int }{{10, 1}, {10, 3}, {1000, 7}, {2000, 2}} {
		path := t.TempDir()
		for i := range tt.nfile {
			if err := os.WriteFile(filepath.Join(path, fileName(i)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		seen := map[string]int{}
		for k := range tt.n {
			start, count := share(tt.nfile, tt.n, k)
			w, err := openAt(path, start)
			if err != nil {
				t.Fatal(err)
			}
			got, err := w.each(ctx, count, func(_ dir, name string) error { seen[name]++; return nil })
			w.close()
			if err != nil || got != count {
				t.Errorf("nfile %d N %d: participant %d met %d entries (%v), want %d", tt.nfile, tt.n, k, got, err, count)
			}
		}
		if len(seen) != tt.nfile {
			t.Errorf("nfile %d N %d: %d distinct files met", tt.nfile, tt.n, len(seen))
		}
		for name, times := range seen {
			if times != 1 {
				t.Errorf("nfile %d N %d: %s met %d times", tt.nfile, tt.n, name, times)
			}
		}
	}
}

func TestWalkPastEnd(t *testing.T) {
	if _, err := openAt(t.TempDir(), 1); err == nil {
		t.Error("openAt walked past the end of an empty directory")
	}
}
