package sim

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestSWFErrors(t *testing.T) {
	const ok = "1 0 -1 10 1 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1\n"
	tests := []struct {
		name  string
		trace string
		want  string // the error's text
	}{
		{"too few fields", "; MaxNodes: 4\n" + ok + "2 5 -1 10 1 -1 -1 -1 -1 -1 1 -1\n",
			"trace line 3: 12 fields, want 18 (Standard Workload Format)"},
		{"too many fields", ok + ok[:len(ok)-1] + " 7\n",
			"trace line 2: 19 fields, want 18 (Standard Workload Format)"},
		{"not a number", "; comment\n\n" + "1 0 -1 ten 1 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1\n",
			`trace line 3: field 4 (run time) is "ten", not a number (-1 means unknown)`},
		{"negative submit", "1 -5 -1 10 1 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1\n",
			"trace line 1: field 2 (submit time) is -5; it must be 0 or more seconds"},
		{"unsorted", ok + "2 100 -1 10 1 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1\n; late comment\n3 50 -1 10 1 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1\n",
			"trace line 4: submit time 50 s is before the previous job's 100 s; SWF traces are sorted by submit time (sort -n -k2 the job lines)"},
		{"NaN", "1 0 -1 NaN 1 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1\n",
			`trace line 1: field 4 (run time) is "NaN", not a number (-1 means unknown)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rd, err := NewReader(strings.NewReader(tt.trace))
			if err != nil {
				t.Fatal(err)
			}
			for err == nil {
				_, err = rd.Next()
			}
			if errors.Is(err, io.EOF) || err.Error() != tt.want {
				t.Errorf("error %q, want %q", err, tt.want)
			}
		})
	}
}

// The simulator reports a bad line with its number, as the reader does.
func TestRunReportsBadLine(t *testing.T) {
	trace := swf(4, line(1, 0, 10, 1, -1), "2 5 -1 10\n")
	_, err := Run(t.Context(), strings.NewReader(trace), noIO())
	if err == nil || err.Error() != "trace line 3: 4 fields, want 18 (Standard Workload Format)" {
		t.Errorf("error %v", err)
	}
}

func TestSWFHeaderAndJobs(t *testing.T) {
	trace := `; Version: 2
;  MaxNodes: 128 (8 reserved)
; MaxProcs: 1024
; MaxJobs: abc
; MaxRecords: 3
; Note: a remark: with colons
1 0 12 3600 64 -1 -1 80 7200 -1 1 3 1 -1 1 -1 -1 -1
2 30.5 -1 60 -1 -1 -1 16 -1 -1 0 4 1 -1 1 -1 -1 -1
`
	rd, err := NewReader(strings.NewReader(trace))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Header{MaxNodes: 128, MaxProcs: 1024, MaxJobs: 3}); rd.Header != want {
		t.Errorf("header %+v, want %+v", rd.Header, want)
	}
	if ppn := rd.Header.ProcsPerNode(); ppn != 8 {
		t.Errorf("%d processors per node, want 8", ppn)
	}
	want := []TraceJob{
		{Line: 7, ID: 1, Submit: 0, Run: time.Hour, Procs: 64, ReqTime: 2 * time.Hour},
		// Allocated processors unknown: the requested ones count.
		{Line: 8, ID: 2, Submit: 30500 * time.Millisecond, Run: time.Minute, Procs: 16, ReqTime: -time.Second},
	}
	for i, w := range want {
		j, err := rd.Next()
		if err != nil {
			t.Fatal(err)
		}
		if j != w {
			t.Errorf("job %d: %+v, want %+v", i, j, w)
		}
	}
	if _, err := rd.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last job: %v, want EOF", err)
	}
}

// Without MaxNodes or MaxProcs the machine's size must be given.
func TestNoMachineSize(t *testing.T) {
	_, err := Run(t.Context(), strings.NewReader(line(1, 0, 10, 1, -1)), noIO())
	if err == nil || !strings.Contains(err.Error(), "--nodes") {
		t.Fatalf("error %v, want one naming --nodes", err)
	}
	c := noIO()
	c.Nodes = 2
	if r := run(t, line(1, 0, 10, 1, -1), c); r.Nodes != 2 || r.Jobs != 1 {
		t.Errorf("%d nodes, %d jobs; want 2, 1", r.Nodes, r.Jobs)
	}
}
