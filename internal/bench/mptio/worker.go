package mptio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// gate is the start barrier of one test: every thread waits for open to
// close; t0 is set before it closes, so every thread may read it after.
type gate struct {
	open chan struct{}
	t0   time.Time
}

// threadJob is one thread's part of one test.
type threadJob struct {
	test     Test
	seg      Segment
	recsz    int64
	ops      int64  // records to move
	create   bool   // the test creates the file (test 0 on files)
	direct   bool   // -I
	fillSeed uint64 // the run's fill pattern
	randSeed uint64 // this thread's random records in this test
	ready    *sync.WaitGroup
	gate     *gate
}

// threadResult is what a thread reports of one test.
type threadResult struct {
	rank, thread int
	bytes        int64
	end          time.Duration // from the start gate to the file's close
	sys          time.Duration // system CPU time of the thread in the test
	err          error
}

// worker is one MPTIO worker thread: a goroutine that keeps one OS thread
// to itself for the whole run, so that the kernel's per-thread accounting
// (RUSAGE_THREAD) is this worker's alone.
type worker struct {
	rank, thread int
	buf          *alignedBuffer
	jobs         chan threadJob
}

// serve does the jobs it is given until jobs is closed.
func (w *worker) serve(ctx context.Context, results chan<- threadResult) {
	// Never unlocked: when serve returns, the runtime ends the thread
	// instead of handing it, and its usage, to another goroutine.
	runtime.LockOSThread()
	for j := range w.jobs {
		results <- w.do(ctx, j)
	}
}

// do runs one test: wait at the gate, open, move the records, close.
func (w *worker) do(ctx context.Context, j threadJob) threadResult {
	res := threadResult{rank: w.rank, thread: w.thread}
	rec := w.buf.rec
	if j.test.writes() {
		// Reads of the last test may have left other bytes in the buffer.
		fill(rec, j.fillSeed)
	}
	j.ready.Done()
	<-j.gate.open

	sys0, err := threadSysTime()
	if err != nil {
		res.err = err
		return res
	}
	res.bytes, res.err = runThreadTest(ctx, j, rec)
	res.end = time.Since(j.gate.t0)
	sys1, err := threadSysTime()
	res.sys = sys1 - sys0
	if res.err == nil {
		res.err = err
	}
	return res
}

// threadSysTime is the system CPU time the calling OS thread has used.
func threadSysTime() (time.Duration, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0, fmt.Errorf("getrusage(RUSAGE_THREAD): %w", err)
	}
	return time.Duration(ru.Stime.Nano()), nil
}

// runThreadTest opens the segment's file itself, as each MPTIO thread
// does, runs the test's I/O on it and closes it; it returns the bytes moved.
func runThreadTest(ctx context.Context, j threadJob, rec []byte) (int64, error) {
	flags := unix.O_CLOEXEC
	switch j.test {
	case SeqWrite, RandomWrite:
		flags |= unix.O_WRONLY
	case ReadModifyWrite:
		flags |= unix.O_RDWR
	default:
		flags |= unix.O_RDONLY
	}
	if j.create {
		flags |= unix.O_CREAT
	}
	if j.direct {
		flags |= unix.O_DIRECT
	}
	fd, err := unix.Open(j.seg.Path, flags, 0o644)
	if err != nil {
		if errors.Is(err, unix.ENOENT) && !j.create {
			return 0, fmt.Errorf("open %s: %w (test 0 creates the files: run it, or keep them from an earlier run with -K)", j.seg.Path, err)
		}
		return 0, fmt.Errorf("open %s: %w", j.seg.Path, err)
	}
	f := &recordFile{fd: fd, path: j.seg.Path, rec: rec, key: fileKey(j.seg.Path), direct: j.direct}
	moved, err := f.run(ctx, j)
	if cerr := unix.Close(fd); cerr != nil && err == nil {
		err = fmt.Errorf("close %s: %w", j.seg.Path, cerr)
	}
	return moved, err
}

// recordFile is an open file or device and the record buffer its thread
// moves through it.
type recordFile struct {
	fd     int
	path   string
	rec    []byte
	key    uint64
	direct bool // opened with O_DIRECT
}

// run does the system calls of test j.test over j.seg, each as MPTIO
// describes it: a seek to the segment and sequential reads or writes, or a
// seek before each random record.
func (f *recordFile) run(ctx context.Context, j threadJob) (int64, error) {
	seg, recsz := j.seg, j.recsz
	var moved int64
	if !j.test.random() {
		if err := f.seek(seg.Offset); err != nil {
			return 0, err
		}
	}
	rng := rand.New(rand.NewPCG(j.randSeed, uint64(j.test)))
	for i := range j.ops {
		if err := ctx.Err(); err != nil {
			return moved, err
		}
		off := seg.Offset + i*recsz
		if j.test.random() {
			off = seg.Offset + rng.Int64N(seg.Records)*recsz
			if err := f.seek(off); err != nil {
				return moved, err
			}
		}
		var err error
		switch j.test {
		case SeqWrite, RandomWrite:
			stamp(f.rec, off, f.key)
			err = f.write(off)
		case ReadModifyWrite:
			if err = f.read(off); err == nil {
				modify(f.rec)
				if err = f.seek(off); err == nil {
					err = f.write(off)
				}
			}
		case SeqRead, RandomRead:
			err = f.read(off)
		}
		if err != nil {
			return moved, err
		}
		moved += recsz
	}
	return moved, nil
}

func (f *recordFile) seek(off int64) error {
	if _, err := unix.Seek(f.fd, off, io.SeekStart); err != nil {
		return fmt.Errorf("seek %s to %d: %w", f.path, off, err)
	}
	return nil
}

// write writes the whole record at the file's position, off.
func (f *recordFile) write(off int64) error {
	for b := f.rec; len(b) > 0; {
		n, err := unix.Write(f.fd, b)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("write %s at %d: %w", f.path, off+int64(len(f.rec)-len(b)), f.explain(err))
		}
		b = b[n:]
	}
	return nil
}

// read reads a whole record from the file's position, off.
func (f *recordFile) read(off int64) error {
	for b := f.rec; len(b) > 0; {
		n, err := unix.Read(f.fd, b)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read %s at %d: %w", f.path, off+int64(len(f.rec)-len(b)), f.explain(err))
		}
		if n == 0 {
			return fmt.Errorf("read %s at %d: %w (the file is shorter than the plan; was test 0 skipped?)",
				f.path, off+int64(len(f.rec)-len(b)), io.ErrUnexpectedEOF)
		}
		b = b[n:]
	}
	return nil
}

// explain adds the likely cause to the EINVAL that O_DIRECT gives for a
// misaligned transfer, which a file system with 4 KiB blocks gives for
// 512-byte ones.
func (f *recordFile) explain(err error) error {
	if f.direct && errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("%w (with -I, the file system may need -b and -s to be multiples of its block size, often 4096)", err)
	}
	return err
}
