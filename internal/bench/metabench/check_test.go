package metabench

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// jobSections parses a fio job file into its sections' options.
func jobSections(t *testing.T, file string) (order []string, sections map[string]map[string]string) {
	t.Helper()
	sections = map[string]map[string]string{}
	var cur map[string]string
	sc := bufio.NewScanner(strings.NewReader(file))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			name := strings.Trim(line, "[]")
			if _, dup := sections[name]; dup {
				t.Fatalf("section [%s] twice:\n%s", name, file)
			}
			cur = map[string]string{}
			sections[name] = cur
			order = append(order, name)
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || cur == nil {
				t.Fatalf("line %q is no option of a section:\n%s", line, file)
			}
			cur[k] = v
		}
	}
	return order, sections
}

// TestFioPlan checks the fio job file each phase's cross-check runs:
// the engine, a job a participant in its own mount's view of the
// phase's layout, the participant's share of the files, and the options
// that keep fio from touching the files before the timed run.
func TestFioPlan(t *testing.T) {
	const nfile, nbyte = 31, 100
	c := Config{NFile: nfile, NByte: nbyte, Freq: 7, NProc: 4, Dirs: []string{"/m0", "/m1", "/m2"}}
	r := &runner{c: c, run: "metabench-x", n: c.Participants()}
	tests := []struct {
		phase    Phase
		engine   string
		separate bool // a directory per job
		populate bool // process 0 makes the files first
	}{
		{CreateB, "filecreate", true, false},
		{CreateC, "filecreate", false, false},
		{StatA, "filestat", true, true},
		{StatB, "filestat", false, true},
		{AppendA, "sync", true, true},
		{AppendB, "sync", false, true},
		{DeleteA, "filedelete", true, true},
		{DeleteB, "filedelete", false, true},
	}
	for _, tt := range tests {
		spec, l, ok := r.fioPlan(tt.phase)
		if !ok {
			t.Errorf("%s: no fio plan", tt.phase)
			continue
		}
		if l.separate != tt.separate || l.populate != tt.populate {
			t.Errorf("%s: layout %+v, want separate %v, populate %v", tt.phase, l, tt.separate, tt.populate)
		}
		order, sec := jobSections(t, spec.jobFile())
		g := sec["global"]
		want := map[string]string{
			"ioengine": tt.engine, "thread": "1", "openfiles": "1", "create_on_open": "1",
			"filename_format": "$jobname.$filenum", "fallocate": "none",
		}
		switch tt.engine {
		case "sync":
			for k, v := range map[string]string{"rw": "write", "file_append": "1", "bs": "100", "filesize": "100", "invalidate": "0"} {
				want[k] = v
			}
		case "filestat":
			want["filesize"], want["stat_type"] = "4k", "stat"
		case "filedelete":
			want["filesize"], want["unlink"] = "4k", "0"
		default:
			want["filesize"] = "4k"
		}
		for k, v := range want {
			if g[k] != v {
				t.Errorf("%s: global %s=%q, want %q", tt.phase, k, g[k], v)
			}
		}
		// Three participants, processes 1, 2, 3: mounts /m1, /m2, /m0.
		if want := []string{"global", "p0", "p1", "p2"}; strings.Join(order, " ") != strings.Join(want, " ") {
			t.Fatalf("%s: sections %v, want %v", tt.phase, order, want)
		}
		total := 0
		for k, name := range order[1:] {
			job := sec[name]
			dir := filepath.Join(c.Dirs[(k+1)%3], "metabench-x", "check", phaseDir(tt.phase))
			if tt.separate {
				dir = filepath.Join(dir, name)
			}
			if job["directory"] != dir {
				t.Errorf("%s: job %s in %s, want %s", tt.phase, name, job["directory"], dir)
			}
			_, count := share(nfile, 3, k)
			if job["nrfiles"] != strconv.Itoa(count) {
				t.Errorf("%s: job %s has nrfiles=%s, want %d", tt.phase, name, job["nrfiles"], count)
			}
			total += count
		}
		if total != nfile {
			t.Errorf("%s: %d files in all, want %d", tt.phase, total, nfile)
		}
	}

	// Create-A: one job, the last process, every file.
	spec, l, ok := r.fioPlan(CreateA)
	if !ok || l.populate || l.separate {
		t.Fatalf("Create-A: plan %v, layout %+v", ok, l)
	}
	order, sec := jobSections(t, spec.jobFile())
	if len(order) != 2 || sec["global"]["ioengine"] != "filecreate" ||
		sec["p0"]["nrfiles"] != "31" || sec["p0"]["directory"] != "/m0/metabench-x/check/create-a" {
		t.Errorf("Create-A job file:\n%s", spec.jobFile())
	}
	for _, p := range []Phase{UtimeA, UtimeB, Untar} {
		if _, _, ok := r.fioPlan(p); ok {
			t.Errorf("%s: a fio plan, though fio has no engine for it", p)
		}
	}
}

