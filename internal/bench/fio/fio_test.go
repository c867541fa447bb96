package fio

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParse reads fio 3.33's own reports (testdata/README.md), with a
// note before them and text after, as fio prints at times.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []Job
	}{
		{"fio-write-qd4-64k.json", []Job{
			{Name: "p", Write: Stats{IOBytes: 64 << 20, BWBytes: 5162220307, RuntimeMS: 13, TotalIOs: 1024,
				Clat: Latency{N: 1024, Mean: 45301.299805}}},
		}},
		{"fio-filecreate-2jobs.json", []Job{
			{Name: "p0", Read: Stats{IOBytes: 204800, BWBytes: 68266666, RuntimeMS: 3, TotalIOs: 50,
				Clat: Latency{N: 50, Mean: 55016.12}}},
			{Name: "p1", Read: Stats{IOBytes: 200704, BWBytes: 40140800, RuntimeMS: 5, TotalIOs: 49,
				Clat: Latency{N: 49, Mean: 96036.510204}}},
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			out := append([]byte("fio: note: both iodepth >= 1 and synchronous I/O engine are selected\n"), readTestdata(t, tc.file)...)
			out = append(out, "\ntrailing text\n"...)
			rep, err := Parse(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Jobs) != len(tc.want) {
				t.Fatalf("%d jobs, want %d", len(rep.Jobs), len(tc.want))
			}
			for i, want := range tc.want {
				if got := rep.Jobs[i]; got != want {
					t.Errorf("job %d:\n got %+v\nwant %+v", i, got, want)
				}
			}
		})
	}
}

func TestRuntime(t *testing.T) {
	for ms, want := range map[int64]time.Duration{0: 0, 1: time.Millisecond, 13: 13 * time.Millisecond} {
		if got := (Stats{RuntimeMS: ms}).Runtime(); got != want {
			t.Errorf("%d ms: %v, want %v", ms, got, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	write := string(readTestdata(t, "fio-write-qd4-64k.json"))
	two := string(readTestdata(t, "fio-filecreate-2jobs.json"))
	i := strings.LastIndex(two, `"error" : 0`) // p1's
	p1Failed := two[:i] + `"error" : 2` + two[i+len(`"error" : 0`):]
	for _, tc := range []struct {
		name, out, want string
	}{
		{"empty", "", "no JSON report"},
		{"notes only", "fio: pid=1, err=2/file:filesetup.c:1 error=No such file or directory\n", "no JSON report"},
		{"cut short", write[:200], "fio's JSON report: unexpected EOF"},
		{"not a report", `{"jobs": "none"}`, "fio's JSON report"},
		{"no jobs", `{"fio version": "fio-3.33", "jobs": []}`, "no jobs"},
		{"no jobs key", `{"fio version": "fio-3.33"}`, "no jobs"},
		{"job error", strings.Replace(write, `"error" : 0`, `"error" : 5`, 1), "fio job p failed: error 5"},
		{"second job's error", p1Failed, "fio job p1 failed: error 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Parse([]byte(tc.out))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse: %+v, %v; want an error with %q", rep, err, tc.want)
			}
			if strings.Contains(tc.name, "no jobs") != errors.Is(err, ErrNoJobs) {
				t.Errorf("errors.Is(%v, ErrNoJobs) = %v", err, errors.Is(err, ErrNoJobs))
			}
		})
	}
}

func needFio(t *testing.T) {
	t.Helper()
	testutil.RequireTool(t, "fio")
}

// TestRun runs fio for real on small files: from arguments and from a
// job file on standard input, in Dir.
func TestRun(t *testing.T) {
	needFio(t)
	for _, tc := range []struct {
		name  string
		cmd   Cmd
		file  string
		bytes int64
	}{
		{"args", Cmd{Args: []string{"--name=a", "--filename=a", "--rw=write", "--bs=4k", "--size=64k"}}, "a", 64 << 10},
		{"stdin", Cmd{Args: []string{"-"}, Stdin: "[s]\nfilename=s\nrw=write\nbs=4k\nsize=16k\n"}, "s", 16 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cmd.Dir = t.TempDir()
			rep, err := Run(t.Context(), tc.cmd)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Jobs) != 1 || rep.Jobs[0].Write.IOBytes != tc.bytes || rep.Jobs[0].Read.IOBytes != 0 {
				t.Errorf("report %+v, want one job writing %d bytes", rep, tc.bytes)
			}
			if fi, err := os.Stat(filepath.Join(tc.cmd.Dir, tc.file)); err != nil || fi.Size() != tc.bytes {
				t.Errorf("fio's file in Dir: %v, want %d bytes", err, tc.bytes)
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	needFio(t)
	dir := t.TempDir()
	_, err := Run(t.Context(), Cmd{Args: []string{"--name=x", "--rw=nonsense"}, Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "fio --name=x --rw=nonsense: exit status 1: ") ||
		!strings.Contains(err.Error(), "failed parsing rw=nonsense") {
		t.Errorf("bad option: %v, want the command, its exit and fio's stderr", err)
	}

	// A run the context ends: the context's error, as soon as fio has
	// stopped its jobs (not after waitDelay).
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = Run(ctx, Cmd{Args: []string{"--name=long", "--filename=long", "--rw=write", "--bs=4k", "--size=64k",
		"--time_based", "--runtime=60s"}, Dir: dir})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "fio --name=long ") {
		t.Errorf("ended context: %v, want the command and %v", err, context.DeadlineExceeded)
	}
	if d := time.Since(start); d > waitDelay/2 {
		t.Errorf("ended context: fio took %v to stop", d)
	}
}

func TestRunNotInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Run(t.Context(), Cmd{Args: []string{"--version"}})
	if !errors.Is(err, exec.ErrNotFound) || !strings.Contains(err.Error(), "apt-get install fio") {
		t.Errorf("fio not on PATH: %v, want exec.ErrNotFound and apt-get's hint", err)
	}
}
