package mount

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// prefetchChunk is the size of one read of a prefetch, and
// prefetchReaders how many run at once: several requests in flight hide
// a network file system's round trips.
const (
	prefetchChunk   = 1 << 20
	prefetchReaders = 4
)

// Prefetch reads a file once, in the background, so that its bytes are in
// this host's page cache before anyone asks for them. An input image on a
// network file system is then fetched in large requests, several at once,
// while the job starts, instead of a block at a time as the job walks its
// tree. The page cache it fills is memory the kernel reclaims under
// pressure, charged to the process that prefetches.
type Prefetch struct {
	cancel context.CancelFunc
	done   chan struct{}
	read   atomic.Int64
}

// StartPrefetch reads the first n bytes of f in the background and closes
// f when done; it owns f from the call on. onDone, if not nil, is called
// once with what was read, how long it took and why it stopped short (nil
// when it read all n bytes, context.Canceled when stopped).
func StartPrefetch(f *os.File, n int64, onDone func(read int64, took time.Duration, err error)) *Prefetch {
	ctx, cancel := context.WithCancel(context.Background())
	p := &Prefetch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		defer f.Close()
		start := time.Now()
		err := p.run(ctx, f, n)
		if onDone != nil {
			onDone(p.read.Load(), time.Since(start), err)
		}
	}()
	return p
}

// run reads [0, n) of f with prefetchReaders readers taking chunks in
// order; the first error stops them all.
func (p *Prefetch) run(ctx context.Context, f *os.File, n int64) error {
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	for range prefetchReaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, prefetchChunk)
			for ctx.Err() == nil {
				off := next.Add(prefetchChunk) - prefetchChunk
				if off >= n {
					return
				}
				want := min(int64(len(buf)), n-off)
				got, err := f.ReadAt(buf[:want], off)
				p.read.Add(int64(got))
				if err != nil && !(errors.Is(err, io.EOF) && int64(got) == want) {
					errOnce.Do(func() { first = fmt.Errorf("reading %s at %d: %w", f.Name(), off, err); stop() })
					return
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// Stop ends the prefetch if it still runs and waits, at most wait, until
// its file is closed: a file held open on a volume keeps that volume from
// being unmounted. A read already sent to a file system that has lost its
// server may not return for long, so Stop says whether the file is closed
// rather than wait for ever. Stop on a nil Prefetch does nothing.
func (p *Prefetch) Stop(wait time.Duration) bool {
	if p == nil {
		return true
	}
	p.cancel()
	select {
	case <-p.done:
		return true
	case <-time.After(wait):
		return false
	}
}
