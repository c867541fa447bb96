package mptio

import (
	"fmt"
	"path/filepath"
)

// Segment is the region one thread works in a test: MPTIO's per-thread
// (path, offset, numrec); the record size is the run's.
type Segment struct {
	Path    string // file or device
	Offset  int64  // byte offset of the first record, -s included
	Records int64  // numrec
}

// Plan is a Config laid out: how many records each thread moves and where
// every thread's segment lies. NewPlan makes it without touching the disk.
type Plan struct {
	Config Config

	// Records is numrec, the records of every thread's segment.
	Records int64
	// ProcSize is the adjusted per-process size MPTIO reports as Size: the
	// bytes of the region a process owns (nth × numrec × recsz, or
	// numrec × recsz per device with -O t).
	ProcSize int64
	// Files are the files the run creates and unlinks, or the devices of
	// -R, each once, with Extents[i] the bytes Files[i] must hold.
	Files   []string
	Extents []int64

	segments [][]Segment // [rank][thread], as the first test finds them
}

// NewPlan applies MPTIO's size rule to c and lays out its segments. c must
// be valid (Config.Validate); files are named in c.Dir.
func NewPlan(c Config) (*Plan, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	p := &Plan{Config: c}

	// The size rule: a process's size is a suggestion, adjusted to
	// regions × numrec × recsz with numrec the nearest whole number of
	// records. A region is a thread's own stretch; with -O t a process's
	// threads share one region per device.
	size, procs := c.ProcSize, int64(1)
	if c.GlobalSize > 0 {
		size, procs = c.GlobalSize, int64(c.Procs)
	}
	devices := 1
	if c.Mode == Device {
		devices = len(c.Devices)
	}
	regions := c.Threads
	if c.OverlapThreads {
		regions = devices
	}
	p.Records = nearestRecords(size, procs*int64(regions)*c.RecordSize)
	p.ProcSize = int64(regions) * p.Records * c.RecordSize

	p.segments = make([][]Segment, c.Procs)
	extent := map[string]int64{}
	for rank := range c.Procs {
		p.segments[rank] = make([]Segment, c.Threads)
		for thread := range c.Threads {
			s := p.layout(rank, thread, devices)
			p.segments[rank][thread] = s
			if _, ok := extent[s.Path]; !ok {
				p.Files = append(p.Files, s.Path)
			}
			extent[s.Path] = max(extent[s.Path], s.Offset+s.Records*c.RecordSize)
		}
	}
	for _, f := range p.Files {
		p.Extents = append(p.Extents, extent[f])
	}
	return p, nil
}

// nearestRecords is the whole number of records of bytesPerRecord closest
// to size (halves round up), and at least one.
func nearestRecords(size, bytesPerRecord int64) int64 {
	n := size / bytesPerRecord
	if 2*(size%bytesPerRecord) >= bytesPerRecord {
		n++
	}
	return max(n, 1)
}

// layout places thread of rank, as MPTIO's Figure A-1 draws it: regions
// contiguous and disjoint, process by process and within a process thread
// by thread (P0T0, P0T1, P1T0, ...). With several devices, thread k goes to
// device k mod D and the processes' regions are disjoint on each device.
func (p *Plan) layout(rank, thread, devices int) Segment {
	c := &p.Config
	region := p.Records * c.RecordSize

	slot := thread / devices // the thread's place among its process' threads on its file or device
	perProcess := int64(c.Threads / devices)
	if c.OverlapThreads {
		slot, perProcess = 0, 1
	}
	var path string
	var base int64 // where the rank's regions start
	switch c.Mode {
	case Global:
		path = filepath.Join(c.Dir, "mptio_global")
		base = int64(rank) * perProcess * region
	case PerProcess:
		path = filepath.Join(c.Dir, fmt.Sprintf("mptio_p%d", rank))
	case PerThread:
		path = filepath.Join(c.Dir, fmt.Sprintf("mptio_p%d_t%d", rank, thread))
		slot = 0
	case Device:
		path = c.Devices[thread%devices]
		base = int64(rank) * perProcess * region
	}
	if c.OverlapProcs {
		base = 0
	}
	return Segment{Path: path, Offset: c.Offset + base + int64(slot)*region, Records: p.Records}
}

// Owner is the rank whose first segments rank works on after the given
// number of rotations (-r). MPTIO's appendix: thread K of process P
// "rotates its file and segment info to thread K of process (P-1) (mod
// NUMPROC)"; so each rotation hands a rank the segments of the rank one
// above it.
func (p *Plan) Owner(rank, rotations int) int {
	n := p.Config.Procs
	return ((rank+rotations)%n + n) % n
}

// Segment is the segment thread of rank works on after the given number
// of rotations (always 0 without -r).
func (p *Plan) Segment(rank, thread, rotations int) Segment {
	return p.segments[p.Owner(rank, rotations)][thread]
}

// Ops is how many records one thread reads or writes in test t: a
// segment's worth, or -a nrand in the random tests.
func (p *Plan) Ops(t Test) int64 {
	if t.random() && p.Config.NRand > 0 {
		return p.Config.NRand
	}
	return p.Records
}

// ThreadBytes is what one thread moves in test t. Read-modify-write counts
// each record once, as bonnie's rewrite does, though it crosses the
// system call boundary twice.
func (p *Plan) ThreadBytes(t Test) int64 { return p.Ops(t) * p.Config.RecordSize }
