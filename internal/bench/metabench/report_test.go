package metabench

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRows(t *testing.T) {
	results := []Result{
		{Phase: CreateA, Ops: 100, Elapsed: time.Second, Batches: []Batch{{Files: 50, Elapsed: time.Second / 2}, {Files: 50, Elapsed: time.Second / 4}}},
		{Phase: CreateC, Ops: 100, Elapsed: time.Second / 2},
		{Phase: Untar, Ops: 10, Elapsed: time.Second},
		{Phase: DeleteB, Ops: 100, Elapsed: time.Second},
	}
	tests := []struct {
		name     string
		nproc    int
		proc0    bool
		createC  float64 // Table 1's Create-C beside the row; 0 for none
		sourceRf string
	}{
		{"one process", 1, false, 598, "GUPFS Table 1 N=1"},
		{"two processes, one participant", 2, false, 593, "GUPFS Table 1 N=2"},
		{"three", 3, false, 76, "GUPFS Table 1 N=3"},
		{"five: not in the table", 5, false, 0, ""},
		{"-0: not how the table was run", 3, true, 0, ""},
	}
	for _, tt := range tests {
		rep := &Report{Config: Config{NFile: 100, NByte: 16384, Freq: 50, NProc: tt.nproc, Proc0: tt.proc0,
			Dirs: []string{"/x"}, Tree: GlibcTree().Scaled(10)}, Results: results}
		rows := rep.Rows("ram")
		if len(rows) != 6 { // four phases and Create-A's two batches
			t.Fatalf("%s: %d rows, want 6", tt.name, len(rows))
		}
		byCase := map[string]int{}
		for i, r := range rows {
			if r.Metric == "ops_per_s" {
				byCase[r.Case] = i
			}
		}
		c := rows[byCase["Create-C"]]
		if c.Value != 200 || c.Params["nproc"] != strconv.Itoa(tt.nproc) || c.Target != "ram" {
			t.Errorf("%s: Create-C row %+v", tt.name, c)
		}
		switch {
		case tt.createC == 0 && c.SourceValue != nil:
			t.Errorf("%s: Create-C has source %v (%s), want none", tt.name, *c.SourceValue, c.SourceRef)
		case tt.createC != 0 && (c.SourceValue == nil || *c.SourceValue != tt.createC || c.SourceRef != tt.sourceRf):
			t.Errorf("%s: Create-C source %v %q, want %v %q", tt.name, c.SourceValue, c.SourceRef, tt.createC, tt.sourceRf)
		}
		if d := rows[byCase["Delete-B"]]; d.SourceValue != nil || !strings.Contains(d.Note, "not in source") {
			t.Errorf("%s: Delete-B row %+v", tt.name, d)
		}
		if u := rows[byCase["Untar"]]; !strings.Contains(u.Note, "scaled 1/10") {
			t.Errorf("%s: Untar note %q does not say the tarball was scaled", tt.name, u.Note)
		}
		if b := rows[1]; b.Metric != "batch_ops_per_s" || b.Value != 100 || b.Params["batch"] != "1" {
			t.Errorf("%s: first batch row %+v", tt.name, b)
		}
		var text bytes.Buffer
		if err := rep.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Create-C", "Create-A by batches of 50", "51-100", "not in source"} {
			if !strings.Contains(text.String(), want) {
				t.Errorf("%s: text report lacks %q:\n%s", tt.name, want, text.String())
			}
		}
	}
}
