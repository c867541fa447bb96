package sweep

import (
	"strings"
	"testing"
	"time"
)

func TestRows(t *testing.T) {
	capped := point(DiskDevice, Write, 1, 4<<10, 40, 42)
	capped.Capped, capped.Bytes, capped.Elapsed, capped.Limit = true, 20<<20, 500*time.Millisecond, 500*time.Millisecond
	points := []Point{
		point(RAMDevice, Read, 1, 4<<10, 800, 790),
		point(RAMDevice, Read, 16, 1<<20, 3000, 2000), // the ram-dev read peak; fio disagrees
		point(RAMDevice, Write, 16, 1<<20, 3500, 3400),
		capped,
		point(DiskDevice, Write, 8, 32<<20, 900, 880),
		point(DiskDevice, Write, 16, 16<<20, 1200, 1190),
		point(DiskDevice, Read, 16, 16<<20, 1500, 1490), // the disk-dev peak
		point(DiskDevice, Write, 8, 16<<20, 950, 0),     // no fio run
		{Device: DiskDevice, Direction: Read, QD: 1, BlockSize: 1 << 10, Skip: "skipped: below the logical block"},
	}
	rows := Rows(points)
	if len(rows) != len(points) {
		t.Fatalf("%d rows for %d points: a row for every point, skipped ones too", len(rows), len(points))
	}
	for _, r := range rows {
		if r.Bench != "sweep" || r.Metric != "rate" || r.Unit != "MiB/s" || r.Params["qd"] == "" || r.Params["bs"] == "" {
			t.Errorf("row %+v: want bench sweep, metric rate in MiB/s, params qd and bs", r)
		}
	}
	sources := map[int]float64{1: 80.3, 4: 80, 5: 81.9, 6: 83.1}
	for i, r := range rows {
		want, ok := sources[i]
		switch {
		case ok && (r.SourceValue == nil || *r.SourceValue != want || r.SourceUnit != "MB/s" || !strings.Contains(r.Note, "1K=1024")):
			t.Errorf("row %d (%s %s %v): source %v %s, note %q; want TMS's %v MB/s", i, r.Target, r.Case, r.Params, r.SourceValue, r.SourceUnit, r.Note, want)
		case !ok && r.SourceValue != nil:
			t.Errorf("row %d (%s %s %v) carries source %v; want none", i, r.Target, r.Case, r.Params, *r.SourceValue)
		}
	}
	if r := rows[1]; r.Agree == nil || *r.Agree {
		t.Errorf("3000 against fio's 2000: agree %v, want disagree", r.Agree)
	}
	if r := rows[0]; r.Agree == nil || !*r.Agree || r.Check != "fio" || *r.CheckValue != 790 {
		t.Errorf("800 against fio's 790: %+v, want fio 790, agree", r)
	}
	if r := rows[7]; r.CheckValue != nil {
		t.Errorf("a point fio did not run has check %v", *r.CheckValue)
	}
	if r := rows[3]; !strings.Contains(r.Note, "500ms cap") || !strings.Contains(r.Note, "20M") || r.Value != 40 {
		t.Errorf("capped row: value %v, note %q; want 40 MiB/s and the cap named", r.Value, r.Note)
	}
	if r := rows[8]; r.Value != 0 || r.CheckValue != nil || !strings.HasPrefix(r.Note, "skipped") {
		t.Errorf("skipped row: %+v", r)
	}
}

func TestSkipReason(t *testing.T) {
	d := Device{Name: DiskDevice, LogicalBlockSize: 4096}
	for _, tc := range []struct {
		bs, size int64
		want     string
	}{
		{1 << 10, 1 << 30, "below the device's 4096-byte logical block"},
		{6 << 10, 1 << 30, "not a multiple"},
		{64 << 20, 32 << 20, "larger than the 32M swept"},
		{4 << 10, 1 << 30, ""},
	} {
		got := skipReason(d, pass{bs: tc.bs, size: tc.size})
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("skipReason(bs %s, size %s) = %q, want %q", SizeLabel(tc.bs), SizeLabel(tc.size), got, tc.want)
		}
	}
}