func TestParseFio(t *testing.T) {
	tests := []struct {
		file    string
		jobs    []string
		ops     int
		elapsed time.Duration
	}{
		// filecreate counts in read (fio's default rw), append in write.
		{"fio-filecreate-2jobs.json", []string{"p0", "p1"}, 99, 5 * time.Millisecond},
		{"fio-append-1job.json", []string{"p0"}, 20, time.Millisecond},
	}
	for _, tt := range tests {
		out, err := os.ReadFile(filepath.Join("testdata", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		// fio may print a note before its JSON.
		jobs, err := parseFio(append([]byte("fio: note: something\n"), out...))
		if err != nil {
			t.Fatalf("%s: %v", tt.file, err)
		}
		var names []string
		for _, j := range jobs {
			names = append(names, j.Name)
			if j.InCalls <= 0 || j.InCalls > j.Runtime+time.Millisecond {
				t.Errorf("%s: job %s %s in calls over a %s run", tt.file, j.Name, j.InCalls, j.Runtime)
			}
		}
		if strings.Join(names, " ") != strings.Join(tt.jobs, " ") {
			t.Errorf("%s: jobs %v, want %v", tt.file, names, tt.jobs)
		}
		ops, elapsed, inCalls := fioAggregate(jobs)
		if ops != tt.ops || elapsed != tt.elapsed || inCalls {
			t.Errorf("%s: %d ops in %s (in calls %v), want %d in %s", tt.file, ops, elapsed, inCalls, tt.ops, tt.elapsed)
		}
	}

	// Jobs all under a millisecond: the time in the calls stands in.
	ops, elapsed, inCalls := fioAggregate([]fioJobResult{{Ops: 10, InCalls: 300 * time.Microsecond}, {Ops: 10, InCalls: 400 * time.Microsecond}})
	if ops != 20 || elapsed != 400*time.Microsecond || !inCalls {
		t.Errorf("sub-millisecond jobs: %d ops in %s (in calls %v), want 20 in 400µs from the calls", ops, elapsed, inCalls)
	}

	for _, bad := range []struct{ name, out, want string }{
		{"empty", "", "no JSON"},
		{"no jobs", `{"jobs": []}`, "no jobs"},
		{"failed job", `{"jobs": [{"jobname": "p0", "error": 2}]}`, "error 2"},
		{"cut short", `{"jobs": [`, "JSON report"},
	} {
		if _, err := parseFio([]byte(bad.out)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: error %v, want one saying %q", bad.name, err, bad.want)
		}
	}
}

// TestRunCrossCheck runs every phase and its cross-check for real, on a
// small scale, through two working directories that are one (a symlink
// stands in for a second mount): every phase gets a check value.
func TestRunCrossCheck(t *testing.T) {
	for _, tool := range []string{"fio", "tar", "touch"} {
		testutil.RequireTool(t, tool)
	}
	work := t.TempDir()
	mount2 := filepath.Join(t.TempDir(), "client1")
	if err := os.Symlink(work, mount2); err != nil {
		t.Fatal(err)
	}
	const nfile = 300 // enough for fio to time most phases in whole ms
	c := Config{
		NFile: nfile, NByte: 512, Freq: 100, NProc: 3, CrossCheck: true,
		Dirs: []string{work, mount2}, Tree: GlibcTree().Scaled(1000), LocalDir: t.TempDir(),
	}
	rep, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Checks) != len(rep.Results) {
		t.Fatalf("%d checks for %d phases", len(rep.Checks), len(rep.Results))
	}
	rows := 0
	for _, row := range rep.Rows("test") {
		if row.Metric != "ops_per_s" {
			if row.CheckValue != nil {
				t.Errorf("%s %s row has a check", row.Case, row.Metric)
			}
			continue
		}
		rows++
		if row.CheckValue == nil || *row.CheckValue <= 0 || row.Check == "" || row.Agree == nil {
			t.Errorf("%s: no check value (note %q)", row.Case, row.Note)
		}
		t.Logf("%-9s %8.0f ops/s  %-16s %8.0f", row.Case, row.Value, row.Check, *row.CheckValue)
	}
	if rows != 12 {
		t.Errorf("%d phase rows, want 12", rows)
	}

	// The checks did their work on the files the phases' layout gives.
	run, err := filepath.Glob(filepath.Join(work, "metabench-*", checkDir))
	if err != nil || len(run) != 1 {
		t.Fatalf("check directories %v, %v", run, err)
	}
	check := func(rel string, wantDirs, wantFiles int, wantSize int64) {
		t.Helper()
		dirs, files, size := countTree(t, filepath.Join(run[0], rel))
		if dirs != wantDirs || files != wantFiles || size != wantSize {
			t.Errorf("%s holds %d dirs, %d files, %d bytes; want %d, %d, %d", rel, dirs, files, size, wantDirs, wantFiles, wantSize)
		}
	}
	check("create-a", 0, nfile, 0)
	check("create-b", 2, nfile, 0)
	check("create-c", 0, nfile, 0)
	check("stat-a", 2, nfile, 0) // fio left the files empty
	check("append-b", 0, nfile, nfile*512)
	check("delete-a", 2, 0, 0)
	check("delete-b", 0, 0, 0)
	check("untar", 2*(1+c.Tree.Dirs), 2*c.Tree.Files, 2*c.Tree.Bytes)

	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fio filecreate", "touch -c", "tar -xf", "fio append"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
}

// TestRunCrossCheckCleanup: -k removes the checks' files too.
func TestRunCrossCheckCleanup(t *testing.T) {
	testutil.RequireTool(t, "fio")
	work := t.TempDir()
	c := Config{NFile: 20, NByte: 10, Freq: 5, NProc: 2, Create: true, Cleanup: true, CrossCheck: true, Dirs: []string{work}}
	if _, err := Run(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if left, err := os.ReadDir(work); err != nil || len(left) != 0 {
		t.Errorf("-k left %v in %s (%v)", left, work, err)
	}
}

func TestMdtestArgs(t *testing.T) {
	c := Config{NFile: 31, NProc: 4, Dirs: []string{"/m0", "/m1", "/m2"}, Mdtest: "/opt/ior"}
	r := &runner{c: c, run: "metabench-x", n: c.Participants()}
	runs := r.mdtestRuns(c.Phases())
	if len(runs) != 3 {
		t.Fatalf("%d mdtest runs, want 3", len(runs))
	}
	want := []string{
		"-n 31 -F -C -r -d /m0/metabench-x/check/mdtest-a", // one rank: process 3, through /m0
		"-n 10 -F -C -T -r -d /m1/metabench-x/check/mdtest-u@/m2/metabench-x/check/mdtest-u@/m0/metabench-x/check/mdtest-u -u",
		"-n 10 -F -C -T -r -d /m1/metabench-x/check/mdtest-s",
	}
	for i, run := range runs {
		if got := strings.Join(r.mdtestArgs(run, r.mdtestPaths(run)), " "); got != want[i] {
			t.Errorf("mdtest run %d: %s, want %s", i, got, want[i])
		}
	}
	if runs := r.mdtestRuns([]Phase{StatA}); len(runs) != 1 || !runs[0].unique || len(runs[0].ops) != 1 {
		t.Errorf("Stat-A alone: runs %+v, want the -u run for it alone", runs)
	}
}

// TestPreferMdtest: mdtest's rate is the check where it has one, the
// other tool's rate then in its note; where it has none, the other
// tool's check stands, with why.
func TestPreferMdtest(t *testing.T) {
	fio := Check{Phase: CreateB, Tool: "fio filecreate", Ops: 100, Elapsed: time.Second, Note: "over the longest job"}
	md := Check{Phase: CreateB, Tool: "mdtest", Ops: 100, Elapsed: 500 * time.Millisecond, Note: "mdtest: File creation"}
	tests := []struct {
		name      string
		md, other Check
		wantTool  string
		wantRate  float64
		wantNote  string
	}{
		{"mdtest rated", md, fio, "mdtest", 200, "mdtest: File creation; fio filecreate 100 ops/s (over the longest job)"},
		{"mdtest failed", Check{Phase: CreateB, Note: "mdtest failed: boom"}, fio, "fio filecreate", 100, "over the longest job; mdtest failed: boom"},
		{"other failed", md, Check{Phase: CreateB, Note: "cross-check failed: x"}, "mdtest", 200, "mdtest: File creation; cross-check failed: x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := preferMdtest(tt.md, tt.other)
			if got.Tool != tt.wantTool || got.Rate() != tt.wantRate || got.Note != tt.wantNote {
				t.Errorf("preferMdtest = %q %.0f ops/s %q, want %q %.0f ops/s %q", got.Tool, got.Rate(), got.Note, tt.wantTool, tt.wantRate, tt.wantNote)
			}
		})
	}
}
