package mptio

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rsa-hpc/rsa/internal/bench/fio"
)

// fio is the cross-check of MPTIO's rates (seed-experiments §6.2): the
// same I/O, on the same target, described to fio. Each MPTIO thread is a
// fio job (a thread, not a process, as here), with MPTIO's file, offset,
// region and record size; jobs of one process that work one file at even
// spacing are one section with numjobs and offset_increment, as the
// report's Figure A-1 lays them out. MPTIO's random tests pick records
// with repeats, so fio does too (norandommap), and moves as many records
// as MPTIO does (number_ios, io_size). Read-modify-write has no fio
// counterpart: fio's mixed workloads read and write different blocks,
// never read a record, change it and write it back in place.

// fioRW is fio's rw= for test t, or "" when fio cannot do the test.
func fioRW(t Test) string {
	switch t {
	case SeqWrite:
		return "write"
	case RandomWrite:
		return "randwrite"
	case SeqRead:
		return "read"
	case RandomRead:
		return "randread"
	}
	return ""
}

// rotationsBefore is how many times the segments of c's run had rotated
// (-r) when test t started: Run rotates after every test it runs.
func rotationsBefore(c *Config, t Test) int {
	if !c.Rotate {
		return 0
	}
	n := 0
	for _, u := range Tests() {
		if u < t && c.Runs(u) {
			n++
		}
	}
	return n
}

// fioSection is one job section: numjobs threads of one process, on one
// file, the first at offset and each next one increment further.
type fioSection struct {
	name      string
	comment   string
	path      string
	offset    int64
	numjobs   int
	increment int64
}

// fioSections lays out p's threads as fio jobs, process by process, as
// the segments lie after the given number of rotations.
func fioSections(p *Plan, rotations int) []fioSection {
	c := &p.Config
	var out []fioSection
	for rank := range c.Procs {
		// The process' threads grouped by file, in the order of their
		// first thread: one group on -G and -P, one a thread on -T, one
		// a device on -R.
		var paths []string
		byPath := map[string][]int{}
		for thread := range c.Threads {
			s := p.Segment(rank, thread, rotations)
			if _, ok := byPath[s.Path]; !ok {
				paths = append(paths, s.Path)
			}
			byPath[s.Path] = append(byPath[s.Path], thread)
		}
		for _, path := range paths {
			threads := byPath[path]
			if sec, ok := evenSection(p, rank, rotations, threads); ok {
				out = append(out, sec)
				continue
			}
			for _, k := range threads {
				sec, _ := evenSection(p, rank, rotations, []int{k})
				out = append(out, sec)
			}
		}
	}
	return out
}

// evenSection is the section of threads of rank (on one file) if their
// offsets are evenly spaced, which is what offset_increment can say.
func evenSection(p *Plan, rank, rotations int, threads []int) (fioSection, bool) {
	first := p.Segment(rank, threads[0], rotations)
	sec := fioSection{path: first.Path, offset: first.Offset, numjobs: len(threads)}
	if len(threads) > 1 {
		sec.increment = p.Segment(rank, threads[1], rotations).Offset - first.Offset
	}
	if sec.increment < 0 {
		return sec, false
	}
	for i, k := range threads {
		if p.Segment(rank, k, rotations).Offset != first.Offset+int64(i)*sec.increment {
			return sec, false
		}
	}
	names := make([]string, len(threads))
	for i, k := range threads {
		names[i] = fmt.Sprintf("P%dT%d", rank, k)
	}
	sec.name = fmt.Sprintf("p%d", rank)
	if len(threads) < p.Config.Threads {
		for _, k := range threads {
			sec.name += fmt.Sprintf("_t%d", k)
		}
	}
	sec.comment = "MPTIO's " + strings.Join(names, " ")
	if rotations > 0 {
		sec.comment += fmt.Sprintf(", after %d rotations (-r)", rotations)
	}
	return sec, true
}

