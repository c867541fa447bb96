package thesis

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOutputWriteCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		o      Output
		files  int
		length int64
	}{
		{"file per process", Output{Ranks: 8, Size: 3 << 20, Block: 1 << 20}, 8, 3 << 20},
		{"odd sizes", Output{Ranks: 3, Size: 1000, Block: 300}, 3, 1000},
		{"shared file", Output{Ranks: 5, Size: 1 << 20, Block: 256 << 10, Shared: true}, 1, 5 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Dir = t.TempDir()
			if _, err := tc.o.Write(context.Background()); err != nil {
				t.Fatal(err)
			}
			ents, err := os.ReadDir(tc.o.Dir)
			if err != nil {
				t.Fatal(err)
			}
			var total int64
			for _, e := range ents {
				st, err := e.Info()
				if err != nil {
					t.Fatal(err)
				}
				total += st.Size()
			}
			if len(ents) != tc.files || total != int64(tc.files)*tc.length {
				t.Errorf("%d files of %d bytes in all, want %d of %d", len(ents), total, tc.files, tc.length)
			}
			if got, err := tc.o.Check(tc.o.Dir); err != nil || got != total {
				t.Errorf("Check = %d, %v; want %d", got, err, total)
			}
			// A file short by a byte fails the check.
			name := RankFile(0)
			if tc.o.Shared {
				name = SharedFile
			}
			if err := os.Truncate(filepath.Join(tc.o.Dir, name), tc.length-1); err != nil {
				t.Fatal(err)
			}
			if _, err := tc.o.Check(tc.o.Dir); err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("Check of a short %s = %v, want an error naming it", name, err)
			}
		})
	}
}

func TestOutputRefusesNothingToWrite(t *testing.T) {
	if _, err := (Output{Dir: t.TempDir(), Ranks: 0, Size: 1, Block: 1}).Write(context.Background()); err == nil {
		t.Error("0 ranks: no error")
	}
}

// The rows carry the median of the runs and the thesis beside it; the
// compute-hold ratio is shared over RSA, run by run.
func TestT52Rows(t *testing.T) {
	rs := []T52Result{
		{HoldDirect: 30, HoldRSA: 1, SafeRSA: 10, StageOut: map[string]float64{"rsync": 5, "tar": 4, "rsa copy": 2}},
		{HoldDirect: 20, HoldRSA: 2, SafeRSA: 10, StageOut: map[string]float64{"rsync": 6, "tar": 4, "rsa copy": 2}},
		{HoldDirect: 40, HoldRSA: 1, SafeRSA: 20, StageOut: map[string]float64{"rsync": 4, "tar": 4, "rsa copy": 2}},
	}
	rows := T52{Ranks: 4, Size: 1, Placement: "ram"}.rows(rs)
	get := func(metric string) (float64, float64) {
		for _, r := range rows {
			if r.Metric == metric {
				src := 0.0
				if r.SourceValue != nil {
					src = *r.SourceValue
				}
				return r.Value, src
			}
		}
		t.Fatalf("no row %s", metric)
		return 0, 0
	}
	for _, c := range []struct {
		metric    string
		want, src float64
	}{
		{"hold_ratio", 30, 30.9}, // 30, 10, 40
		{"safe_ratio", 2, 4.3},   // 3, 2, 2
		{"stage_out rsync/tar", 1.25, 1.25},
	} {
		if v, src := get(c.metric); v != c.want || src != c.src {
			t.Errorf("%s = %v beside %v, want %v beside %v", c.metric, v, src, c.want, c.src)
		}
	}
}

// Writers on two hosts, each its half of the ranks (First), make one
// output together: the files of both halves, or one shared file with
// every segment; the whole passes Check, either half alone does not.
func TestOutputHalves(t *testing.T) {
	for _, shared := range []bool{false, true} {
		dir := t.TempDir()
		for _, first := range []int{0, 3} {
			o := Output{Dir: dir, Ranks: 3, First: first, Size: 1000, Block: 400, Shared: shared}
			if _, err := o.Write(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		whole := Output{Ranks: 6, Size: 1000, Shared: shared}
		if got, err := whole.Check(dir); err != nil || got != 6000 {
			t.Errorf("shared %v: Check of both halves = %d, %v; want 6000", shared, got, err)
		}
		if !shared {
			if _, err := os.Stat(filepath.Join(dir, RankFile(5))); err != nil {
				t.Errorf("the second half's last rank: %v", err)
			}
			if err := os.Remove(filepath.Join(dir, RankFile(4))); err != nil {
				t.Fatal(err)
			}
			if _, err := whole.Check(dir); err == nil {
				t.Error("Check passed without rank 4's file")
			}
		}
	}
	if _, err := (Output{Dir: t.TempDir(), Ranks: 1, Size: 1, Block: 1, First: -1}).Write(context.Background()); err == nil {
		t.Error("first rank -1: no error")
	}
}
