package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// Scale of the store at a busy site: 100,000 ended jobs and 10,000 active
// ones. The benchmarks print what the daemon pays for its scheduling pass
// (all active jobs), for `rsa status --all` (the newest 1,000) and for a
// purge; run them with
//
//	go test -run '^$' -bench . -benchtime 20x ./internal/store/
//
// on a quiet machine. They are not part of make test.

const (
	benchEnded  = 100_000
	benchActive = 10_000
)

// benchStore is a store of a busy site's size.
func benchStore(b *testing.B) *Store { s, _ := fillStore(b, benchEnded, benchActive); return s }

// fillStore fills a store with ended and active jobs in one transaction
// (the daemon commits one job at a time; filling is not what is measured).
func fillStore(b testing.TB, ended, active int) (*Store, string) {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	s, err := Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	old := time.Now().Add(-200 * 24 * time.Hour)
	for i := range ended + active {
		j := &job.Job{Spec: job.Spec{SchedulerID: fmt.Sprint(i + 1), Input: "/home/u/in", Output: "/home/u/out", Delay: time.Minute},
			UID: 1000 + uint32(i%50), GID: 1000, User: fmt.Sprintf("u%d", i%50), Scheduler: "slurm",
			State: lifecycle.Finished, RSA: lifecycle.Released, CreatedAt: old, UpdatedAt: old, Version: 3,
			Alloc: []job.Part{{Node: "rsa1", Bytes: 1 << 30}}}
		done := 1
		if i >= ended {
			j.State, j.RSA, done = lifecycle.Running, lifecycle.InUseIn, 0
		}
		j.ID = int64(i + 1)
		rec, _ := json.Marshal(j)
		if _, err := tx.ExecContext(ctx, `INSERT INTO jobs(id, name, scheduler, uid, gid, user, job_state, rsa_state, record, done, created_at, updated_at, version)
			VALUES(?,?,?,?,?,?,?,?,?,?,?,?,3)`, j.ID, j.Spec.SchedulerID, j.Scheduler, j.UID, j.GID, j.User, j.State, j.RSA, rec, done,
			old.UnixNano(), old.UnixNano()); err != nil {
			b.Fatal(err)
		}
		for k := range 6 { // a job's few transitions
			if _, err := tx.ExecContext(ctx, `INSERT INTO events(job_id, at, kind, job_state, rsa_state, message) VALUES(?,?,?,?,?,?)`,
				j.ID, old.UnixNano()+int64(k), "tick", j.State, j.RSA, "rsa-state X -> Y: something happened"); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	if err := s.load(ctx); err != nil { // what Open does at start
		b.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "rsa.db")); err == nil {
		b.Logf("store: %d ended and %d active jobs, 6 events each: %.1f MiB", ended, active, float64(fi.Size())/(1<<20))
	}
	return s, dir
}

// BenchmarkListActive is the read behind each scheduling pass.
func BenchmarkListActive(b *testing.B) {
	s := benchStore(b)
	b.ResetTimer()
	for b.Loop() {
		js, err := s.List(context.Background(), false, 0)
		if err != nil || len(js) != benchActive {
			b.Fatalf("%d jobs, %v", len(js), err)
		}
	}
}

// BenchmarkListRecent is the read behind `rsa status --all`.
func BenchmarkListRecent(b *testing.B) {
	s := benchStore(b)
	b.ResetTimer()
	for b.Loop() {
		js, err := s.List(context.Background(), true, 1000)
		if err != nil || len(js) != 1000 {
			b.Fatalf("%d jobs, %v", len(js), err)
		}
	}
}

// BenchmarkPurge removes 100,000 ended jobs and their events: the first
// purge after history_retention is turned on at a site with that history.
func BenchmarkPurge(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		s := benchStore(b)
		b.StartTimer()
		gone, err := s.Purge(context.Background(), time.Now().Add(-90*24*time.Hour))
		if err != nil || len(gone) != benchEnded {
			b.Fatalf("purged %d, %v", len(gone), err)
		}
	}
}

// Purge works in batches and still removes every ended job and its
// events, and nothing else.
func TestPurgeInBatches(t *testing.T) {
	const ended, active = 2*purgeBatch + 1, 3
	s, _ := fillStore(t, ended, active)
	gone, err := s.Purge(context.Background(), time.Now().Add(-90*24*time.Hour))
	if err != nil || len(gone) != ended {
		t.Fatalf("purged %d of %d: %v", len(gone), ended, err)
	}
	left, err := s.List(context.Background(), true, 10*ended)
	if err != nil || len(left) != active {
		t.Fatalf("%d jobs left, want the %d active: %v", len(left), active, err)
	}
	var events int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM events`).Scan(&events); err != nil || events != 6*active {
		t.Errorf("%d events left, want %d: %v", events, 6*active, err)
	}
}

// BenchmarkOpen is the store's part of a daemon's start: the migrations
// check and reading the 10,000 active jobs into memory.
func BenchmarkOpen(b *testing.B) {
	s, dir := fillStore(b, benchEnded, benchActive)
	s.Close()
	for b.Loop() {
		s, err := Open(context.Background(), dir)
		if err != nil {
			b.Fatal(err)
		}
		if js, _ := s.List(context.Background(), false, 0); len(js) != benchActive {
			b.Fatalf("%d active jobs", len(js))
		}
		s.Close()
	}
}