// FioJobFile is the fio job file that does test t of p as MPTIO's run
// did it: the same threads on the same files or devices, regions,
// offsets and records, the same system calls (read, write and lseek) and
// O_DIRECT with -I. It reports false for a test fio cannot do
// (read-modify-write). p's files are where fio does its I/O: for files,
// the caller points the plan at a directory of fio's own.
func FioJobFile(p *Plan, t Test) (string, bool) {
	rw := fioRW(t)
	if rw == "" {
		return "", false
	}
	c := &p.Config
	var b strings.Builder
	opt := func(k string, v any) { fmt.Fprintf(&b, "%s=%v\n", k, v) }
	fmt.Fprintf(&b, "; MPTIO %s (test %d): %d processes x %d threads, -%s, %d records of %d bytes a thread\n",
		t, int(t), c.Procs, c.Threads, c.Mode, p.Ops(t), c.RecordSize)
	b.WriteString("[global]\n")
	// Threads, as MPTIO's ranks are threads here; one report for all of
	// them, as MPTIO's Rate is over all of them.
	opt("thread", 1)
	opt("group_reporting", 1)
	// The sync engine makes MPTIO's system calls: read(2) and write(2)
	// of a record, with lseek(2) only where the file position is not
	// already the record's. psync's pread and pwrite would save MPTIO's
	// seek before every random record.
	opt("ioengine", "sync")
	opt("rw", rw)
	opt("bs", c.RecordSize)
	// size is a thread's region; io_size and number_ios are what it
	// moves, which -a makes more or fewer than the region's records.
	opt("size", p.Records*c.RecordSize)
	opt("io_size", p.ThreadBytes(t))
	opt("number_ios", p.Ops(t))
	if t.random() {
		// MPTIO draws each record anew (with repeats); fio's default
		// random map would visit each once.
		opt("norandommap", 1)
	}
	if c.Direct {
		opt("direct", 1)
	}
	// MPTIO neither drops nor flushes caches around a test, so fio must
	// not either: invalidate=0 keeps fio from dropping the files' pages
	// before the job (its default), fallocate=none from reserving blocks
	// MPTIO's writes allocate as they go.
	opt("invalidate", 0)
	opt("fallocate", "none")
	if c.Mode == Device {
		// A device that vanished must not become a regular file.
		opt("allow_file_create", 0)
	} else if t.writes() {
		// Test 0 creates the files as it writes them (O_CREAT, no
		// truncation, no layout beforehand); so does fio with
		// create_on_open, instead of truncating them to size first.
		opt("create_on_open", 1)
	}
	for _, s := range fioSections(p, rotationsBefore(c, t)) {
		fmt.Fprintf(&b, "\n; %s\n[%s]\n", s.comment, s.name)
		opt("filename", fioEscape(s.path))
		opt("offset", s.offset)
		if s.numjobs > 1 {
			opt("numjobs", s.numjobs)
			opt("offset_increment", s.increment)
		}
	}
	return b.String(), true
}

// fioEscape escapes the colons of a path: fio splits filename= on them.
func fioEscape(path string) string { return strings.ReplaceAll(path, ":", `\:`) }

// FioResult is fio's measure of one test: all jobs together.
type FioResult struct {
	Bytes       int64         // io_bytes of all jobs
	Runtime     time.Duration // the longest job's runtime, to fio's millisecond
	BytesPerSec float64       // bw_bytes: Bytes over Runtime
}

// MiBPerSec is the rate in MPTIO's MB/s (MiB).
func (r FioResult) MiBPerSec() float64 { return r.BytesPerSec / mebibyte }

// ParseFio reads fio's JSON report of a job file of FioJobFile: the
// written bytes of a write (write, randwrite), the read bytes of a read.
// With group_reporting the report has one entry; without, the entries are
// summed and timed by the longest, as group_reporting does. fio may print
// notes before the JSON (fio.Parse skips them).
func ParseFio(out []byte, rw string) (FioResult, error) {
	rep, err := fio.Parse(out)
	if err != nil {
		return FioResult{}, err
	}
	return fioResult(rep, rw)
}

// fioResult is ParseFio's measure of a parsed report.
func fioResult(rep fio.Report, rw string) (FioResult, error) {
	write := strings.HasSuffix(rw, "write")
	var r FioResult
	var runtimeMS int64
	for _, j := range rep.Jobs {
		s := j.Read
		if write {
			s = j.Write
		}
		r.Bytes += s.IOBytes
		r.BytesPerSec = float64(s.BWBytes)
		runtimeMS = max(runtimeMS, s.RuntimeMS)
	}
	if r.Bytes <= 0 {
		return FioResult{}, fmt.Errorf("fio moved no bytes in its %s", rw)
	}
	r.Runtime = time.Duration(runtimeMS) * time.Millisecond
	if len(rep.Jobs) > 1 {
		// Several entries (no group_reporting): fio's aggregate, all
		// bytes over the longest runtime.
		r.BytesPerSec = 0
		if runtimeMS > 0 {
			r.BytesPerSec = float64(r.Bytes) / r.Runtime.Seconds()
		}
	}
	return r, nil
}

// runFio writes job to dir and runs fio on it there; rw says which half
// of the report is the test's.
func runFio(ctx context.Context, dir, name, job, rw string) (FioResult, error) {
	path := filepath.Join(dir, name+".fio")
	if err := os.WriteFile(path, []byte(job), 0o644); err != nil {
		return FioResult{}, fmt.Errorf("fio job file: %w", err)
	}
	rep, err := fio.Run(ctx, fio.Cmd{Args: []string{path}, Dir: dir})
	if err != nil {
		return FioResult{}, err
	}
	r, err := fioResult(rep, rw)
	if err != nil {
		return FioResult{}, fmt.Errorf("fio %s: %w", path, err)
	}
	return r, nil
}
