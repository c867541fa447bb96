package service

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/rsatest"
	"github.com/rsa-hpc/rsa/internal/store"
)

// TestPurgeHistory: the records and logs of jobs that ended more than
// history_retention ago go; a job that ended since, and an active job
// however old, stay; history_retention 0 keeps everything.
func TestPurgeHistory(t *testing.T) {
	r := newRig(t, func(c *config.Config) { c.HistoryRetention = 0 })
	old := time.Now().Add(-100 * 24 * time.Hour)
	aged := func(j *job.Job) { j.CreatedAt, j.UpdatedAt, j.FinishedAt = old, old, old }
	gone := r.job(lifecycle.Finished, lifecycle.Released, aged)
	recent := r.job(lifecycle.Finished, lifecycle.Released)
	waiting := r.job(lifecycle.OnDeck, lifecycle.Initial, aged)
	for _, j := range []*job.Job{gone, recent, waiting} {
		// A record is marked done when it is committed so, not created.
		if err := r.store.Commit(r.ctx, j, nil); err != nil {
			t.Fatal(err)
		}
		r.logs.Append(j.ID, j.CreatedAt, "a line of the job's log")
	}
	kept := func(j *job.Job) bool {
		t.Helper()
		_, err := r.store.Get(r.ctx, j.ID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		_, lerr := os.Stat(r.logs.Path(j.ID, j.CreatedAt))
		if (err == nil) != (lerr == nil) {
			t.Errorf("job %d: record %v, log %v: one went without the other", j.ID, err, lerr)
		}
		return err == nil
	}

	r.svc.purge(r.ctx)
	if !kept(gone) || !kept(recent) || !kept(waiting) {
		t.Fatal("history_retention 0 purged history")
	}

	r.cfg.HistoryRetention = 90 * 24 * time.Hour
	// PurgeHistory purges at once, then hourly until ctx ends.
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.svc.PurgeHistory(ctx)
	}()
	purged := rsatest.Poll(5*time.Second, 10*time.Millisecond, func() bool {
		_, err := r.store.Get(r.ctx, gone.ID)
		return errors.Is(err, store.ErrNotFound)
	})
	cancel()
	<-done
	if !purged || kept(gone) {
		t.Errorf("job %d, ended 100 days ago, outlived a retention of 90", gone.ID)
	}
	if !kept(recent) || !kept(waiting) {
		t.Errorf("the purge took a job that ended since, or one still active")
	}
}
