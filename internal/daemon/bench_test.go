package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/store"
)

// One scheduling pass at a busy site's scale: 10,000
// active jobs, of which 9,000 hold RAMDISKs on 16 RSA nodes and 1,000 wait
// for capacity that is not there. Run on a quiet machine with
//
//	go test -run '^$' -bench Pass -benchtime 20x ./internal/daemon/
//
// The goal is under 10 ms a pass; before the store kept its active jobs in
// memory a pass read and decoded every active job from SQLite once per
// waiting job (113 ms a read).
const (
	benchHolding = 9_000
	benchWaiting = 1_000
	benchNodes   = 16
)

// benchDaemon is a daemon's state and loop without its socket, engine
// and actions: what a tick touches.
func benchDaemon(b *testing.B) *Daemon {
	b.Helper()
	d := passDaemon(b, benchNodes, benchHolding/benchNodes<<30)
	now := time.Now()
	for i := range benchHolding + benchWaiting {
		j := passJob(i, 1<<30, now)
		if i < benchHolding {
			j.State, j.RSA, j.StartedAt = lifecycle.Running, lifecycle.InUseIn, now
			j.Alloc = []job.Part{{Node: d.cfg.Nodes[i%benchNodes].Name, Bytes: 1 << 30}}
		}
		if err := d.store.Create(context.Background(), j, nil); err != nil {
			b.Fatal(err)
		}
	}
	return d
}

// passDaemon is a daemon with n RSA nodes of capacity bytes each and an
// empty store in RAM: 10,000 synchronous commits to fill it are not what
// is measured.
func passDaemon(tb testing.TB, n int, capacity int64) *Daemon {
	tb.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "rsa-bench-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	st, err := store.Open(context.Background(), dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	// Scheduler none: no Slurm job markers, which a pass never touches
	// and a resume would write for every job.
	cfg := &config.Config{Tick: time.Second, Scheduler: config.SchedulerNone, StateDir: dir}
	for i := range n {
		cfg.Nodes = append(cfg.Nodes, config.Node{Name: fmt.Sprintf("rsa%02d", i+1), Capacity: capacity})
	}
	d := newDaemon(cfg, deps{store: st}, Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Version: "bench"})
	if err := d.logs.MakeDir(); err != nil {
		tb.Fatal(err)
	}
	return d
}

// passJob is the i-th of a site's Slurm jobs, on deck for capacity bytes.
func passJob(i int, capacity int64, now time.Time) *job.Job {
	return &job.Job{Spec: job.Spec{SchedulerID: fmt.Sprint(i + 1), Input: "/home/u/in", Output: "/home/u/out", Delay: 24 * time.Hour,
		Capacity: capacity, ComputeNodes: 1},
		UID: 1000 + uint32(i%50), GID: 1000, User: fmt.Sprintf("u%d", i%50), Scheduler: config.SchedulerSlurm,
		State: lifecycle.OnDeck, RSA: lifecycle.Initial, CreatedAt: now, UpdatedAt: now}
}

func BenchmarkSchedulingPass(b *testing.B) {
	d := benchDaemon(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		d.tick(ctx, time.Now())
		if len(d.pending) != 0 || len(d.book.Reserved()) != 0 {
			b.Fatalf("a pass over full nodes assigned: %d pending, %d reserved", len(d.pending), len(d.book.Reserved()))
		}
	}
	b.StopTimer()
	if w := d.board.Waiting(); w != benchWaiting {
		b.Fatalf("%d jobs wait for capacity, want %d", w, benchWaiting)
	}
}

// BenchmarkStatus is the daemon's side of `rsa status` (every active job).
func BenchmarkStatus(b *testing.B) {
	d := benchDaemon(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		js, err := d.api.Jobs(ctx, api.Peer{}, false)
		if err != nil || len(js) != benchHolding+benchWaiting {
			b.Fatalf("%d jobs, %v", len(js), err)
		}
		if _, err := d.api.Nodes(ctx, api.Peer{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResume is the daemon's start after the store is open: every
// active job is looked at once and resumed where its state says (here
// none has work under way; a real start also runs gc and restarts the
// staging under way).
func BenchmarkResume(b *testing.B) {
	d := benchDaemon(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if err := d.resume(ctx); err != nil {
			b.Fatal(err)
		}
		if len(d.pending) != benchHolding+benchWaiting {
			b.Fatalf("%d resumed, want %d", len(d.pending), benchHolding+benchWaiting)
		}
		for len(d.pending) > 0 {
			m := d.pending[0]
			d.pending = d.pending[1:]
			d.handle(ctx, m)
		}
	}
}
