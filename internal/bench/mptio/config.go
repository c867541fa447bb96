package mptio

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Mode says which files or devices the threads do their I/O on.
type Mode int

const (
	// Global puts every thread of every rank in one file (-G, the default).
	Global Mode = iota
	// PerProcess gives each rank a file its threads share (-P).
	PerProcess
	// PerThread gives each thread a file of its own (-T).
	PerThread
	// Device does the I/O on the block devices of Config.Devices (-R).
	Device
)

// String is the mode's MPTIO flag letter.
func (m Mode) String() string {
	switch m {
	case Global:
		return "G"
	case PerProcess:
		return "P"
	case PerThread:
		return "T"
	case Device:
		return "R"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Test is one of MPTIO's five tests; they run in the order of their numbers.
type Test int

const (
	SeqWrite        Test = iota // 0: each thread writes its segment in order; creates the files
	ReadModifyWrite             // 1: read a record, change one word, seek back, rewrite it
	RandomWrite                 // 2: write random records of the segment
	SeqRead                     // 3: read the segment in order
	RandomRead                  // 4: read random records of the segment
	numTests
)

// Tests are the five tests in the order they run.
func Tests() []Test { return []Test{SeqWrite, ReadModifyWrite, RandomWrite, SeqRead, RandomRead} }

// String is the test's name in the report, as MPTIO's sample spells the
// two it shows (Seq_Write, Seq_Read).
func (t Test) String() string {
	switch t {
	case SeqWrite:
		return "Seq_Write"
	case ReadModifyWrite:
		return "Rd_Mod_Wrt"
	case RandomWrite:
		return "Rand_Write"
	case SeqRead:
		return "Seq_Read"
	case RandomRead:
		return "Rand_Read"
	}
	return fmt.Sprintf("Test(%d)", int(t))
}

// writes reports whether the test writes to its segment.
func (t Test) writes() bool { return t == SeqWrite || t == ReadModifyWrite || t == RandomWrite }

// random reports whether the test picks its records at random.
func (t Test) random() bool { return t == RandomWrite || t == RandomRead }

// Config is one MPTIO run: its flags, and the process count MPI gave it
// (mpirun -np).
type Config struct {
	Procs   int      // -np: ranks
	Mode    Mode     // -G, -P, -T or -R
	Devices []string // -R dev, repeatable; only with Mode Device

	ProcSize   int64 // -f: approximate bytes per rank; exactly one of ProcSize, GlobalSize
	GlobalSize int64 // -F: approximate bytes over all ranks
	RecordSize int64 // -b: bytes of each read or write call
	Threads    int   // -t: threads per rank

	Skip   []Test // -k: tests not to run
	NRand  int64  // -a: operations of each random test; 0 means one per record
	Rotate bool   // -r: after each test, hand segments to the next lower rank
	Direct bool   // -I: open with O_DIRECT

	OverlapProcs   bool // -O p: every rank works the same region
	OverlapThreads bool // -O t: every thread of a rank works the same region

	Offset int64  // -s: bytes added to every thread's start offset
	Keep   bool   // -K: leave the files at the end
	Check  bool   // -C: check the files' contents after each test
	Unique bool   // -U: work in a new subdirectory of Dir
	Dir    string // -d: where the files go; "" is the working directory

	// Seed seeds the random tests, so that a run repeats the same offsets.
	Seed uint64
}

// sectorSize is what O_DIRECT asks of sizes and offsets on any Linux block
// device; a file system may ask for more (its logical block size), which
// the open or the first transfer then refuses with EINVAL.
const sectorSize = 512

// stampedRecord is the smallest record that holds a check pattern's
// stamps (see record.go).
const stampedRecord = 32

// Runs reports whether the test is to run, that is not skipped with -k.
func (c *Config) Runs(t Test) bool { return !slices.Contains(c.Skip, t) }

// Validate reports every inconsistency of the flags at once, each naming
// the flag and how to fix it. It does not touch the devices: see
// CheckDevices for what only they can tell.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if c.Procs < 1 {
		bad("-n %d: run at least one process", c.Procs)
	}
	if c.Threads < 1 {
		bad("-t %d: give each process at least one thread", c.Threads)
	}
	if c.RecordSize <= 0 {
		bad("-b: give a record size, e.g. -b 256K")
	}
	switch {
	case c.ProcSize > 0 && c.GlobalSize > 0:
		bad("-f and -F both given: use -f for the size per process or -F for the size of all processes, not both")
	case c.ProcSize <= 0 && c.GlobalSize <= 0:
		bad("no size: give -f SIZE (per process) or -F SIZE (all processes), e.g. -f 200M")
	}
	if c.NRand < 0 {
		bad("-a %d: give a positive number of random operations, or leave -a out for one per record", c.NRand)
	}
	if c.Offset < 0 {
		bad("-s %d: the start offset cannot be negative", c.Offset)
	}

	switch c.Mode {
	case Global, PerProcess, PerThread:
		if len(c.Devices) > 0 {
			bad("-R %s given with -%s: use either devices (-R) or files (-G, -P, -T)", strings.Join(c.Devices, " -R "), c.Mode)
		}
	case Device:
		if len(c.Devices) == 0 {
			bad("-R: name at least one block device")
		} else if c.Threads >= 1 && c.Threads%len(c.Devices) != 0 {
			bad("-t %d over %d devices: the threads of a process are split evenly over the devices; use -t %d",
				c.Threads, len(c.Devices), roundUp(int64(c.Threads), int64(len(c.Devices))))
		}
		for i, d := range c.Devices {
			if slices.Contains(c.Devices[:i], d) {
				bad("-R %s given twice: name each device once", d)
			}
		}
	default:
		bad("mode %v: use -G, -P, -T or -R", c.Mode)
	}
	if c.Mode == PerThread && (c.OverlapProcs || c.OverlapThreads) {
		bad("-T with -O: every thread has a file of its own, so there is nothing to overlap; drop -O or use -G or -P")
	}
	if c.Mode == PerProcess && c.OverlapProcs {
		bad("-P with -O p: each process has a file of its own, so processes cannot share a region; use -G (or -R) with -O p")
	}

	for _, t := range c.Skip {
		if t < 0 || t >= numTests {
			bad("-k %d: tests are numbered 0 to %d", int(t), numTests-1)
		}
	}
	if !slices.ContainsFunc(Tests(), c.Runs) {
		bad("-k skips all five tests: leave at least one to run")
	}

	if c.Direct && c.RecordSize > 0 && c.RecordSize%sectorSize != 0 {
		bad("-I with -b %d: O_DIRECT needs records that are a multiple of %d bytes; use e.g. -b %d (4096 suits every file system)",
			c.RecordSize, sectorSize, roundUp(c.RecordSize, sectorSize))
	}
	if c.Direct && c.Offset%sectorSize != 0 {
		bad("-I with -s %d: O_DIRECT needs an offset that is a multiple of %d bytes; use -s %d",
			c.Offset, sectorSize, roundUp(c.Offset, sectorSize))
	}
	if c.Check && c.RecordSize > 0 && c.RecordSize < stampedRecord {
		bad("-C with -b %d: checking stamps each record, which needs records of at least %d bytes", c.RecordSize, stampedRecord)
	}
	return errors.Join(errs...)
}

// roundUp rounds n up to a multiple of m.
func roundUp(n, m int64) int64 { return (n + m - 1) / m * m }
