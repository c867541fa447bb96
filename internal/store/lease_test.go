package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// TestTakeOverFences: the Store that took the state over last is the only
// one whose writes commit. Two Stores on one state directory stand for the
// two control hosts of a failover pair: the first keeps running after the
// second took over (a host that lost the lease without noticing).
func TestTakeOverFences(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	first, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if l, err := first.Lease(ctx); err != nil || l.Epoch != 0 {
		t.Fatalf("lease before any take-over: %+v %v", l, err)
	}
	e1, err := first.TakeOver(ctx, "ctl1", time.Now())
	if err != nil || e1 != 1 {
		t.Fatalf("first take-over: epoch %d, %v", e1, err)
	}
	now := time.Now()
	j := &job.Job{Spec: job.Spec{Input: "/home/u/in"}, UID: 1000, GID: 1000, User: "u",
		State: lifecycle.OnDeck, RSA: lifecycle.Initial, CreatedAt: now, UpdatedAt: now}
	if err := first.Create(ctx, j, nil); err != nil {
		t.Fatal(err)
	}

	second, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	e2, err := second.TakeOver(ctx, "ctl2", time.Now())
	if err != nil || e2 != 2 {
		t.Fatalf("second take-over: epoch %d, %v", e2, err)
	}
	if l, err := first.Lease(ctx); err != nil || l.Epoch != 2 || l.Holder != "ctl2" {
		t.Fatalf("lease after the second take-over: %+v %v", l, err)
	}

	// Every kind of write of the first is refused, and leaves no trace.
	stale := *j
	stale.RSA = lifecycle.Assigned
	writes := []struct {
		name string
		do   func() error
	}{
		{"commit", func() error { return first.Commit(ctx, &stale, nil) }},
		{"create", func() error {
			n := *j
			n.ID = 0
			return first.Create(ctx, &n, nil)
		}},
		{"drain", func() error { return first.SetDrain(ctx, Drain{Node: "rsa1", Reason: "x", By: "root", Since: now}) }},
		{"debt", func() error { return first.AddDebt(ctx, Debt{Node: "rsa1", Job: j.ID, Bytes: 1, Since: now, Why: "x"}) }},
		{"incarnation", func() error { return first.SetIncarnation(ctx, "rsa1", "boot-1", now) }},
		{"reserve ids", func() error { return first.ReserveIDs(ctx, 100) }},
		{"purge", func() error { _, err := first.Purge(ctx, now.Add(time.Hour)); return err }},
	}
	for _, w := range writes {
		if err := w.do(); !errors.Is(err, ErrFenced) {
			t.Errorf("%s by the fenced store: %v, want ErrFenced", w.name, err)
		}
	}
	got, err := second.Get(ctx, j.ID)
	if err != nil || got.RSA != lifecycle.Initial || got.Version != 1 {
		t.Fatalf("the job after the fenced commit: %+v %v", got, err)
	}
	if list, _ := second.List(ctx, true, 10); len(list) != 1 {
		t.Fatalf("%d jobs after the fenced create, want 1", len(list))
	}
	if d, _ := second.Drains(ctx); len(d) != 0 {
		t.Fatalf("drains after the fenced write: %v", d)
	}

	// The second writes as the state's writer.
	if err := second.Commit(ctx, got, nil); err != nil {
		t.Fatalf("commit by the store that took over: %v", err)
	}
	// A Store that never took over (no failover) is not fenced.
	plain, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.SetDrain(ctx, Drain{Node: "rsa1", Reason: "x", By: "root", Since: now}); err != nil {
		t.Fatalf("write without a lease: %v", err)
	}
}
