package mptio

import (
	"path/filepath"
	"testing"
)

const (
	kib = int64(1) << 10
	mib = int64(1) << 20
	gib = int64(1) << 30
)

// seg is a Segment in a test's terms: file name (base name for files),
// offset and records.
type seg struct {
	file    string
	offset  int64
	records int64
}

func segOf(s Segment) seg { return seg{filepath.Base(s.Path), s.Offset, s.Records} }

// TestPlanAppendixExamples checks the size rule and the layout against the
// three examples of MPTIO's Appendix A.1 and its sample run.
func TestPlanAppendixExamples(t *testing.T) {
	for _, tc := range []struct {
		name        string
		cfg         Config
		records     int64
		procSize    int64
		files       []string
		extents     []int64
		rotations   int
		segments    [][]seg // [rank][thread] after rotations
		threadBytes int64   // of a sequential test
	}{
		{
			// mpirun -np 4 MPTIO -G -f 1G -b 256K -t 2: one 4 GB file,
			// eight 512 MB sections.
			name:     "example 1",
			cfg:      Config{Procs: 4, Mode: Global, ProcSize: gib, RecordSize: 256 * kib, Threads: 2},
			records:  2048,
			procSize: gib,
			files:    []string{"mptio_global"},
			extents:  []int64{4 * gib},
			segments: [][]seg{
				{{"mptio_global", 0, 2048}, {"mptio_global", 512 * mib, 2048}},
				{{"mptio_global", 1024 * mib, 2048}, {"mptio_global", 1536 * mib, 2048}},
				{{"mptio_global", 2048 * mib, 2048}, {"mptio_global", 2560 * mib, 2048}},
				{{"mptio_global", 3072 * mib, 2048}, {"mptio_global", 3584 * mib, 2048}},
			},
			threadBytes: 512 * mib,
		},
		{
			// mpirun -np 2 ... -P -F 512M -b 64K -t 4 -r -k 1 -k 2 -k 4:
			// two 256 MB files, 64 MB per thread, and after the write
			// process 1 reads File_0 and process 0 reads File_1.
			name: "example 2 rotated",
			cfg: Config{Procs: 2, Mode: PerProcess, GlobalSize: 512 * mib, RecordSize: 64 * kib, Threads: 4,
				Rotate: true, Skip: []Test{ReadModifyWrite, RandomWrite, RandomRead}},
			records:   1024,
			procSize:  256 * mib,
			files:     []string{"mptio_p0", "mptio_p1"},
			extents:   []int64{256 * mib, 256 * mib},
			rotations: 1,
			segments: [][]seg{
				{{"mptio_p1", 0, 1024}, {"mptio_p1", 64 * mib, 1024}, {"mptio_p1", 128 * mib, 1024}, {"mptio_p1", 192 * mib, 1024}},
				{{"mptio_p0", 0, 1024}, {"mptio_p0", 64 * mib, 1024}, {"mptio_p0", 128 * mib, 1024}, {"mptio_p0", 192 * mib, 1024}},
			},
			threadBytes: 64 * mib,
		},
		{
			// mpirun -np 3 ... -F 512M -b 64K -t 2 -R dev0 -R dev1: about
			// 85.3 MB per process per device, numrec 1,365, thread 0 on
			// dev0 and thread 1 on dev1.
			name:     "example 3",
			cfg:      Config{Procs: 3, Mode: Device, Devices: []string{"dev0", "dev1"}, GlobalSize: 512 * mib, RecordSize: 64 * kib, Threads: 2},
			records:  1365,
			procSize: 2 * 1365 * 64 * kib,
			files:    []string{"dev0", "dev1"},
			extents:  []int64{3 * 1365 * 64 * kib, 3 * 1365 * 64 * kib},
			segments: [][]seg{
				{{"dev0", 0, 1365}, {"dev1", 0, 1365}},
				{{"dev0", 1365 * 64 * kib, 1365}, {"dev1", 1365 * 64 * kib, 1365}},
				{{"dev0", 2 * 1365 * 64 * kib, 1365}, {"dev1", 2 * 1365 * 64 * kib, 1365}},
			},
			threadBytes: 1365 * 64 * kib,
		},
		{
			// The report's sample: Size 200 MB, Rec/proc 800, Rec/th 200.
			name:     "sample",
			cfg:      Config{Procs: 3, ProcSize: 200 * mib, RecordSize: 256 * kib, Threads: 4},
			records:  200,
			procSize: 200 * mib,
			files:    []string{"mptio_global"},
			extents:  []int64{600 * mib},
			segments: [][]seg{
				{{"mptio_global", 0, 200}, {"mptio_global", 50 * mib, 200}, {"mptio_global", 100 * mib, 200}, {"mptio_global", 150 * mib, 200}},
				{{"mptio_global", 200 * mib, 200}, {"mptio_global", 250 * mib, 200}, {"mptio_global", 300 * mib, 200}, {"mptio_global", 350 * mib, 200}},
				{{"mptio_global", 400 * mib, 200}, {"mptio_global", 450 * mib, 200}, {"mptio_global", 500 * mib, 200}, {"mptio_global", 550 * mib, 200}},
			},
			threadBytes: 50 * mib,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPlan(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if p.Records != tc.records || p.ProcSize != tc.procSize {
				t.Errorf("numrec %d, size per process %d; want %d, %d", p.Records, p.ProcSize, tc.records, tc.procSize)
			}
			if got := p.ThreadBytes(SeqWrite); got != tc.threadBytes {
				t.Errorf("thread bytes %d, want %d", got, tc.threadBytes)
			}
			if len(p.Files) != len(tc.files) {
				t.Fatalf("files %v, want %v", p.Files, tc.files)
			}
			for i, f := range p.Files {
				if filepath.Base(f) != tc.files[i] || p.Extents[i] != tc.extents[i] {
					t.Errorf("file %d: %s of %d bytes, want %s of %d", i, f, p.Extents[i], tc.files[i], tc.extents[i])
				}
			}
			for rank, threads := range tc.segments {
				for thread, want := range threads {
					if got := segOf(p.Segment(rank, thread, tc.rotations)); got != want {
						t.Errorf("P%dT%d: %+v, want %+v", rank, thread, got, want)
					}
				}
			}
		})
	}
}

