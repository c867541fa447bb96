package metabench

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// dir is a directory a process has entered: ops name files relative to
// its descriptor, as the C original named them relative to its working
// directory after chdir (goroutines share one working directory, so the
// *at system calls stand in for it).
type dir struct {
	fd   int
	path string // for errors
}

func openDir(path string) (dir, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return dir{}, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return dir{fd: fd, path: path}, nil
}

func (d dir) close() { unix.Close(d.fd) }

func (d dir) err(op, name string, err error) error {
	return &os.PathError{Op: op, Path: d.path + "/" + name, Err: err}
}

// fileOp is the system call (or short sequence) a phase times on each
// file. They call the kernel directly, as the C original did, so that the
// Go runtime's file bookkeeping is not part of the rate.
type fileOp func(d dir, name string) error

// checkEvery is how many files go by between looks at the context: often
// enough to stop promptly, rarely enough not to show in the rate.
const checkEvery = 256

// create makes a zero-length file, as creat(2) does.
func create(d dir, name string) error {
	fd, err := unix.Openat(d.fd, name, unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return d.err("create", name, err)
	}
	if err := unix.Close(fd); err != nil {
		return d.err("close", name, err)
	}
	return nil
}

func stat(d dir, name string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, 0); err != nil {
		return d.err("stat", name, err)
	}
	return nil
}

// utime sets the access and modification times to now, as utime(path,
// NULL) does.
func utime(d dir, name string) error {
	now := []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}
	if err := unix.UtimesNanoAt(d.fd, name, now, 0); err != nil {
		return d.err("utime", name, err)
	}
	return nil
}

// appender opens a file for append and writes data to its end.
func appender(data []byte) fileOp {
	return func(d dir, name string) error {
		fd, err := unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_APPEND|unix.O_CLOEXEC, 0)
		if err != nil {
			return d.err("append", name, err)
		}
		if _, err := fdWriter(fd).Write(data); err != nil {
			unix.Close(fd)
			return d.err("append", name, err)
		}
		if err := unix.Close(fd); err != nil {
			return d.err("close", name, err)
		}
		return nil
	}
}

func unlink(d dir, name string) error {
	if err := unix.Unlinkat(d.fd, name, 0); err != nil {
		return d.err("unlink", name, err)
	}
	return nil
}

// eachFile applies op to files start to start+count-1 of d, by name, and
// returns how many it did.
func eachFile(ctx context.Context, d dir, start, count int, op fileOp) (int, error) {
	for i := range count {
		if i%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return i, err
			}
		}
		if err := op(d, fileName(start+i)); err != nil {
			return i, err
		}
	}
	return count, nil
}

// createBatches creates files 0 to n-1 in d and times every freq of them,
// for Create-A.
func createBatches(ctx context.Context, d dir, n, freq int) ([]Batch, error) {
	var batches []Batch
	for start := 0; start < n; start += freq {
		count := min(freq, n-start)
		t0 := time.Now()
		done, err := eachFile(ctx, d, start, count, create)
		batches = append(batches, Batch{Files: done, Elapsed: time.Since(t0)})
		if err != nil {
			return batches, err
		}
	}
	return batches, nil
}

// dirWalker is a process's open handle on a shared directory, placed by
// readdir at its first entry, as Stat-B's processes place themselves
// before the barrier.
type dirWalker struct {
	f *os.File
	d dir
}

// openAt opens path and reads past its first skip entries.
func openAt(path string, skip int) (*dirWalker, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	for skip > 0 {
		names, err := f.Readdirnames(min(skip, 1024))
		skip -= len(names)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("readdir %s: %d entries short of the start: %w", path, skip, err)
		}
	}
	return &dirWalker{f: f, d: dir{fd: int(f.Fd()), path: path}}, nil
}

// each applies op to the next count entries and returns how many it did.
func (w *dirWalker) each(ctx context.Context, count int, op fileOp) (int, error) {
	done := 0
	for done < count {
		if err := ctx.Err(); err != nil {
			return done, err
		}
		names, err := w.f.Readdirnames(min(count-done, checkEvery))
		for _, name := range names {
			if err := op(w.d, name); err != nil {
				return done, err
			}
			done++
		}
		if err != nil {
			return done, fmt.Errorf("readdir %s: ended %d entries short: %w", w.d.path, count-done, err)
		}
	}
	return done, nil
}

func (w *dirWalker) close() { w.f.Close() }

// fdWriter writes to a descriptor, all of p or an error.
type fdWriter int

func (w fdWriter) Write(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := unix.Write(int(w), p[n:])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return n, err
		case m == 0:
			return n, io.ErrShortWrite
		}
		n += m
	}
	return n, nil
}
