package stage

import "sync"

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
