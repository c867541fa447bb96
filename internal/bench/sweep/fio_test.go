package sweep

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseFio(t *testing.T) {
	for _, tc := range []struct {
		file    string
		dir     Direction
		bytes   int64
		runtime time.Duration
		bw      float64
	}{
		{"fio-write-qd4-64k.json", Write, 64 << 20, 13 * time.Millisecond, 5162220307},
		{"fio-read-qd4-64k.json", Read, 64 << 20, 0, 0}, // bytes checked; runtime and bw only positive
	} {
		t.Run(tc.file, func(t *testing.T) {
			r, err := ParseFio(readTestdata(t, tc.file), tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			if r.Bytes != tc.bytes {
				t.Errorf("bytes %d, want %d", r.Bytes, tc.bytes)
			}
			if tc.bw != 0 && (r.BytesPerSec != tc.bw || r.Runtime != tc.runtime) {
				t.Errorf("bw %v B/s over %v, want %v over %v", r.BytesPerSec, r.Runtime, tc.bw, tc.runtime)
			}
			if r.BytesPerSec <= 0 || r.Runtime <= 0 || r.MiBPerSec() != r.BytesPerSec/(1<<20) {
				t.Errorf("rate %v B/s = %v MiB/s over %v: want positive, in MiB", r.BytesPerSec, r.MiBPerSec(), r.Runtime)
			}
		})
	}
}

func TestParseFioNotes(t *testing.T) {
	// fio prints notes to standard output ahead of the report at times.
	out := append([]byte("note: a warning fio printed first\n"), readTestdata(t, "fio-write-qd4-64k.json")...)
	out = append(out, "\ntrailing text\n"...)
	r, err := ParseFio(out, Write)
	if err != nil || r.Bytes != 64<<20 {
		t.Fatalf("ParseFio with notes around the report: %+v, %v", r, err)
	}
}

func TestParseFioErrors(t *testing.T) {
	write := string(readTestdata(t, "fio-write-qd4-64k.json"))
	for _, tc := range []struct {
		name string
		out  string
		dir  Direction
		want string
	}{
		{"no bytes moved", string(readTestdata(t, "fio-read-unattached-loop.json")), Read, "moved no bytes"},
		{"other direction", write, Read, "moved no bytes"},
		{"job error", strings.Replace(write, `"error" : 0`, `"error" : 5`, 1), Write, "error 5"},
		{"not JSON", "fio: command not understood\n", Write, "no JSON report"},
		{"cut short", write[:200], Write, "JSON report"},
		{"no jobs", `{"jobs": []}`, Write, "0 jobs"},
		{"bad direction", write, "trim", "use write or read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseFio([]byte(tc.out), tc.dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseFio: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestFioArgs(t *testing.T) {
	got := fioArgs(pass{path: "/dev/loop9", dir: Read, qd: 8, bs: 16 << 20, size: 1 << 30, limit: 5 * time.Second})
	want := []string{"--name=p", "--filename=/dev/loop9", "--direct=1", "--ioengine=libaio", "--iodepth=8",
		"--bs=16777216", "--size=1073741824", "--rw=read", "--runtime=5000ms", "--time_based=0", "--output-format=json"}
	if !slices.Equal(got, want) {
		t.Errorf("fioArgs:\n got %q\nwant %q", got, want)
	}
}

func TestFioArgsThreads(t *testing.T) {
	p := pass{path: "/dev/loop9", dir: Write, qd: 16, bs: 4 << 10, size: 1 << 30, limit: 5 * time.Second}
	got, ok := fioArgsThreads(p)
	// 16 threads, each over its own 64 MiB, one request at a time.
	want := []string{"--name=p", "--filename=/dev/loop9", "--direct=1", "--ioengine=psync", "--thread", "--numjobs=16",
		"--group_reporting", "--offset_increment=67108864", "--bs=4096", "--size=67108864", "--rw=write",
		"--runtime=5000ms", "--time_based=0", "--output-format=json"}
	if !ok || !slices.Equal(got, want) {
		t.Errorf("fioArgsThreads: %v\n got %q\nwant %q", ok, got, want)
	}
	// A share that is not a whole number of requests is cut to one: 25
	// MiB a thread holds 8 requests of 3 MiB.
	p.size, p.bs, p.qd = 100<<20, 3<<20, 4
	if got, ok := fioArgsThreads(p); !ok || !slices.Contains(got, "--size=25165824") {
		t.Errorf("fioArgsThreads over 100 MiB, 3 MiB requests, 4 threads: %v %q, want 24 MiB a thread", ok, got)
	}
	// A thread's share under one request: not run.
	p.size, p.bs, p.qd = 256<<20, 32<<20, 16
	if got, ok := fioArgsThreads(p); ok {
		t.Errorf("fioArgsThreads with 16 MiB a thread and 32 MiB requests: %q, want none", got)
	}
}

func TestThreadsNote(t *testing.T) {
	libaio, same, other := 1000.0, 290.0, 900.0
	p := Point{Device: RAMDevice, Direction: Write, QD: 16, BlockSize: 4 << 10, Bytes: 290 << 20, Elapsed: time.Second, Fio: &libaio}
	for _, tc := range []struct {
		threads float64
		want    string
	}{
		{same, "fio that way too (psync, 16 jobs): 290.0 MiB/s, which agrees"},
		{other, "900.0 MiB/s, which disagrees too"},
	} {
		p.FioThreads = &tc.threads
		rows := Rows([]Point{p})
		if !strings.Contains(rows[0].Note, tc.want) || rows[0].Agree == nil || *rows[0].Agree {
			t.Errorf("threads check %v: row %+v, want a disagreeing check and a note with %q", tc.threads, rows[0], tc.want)
		}
	}
}

func TestRunFioRefusesNonDevice(t *testing.T) {
	// fio would make this a regular file.
	path := t.TempDir() + "/not-a-device"
	p := pass{path: path, dir: Write, qd: 1, bs: 4096, size: 1 << 20, limit: time.Second}
	_, err := runFio(t.Context(), p, fioArgs(p))
	if err == nil {
		t.Fatal("runFio on a missing path: no error")
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("runFio made %s", path)
	}
}