// TestPlanExample3Sizes checks the MB figures the appendix prints for
// example 3: 170.6 per process, 85.3 per process per device.
func TestPlanExample3Sizes(t *testing.T) {
	p, err := NewPlan(Config{Procs: 3, Mode: Device, Devices: []string{"dev0", "dev1"}, GlobalSize: 512 * mib, RecordSize: 64 * kib, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := MiB(p.ProcSize); got < 170.6 || got >= 170.7 {
		t.Errorf("per process %.3f MB, want about 170.6", got)
	}
	if got := MiB(p.ThreadBytes(SeqWrite)); got < 85.3 || got >= 85.35 {
		t.Errorf("per process per device %.3f MB, want about 85.3", got)
	}
}

func TestPlanLayoutOptions(t *testing.T) {
	base := Config{Procs: 2, ProcSize: 4 * mib, RecordSize: mib, Threads: 2}
	for _, tc := range []struct {
		name     string
		change   func(*Config)
		records  int64
		segments [][]seg
	}{
		{
			name:    "global",
			change:  func(*Config) {},
			records: 2,
			segments: [][]seg{
				{{"mptio_global", 0, 2}, {"mptio_global", 2 * mib, 2}},
				{{"mptio_global", 4 * mib, 2}, {"mptio_global", 6 * mib, 2}},
			},
		},
		{
			name:    "per thread",
			change:  func(c *Config) { c.Mode = PerThread },
			records: 2,
			segments: [][]seg{
				{{"mptio_p0_t0", 0, 2}, {"mptio_p0_t1", 0, 2}},
				{{"mptio_p1_t0", 0, 2}, {"mptio_p1_t1", 0, 2}},
			},
		},
		{
			name:    "offset",
			change:  func(c *Config) { c.Offset = 100 * mib },
			records: 2,
			segments: [][]seg{
				{{"mptio_global", 100 * mib, 2}, {"mptio_global", 102 * mib, 2}},
				{{"mptio_global", 104 * mib, 2}, {"mptio_global", 106 * mib, 2}},
			},
		},
		{
			// -O p: every process on the same region, threads disjoint.
			name:    "process overlap",
			change:  func(c *Config) { c.OverlapProcs = true },
			records: 2,
			segments: [][]seg{
				{{"mptio_global", 0, 2}, {"mptio_global", 2 * mib, 2}},
				{{"mptio_global", 0, 2}, {"mptio_global", 2 * mib, 2}},
			},
		},
		{
			// -O t: the threads of a process share its region, and
			// filesize = numrec × recsz.
			name:    "thread overlap",
			change:  func(c *Config) { c.OverlapThreads = true },
			records: 4,
			segments: [][]seg{
				{{"mptio_global", 0, 4}, {"mptio_global", 0, 4}},
				{{"mptio_global", 4 * mib, 4}, {"mptio_global", 4 * mib, 4}},
			},
		},
		{
			name:     "both overlaps",
			change:   func(c *Config) { c.OverlapProcs, c.OverlapThreads = true, true },
			records:  4,
			segments: [][]seg{{{"mptio_global", 0, 4}, {"mptio_global", 0, 4}}, {{"mptio_global", 0, 4}, {"mptio_global", 0, 4}}},
		},
		{
			name:    "per process, thread overlap",
			change:  func(c *Config) { c.Mode, c.OverlapThreads = PerProcess, true },
			records: 4,
			segments: [][]seg{
				{{"mptio_p0", 0, 4}, {"mptio_p0", 0, 4}},
				{{"mptio_p1", 0, 4}, {"mptio_p1", 0, 4}},
			},
		},
		{
			// Four threads over two devices: threads 0 and 2 on dev0.
			name: "two devices, four threads",
			change: func(c *Config) {
				c.Mode, c.Devices, c.Threads, c.ProcSize = Device, []string{"dev0", "dev1"}, 4, 8*mib
			},
			records: 2,
			segments: [][]seg{
				{{"dev0", 0, 2}, {"dev1", 0, 2}, {"dev0", 2 * mib, 2}, {"dev1", 2 * mib, 2}},
				{{"dev0", 4 * mib, 2}, {"dev1", 4 * mib, 2}, {"dev0", 6 * mib, 2}, {"dev1", 6 * mib, 2}},
			},
		},
		{
			// -O t over two devices: the threads on one device share a
			// region, the process' size is split over the devices.
			name: "two devices, thread overlap",
			change: func(c *Config) {
				c.Mode, c.Devices, c.Threads, c.OverlapThreads = Device, []string{"dev0", "dev1"}, 4, true
			},
			records: 2,
			segments: [][]seg{
				{{"dev0", 0, 2}, {"dev1", 0, 2}, {"dev0", 0, 2}, {"dev1", 0, 2}},
				{{"dev0", 2 * mib, 2}, {"dev1", 2 * mib, 2}, {"dev0", 2 * mib, 2}, {"dev1", 2 * mib, 2}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.change(&c)
			p, err := NewPlan(c)
			if err != nil {
				t.Fatal(err)
			}
			if p.Records != tc.records {
				t.Errorf("numrec %d, want %d", p.Records, tc.records)
			}
			for rank, threads := range tc.segments {
				for thread, want := range threads {
					if got := segOf(p.Segment(rank, thread, 0)); got != want {
						t.Errorf("P%dT%d: %+v, want %+v", rank, thread, got, want)
					}
				}
			}
		})
	}
}

func TestNearestRecords(t *testing.T) {
	for _, tc := range []struct{ size, per, want int64 }{
		{512 * mib, 3 * 2 * 64 * kib, 1365}, // example 3: 1365.33
		{1000, 300, 3},                      // 3.33
		{1050, 300, 4},                      // 3.5 rounds up
		{100, 300, 1},                       // less than a record still moves one
		{gib, gib, 1},                       // exact
		{1 << 62, 3, (1 << 62) / 3},         // no overflow
	} {
		if got := nearestRecords(tc.size, tc.per); got != tc.want {
			t.Errorf("nearestRecords(%d, %d) = %d, want %d", tc.size, tc.per, got, tc.want)
		}
	}
}

// TestRotation checks -r over three processes: each rotation hands a
// process the segments of the process one rank above it.
func TestRotation(t *testing.T) {
	p, err := NewPlan(Config{Procs: 3, Mode: PerProcess, ProcSize: mib, RecordSize: 64 * kib, Threads: 2, Rotate: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ rank, rotations, owner int }{
		{0, 0, 0}, {1, 0, 1}, {2, 0, 2},
		{0, 1, 1}, {1, 1, 2}, {2, 1, 0},
		{0, 2, 2}, {1, 2, 0}, {2, 2, 1},
		{0, 3, 0}, {2, 4, 0},
	} {
		if got := p.Owner(tc.rank, tc.rotations); got != tc.owner {
			t.Errorf("rank %d after %d rotations works segments of %d, want %d", tc.rank, tc.rotations, got, tc.owner)
		}
		for thread := range 2 {
			if got, want := p.Segment(tc.rank, thread, tc.rotations), p.Segment(tc.owner, thread, 0); got != want {
				t.Errorf("rank %d thread %d after %d rotations: %+v, want %+v", tc.rank, thread, tc.rotations, got, want)
			}
		}
	}
}

func TestOps(t *testing.T) {
	p, err := NewPlan(Config{Procs: 1, ProcSize: mib, RecordSize: 64 * kib, Threads: 2, NRand: 3})
	if err != nil {
		t.Fatal(err)
	}
	for test, want := range map[Test]int64{SeqWrite: 8, ReadModifyWrite: 8, RandomWrite: 3, SeqRead: 8, RandomRead: 3} {
		if got := p.Ops(test); got != want {
			t.Errorf("%s: %d ops, want %d", test, got, want)
		}
	}
}
