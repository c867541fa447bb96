package sweep

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Direction is which way a point moves data.
type Direction string

// The two halves of a point, in the order TMS ran them.
const (
	Write Direction = "write"
	Read  Direction = "read"
)

// transfer is what one direction of a point did.
type transfer struct {
	bytes   int64
	elapsed time.Duration
	capped  bool // the runtime cap ended it before the whole size was done
}

// pass is one direction of one point: qd requests of bs bytes in flight
// over the first size bytes of the device at path, for at most limit.
type pass struct {
	path    string
	dir     Direction
	qd      int
	bs      int64
	size    int64
	limit   time.Duration
	pattern []byte // what a write writes: random, page aligned, at least bs long
}

// run moves the data. qd goroutines, each on an OS thread of its own so
// that each blocks in its own system call, take the next bs-sized chunk
// from a shared offset until the size is done or the cap passes: at any
// moment qd requests are in flight, as AIX's queue_depth let them be.
// All start together, after their buffers are ready; the clock runs from
// the start to the last one's finish.
func (p pass) run(ctx context.Context) (transfer, error) {
	flags := unix.O_DIRECT | unix.O_CLOEXEC
	if p.dir == Write {
		flags |= unix.O_WRONLY
	} else {
		flags |= unix.O_RDONLY
	}
	fd, err := unix.Open(p.path, flags, 0)
	if err != nil {
		return transfer{}, fmt.Errorf("open %s: %w", p.path, err)
	}
	defer unix.Close(fd)

	bufs, release, err := p.buffers()
	if err != nil {
		return transfer{}, err
	}
	defer release()

	// Each request in flight needs a P of its own to come back from its
	// system call at once. With fewer Ps than requests (two on a
	// two-core machine), a locked thread returning from pread waits for
	// a P to be handed to it, and the sweep measured Go's scheduler, not
	// the device: ram-dev at queue depth 16 and 4K, 310 MiB/s with 2 Ps,
	// 725 with 17, and fio with 16 psync threads 600-760. The setting is
	// the process's; Run makes one pass at a time.
	if prev := runtime.GOMAXPROCS(0); prev < p.qd+1 {
		runtime.GOMAXPROCS(p.qd + 1)
		defer runtime.GOMAXPROCS(prev)
	}

	var (
		next, done   atomic.Int64
		stop, capped atomic.Bool
		ready, wg    sync.WaitGroup
		start        = make(chan struct{})
		deadline     time.Time // set before start is closed
		errs         = make([]error, p.qd)
	)
	ready.Add(p.qd)
	for i := range p.qd {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			ready.Done()
			<-start
			for !stop.Load() {
				if err := ctx.Err(); err != nil {
					errs[i] = err
					stop.Store(true)
					return
				}
				if time.Now().After(deadline) {
					capped.Store(next.Load()+p.bs <= p.size)
					return
				}
				off := next.Add(p.bs) - p.bs
				if off+p.bs > p.size {
					return
				}
				n, err := p.io(fd, bufs[i], off)
				if err == nil && int64(n) != p.bs {
					err = fmt.Errorf("%d of %d bytes", n, p.bs)
				}
				if err != nil {
					errs[i] = fmt.Errorf("%s %s at offset %d: %w", p.dir, p.path, off, err)
					stop.Store(true)
					return
				}
				done.Add(p.bs)
			}
		})
	}
	ready.Wait()
	t0 := time.Now()
	deadline = t0.Add(p.limit)
	close(start)
	wg.Wait()
	elapsed := time.Since(t0)
	if err := errors.Join(errs...); err != nil {
		return transfer{}, err
	}
	return transfer{bytes: done.Load(), elapsed: elapsed, capped: capped.Load()}, nil
}

func (p pass) io(fd int, buf []byte, off int64) (int, error) {
	if p.dir == Write {
		return unix.Pwrite(fd, buf, off)
	}
	return unix.Pread(fd, buf, off)
}

// buffers returns each goroutine's buffer. Writers share the pattern,
// which the kernel only reads. Readers each get their own, touched before
// the clock starts, so that no page fault is timed.
func (p pass) buffers() (bufs [][]byte, release func(), err error) {
	bufs = make([][]byte, p.qd)
	if p.dir == Write {
		for i := range bufs {
			bufs[i] = p.pattern[:p.bs]
		}
		return bufs, func() {}, nil
	}
	// One mapping, cut at page boundaries.
	slot := roundUp(p.bs, int64(unix.Getpagesize()))
	m, err := newAlignedBuffer(slot * int64(p.qd))
	if err != nil {
		return nil, nil, err
	}
	for i := range bufs {
		bufs[i] = m[int64(i)*slot : int64(i)*slot+p.bs]
		clear(bufs[i])
	}
	return bufs, func() { _ = m.free() }, nil
}
