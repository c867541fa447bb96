package sim

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// readSacctFile reads a testdata listing in UTC.
func readSacctFile(t *testing.T, name string) (*Trace, SacctStats, error) {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return ReadSacct(f, time.UTC)
}

// testdata/sacct.txt: steps, an array's tasks and its pending rest, a job
// cancelled before it started, one still running, heterogeneous
// components, a job that ran 0 s, and every Timelimit form sacct prints.
// The jobs come out in submit order, counted from the first submission.
func TestReadSacct(t *testing.T) {
	tr, st, err := readSacctFile(t, "sacct.txt")
	if err != nil {
		t.Fatal(err)
	}
	min := func(m int) time.Duration { return time.Duration(m) * time.Minute }
	want := []TraceJob{
		// An array's tasks, submitted with the array before job 1001.
		{Line: 5, ID: 1003, Submit: 0, Run: min(30), Procs: 32, Nodes: 1, ReqTime: 24 * time.Hour},
		{Line: 6, ID: 1004, Submit: 0, Run: min(180), Procs: 32, Nodes: 1, ReqTime: 24 * time.Hour},
		{Line: 1, ID: 1001, Submit: min(15), Run: time.Hour, Procs: 128, Nodes: 4, ReqTime: 2 * time.Hour},
		{Line: 11, ID: 1008, Submit: min(75), Run: min(30), Procs: 64, Nodes: 2, ReqTime: min(30)}, // MM:SS
		// Heterogeneous components; Partition_Limit is no known limit.
		{Line: 13, ID: 1009, Submit: min(95), Run: min(30), Procs: 96, Nodes: 3},
		{Line: 14, ID: 1010, Submit: min(95), Run: min(30) + time.Second, Procs: 8, Nodes: 1},
		{Line: 15, ID: 1011, Submit: min(105), Run: 0, Procs: 256, Nodes: 8, ReqTime: min(10)},
		{Line: 16, ID: 1012, Submit: min(135), Run: min(58*60 + 30), Procs: 256, Nodes: 8, ReqTime: min(60*60 + 30)},
		{Line: 17, ID: 1013, Submit: min(140), Run: 2 * time.Hour, Procs: 64, Nodes: 2}, // UNLIMITED
	}
	if !slices.Equal(tr.Jobs, want) {
		t.Errorf("jobs:\n%+v\nwant\n%+v", tr.Jobs, want)
	}
	wantSt := SacctStats{Lines: 17, Jobs: 9, Steps: 4, NotStarted: 2, Running: 1,
		FirstSubmit: time.Date(2024, 5, 1, 7, 45, 0, 0, time.UTC), LastSubmit: time.Date(2024, 5, 1, 10, 5, 0, 0, time.UTC)}
	if st != wantSt {
		t.Errorf("stats %+v, want %+v", st, wantSt)
	}
	if want := (Header{MaxJobs: 9}); tr.Header != want {
		t.Errorf("header %+v, want %+v", tr.Header, want)
	}
}

// The same listing with sacct's header line, in any column order and
// with other columns, and with --parsable's trailing '|', reads the same.
func TestReadSacctHeader(t *testing.T) {
	const noHeader = "7|2024-05-01T08:00:00|2024-05-01T08:01:00|2024-05-01T09:01:00|2|64|1-02:00:00|COMPLETED\n" +
		"7.batch|2024-05-01T08:01:00|2024-05-01T08:01:00|2024-05-01T09:01:00|1|32||COMPLETED\n"
	want := []TraceJob{{Line: 1, ID: 7, Run: time.Hour, Procs: 64, Nodes: 2, ReqTime: 26 * time.Hour}}
	tests := []struct {
		name, listing string
		line          int // of the job
	}{
		{"no header", noHeader, 1},
		{"sacct's header", "JobIDRaw|Submit|Start|End|NNodes|NCPUS|Timelimit|State\n" + noHeader, 2},
		{"--parsable", strings.ReplaceAll(noHeader, "\n", "|\n"), 1},
		{"blank lines, CRLF", "\n\r\n" + strings.ReplaceAll(noHeader, "\n", "\r\n"), 3},
		{"reordered, more columns, lower case",
			"state|jobidraw|User|Timelimit|Submit|Start|End|NCPUS|NNodes\n" +
				"COMPLETED|7|alice|1-02:00:00|2024-05-01T08:00:00|2024-05-01T08:01:00|2024-05-01T09:01:00|64|2\n" +
				"COMPLETED|7.batch|alice||2024-05-01T08:01:00|2024-05-01T08:01:00|2024-05-01T09:01:00|32|1\n", 2},
		{"header repeated (listings joined)",
			"JobIDRaw|Submit|Start|End|NNodes|NCPUS|Timelimit|State\n" + noHeader +
				"JobIDRaw|Submit|Start|End|NNodes|NCPUS|Timelimit|State\n", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, _, err := ReadSacct(strings.NewReader(tt.listing), time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			w := slices.Clone(want)
			w[0].Line = tt.line
			if !slices.Equal(tr.Jobs, w) {
				t.Errorf("jobs %+v, want %+v", tr.Jobs, w)
			}
		})
	}
}

