package sweep

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// point is a measured point whose rate is mib MiB/s, with fio's rate
// when fio > 0.
func point(device string, dir Direction, qd int, bs int64, mib, fio float64) Point {
	p := Point{Device: device, Direction: dir, QD: qd, BlockSize: bs,
		Bytes: int64(mib * (1 << 20)), Elapsed: time.Second, Limit: 5 * time.Second}
	if fio > 0 {
		p.Fio = &fio
	}
	return p
}

func samplePoints() []Point {
	return []Point{
		point(RAMDevice, Write, 1, 4<<10, 500, 510),
		point(RAMDevice, Read, 1, 4<<10, 800, 790),
		point(RAMDevice, Write, 4, 4<<10, 1000, 700), // fio over 10% off
		point(RAMDevice, Read, 4, 4<<10, 1600, 1580),
		point(RAMDevice, Write, 1, 1<<20, 2000, 1990),
		point(RAMDevice, Read, 1, 1<<20, 3000, 3050),
		{Device: RAMDevice, Direction: Write, QD: 4, BlockSize: 1 << 20, Skip: "skipped: test"},
		point(RAMDevice, Read, 4, 1<<20, 90, 0), // fio not run
	}
}

func TestGrids(t *testing.T) {
	grids := Grids(samplePoints())
	if len(grids) != 2 || grids[0].Direction != Write || grids[1].Direction != Read {
		t.Fatalf("%d grids; want ram-dev write, then ram-dev read", len(grids))
	}
	w := grids[0]
	if !slices.Equal(w.QDs, []int{1, 4}) || !slices.Equal(w.BlockSizes, []int64{4 << 10, 1 << 20}) {
		t.Fatalf("grid axes qd %v bs %v", w.QDs, w.BlockSizes)
	}
	want := [][]float64{{500, 1000}, {2000, 0}}
	for i := range want {
		if !slices.Equal(w.Rates[i], want[i]) {
			t.Errorf("write rates row %d = %v, want %v", i, w.Rates[i], want[i])
		}
	}
	if w.Fio[0][1] != 700 || w.Fio[1][1] != 0 {
		t.Errorf("write fio = %v", w.Fio)
	}
	if w.Max() != 2000 || grids[1].Max() != 3000 {
		t.Errorf("Max = %v, %v; want 2000, 3000", w.Max(), grids[1].Max())
	}
}

func TestGridWriteText(t *testing.T) {
	var b strings.Builder
	if err := WriteGrids(&b, Grids(samplePoints())); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	want := `ram-dev write, MiB/s (fio in brackets; ! over 10% apart), shaded by share of the top 2000:
  bs \ qd              1              4
       4K    500 ░ (510)  1000 ▒ (700!)
       1M  2000 █ (1990)              -

ram-dev read, MiB/s (fio in brackets; ! over 10% apart), shaded by share of the top 3000:
  bs \ qd              1              4
       4K    800 ░ (790)  1600 ▒ (1580)
       1M  3000 █ (3050)         90.0 ·
`
	if got != want {
		t.Errorf("WriteGrids:\n%s\nwant:\n%s", got, want)
	}
}

func TestShade(t *testing.T) {
	for _, tc := range []struct {
		v, top float64
		want   string
	}{{0, 100, "·"}, {19, 100, "·"}, {20, 100, "░"}, {59, 100, "▒"}, {79.9, 100, "▓"}, {80, 100, "█"}, {100, 100, "█"}, {5, 0, "·"}} {
		if got := shade(tc.v, tc.top); got != tc.want {
			t.Errorf("shade(%v, %v) = %q, want %q", tc.v, tc.top, got, tc.want)
		}
	}
}
