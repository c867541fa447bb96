package thesis

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The CSV lines are bonnie++ 2.00a's own (testdata/README.md says how
// each was made).
func TestParseBonnieCSV(t *testing.T) {
	for _, tc := range []struct {
		file              string
		size              string
		put, rewrite      float64
		get, create       float64
		measured, untimed []string
	}{
		// Block write and rewrite timed on tmpfs; read and creates too quick.
		{"bonnie-2g-n64-tmpfs.csv", "2G", 3000555, 3965496, 0, 0,
			[]string{"put_block", "rewrite"}, []string{"get_block", "seq_create"}},
		// Everything too quick but the creates.
		{"bonnie-16m-untimed.csv", "16M", 0, 0, 0, 1520,
			[]string{"seq_create"}, []string{"put_block", "rewrite", "get_block"}},
		{"bonnie-1g-tmpfs.csv", "1G", 0, 0, 0, 0,
			nil, []string{"put_block", "rewrite", "get_block", "seq_create"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			r, err := ParseBonnieCSV(b)
			if err != nil {
				t.Fatal(err)
			}
			if r.Version != "2.00a" || r.Size != tc.size || r.ChunkSize != 8192 {
				t.Errorf("version %q size %q chunk %d, want 2.00a %s 8192", r.Version, r.Size, r.ChunkSize, tc.size)
			}
			if r.PutBlock != tc.put || r.Rewrite != tc.rewrite || r.GetBlock != tc.get || r.SeqCreate != tc.create {
				t.Errorf("put %v rewrite %v get %v create %v, want %v %v %v %v", r.PutBlock, r.Rewrite, r.GetBlock, r.SeqCreate,
					tc.put, tc.rewrite, tc.get, tc.create)
			}
			for _, m := range tc.measured {
				if !r.Measured[m] {
					t.Errorf("%s not measured", m)
				}
			}
			for _, m := range tc.untimed {
				if r.Measured[m] {
					t.Errorf("%s measured, but bonnie++ printed +++++", m)
				}
			}
		})
	}
}

func TestParseBonnieCSVRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"no CSV":        "Version 2.00a  ------Sequential Output------\n",
		"other format":  "1.97,1.97,vm,1,1,2G,,8192,5,,,100,99,100,99,,,100,99,100,99,16,,,,,100,1,100,1,100,1,100,1,100,1,100,1\n",
		"short line":    "1.98,2.00a,vm,1,1,2G,,8192\n",
		"not a number":  "1.98,2.00a,vm,1,1,2G,,8192,5,,,fast,99,100,99,,,100,99,100,99,16,,,,,100,1,100,1,100,1,100,1,100,1,100,1\n",
		"chunk garbled": "1.98,2.00a,vm,1,1,2G,,8k,5,,,100,99,100,99,,,100,99,100,99,16,,,,,100,1,100,1,100,1,100,1,100,1,100,1\n",
	} {
		if _, err := ParseBonnieCSV([]byte(in)); err == nil {
			t.Errorf("%s: no error", name)
		} else if !strings.Contains(err.Error(), "bonnie++") {
			t.Errorf("%s: %v does not name bonnie++", name, err)
		}
	}
}

// T55's rows: KiB/s as MiB/s, the ratios run by run, the thesis beside
// ram-blk only, and a note for what bonnie++ could not time.
func TestT55Rows(t *testing.T) {
	all := map[string]bool{"put_block": true, "rewrite": true, "get_block": true, "seq_create": true}
	res := map[string][]BonnieResult{
		"ram-blk": {
			{PutBlock: 1024 * 1000, Rewrite: 1024 * 1500, GetBlock: 1024 * 4000, SeqCreate: 9000, Measured: all},
			{PutBlock: 1024 * 800, Rewrite: 1024 * 1000, GetBlock: 1024 * 4000, SeqCreate: 7000, Measured: all},
			{PutBlock: 1024 * 900, Rewrite: 1024 * 1800, GetBlock: 1024 * 2700, SeqCreate: 8000, Measured: all},
		},
		"ram":  {{PutBlock: 1024 * 3000, Rewrite: 1024 * 3900, Measured: map[string]bool{"put_block": true, "rewrite": true}}},
		"disk": {{Measured: map[string]bool{}}},
	}
	rows := T55{Targets: []Place{{"ram-blk", "/x"}, {"ram", "/y"}, {"disk", "/z"}}, SizeMiB: 2048, RAMMiB: 1024, Files: 128}.rows(res, map[string]float64{"ram-blk": 880})
	got := map[string]map[string]float64{}
	src := map[string]map[string]float64{}
	for _, r := range rows {
		if got[r.Target] == nil {
			got[r.Target], src[r.Target] = map[string]float64{}, map[string]float64{}
		}
		got[r.Target][r.Metric] = r.Value
		if r.SourceValue != nil {
			src[r.Target][r.Metric] = *r.SourceValue
		}
	}
	want := map[string]float64{"block_write": 900, "rewrite": 1500, "block_read": 4000, "seq_create": 8000,
		"rewrite/write": 1.5, "read/write": 4} // rewrite/write 1.5, 1.25, 2; read/write 4, 5, 3
	for m, v := range want {
		if got["ram-blk"][m] != v {
			t.Errorf("ram-blk %s = %v, want %v", m, got["ram-blk"][m], v)
		}
	}
	for m, v := range map[string]float64{"block_write": 867, "rewrite": 1163, "block_read": 3484, "seq_create": 7470, "rewrite/write": 1.34, "read/write": 4.0} {
		if src["ram-blk"][m] != v {
			t.Errorf("ram-blk %s beside %v, want the thesis' %v", m, src["ram-blk"][m], v)
		}
	}
	if len(src["ram"]) != 0 {
		t.Errorf("ram rows carry the thesis' numbers %v: only ram-blk is its RAMDISK", src["ram"])
	}
	if _, ok := got["ram"]["block_read"]; ok {
		t.Error("ram has a block_read row, but bonnie++ did not time it")
	}
	// Nothing timed: one row that says so.
	if d := got["disk"]; len(d) != 1 || d["untimed"] != 4 {
		t.Errorf("disk rows %v, want only untimed = 4", d)
	}
	if got["ram"]["rewrite/write"] != 1.3 {
		t.Errorf("ram rewrite/write = %v, want 1.3", got["ram"]["rewrite/write"])
	}
	for _, r := range rows {
		if r.Target == "ram" && r.Metric == "block_write" && !strings.Contains(r.Note, "block_read, seq_create") {
			t.Errorf("ram block_write note %q does not say what went untimed", r.Note)
		}
		if r.Target == "ram-blk" && r.Metric == "block_write" && (r.CheckValue == nil || *r.CheckValue != 880 || r.Agree == nil || !*r.Agree) {
			t.Errorf("ram-blk block_write: fio check %v agree %v, want 880, agreeing", r.CheckValue, r.Agree)
		}
	}
}