// A line that cannot be read is an error naming its number, its field and
// what to give; testdata/sacct_bad.txt has one at line 4.
func TestReadSacctErrors(t *testing.T) {
	if _, _, err := readSacctFile(t, "sacct_bad.txt"); err == nil ||
		err.Error() != `sacct line 4: field 7 (Timelimit) is "1-25:00:00": want [D-]HH:MM:SS (as sacct prints it), MM:SS, UNLIMITED or Partition_Limit` {
		t.Errorf("testdata/sacct_bad.txt: %v", err)
	}
	const ok = "1|2024-05-01T08:00:00|2024-05-01T08:01:00|2024-05-01T09:01:00|2|64|02:00:00|COMPLETED\n"
	tests := []struct {
		name, listing string
		want          string // the error's text, or its start when it ends in "..."
	}{
		{"too few fields", ok + "2|2024-05-01T08:00:00|2024-05-01T08:01:00|2|64|02:00:00|COMPLETED\n",
			"sacct line 2: 7 fields, want 8 separated by '|' (JobIDRaw|Submit|Start|End|NNodes|NCPUS|Timelimit|State): run sacct --parsable2 --noheader --allusers --format=JobIDRaw,Submit,Start,End,NNodes,NCPUS,Timelimit,State"},
		{"JobID of an array task", "1234_5|2024-05-01T08:00:00|2024-05-01T08:01:00|2024-05-01T09:01:00|2|64|02:00:00|COMPLETED\n",
			`sacct line 1: field 1 (JobIDRaw) is "1234_5": want the raw job id, digits with .STEP for a step; give sacct --format=JobIDRaw, not JobID ...`},
		{"header with JobID", "JobID|Submit|Start|End|NNodes|NCPUS|Timelimit|State\n" + ok,
			"sacct line 1: the header names JobID: give sacct --format=JobIDRaw,Submit,Start,End,NNodes,NCPUS,Timelimit,State, with JobIDRaw ..."},
		{"header without NCPUS", "JobIDRaw|Submit|Start|End|NNodes|Timelimit|State\n",
			"sacct line 1: the header has no NCPUS column: give sacct --format=JobIDRaw,Submit,Start,End,NNodes,NCPUS,Timelimit,State"},
		{"relative time", "1|Ystday 08:00|2024-05-01T08:01:00|2024-05-01T09:01:00|2|64|02:00:00|COMPLETED\n",
			`sacct line 1: field 2 (Submit) is "Ystday 08:00": want a time such as 2024-05-01T12:00:00 (run sacct with SLURM_TIME_FORMAT=standard)`},
		{"submit unknown", "1|Unknown|2024-05-01T08:01:00|2024-05-01T09:01:00|2|64|02:00:00|COMPLETED\n",
			`sacct line 1: field 2 (Submit) is "Unknown": every job has a submit time; want a time such as 2024-05-01T12:00:00`},
		{"bad start", "1|2024-05-01T08:00:00|soon|2024-05-01T09:01:00|2|64|02:00:00|COMPLETED\n",
			`sacct line 1: field 3 (Start) is "soon": want a time such as 2024-05-01T12:00:00 (run sacct with SLURM_TIME_FORMAT=standard), or Unknown or None for a job that never started`},
		{"end before start", "1|2024-05-01T08:00:00|2024-05-01T08:01:00|2024-05-01T08:00:30|2|64|02:00:00|COMPLETED\n",
			"sacct line 1: field 4 (End) 2024-05-01T08:00:30 is before field 3 (Start) 2024-05-01T08:01:00: fix the line or drop it"},
		{"nodes not a number", "1|2024-05-01T08:00:00|2024-05-01T08:01:00|2024-05-01T09:01:00|four|64|02:00:00|COMPLETED\n",
			`sacct line 1: field 5 (NNodes) is "four": want a whole number of nodes, 0 or more`},
		{"processors negative", "1|2024-05-01T08:00:00|2024-05-01T08:01:00|2024-05-01T09:01:00|2|-64|02:00:00|COMPLETED\n",
			`sacct line 1: field 6 (NCPUS) is "-64": want a whole number of processors, 0 or more`},
		{"bad time limit", ok + "2|2024-05-01T08:00:00|2024-05-01T08:01:00|2024-05-01T09:01:00|2|64|1-2:3:x|COMPLETED\n",
			`sacct line 2: field 7 (Timelimit) is "1-2:3:x": want [D-]HH:MM:SS (as sacct prints it), MM:SS, UNLIMITED or Partition_Limit`},
		{"bad field numbered as the header orders it", "Timelimit|JobIDRaw|Submit|Start|End|NNodes|NCPUS|State\n01:60:00|1|2024-05-01T08:00:00|2024-05-01T08:01:00|2024-05-01T09:01:00|2|64|COMPLETED\n",
			`sacct line 2: field 1 (Timelimit) is "01:60:00": want [D-]HH:MM:SS ...`},
		{"no state", "1|2024-05-01T08:00:00|2024-05-01T08:01:00|2024-05-01T09:01:00|2|64|02:00:00|\n",
			`sacct line 1: field 8 (State) is "": want the job's state, such as COMPLETED`},
		{"time limit past 1e9 s", "1|2024-05-01T08:00:00|2024-05-01T08:01:00|2024-05-01T09:01:00|2|64|20000-00:00:00|COMPLETED\n",
			`sacct line 1: field 7 (Timelimit) is "20000-00:00:00": more than 1e9 s (about 31 years), the most the simulator takes; give UNLIMITED for no limit`},
		{"no job that ran", "1|2024-05-01T08:00:00|Unknown|Unknown|2|64|02:00:00|PENDING\n1.batch|2024-05-01T08:00:00|x|x|2|64||RUNNING\n",
			"no job in sacct's listing both started and ended (2 lines: 1 steps, 1 never started, 0 still running): give sacct a period with --starttime and --endtime ..."},
		{"empty", "", "no job in sacct's listing both started and ended (0 lines: ..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ReadSacct(strings.NewReader(tt.listing), time.UTC)
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if prefix, cut := strings.CutSuffix(tt.want, "..."); cut && strings.HasPrefix(err.Error(), prefix) {
				return
			}
			if err.Error() != tt.want {
				t.Errorf("error\n%q\nwant\n%q", err, tt.want)
			}
		})
	}
}

