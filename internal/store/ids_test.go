package store

import (
	"context"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// After ReserveIDs(n), new jobs get ids above n, in a fresh store and in
// one with jobs; a reservation below what was given changes nothing; it
// holds across a reopen.
func TestReserveIDs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	create := func(s *Store) int64 {
		t.Helper()
		now := time.Now()
		j := &job.Job{UID: 1000, GID: 1000, User: "u", State: lifecycle.OnDeck, RSA: lifecycle.Initial, CreatedAt: now, UpdatedAt: now}
		if err := s.Create(ctx, j, nil); err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	if err := s.ReserveIDs(ctx, 12); err != nil {
		t.Fatal(err)
	}
	if id := create(s); id != 13 {
		t.Fatalf("the first job after reserving 12 in a fresh store is %d, want 13", id)
	}
	if err := s.ReserveIDs(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if id := create(s); id != 14 {
		t.Fatalf("after reserving below what was given: %d, want 14", id)
	}
	if err := s.ReserveIDs(ctx, 40); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(ctx, dir); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if id := create(s); id != 41 {
		t.Fatalf("after reserving 40 and a reopen: %d, want 41", id)
	}
}
