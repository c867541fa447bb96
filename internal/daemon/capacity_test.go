package daemon

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
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
	r := newRestartRig(t, func(dir string) *config.Config {
		// The Slurm job markers go beside the socket: in dir.
		return &config.Config{StateDir: dir, Tick: time.Second, Scheduler: config.SchedulerSlurm, Proportion: 1, MinJobNodes: 1,
			Socket: filepath.Join(dir, "rsa.sock"), Nodes: []config.Node{{Name: "rsa01", Capacity: gib}}}
	})
	ctx := context.Background()
	open, handleAll, get := r.open, r.run, r.get
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