func TestTimelimit(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration // -1: an error
	}{
		{"02:00:00", 2 * time.Hour},
		{"00:00:30", 30 * time.Second},
		{"1-00:00:00", 24 * time.Hour},
		{"2-12:30:00", 60*time.Hour + 30*time.Minute},
		{"30:00", 30 * time.Minute},
		{"90:30", 90*time.Minute + 30*time.Second},
		{"90", 90 * time.Minute},
		{"1-12", 36 * time.Hour},
		{"1-12:30", 36*time.Hour + 30*time.Minute},
		{"UNLIMITED", 0},
		{"unlimited", 0},
		{"Partition_Limit", 0},
		{"", -1},
		{"1-", -1},
		{"-5", -1},
		{"1:2:3:4", -1},
		{"1-2:3:4:5", -1},
		{"00:60:00", -1},
		{"10:75", -1},
		{"1-24:00:00", -1},
		{"1-2-3", -1},
		{"x", -1},
		{"+5", -1},
		{"1.5", -1},
		{"1234567890:00", -1},
	}
	for _, tt := range tests {
		got, err := timelimit(tt.in)
		switch {
		case tt.want < 0 && err == nil:
			t.Errorf("timelimit(%q) = %s, want an error", tt.in, got)
		case tt.want >= 0 && (err != nil || got != tt.want):
			t.Errorf("timelimit(%q) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

// A listing's jobs run as an SWF trace's do: on the nodes sacct gives
// (processors per node do not apply), the 0 s job skipped as SWF's are.
func TestSacctTraceRuns(t *testing.T) {
	tr, _, err := readSacctFile(t, "sacct.txt")
	if err != nil {
		t.Fatal(err)
	}
	c := noIO()
	c.Nodes = 8
	c.ProcsPerNode = 32 // would make job 1010's 8 processors one node, 1009's 96 three
	r, err := tr.Run(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Jobs != 8 || r.Skipped != (Skipped{NoRunTime: 1}) {
		t.Errorf("%d jobs, skipped %+v; want 8, job 1011's 0 s skipped", r.Jobs, r.Skipped)
	}
	nodes := map[int64]int{}
	for _, g := range r.Gantt {
		nodes[g.ID] = g.Nodes
	}
	if nodes[1001] != 4 || nodes[1010] != 1 || nodes[1012] != 8 {
		t.Errorf("nodes per job %v: want sacct's NNodes", nodes)
	}
	if !tr.HasJob(1012) || tr.HasJob(1005) {
		t.Error("HasJob: want the jobs kept, not the pending one")
	}
	// The machine's size is not in sacct's listing.
	c.Nodes = 0
	if _, err := tr.Run(t.Context(), c); err == nil || !strings.Contains(err.Error(), "--nodes") {
		t.Errorf("without --nodes: %v, want an error naming --nodes", err)
	}
}

// A Trace built out of order is refused, as an unsorted SWF trace is.
func TestTraceOrder(t *testing.T) {
	tr := &Trace{Jobs: []TraceJob{
		{Line: 1, ID: 1, Submit: time.Minute, Run: time.Minute, Nodes: 1},
		{Line: 2, ID: 2, Submit: 0, Run: time.Minute, Nodes: 1},
	}}
	c := noIO()
	c.Nodes = 2
	if _, err := tr.Run(t.Context(), c); err == nil || !strings.Contains(err.Error(), "trace line 2: submit time 0s is before the previous job's 1m0s") {
		t.Errorf("error %v", err)
	}
	if _, err := (&Trace{}).Run(t.Context(), c); err == nil {
		t.Error("an empty trace was run")
	}
}

// An AdminComment column, named in the header or last without one, gives
// a job the input RSA recorded for it; a job without RSA's token, or with
// the site's text alone (holding the separator too), keeps a drawn size.
func TestReadSacctAdminComment(t *testing.T) {
	for _, c := range []struct {
		name, listing string
	}{
		{"header", "JobIDRaw|AdminComment|Submit|Start|End|NNodes|NCPUS|Timelimit|State\n" +
			"1|rsa:in=2048b/3f|2024-05-01T10:00:00|2024-05-01T10:00:10|2024-05-01T10:10:00|2|64|01:00:00|COMPLETED\n" +
			"2|site note|2024-05-01T10:01:00|2024-05-01T10:01:10|2024-05-01T10:11:00|1|32|01:00:00|COMPLETED\n"},
		{"last, no header", "" +
			"1|2024-05-01T10:00:00|2024-05-01T10:00:10|2024-05-01T10:10:00|2|64|01:00:00|COMPLETED|cost|centre;rsa:in=2048b/3f\n" +
			"2|2024-05-01T10:01:00|2024-05-01T10:01:10|2024-05-01T10:11:00|1|32|01:00:00|COMPLETED|\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, st, err := ReadSacct(strings.NewReader(c.listing), time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Jobs) != 2 || tr.Jobs[0].Input != 2048 || tr.Jobs[1].Input != 0 || st.Recorded != 1 {
				t.Errorf("jobs %+v, recorded %d; want job 1's input 2048 bytes, job 2's unknown, 1 recorded", tr.Jobs, st.Recorded)
			}
		})
	}
}
