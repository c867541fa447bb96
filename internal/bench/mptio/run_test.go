package mptio

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// smallRun is 2 processes × 2 threads of 8 records of 64 KiB each: 1 MiB
// per process, a few milliseconds of I/O.
func smallRun(dir string) Config {
	return Config{Procs: 2, Threads: 2, ProcSize: mib, RecordSize: 64 * kib, Dir: dir, Seed: 7}
}

// checkBytes checks that every test ran, in order, and that each rank moved
// what the plan says.
func checkBytes(t *testing.T, res *Result) {
	t.Helper()
	c := &res.Plan.Config
	var want []Test
	for _, tt := range Tests() {
		if c.Runs(tt) {
			want = append(want, tt)
		}
	}
	var got []Test
	for _, tr := range res.Tests {
		got = append(got, tr.Test)
		if len(tr.Ranks) != c.Procs {
			t.Fatalf("%s: %d ranks, want %d", tr.Test, len(tr.Ranks), c.Procs)
		}
		for i, r := range tr.Ranks {
			if wantBytes := int64(c.Threads) * res.Plan.ThreadBytes(tr.Test); r.Bytes != wantBytes {
				t.Errorf("%s rank %d: %d bytes, want %d", tr.Test, i, r.Bytes, wantBytes)
			}
			if r.Time <= 0 || r.Time > tr.Elapsed {
				t.Errorf("%s rank %d: time %v, elapsed %v", tr.Test, i, r.Time, tr.Elapsed)
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("tests run %v, want %v", got, want)
	}
}

// entries lists dir and, one level down, its subdirectories.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != dir {
			rel, _ := filepath.Rel(dir, path)
			names = append(names, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Config)
		files  []string // left in the directory (with -K)
	}{
		{name: "global", change: func(c *Config) { c.Check = true }},
		{name: "per process", change: func(c *Config) { c.Mode, c.Check = PerProcess, true }},
		{name: "per thread", change: func(c *Config) { c.Mode, c.Check = PerThread, true }},
		{name: "direct", change: func(c *Config) { c.Direct, c.Check = true, true }},
		{name: "direct per thread", change: func(c *Config) { c.Mode, c.Direct = PerThread, true }},
		{name: "rotate", change: func(c *Config) { c.Mode, c.Rotate, c.Check = PerProcess, true, true }},
		{name: "process overlap", change: func(c *Config) { c.OverlapProcs, c.Check = true, true }},
		{name: "thread overlap", change: func(c *Config) { c.Mode, c.OverlapThreads, c.Check = PerProcess, true, true }},
		{name: "offset and nrand", change: func(c *Config) { c.Offset, c.NRand, c.Check = 3*mib, 3, true }},
		{name: "global size", change: func(c *Config) { c.ProcSize, c.GlobalSize = 0, 2*mib }},
		{name: "skips", change: func(c *Config) { c.Skip = []Test{ReadModifyWrite, RandomWrite, RandomRead} }},
		{
			name:   "keep global",
			change: func(c *Config) { c.Keep = true },
			files:  []string{"mptio_global"},
		},
		{
			name:   "keep per thread",
			change: func(c *Config) { c.Mode, c.Keep = PerThread, true },
			files:  []string{"mptio_p0_t0", "mptio_p0_t1", "mptio_p1_t0", "mptio_p1_t1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c := smallRun(dir)
			tc.change(&c)
			res, err := Run(t.Context(), c)
			if err != nil {
				t.Fatal(err)
			}
			checkBytes(t, res)
			if got := entries(t, dir); !slices.Equal(got, tc.files) {
				t.Errorf("left %v, want %v", got, tc.files)
			}
			for i, f := range res.Plan.Files {
				if !c.Keep {
					break
				}
				if fi, err := os.Stat(f); err != nil || fi.Size() != res.Plan.Extents[i] {
					t.Errorf("%s: %v, want %d bytes", f, err, res.Plan.Extents[i])
				}
			}
		})
	}
}

func TestRunUnique(t *testing.T) {
	for _, keep := range []bool{false, true} {
		dir := t.TempDir()
		c := smallRun(dir)
		c.Unique, c.Keep = true, keep
		res, err := Run(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		sub := res.Plan.Config.Dir
		if filepath.Dir(sub) != dir || !strings.HasPrefix(filepath.Base(sub), "mptio_") {
			t.Errorf("-U worked in %s, want a mptio_ directory in %s", sub, dir)
		}
		got := entries(t, dir)
		var want []string
		if keep {
			base := filepath.Base(sub)
			want = []string{base, filepath.Join(base, "mptio_global")}
		}
		if !slices.Equal(got, want) {
			t.Errorf("keep %v: left %v, want %v", keep, got, want)
		}
	}
}

// TestRunKeptFiles runs twice on the same files: the second run, without
// test 0, finds the first's records where they belong.
func TestRunKeptFiles(t *testing.T) {
	dir := t.TempDir()
	c := smallRun(dir)
	c.Mode, c.Keep = PerProcess, true
	if _, err := Run(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	c.Skip, c.Check, c.Keep = []Test{SeqWrite}, true, false
	res, err := Run(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	checkBytes(t, res)
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("left %v", got)
	}
}

// TestCheckFindsCorruption damages one record of kept files and expects
// -C to name it.
func TestCheckFindsCorruption(t *testing.T) {
	dir := t.TempDir()
	c := smallRun(dir)
	c.Keep = true
	c.Skip = []Test{ReadModifyWrite, RandomWrite, SeqRead, RandomRead}
	res, err := Run(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(res.Plan.Files[0], os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	bad := 5*64*kib + 1000 // inside the body of record 5
	if _, err := f.WriteAt([]byte("garbage"), bad); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	c.Skip, c.Check, c.Keep = []Test{SeqWrite, RandomWrite, RandomRead}, true, false
	_, err = Run(t.Context(), c)
	if err == nil || !strings.Contains(err.Error(), "record at offset 327680: contents differ") || !strings.Contains(err.Error(), "Rd_Mod_Wrt") {
		t.Errorf("error %v, want the check after Rd_Mod_Wrt to find offset 327680", err)
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("a failed run left %v", got)
	}
}

func TestRunWithoutFiles(t *testing.T) {
	dir := t.TempDir()
	c := smallRun(dir)
	c.Skip = []Test{SeqWrite}
	_, err := Run(t.Context(), c)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "test 0 creates the files") {
		t.Errorf("error %v, want a missing file and the hint", err)
	}
}

func TestRunCancelled(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := Run(ctx, smallRun(dir))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("a cancelled run left %v", got)
	}
}

func TestRunBadDir(t *testing.T) {
	c := smallRun(filepath.Join(t.TempDir(), "missing"))
	if _, err := Run(t.Context(), c); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "-d") {
		t.Errorf("error %v, want -d's", err)
	}
}
