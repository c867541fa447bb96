package daemon

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/store"
)

// TestFencedDaemonStops: an rsa serve whose state the other of its
// failover pair took over since (a newer lease epoch) commits nothing more
// and stops at once, with store.ErrFenced as its cause; the job it was
// about to move stays where the state has it, for the new active one.
func TestFencedDaemonStops(t *testing.T) {
	const gib = 1 << 30
	r := newRestartRig(t, func(dir string) *config.Config {
		return &config.Config{StateDir: dir, Tick: time.Second, Scheduler: config.SchedulerSlurm, Proportion: 1, MinJobNodes: 1,
			Socket: filepath.Join(dir, "rsa.sock"), Nodes: []config.Node{{Name: "rsa01", Capacity: gib}}}
	})
	ctx := context.Background()
	d := r.open()
	defer d.store.Close()
	now := time.Now()
	if _, err := d.store.TakeOver(ctx, "ctl1", now); err != nil {
		t.Fatal(err)
	}
	var cause error
	d.stopRun = func(err error) { cause = err }
	j := passJob(0, gib/2, now)
	if err := d.store.Create(ctx, j, nil); err != nil {
		t.Fatal(err)
	}

	// The standby takes the state over.
	other, err := store.Open(ctx, r.cfg.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.TakeOver(ctx, "ctl2", now); err != nil {
		t.Fatal(err)
	}

	r.run(d, now) // the scheduling pass would assign the job
	if !errors.Is(cause, store.ErrFenced) {
		t.Fatalf("the fenced daemon was stopped with %v, want store.ErrFenced", cause)
	}
	got, err := other.Get(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.RSA != lifecycle.Initial || got.Version != j.Version {
		t.Errorf("the fenced daemon moved job %d to %s (version %d); want it left INITIAL for the new active one", j.ID, got.RSA, got.Version)
	}
}
