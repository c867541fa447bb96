package debt

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/joblog"
	"github.com/rsa-hpc/rsa/internal/store"
)

// The ledger over a real store: what a teardown leaves on silent nodes is
// owed there (with the part's bytes, or none when the RAM is free), kept
// across a new ledger on the same store, and each change is announced.
func TestOweAndLoad(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	logs := joblog.New(dir, log)
	if err := logs.MakeDir(); err != nil {
		t.Fatal(err)
	}
	changes := 0
	l := New(st, nil, logs, log, func() { changes++ })
	j := &job.Job{ID: 7, Build: 2, CreatedAt: time.Now(), Alloc: []job.Part{{Node: "rsa1", Bytes: 1 << 30}, {Node: "rsa2", Bytes: 2 << 30}}}
	if err := l.Owe(ctx, j, &engine.DebtError{Nodes: []string{"rsa2"}, Err: errors.New("no answer")}); err != nil {
		t.Fatal(err)
	}
	owed := l.Owed()
	if len(owed) != 1 || owed[0].Node != "rsa2" || owed[0].Bytes != 2<<30 || owed[0].Job != 7 || owed[0].Build != 2 {
		t.Fatalf("owed %+v; want rsa2's 2G part of job 7, build 2", owed)
	}
	if err := l.Owe(ctx, &job.Job{ID: 8, Build: 1, CreatedAt: time.Now(), Alloc: []job.Part{{Node: "rsa1", Bytes: 1 << 30}}},
		&engine.DebtError{Nodes: []string{"rsa1"}, Err: errors.New("split"), Freed: true}); err != nil {
		t.Fatal(err)
	}
	if changes != 2 {
		t.Errorf("%d changes announced, want one per Owe", changes)
	}
	again := New(st, nil, logs, log, func() {})
	if err := again.Load(ctx); err != nil {
		t.Fatal(err)
	}
	got := again.Owed()
	slices.SortFunc(got, func(a, b store.Debt) int { return int(a.Job - b.Job) })
	if len(got) != 2 || got[1].Node != "rsa1" || got[1].Bytes != 0 {
		t.Fatalf("after a restart owed %+v; want job 8's freed part on rsa1 with no bytes", got)
	}
	if tail := logs.Tail(7, j.CreatedAt, 1<<10); tail == "" {
		t.Error("the job's log says nothing of its debt")
	}
}
