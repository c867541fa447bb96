package crosscheck

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The samples in testdata are the output of real runs of IOR 4.1.0+dev
// (third_party/ior, built by scripts/build-ior.sh) with Open MPI 4.1.4,
// 2 ranks on /dev/shm; testdata/README.md has the commands.

func readSample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseIOR(t *testing.T) {
	tests := []struct {
		file string
		want IORTest // Iterations only compared when set
		// iterations is how many entries Iterations has; last is the
		// last of them.
		iterations int
		last       IORIteration
	}{
		{
			file: "ior-fpp-wr-i1.json",
			want: IORTest{
				ID: 0, API: "POSIX", Path: "/dev/shm/ior-try/f.00000000", Nodes: 1, Tasks: 2,
				Repetitions: 1, FilePerProc: true, Segments: 1, BlockSize: 4 << 20, TransferSize: 1 << 20,
				Iterations: []IORIteration{
					{Op: "write", Iteration: 0, MiBps: 4640.3585, IOPS: 4688.9927, Latency: 0.0004, Open: 0, WrRd: 0.0017, Close: 0.0003, Total: 0.0017},
					{Op: "read", Iteration: 0, MiBps: 10308.5813, IOPS: 10375.5201, Latency: 0.0002, Open: 0, WrRd: 0.0008, Close: 0.0001, Total: 0.0008},
				},
				Summary: []IOROp{
					{Op: "write", Iterations: 1, MaxMiBps: 4640.3585, MinMiBps: 4640.3585, MeanMiBps: 4640.3585, StdDevMiBps: 0,
						MaxOPs: 4640.3585, MinOPs: 4640.3585, MeanOPs: 4640.3585, StdDevOPs: 0, MeanTime: 0.0017, AggregateMiB: 8},
					{Op: "read", Iterations: 1, MaxMiBps: 10308.5813, MinMiBps: 10308.5813, MeanMiBps: 10308.5813, StdDevMiBps: 0,
						MaxOPs: 10308.5813, MinOPs: 10308.5813, MeanOPs: 10308.5813, StdDevOPs: 0, MeanTime: 0.0008, AggregateMiB: 8},
				},
			},
			iterations: 2,
			last:       IORIteration{Op: "read", Iteration: 0, MiBps: 10308.5813, IOPS: 10375.5201, Latency: 0.0002, WrRd: 0.0008, Close: 0.0001, Total: 0.0008},
		},
		{
			// The summary file of -O summaryFile=, as RunIOR reads it.
			file: "ior-fpp-wr-i3.summary.json",
			want: IORTest{
				ID: 0, API: "POSIX", Path: "/dev/shm/ior-try/f.00000000", Nodes: 1, Tasks: 2,
				Repetitions: 3, FilePerProc: true, Segments: 1, BlockSize: 4 << 20, TransferSize: 1 << 20,
				Summary: []IOROp{
					{Op: "write", Iterations: 3, MaxMiBps: 7619.0808, MinMiBps: 3293.5249, MeanMiBps: 5916.8935, StdDevMiBps: 1882.2043,
						MaxOPs: 7619.0808, MinOPs: 3293.5249, MeanOPs: 5916.8935, StdDevOPs: 1882.2043, MeanTime: 0.0015, AggregateMiB: 8},
					{Op: "read", Iterations: 3, MaxMiBps: 23188.9648, MinMiBps: 16328.1908, MeanMiBps: 19740.0955, StdDevMiBps: 2801.0212,
						MaxOPs: 23188.9648, MinOPs: 16328.1908, MeanOPs: 19740.0955, StdDevOPs: 2801.0212, MeanTime: 0.0004, AggregateMiB: 8},
				},
			},
			iterations: 6,
			last:       IORIteration{Op: "read", Iteration: 2, MiBps: 23188.9648, IOPS: 23382.8794, Latency: 0.0001, WrRd: 0.0003, Total: 0.0003},
		},
		{
			// One shared file, write only, fsync (-e) and reordered tasks (-C).
			file: "ior-shared-w-i2.json",
			want: IORTest{
				ID: 0, API: "POSIX", Path: "/dev/shm/ior-try/shared", Nodes: 1, Tasks: 2,
				Repetitions: 2, FilePerProc: false, Segments: 1, BlockSize: 2 << 20, TransferSize: 256 << 10,
				Summary: []IOROp{
					{Op: "write", Iterations: 2, MaxMiBps: 2861.5412, MinMiBps: 2824.9227, MeanMiBps: 2843.232, StdDevMiBps: 18.3092,
						MaxOPs: 11446.1648, MinOPs: 11299.6909, MeanOPs: 11372.9278, StdDevOPs: 73.237, MeanTime: 0.0014, AggregateMiB: 4},
				},
			},
			iterations: 2,
			last:       IORIteration{Op: "write", Iteration: 1, MiBps: 2824.9227, IOPS: 11347.4576, Latency: 0.0002, WrRd: 0.0014, Close: 0.0001, Total: 0.0014},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			res, err := ParseIOR(readSample(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if res.Version != "4.1.0+dev" {
				t.Errorf("Version = %q, want 4.1.0+dev", res.Version)
			}
			if !strings.Contains(res.Command, "bin/ior -a POSIX") {
				t.Errorf("Command = %q, want the ior command line", res.Command)
			}
			if len(res.Tests) != 1 {
				t.Fatalf("%d tests, want 1", len(res.Tests))
			}
			got := res.Tests[0]
			if len(got.Iterations) != tt.iterations {
				t.Fatalf("%d iterations, want %d: %+v", len(got.Iterations), tt.iterations, got.Iterations)
			}
			if last := got.Iterations[len(got.Iterations)-1]; last != tt.last {
				t.Errorf("last iteration = %+v, want %+v", last, tt.last)
			}
			if tt.want.Iterations == nil {
				got.Iterations = nil
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("test =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestIORTestOp(t *testing.T) {
	res, err := ParseIOR(readSample(t, "ior-shared-w-i2.json"))
	if err != nil {
		t.Fatal(err)
	}
	if w, ok := res.Tests[0].Op("write"); !ok || w.MeanMiBps != 2843.232 {
		t.Errorf(`Op("write") = %+v, %v; want mean 2843.232 MiB/s`, w, ok)
	}
	if r, ok := res.Tests[0].Op("read"); ok {
		t.Errorf(`Op("read") of a write-only run = %+v, want none`, r)
	}
}

// IOR prints values that are not finite with %.4f: inf quoted, nan bare.
// The sample is real output with two of its values replaced so.
func TestParseIORNotFinite(t *testing.T) {
	out := readSample(t, "ior-fpp-wr-i1.json")
	for _, r := range []struct{ from, to string }{
		{`"bwStdMIB": 0.0000`, `"bwStdMIB": -nan`},
		{`"OPsSD": 0.0000`, `"OPsSD": nan`},
		{`"bwMiB": 4640.3585`, `"bwMiB": "inf"`},
	} {
		if !bytes.Contains(out, []byte(r.from)) {
			t.Fatalf("sample has no %s", r.from)
		}
		out = bytes.Replace(out, []byte(r.from), []byte(r.to), 1)
	}
	res, err := ParseIOR(out)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := res.Tests[0].Op("write")
	if !math.IsNaN(w.StdDevMiBps) || !math.IsNaN(w.StdDevOPs) {
		t.Errorf("StdDevMiBps, StdDevOPs = %v, %v; want NaN", w.StdDevMiBps, w.StdDevOPs)
	}
	if got := res.Tests[0].Iterations[0].MiBps; !math.IsInf(got, 1) {
		t.Errorf("first write MiBps = %v, want +Inf", got)
	}
}

func TestParseIORErrors(t *testing.T) {
	tests := []struct {
		name string
		out  []byte
		want string // in the error
	}{
		// A run that aborted (no such directory): JSON cut short, with a
		// warning inside it.
		{"aborted run", readSample(t, "ior-abort.stdout"), "not the JSON of a finished run"},
		{"mdtest output", readSample(t, "mdtest-n100.txt"), "no JSON object"},
		{"nothing", nil, "no JSON object"},
		{"no tests", []byte("{\n\"Version\": \"4.1.0+dev\", \"tests\": []\n}\n"), "no tests"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := ParseIOR(tt.out)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseIOR = %+v, %v; want an error with %q", res, err, tt.want)
			}
		})
	}
}
