// Package board holds what the daemon knows of its jobs in flight that no
// record keeps: each stage's progress as it last reported it, and what
// each waiting job waits for and why. Both die with the daemon, and are
// worked out anew after a restart (a stage reports again, a wait is
// decided again at the next tick). The loop writes; the API, the Slurm
// adapter and the actions read, from any goroutine.
package board

import (
	"sync"

	"github.com/rsa-hpc/rsa/internal/job"
)

// Wait is what a job waits for, and why.
type Wait struct {
	Kind WaitKind
	Why  string // for the job's view and its start hook
}

// WaitKind names what a job waits for.
type WaitKind string

const (
	WaitStart    WaitKind = "start"    // its stage-in time
	WaitCapacity WaitKind = "capacity" // free RAM on RSA nodes
)

// Board is safe for use by several goroutines. The zero Board is empty
// and ready.
type Board struct {
	mu       sync.Mutex
	progress map[int64]job.Progress
	waits    map[int64]Wait
}

// SetProgress records a stage's progress for job id.
func (b *Board) SetProgress(id int64, p job.Progress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.progress == nil {
		b.progress = map[int64]job.Progress{}
	}
	b.progress[id] = p
}

// Progress is job id's progress as last recorded; ok is false if none is.
func (b *Board) Progress(id int64) (p job.Progress, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok = b.progress[id]
	return p, ok
}

// SetWait records what job id waits for (why "": nothing) and reports
// whether the reason changed. How long a job has waited is its record's,
// not this.
func (b *Board) SetWait(id int64, kind WaitKind, why string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.waits[id].Why == why {
		return false
	}
	if why == "" {
		delete(b.waits, id)
		return true
	}
	if b.waits == nil {
		b.waits = map[int64]Wait{}
	}
	b.waits[id] = Wait{Kind: kind, Why: why}
	return true
}

// Wait is what job id waits for; the zero Wait if nothing.
func (b *Board) Wait(id int64) Wait {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waits[id]
}

// Waiting is how many jobs wait for something.
func (b *Board) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waits)
}

// Forget drops all that is known of job id: it is done.
func (b *Board) Forget(id int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.progress, id)
	delete(b.waits, id)
}
