package daemon

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/store"
)

// TestCapacityWaitSurvivesRestart: a job on deck waits for RSA capacity at
// most its capacity wait, counted from when it began to wait, across a
// restart of the daemon: the clock is in the job's record, so a restart
// neither starts the wait again nor ends it early.
func TestCapacityWaitSurvivesRestart(t *testing.T) {
	const (
		gib   = 1 << 30
		limit = time.Hour
	)
	dir := t.TempDir()
	ctx := context.Background()
	open := func() *Daemon {
		st, err := store.Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		// The Slurm job markers go beside the socket: in dir.
		cfg := &config.Config{Tick: time.Second, Scheduler: config.SchedulerSlurm, Proportion: 1, MinJobNodes: 1,
			Socket: filepath.Join(dir, "rsa.sock"), Nodes: []config.Node{{Name: "rsa01", Capacity: gib}}}
		return newDaemon(cfg, deps{store: st}, Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Version: "test"})
	}
	// handleAll is the loop's work for one tick at now: the tick, then
	// the events its actions posted.
	handleAll := func(d *Daemon, now time.Time) {
		d.tick(ctx, now)
		for len(d.pending) > 0 {
			m := d.pending[0]
			d.pending = d.pending[1:]
			d.handle(ctx, m)
		}
	}
	get := func(d *Daemon, id int64) *job.Job {
		j, err := d.store.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}

	d := open()
	now := time.Now()
	holder := passJob(0, gib, now)
	holder.State, holder.RSA, holder.StartedAt = lifecycle.Running, lifecycle.InUseIn, now
	holder.Alloc = []job.Part{{Node: "rsa01", Bytes: gib}}
	waiter := passJob(1, 0, now)
	waiter.CapacityWait = limit
	for _, j := range []*job.Job{holder, waiter} {
		if err := d.store.Create(ctx, j, nil); err != nil {
			t.Fatal(err)
		}
	}
	handleAll(d, now)
	since := get(d, waiter.ID).WaitingSince
	if since.IsZero() || get(d, waiter.ID).RSA != lifecycle.Initial {
		t.Fatalf("the job does not wait for capacity: %s, waiting since %v", get(d, waiter.ID).RSA, since)
	}
	handleAll(d, now.Add(time.Minute))
	if got := get(d, waiter.ID).WaitingSince; !got.Equal(since) {
		t.Fatalf("a second tick moved the wait's start from %v to %v", since, got)
	}
	d.store.Close()

	// The restarted daemon knows when the wait began.
	d = open()
	defer d.store.Close()
	handleAll(d, since.Add(limit-time.Second))
	if j := get(d, waiter.ID); j.RSA != lifecycle.Initial || !j.WaitingSince.Equal(since) {
		t.Fatalf("after the restart, before the wait is over: %s waiting since %v; want INITIAL since %v", j.RSA, j.WaitingSince, since)
	}
	handleAll(d, since.Add(limit))
	j := get(d, waiter.ID)
	if j.RSA != lifecycle.Ineligible {
		t.Fatalf("after the restart, when the wait is over: %s, want INELIGIBLE", j.RSA)
	}
	if v, msg := stageInVerdict(j); v != "SUCCESS" || msg != "job runs without RSA: "+j.Error || j.Error == "" {
		t.Errorf("Slurm's stage-in hook says %s %q, want SUCCESS and why the job runs without RSA", v, msg)
	}
}
