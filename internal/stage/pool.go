package stage

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// pool runs tasks on a fixed number of goroutines. A task submitted while
// the queue is full runs at once in the submitter: the queue stays bounded,
// no submitter blocks (so no deadlock when every worker submits), and a walk
// degrades to depth-first recursion, which bounds open directories.
type pool struct {
	tasks   chan func()
	pending sync.WaitGroup
	workers sync.WaitGroup
}

func newPool(workers int) *pool {
	p := &pool{tasks: make(chan func(), workers*4)}
	for range workers {
		p.workers.Add(1)
		go func() {
			defer p.workers.Done()
			for t := range p.tasks {
				t()
				p.pending.Done()
			}
		}()
	}
	return p
}

func (p *pool) submit(t func()) {
	p.pending.Add(1)
	select {
	case p.tasks <- t:
	default:
		t()
		p.pending.Done()
	}
}

// wait returns when every submitted task, and every task they submitted,
// has run; the pool is finished afterwards.
func (p *pool) wait() {
	p.pending.Wait()
	close(p.tasks)
	p.workers.Wait()
}

// batcher collects items and hands them on in groups of n: one hand-off per
// small file costs more than the work on it.
type batcher[T any] struct {
	n     int
	items []T
	run   func([]T)
}

func (b *batcher[T]) add(x T) {
	b.items = append(b.items, x)
	if len(b.items) == b.n {
		b.flush()
	}
}

func (b *batcher[T]) flush() {
	if len(b.items) == 0 {
		return
	}
	items := b.items
	b.items = nil
	b.run(items)
}

// openLister reads the entries of the directory open as fd through a
// duplicate descriptor, so that closing the lister leaves fd open for the
// *at calls of tasks still running.
func openLister(fd int, name string) (*os.File, error) {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(dup), name), nil
}
