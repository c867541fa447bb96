package store

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

func TestStoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	j := &job.Job{Spec: job.Spec{SchedulerID: "slurm-7", Input: "/home/u/in", Delay: time.Minute}, UID: 1000, GID: 1000, User: "u", Scheduler: "slurm",
		State: lifecycle.OnDeck, RSA: lifecycle.Initial, CreatedAt: now, UpdatedAt: now}
	if err := s.Create(ctx, j, []job.Event{{At: now, Kind: "submitted", JobState: j.State, RSAState: j.RSA, Message: "submitted"}}); err != nil {
		t.Fatal(err)
	}
	stale := *j
	j.RSA = lifecycle.Assigned
	j.Alloc = []job.Part{{Node: "local", Bytes: 1 << 30}}
	if err := s.Commit(ctx, j, []job.Event{{At: now, Kind: "assigned", JobState: j.State, RSAState: j.RSA, Message: "x"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, &stale, nil); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale commit: %v, want ErrConflict", err)
	}
	s.Close()

	// Reopen: the state survives and the schema is not migrated twice.
	s, err = Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, _ := s.SchemaVersion(ctx); v != len(migrations) {
		t.Fatalf("schema version %d", v)
	}
	got, err := s.Get(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.RSA != lifecycle.Assigned || got.Version != 2 || got.Capacity() != 1<<30 || got.Spec.Delay != time.Minute {
		t.Fatalf("got %+v", got)
	}
	if byName, err := s.FindByName(ctx, "slurm-7"); err != nil || byName.ID != j.ID {
		t.Fatalf("FindByName: %v %v", byName, err)
	}
	// A job made by a user (no scheduler) never answers to a scheduler id,
	// and cannot even be stored under one.
	squat := &job.Job{Spec: job.Spec{SchedulerID: "slurm-8", Input: "/home/u/in"}, UID: 1001, GID: 1001, User: "v",
		State: lifecycle.OnDeck, RSA: lifecycle.Initial, CreatedAt: now, UpdatedAt: now}
	if err := s.Create(ctx, squat, nil); err == nil {
		t.Fatal("a job named without a scheduler was stored")
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO jobs(name, uid, gid, user, job_state, rsa_state, record, done, created_at, updated_at, version)
		VALUES('slurm-7', 1001, 1001, 'v', 'FINISHED', 'RELEASED', '{"id":99}', 1, 0, 0, 1)`); err != nil {
		t.Fatal(err)
	}
	if byName, err := s.FindByName(ctx, "slurm-7"); err != nil || byName.ID != j.ID {
		t.Fatalf("FindByName found a user's job under a scheduler id: %v %v", byName, err)
	}
	evs, err := s.Events(ctx, j.ID)
	if err != nil || len(evs) != 2 || evs[1].RSAState != lifecycle.Assigned {
		t.Fatalf("events %v %v", evs, err)
	}
	if _, err := s.Get(ctx, 999); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing job: %v", err)
	}
	active, _ := s.List(ctx, false, 0)
	if len(active) != 1 {
		t.Fatalf("active = %d", len(active))
	}
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("state dir mode %v", st.Mode())
	}
	var mode string
	if err := s.db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode %q %v", mode, err)
	}
	var sync int
	if err := s.db.QueryRow("PRAGMA synchronous").Scan(&sync); err != nil || sync != 2 {
		t.Fatalf("synchronous %d %v (want FULL=2)", sync, err)
	}
}

func TestDrains(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Unix(1700000000, 5)
	for _, d := range []Drain{{"rsa1", "memory test", "root", at}, {"rsa2", "x", "root", at}, {"rsa1", "new reason", "admin", at.Add(time.Hour)}} {
		if err := s.SetDrain(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.ClearDrain(ctx, "rsa2"); err != nil {
		t.Fatal(err)
	}
	if err := s.ClearDrain(ctx, "never-drained"); err != nil {
		t.Fatal(err)
	}
	got, err := s.Drains(ctx)
	want := map[string]Drain{"rsa1": {"rsa1", "new reason", "admin", at.Add(time.Hour)}}
	if err != nil || len(got) != 1 || got["rsa1"].Reason != want["rsa1"].Reason || got["rsa1"].By != "admin" || !got["rsa1"].Since.Equal(want["rsa1"].Since) {
		t.Fatalf("drains %+v %v, want %+v", got, err, want)
	}
}

// A debt is kept once per node, job and build, until it is paid.
func TestDebts(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Unix(1700000000, 5)
	for _, d := range []Debt{
		{Node: "rsa2", Job: 7, Build: 1, Bytes: 100, Since: at, Why: "down"},
		{Node: "rsa3", Job: 7, Build: 1, Bytes: 100, Since: at.Add(time.Second), Why: "down"},
		{Node: "rsa2", Job: 7, Build: 0, Bytes: 999, Since: at, Why: "again"}, // build 0 is the first too
		{Node: "rsa2", Job: 7, Build: 2, Bytes: 50, Since: at.Add(2 * time.Second), Why: "rebuilt"},
	} {
		if err := s.AddDebt(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	for _, pay := range []struct {
		node  string
		build int
	}{{"rsa3", 1}, {"rsa9", 1}, {"rsa2", 3}} {
		if err := s.PayDebt(ctx, pay.node, 7, pay.build); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Debts(ctx)
	if err != nil || len(got) != 2 || got[0].Node != "rsa2" || got[0].Build != 1 || got[0].Bytes != 100 || got[0].Why != "down" || !got[0].Since.Equal(at) ||
		got[1].Build != 2 || got[1].Bytes != 50 {
		t.Fatalf("debts %+v %v, want rsa2's first of build 1 and its build 2's", got, err)
	}
}

// An incarnation recorded again replaces the one before.
func TestIncarnations(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, r := range [][2]string{{"rsa1", "a/1"}, {"rsa2", "b/1"}, {"rsa1", "a/2"}} {
		if err := s.SetIncarnation(ctx, r[0], r[1], time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Incarnations(ctx)
	if err != nil || len(got) != 2 || got["rsa1"] != "a/2" || got["rsa2"] != "b/1" {
		t.Fatalf("incarnations %v %v, want rsa1 a/2 and rsa2 b/1", got, err)
	}
}

// Purge removes the ended jobs older than the cut, with their events, and
// nothing else; a purged id is never given again.
func TestPurge(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	old, recent := time.Now().Add(-100*24*time.Hour), time.Now()
	mk := func(at time.Time, state lifecycle.JobState, rsa lifecycle.RSAState) *job.Job {
		j := &job.Job{UID: 1000, GID: 1000, User: "u", State: lifecycle.OnDeck, RSA: lifecycle.Initial, CreatedAt: at, UpdatedAt: at}
		if err := s.Create(ctx, j, []job.Event{{At: at, Kind: "submit", Message: "x"}}); err != nil {
			t.Fatal(err)
		}
		j.State, j.RSA = state, rsa
		if err := s.Commit(ctx, j, []job.Event{{At: at, Kind: "finished", Message: "y"}}); err != nil {
			t.Fatal(err)
		}
		return j
	}
	oldDone := mk(old, lifecycle.Finished, lifecycle.Released)
	oldLost := mk(old, lifecycle.Finished, lifecycle.OutputLost)
	oldActive := mk(old, lifecycle.Finished, lifecycle.StageOutFailed) // waits for an admin: kept
	newDone := mk(recent, lifecycle.Finished, lifecycle.Released)
	gone, err := s.Purge(ctx, time.Now().Add(-90*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, p := range gone {
		ids = append(ids, p.ID)
		if !p.CreatedAt.Equal(old) {
			t.Errorf("purged job %d created %v, want %v", p.ID, p.CreatedAt, old)
		}
	}
	if !slices.Equal(ids, []int64{oldDone.ID, oldLost.ID}) {
		t.Errorf("purged %v, want %v", ids, []int64{oldDone.ID, oldLost.ID})
	}
	for _, j := range []*job.Job{oldDone, oldLost} {
		if _, err := s.Get(ctx, j.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("job %d still there: %v", j.ID, err)
		}
		if evs, err := s.Events(ctx, j.ID); err != nil || len(evs) != 0 {
			t.Errorf("job %d's events still there: %v %v", j.ID, evs, err)
		}
	}
	for _, j := range []*job.Job{oldActive, newDone} {
		if _, err := s.Get(ctx, j.ID); err != nil {
			t.Errorf("job %d purged: %v", j.ID, err)
		}
	}
	next := mk(recent, lifecycle.OnDeck, lifecycle.Initial)
	if next.ID <= newDone.ID {
		t.Errorf("a new job got id %d, not above the purged ones", next.ID)
	}
}

// The copy of the active jobs answers as the database would: a caller's
// changes to what it got do not reach it, a failed commit leaves it as it
// was, a done job leaves it (and is still found in the database), and a
// reopened store has it again.
func TestActiveCopy(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	mk := func() *job.Job {
		j := &job.Job{Spec: job.Spec{Input: "/home/u/in"}, UID: 1000, GID: 1000, User: "u",
			State: lifecycle.OnDeck, RSA: lifecycle.Initial, CreatedAt: now, UpdatedAt: now}
		if err := s.Create(ctx, j, nil); err != nil {
			t.Fatal(err)
		}
		return j
	}
	a, b := mk(), mk()

	got, _ := s.Get(ctx, a.ID)
	got.Alloc = append(got.Alloc, job.Part{Node: "n", Bytes: 1})
	got.RSA = lifecycle.Assigned
	if again, _ := s.Get(ctx, a.ID); again.RSA != lifecycle.Initial || len(again.Alloc) != 0 {
		t.Fatalf("a caller's change reached the copy: %+v", again)
	}

	stale := *a
	a.RSA, a.Alloc = lifecycle.Assigned, []job.Part{{Node: "n", Bytes: 1 << 20}}
	if err := s.Commit(ctx, a, nil); err != nil {
		t.Fatal(err)
	}
	a.Alloc[0].Bytes = 7 // the caller's slice, after the commit
	if err := s.Commit(ctx, &stale, nil); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale commit: %v", err)
	}
	if got, _ := s.Get(ctx, a.ID); got.RSA != lifecycle.Assigned || got.Alloc[0].Bytes != 1<<20 || got.Version != 2 {
		t.Fatalf("after a commit and a refused one: %+v", got)
	}

	b.State, b.RSA = lifecycle.Finished, lifecycle.Released
	if err := s.Commit(ctx, b, nil); err != nil {
		t.Fatal(err)
	}
	if active, _ := s.List(ctx, false, 0); len(active) != 1 || active[0].ID != a.ID {
		t.Fatalf("active after b ended: %v", active)
	}
	if got, err := s.Get(ctx, b.ID); err != nil || got.RSA != lifecycle.Released {
		t.Fatalf("an ended job from the database: %v %v", got, err)
	}
	s.Close()

	s, err = Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if active, _ := s.List(ctx, false, 0); len(active) != 1 || active[0].ID != a.ID || active[0].Alloc[0].Bytes != 1<<20 {
		t.Fatalf("active after reopening: %v", active)
	}
}
