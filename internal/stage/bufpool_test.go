package stage

import "testing"

func TestSizedPool(t *testing.T) {
	for _, tc := range []struct {
		n, class, pooled int
	}{
		{0, 0, 4096},
		{1, 0, 4096},
		{4096, 0, 4096},
		{4097, 1, 8192},
		{8192, 1, 8192}, // a 4 KiB file's record
		{1<<20 + 4096, maxClass, 2 << 20},
		{2 << 20, maxClass, 2 << 20},
		{2<<20 + 1, -1, 2<<20 + 1}, // not pooled
	} {
		if got := class(tc.n); got != tc.class {
			t.Errorf("class(%d) = %d, want %d", tc.n, got, tc.class)
		}
		if got := pooledSize(int64(tc.n)); got != int64(tc.pooled) {
			t.Errorf("pooledSize(%d) = %d, want %d", tc.n, got, tc.pooled)
		}
		var p sizedPool
		b := p.get(tc.n)
		if len(b) != 0 || cap(b) < tc.n || cap(b) != tc.pooled {
			t.Errorf("get(%d): len %d cap %d, want len 0 cap %d", tc.n, len(b), cap(b), tc.pooled)
		}
		p.put(b)
	}
	// A buffer that grew by append goes back to the largest class it
	// fills, so a get from that class is never short.
	var p sizedPool
	p.put(make([]byte, 0, 12000))
	for range 10 {
		if b := p.get(8192); cap(b) < 8192 {
			t.Fatalf("get(8192) returned cap %d", cap(b))
		}
	}
	p.put(make([]byte, 0, 100)) // below every class: dropped, not pooled
	if b := p.get(1); cap(b) < 4096 {
		t.Fatalf("get(1) returned cap %d, want at least a class's 4096", cap(b))
	}
}
