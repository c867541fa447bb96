package daemon

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/slurm/adapter"
)

// TestSlurmPort: the daemon keeps the contract of the Slurm adapter's port
// (adapter.Jobs) where the adapter's own tests fake it: no job is nil, an
// event the job's state does not take is ErrIgnored, and the pool counts
// each node's holdings and whether it takes new parts.
func TestSlurmPort(t *testing.T) {
	const gib = 1 << 30
	ctx := context.Background()
	d := startDaemon(t, 2, 4*gib, time.Second)
	runLoop(t, d)
	p := slurmPort{d}

	ended := slurmJobOf(t, d, "7", lifecycle.Finished, lifecycle.Released, gib)
	if j, err := p.Latest(ctx, "7"); err != nil || j == nil || j.ID != ended.ID {
		t.Errorf("Latest of Slurm job 7: %v, %v; want RSA job %d", j, err, ended.ID)
	}
	if j, err := p.Latest(ctx, "8"); err != nil || j != nil {
		t.Errorf("Latest of a Slurm job RSA has no job for: %v, %v; want none", j, err)
	}
	if _, err := p.Call(ctx, ended.ID, lifecycle.Event{Kind: lifecycle.EvStarted, At: time.Now()}, nil); !errors.Is(err, adapter.ErrIgnored) {
		t.Errorf("a start of a done job: %v, want ErrIgnored", err)
	}

	holder := slurmJobOf(t, d, "9", lifecycle.Running, lifecycle.InUseIn, gib)
	holder.Alloc = []job.Part{{Node: "rsa01", Bytes: gib}}
	if err := d.store.Commit(ctx, holder, nil); err != nil {
		t.Fatal(err)
	}
	d.changed()
	if _, err := d.api.Drain(ctx, api.Peer{}, "rsa02", api.DrainRequest{Drain: true, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	got := p.Pool(func(j *job.Job) bool { return j.ID == holder.ID })
	want := []adapter.PoolNode{
		{Name: "rsa01", Capacity: 4 * gib, Open: true, Held: gib, Uncounted: gib},
		{Name: "rsa02", Capacity: 4 * gib, Open: false},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Pool = %+v, want %+v", got, want)
	}
	if n := p.Pool(func(*job.Job) bool { return false }); n[0].Held != gib || n[0].Uncounted != 0 {
		t.Errorf("Pool counting every job Slurm's: rsa01 %+v, want %d held, none uncounted", n[0], gib)
	}
}
