package mptio

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// fioSection as a test reads it back from a job file: its name and
// options, in order.
type jobSection struct {
	name string
	opts map[string]string
}

// parseJobFile splits a fio job file into its sections, comments left out.
func parseJobFile(t *testing.T, job string) []jobSection {
	t.Helper()
	var secs []jobSection
	sc := bufio.NewScanner(strings.NewReader(job))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, ";") || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			secs = append(secs, jobSection{name: line[1 : len(line)-1], opts: map[string]string{}})
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || len(secs) == 0 {
				t.Fatalf("job file line %q: not an option of a section", line)
			}
			if _, dup := secs[len(secs)-1].opts[k]; dup {
				t.Fatalf("section %s sets %s twice", secs[len(secs)-1].name, k)
			}
			secs[len(secs)-1].opts[k] = v
		}
	}
	return secs
}

// job is a section's name and the options a test checks of it; "" for an
// option that must be absent.
type job struct {
	name string
	opts map[string]string
}

func n(i int64) string { return strconv.FormatInt(i, 10) }

// TestFioJobFile checks the job files of the appendix's three examples
// and its sample, and of the sample's shape in the other modes: fio's jobs
// must be MPTIO's threads, on the same files at the same offsets.
func TestFioJobFile(t *testing.T) {
	sample := Config{Procs: 3, ProcSize: 200 * mib, RecordSize: 256 * kib, Threads: 4, Dir: "/t"}
	with := func(c Config, f func(*Config)) Config { f(&c); return c }
	for _, tc := range []struct {
		name   string
		cfg    Config
		test   Test
		global map[string]string
		jobs   []job
	}{
		{
			// One 4 GB file, eight 512 MB sections: four processes
			// of two threads, each process' threads one section.
			name: "example 1 seq write",
			cfg:  Config{Procs: 4, Mode: Global, ProcSize: gib, RecordSize: 256 * kib, Threads: 2, Dir: "/t"},
			test: SeqWrite,
			global: map[string]string{"thread": "1", "group_reporting": "1", "ioengine": "sync", "rw": "write",
				"bs": n(256 * kib), "size": n(512 * mib), "io_size": n(512 * mib), "number_ios": "2048",
				"direct": "", "invalidate": "0", "fallocate": "none", "create_on_open": "1", "norandommap": ""},
			jobs: []job{
				{"p0", map[string]string{"filename": "/t/mptio_global", "offset": "0", "numjobs": "2", "offset_increment": n(512 * mib)}},
				{"p1", map[string]string{"filename": "/t/mptio_global", "offset": n(gib), "numjobs": "2", "offset_increment": n(512 * mib)}},
				{"p2", map[string]string{"filename": "/t/mptio_global", "offset": n(2 * gib), "numjobs": "2", "offset_increment": n(512 * mib)}},
				{"p3", map[string]string{"filename": "/t/mptio_global", "offset": n(3 * gib), "numjobs": "2", "offset_increment": n(512 * mib)}},
			},
		},
		{
			// Written in place, then read by the next process down:
			// process 0 reads File_1, process 1 File_0.
			name: "example 2 seq read after rotation",
			cfg: Config{Procs: 2, Mode: PerProcess, GlobalSize: 512 * mib, RecordSize: 64 * kib, Threads: 4, Dir: "/t",
				Rotate: true, Skip: []Test{ReadModifyWrite, RandomWrite, RandomRead}},
			test: SeqRead,
			global: map[string]string{"rw": "read", "bs": n(64 * kib), "size": n(64 * mib), "number_ios": "1024",
				"create_on_open": "", "allow_file_create": ""},
			jobs: []job{
				{"p0", map[string]string{"filename": "/t/mptio_p1", "offset": "0", "numjobs": "4", "offset_increment": n(64 * mib)}},
				{"p1", map[string]string{"filename": "/t/mptio_p0", "offset": "0", "numjobs": "4", "offset_increment": n(64 * mib)}},
			},
		},
		{
			name: "example 2 seq write",
			cfg: Config{Procs: 2, Mode: PerProcess, GlobalSize: 512 * mib, RecordSize: 64 * kib, Threads: 4, Dir: "/t",
				Rotate: true, Skip: []Test{ReadModifyWrite, RandomWrite, RandomRead}},
			test: SeqWrite,
			jobs: []job{
				{"p0", map[string]string{"filename": "/t/mptio_p0", "offset": "0", "numjobs": "4"}},
				{"p1", map[string]string{"filename": "/t/mptio_p1", "offset": "0", "numjobs": "4"}},
			},
		},
		{
			// Thread 0 on dev0, thread 1 on dev1, each process 1,365
			// records further on both: a job a thread.
			name: "example 3 random read",
			cfg:  Config{Procs: 3, Mode: Device, Devices: []string{"/dev/d0", "/dev/d1"}, GlobalSize: 512 * mib, RecordSize: 64 * kib, Threads: 2},
			test: RandomRead,
			global: map[string]string{"rw": "randread", "bs": n(64 * kib), "size": n(1365 * 64 * kib), "number_ios": "1365",
				"norandommap": "1", "allow_file_create": "0", "create_on_open": ""},
			jobs: []job{
				{"p0_t0", map[string]string{"filename": "/dev/d0", "offset": "0", "numjobs": ""}},
				{"p0_t1", map[string]string{"filename": "/dev/d1", "offset": "0", "numjobs": ""}},
				{"p1_t0", map[string]string{"filename": "/dev/d0", "offset": n(1365 * 64 * kib)}},
				{"p1_t1", map[string]string{"filename": "/dev/d1", "offset": n(1365 * 64 * kib)}},
				{"p2_t0", map[string]string{"filename": "/dev/d0", "offset": n(2 * 1365 * 64 * kib)}},
				{"p2_t1", map[string]string{"filename": "/dev/d1", "offset": n(2 * 1365 * 64 * kib)}},
			},
		},
		{
			// Two threads a device: a process' two threads on a
			// device are one section again.
			name:   "devices shared by threads",
			cfg:    Config{Procs: 2, Mode: Device, Devices: []string{"/dev/d0", "/dev/d1"}, ProcSize: 4 * mib, RecordSize: 64 * kib, Threads: 4},
			test:   SeqWrite,
			global: map[string]string{"size": n(mib), "create_on_open": "", "allow_file_create": "0"},
			jobs: []job{
				{"p0_t0_t2", map[string]string{"filename": "/dev/d0", "offset": "0", "numjobs": "2", "offset_increment": n(mib)}},
				{"p0_t1_t3", map[string]string{"filename": "/dev/d1", "offset": "0", "numjobs": "2", "offset_increment": n(mib)}},
				{"p1_t0_t2", map[string]string{"filename": "/dev/d0", "offset": n(2 * mib), "numjobs": "2", "offset_increment": n(mib)}},
				{"p1_t1_t3", map[string]string{"filename": "/dev/d1", "offset": n(2 * mib), "numjobs": "2", "offset_increment": n(mib)}},
			},
		},
		{
			name:   "sample direct with offset",
			cfg:    with(sample, func(c *Config) { c.Direct, c.Offset = true, 4096 }),
			test:   SeqRead,
			global: map[string]string{"direct": "1", "bs": n(256 * kib), "size": n(50 * mib), "number_ios": "200"},
			jobs: []job{
				{"p0", map[string]string{"filename": "/t/mptio_global", "offset": "4096", "numjobs": "4", "offset_increment": n(50 * mib)}},
				{"p1", map[string]string{"filename": "/t/mptio_global", "offset": n(200*mib + 4096)}},
				{"p2", map[string]string{"filename": "/t/mptio_global", "offset": n(400*mib + 4096)}},
			},
		},
		{
			name: "sample per thread",
			cfg:  with(sample, func(c *Config) { c.Mode = PerThread }),
			test: SeqWrite,
			jobs: func() []job {
				var jobs []job
				for r := range 3 {
					for k := range 4 {
						jobs = append(jobs, job{"p" + strconv.Itoa(r) + "_t" + strconv.Itoa(k), map[string]string{
							"filename": "/t/mptio_p" + strconv.Itoa(r) + "_t" + strconv.Itoa(k), "offset": "0", "numjobs": ""}})
					}
				}
				return jobs
			}(),
		},
		{
			// -a 50: 50 random records a thread, drawn from the 200 of
			// its region.
			name:   "sample random write with nrand",
			cfg:    with(sample, func(c *Config) { c.NRand = 50 }),
			test:   RandomWrite,
			global: map[string]string{"rw": "randwrite", "size": n(50 * mib), "io_size": n(50 * 256 * kib), "number_ios": "50", "norandommap": "1"},
			jobs: []job{
				{"p0", map[string]string{"offset": "0", "numjobs": "4"}},
				{"p1", map[string]string{"offset": n(200 * mib), "numjobs": "4"}},
				{"p2", map[string]string{"offset": n(400 * mib), "numjobs": "4"}},
			},
		},
		{
			// -O t: a process' threads all work its one region.
			name: "thread overlap",
			cfg:  with(sample, func(c *Config) { c.OverlapThreads = true }),
			test: SeqRead,
			jobs: []job{
				{"p0", map[string]string{"offset": "0", "numjobs": "4", "offset_increment": "0"}},
				{"p1", map[string]string{"offset": n(200 * mib), "numjobs": "4", "offset_increment": "0"}},
				{"p2", map[string]string{"offset": n(400 * mib), "numjobs": "4", "offset_increment": "0"}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPlan(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			text, ok := FioJobFile(p, tc.test)
			if !ok {
				t.Fatalf("no job file for %s", tc.test)
			}
			secs := parseJobFile(t, text)
			if len(secs) == 0 || secs[0].name != "global" {
				t.Fatalf("job file does not start with [global]:\n%s", text)
			}
			check := func(sec jobSection, want map[string]string) {
				for k, v := range want {
					if got, ok := sec.opts[k]; v == "" && ok {
						t.Errorf("[%s] %s=%s, want none", sec.name, k, got)
					} else if v != "" && got != v {
						t.Errorf("[%s] %s=%q, want %q", sec.name, k, got, v)
					}
				}
			}
			check(secs[0], tc.global)
			secs = secs[1:]
			if len(secs) != len(tc.jobs) {
				t.Fatalf("%d job sections, want %d:\n%s", len(secs), len(tc.jobs), text)
			}
			jobs := 0
			for i, want := range tc.jobs {
				if secs[i].name != want.name {
					t.Errorf("section %d is [%s], want [%s]", i, secs[i].name, want.name)
				}
				check(secs[i], want.opts)
				nj := 1
				if s, ok := secs[i].opts["numjobs"]; ok {
					nj, _ = strconv.Atoi(s)
				}
				jobs += nj
			}
			if jobs != tc.cfg.Procs*tc.cfg.Threads {
				t.Errorf("%d fio jobs, want one a thread: %d", jobs, tc.cfg.Procs*tc.cfg.Threads)
			}
		})
	}
}

// TestFioJobFileSample is the job file of the appendix sample's test 0,
// whole.
func TestFioJobFileSample(t *testing.T) {
	p, err := NewPlan(Config{Procs: 3, ProcSize: 200 * mib, RecordSize: 256 * kib, Threads: 4, Dir: "/t"})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := FioJobFile(p, SeqWrite)
	const want = `; MPTIO Seq_Write (test 0): 3 processes x 4 threads, -G, 200 records of 262144 bytes a thread
[global]
thread=1
group_reporting=1
ioengine=sync
rw=write
bs=262144
size=52428800
io_size=52428800
number_ios=200
invalidate=0
fallocate=none
create_on_open=1

; MPTIO's P0T0 P0T1 P0T2 P0T3
[p0]
filename=/t/mptio_global
offset=0
numjobs=4
offset_increment=52428800

; MPTIO's P1T0 P1T1 P1T2 P1T3
[p1]
filename=/t/mptio_global
offset=209715200
numjobs=4
offset_increment=52428800

; MPTIO's P2T0 P2T1 P2T2 P2T3
[p2]
filename=/t/mptio_global
offset=419430400
numjobs=4
offset_increment=52428800
`
	if got != want {
		t.Errorf("job file:\n%s\nwant:\n%s", got, want)
	}
}

func TestFioJobFileNone(t *testing.T) {
	p, err := NewPlan(Config{Procs: 1, ProcSize: mib, RecordSize: 64 * kib, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if job, ok := FioJobFile(p, ReadModifyWrite); ok {
		t.Errorf("a job file for read-modify-write:\n%s", job)
	}
}

func TestFioJobFileEscapesColons(t *testing.T) {
	p, err := NewPlan(Config{Procs: 1, ProcSize: mib, RecordSize: 64 * kib, Threads: 1, Dir: "/mnt/a:b"})
	if err != nil {
		t.Fatal(err)
	}
	job, _ := FioJobFile(p, SeqRead)
	if !strings.Contains(job, `filename=/mnt/a\:b/mptio_global`+"\n") {
		t.Errorf("colon not escaped:\n%s", job)
	}
}

func TestRotationsBefore(t *testing.T) {
	c := Config{Rotate: true, Skip: []Test{ReadModifyWrite}}
	for tt, want := range map[Test]int{SeqWrite: 0, RandomWrite: 1, SeqRead: 2, RandomRead: 3} {
		if got := rotationsBefore(&c, tt); got != want {
			t.Errorf("%s: %d rotations, want %d", tt, got, want)
		}
	}
	c.Rotate = false
	if got := rotationsBefore(&c, RandomRead); got != 0 {
		t.Errorf("without -r: %d rotations", got)
	}
}

// TestParseFio reads fio 3.33's reports of testdata's job files (2
// processes x 2 threads of 32 records of 64 KiB on one file).
func TestParseFio(t *testing.T) {
	for _, tc := range []struct {
		file, rw string
		want     FioResult
	}{
		{"fio-seq-write-g-2x2.json", "write", FioResult{Bytes: 8 * mib, Runtime: 3 * time.Millisecond, BytesPerSec: 2796202666}},
		{"fio-rand-read-g-2x2.json", "randread", FioResult{Bytes: 8 * mib, Runtime: time.Millisecond, BytesPerSec: 8388608000}},
	} {
		out, err := os.ReadFile(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseFio(out, tc.rw)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.file, got, tc.want)
		}
		if mibps := got.MiBPerSec(); mibps != float64(tc.want.BytesPerSec)/float64(mib) {
			t.Errorf("%s: %v MiB/s", tc.file, mibps)
		}
	}
}

func TestParseFioErrors(t *testing.T) {
	for _, tc := range []struct{ name, out, rw, want string }{
		{"not json", "fio: job file not found\n", "read", "no JSON report"},
		{"no jobs", `{"jobs": []}`, "read", "no jobs"},
		{"job error", `{"jobs": [{"jobname": "p0", "error": 5, "read": {"io_bytes": 1}}]}`, "read", "error 5"},
		{"wrong half", `{"jobs": [{"jobname": "p0", "read": {"io_bytes": 1, "bw_bytes": 1, "runtime": 1}}]}`, "write", "moved no bytes"},
	} {
		if _, err := ParseFio([]byte(tc.out), tc.rw); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	// Without group_reporting: each job an entry, summed and timed by the
	// longest.
	r, err := ParseFio([]byte(`note before
{"jobs": [{"jobname": "a", "write": {"io_bytes": 1048576, "bw_bytes": 1048576000, "runtime": 1}},
          {"jobname": "b", "write": {"io_bytes": 1048576, "bw_bytes": 524288000, "runtime": 2}}]}`), "randwrite")
	if err != nil {
		t.Fatal(err)
	}
	if want := (FioResult{Bytes: 2 * mib, Runtime: 2 * time.Millisecond, BytesPerSec: 1048576000}); r != want {
		t.Errorf("%+v, want %+v", r, want)
	}
}

func needFio(t *testing.T) {
	t.Helper()
	testutil.RequireTool(t, "fio")
}

// TestFioMakesPlanFiles runs fio's sequential write of small plans in
// each file mode and finds the files MPTIO's run would leave: the same
// names and sizes, and nothing else.
func TestFioMakesPlanFiles(t *testing.T) {
	needFio(t)
	for _, mode := range []Mode{Global, PerProcess, PerThread} {
		dir := t.TempDir()
		c := smallRun(dir)
		c.Mode, c.Offset = mode, 128*kib
		p, err := NewPlan(c)
		if err != nil {
			t.Fatal(err)
		}
		job, _ := FioJobFile(p, SeqWrite)
		r, err := runFio(t.Context(), t.TempDir(), "w", job, "write")
		if err != nil {
			t.Fatalf("-%s: %v", mode, err)
		}
		if want := int64(c.Procs*c.Threads) * p.ThreadBytes(SeqWrite); r.Bytes != want {
			t.Errorf("-%s: fio wrote %d bytes, want %d", mode, r.Bytes, want)
		}
		var want []string
		for i, f := range p.Files {
			want = append(want, filepath.Base(f))
			if fi, err := os.Stat(f); err != nil || fi.Size() != p.Extents[i] {
				t.Errorf("-%s: %s: %v, want %d bytes", mode, f, err, p.Extents[i])
			}
		}
		slices.Sort(want)
		if got := entries(t, dir); !slices.Equal(got, want) {
			t.Errorf("-%s: fio made %v, want %v", mode, got, want)
		}
	}
}

// TestCrossCheckRun runs a tiny MPTIO run and fio's cross-check of it:
// every sequential and random rate gets fio's number, read-modify-write
// a note instead, and fio leaves nothing behind.
func TestCrossCheckRun(t *testing.T) {
	needFio(t)
	dir := t.TempDir()
	c := smallRun(dir)
	c.ProcSize = 4 * mib
	res, err := Run(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := CrossCheck(t.Context(), res, CheckConfig{Fio: true})
	if err != nil {
		t.Fatal(err)
	}
	rows := Rows(res, dir)
	ch.Apply(rows)
	rates := 0
	for _, r := range rows {
		if r.Metric != "rate" {
			if r.CheckValue != nil {
				t.Errorf("%s %s: a check on a row that is not a rate", r.Case, r.Metric)
			}
			continue
		}
		rates++
		if r.Case == ReadModifyWrite.String() {
			if r.CheckValue != nil || !strings.Contains(r.Note, "no cross-check") {
				t.Errorf("%s: check %v, note %q; want none, and the note saying why", r.Case, r.CheckValue, r.Note)
			}
			continue
		}
		if r.Check != "fio" || r.CheckValue == nil || *r.CheckValue <= 0 || r.Agree == nil {
			t.Errorf("%s: check %q %v agree %v, want fio's rate", r.Case, r.Check, r.CheckValue, r.Agree)
		}
		if !*r.Agree && !strings.Contains(r.Note, "disagree: fio") {
			t.Errorf("%s disagrees without a note: %q", r.Case, r.Note)
		}
	}
	if rates != 5 {
		t.Errorf("%d rate rows, want 5", rates)
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("left %v", got)
	}
}

// TestCrossCheckKeptFiles cross-checks a run without test 0 on kept
// files: fio lays out files of its own first, and leaves MPTIO's alone.
func TestCrossCheckKeptFiles(t *testing.T) {
	needFio(t)
	dir := t.TempDir()
	c := smallRun(dir)
	c.Mode, c.Keep = PerThread, true
	c.Skip = []Test{ReadModifyWrite, RandomWrite, SeqRead, RandomRead}
	if _, err := Run(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	before := entries(t, dir)
	c.Skip = []Test{SeqWrite, ReadModifyWrite, RandomWrite}
	res, err := Run(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := CrossCheck(t.Context(), res, CheckConfig{Fio: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range ch.Tests {
		if tc.Fio == nil || tc.Fio.Bytes != int64(c.Procs*c.Threads)*res.Plan.ThreadBytes(tc.Test) {
			t.Errorf("%s: fio %+v", tc.Test, tc.Fio)
		}
	}
	if got := entries(t, dir); !slices.Equal(got, before) {
		t.Errorf("after the cross-check %v, before %v", got, before)
	}
}

// TestCrossCheckIORNotBuilt: an IOR prefix without IOR leaves a note in
// the sequential rows and fails nothing.
func TestCrossCheckIORNotBuilt(t *testing.T) {
	dir := t.TempDir()
	c := smallRun(dir)
	c.Skip = []Test{ReadModifyWrite, RandomWrite, RandomRead}
	res, err := Run(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := CrossCheck(t.Context(), res, CheckConfig{IOR: filepath.Join(dir, "no-ior")})
	if err != nil {
		t.Fatal(err)
	}
	rows := Rows(res, dir)
	ch.Apply(rows)
	for _, r := range rows {
		if r.Metric == "rate" && (!strings.Contains(r.Note, "IOR not run") || r.CheckValue != nil) {
			t.Errorf("%s: note %q, check %v", r.Case, r.Note, r.CheckValue)
		}
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("left %v", got)
	}
}
