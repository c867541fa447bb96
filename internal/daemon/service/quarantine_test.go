package service

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/refuse"
)

// build makes a RAMDISK of job id in the rig's engine, holding a file of
// size bytes unless size is negative.
func (r *rig) build(id int64, size int) string {
	r.t.Helper()
	rd := engine.Ramdisk{Job: id, Dir: engine.DirFor(r.cfg.RamdiskRoot, id), UID: nobody, GID: nobody,
		Parts: []job.Part{{Node: "rsa1", Bytes: 1 << 20}}}
	if err := r.eng.Construct(r.ctx, rd); err != nil {
		r.t.Fatal(err)
	}
	if size >= 0 {
		if err := os.WriteFile(filepath.Join(rd.Dir, "out"), make([]byte, size), 0o600); err != nil {
			r.t.Fatal(err)
		}
	}
	return rd.Dir
}

// TestGCQuarantine: gc, root's alone, leaves the RAMDISK of a job that
// holds nodes, destroys one no record knows of that holds nothing, and
// quarantines one that holds data, reserving both ids. Quarantined is a
// copy: changing what it or gc returned changes nothing. root discards a
// quarantined RAMDISK, and nothing else.
func TestGCQuarantine(t *testing.T) {
	r := newRig(t, nil)
	live := r.job(lifecycle.Running, lifecycle.InUseIn)
	liveDir := r.build(live.ID, 10)
	const kept, empty = 7, 8
	keptDir := r.build(kept, 100)
	emptyDir := r.build(empty, -1)

	if _, err := r.svc.GC(r.ctx, ownerPeer, api.GCRequest{}); !errors.Is(err, refuse.ErrForbidden) {
		t.Fatalf("gc by a user: %v, want forbidden", err)
	}
	rep, err := r.svc.GC(r.ctx, rootPeer, api.GCRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := []api.QuarantinedView{{Job: kept, Dir: keptDir, Used: 100, Files: 1}}
	if !slices.Equal(rep.Removed, []string{emptyDir}) || !slices.Equal(rep.Quarantined, want) {
		t.Fatalf("gc removed %v and quarantined %+v; want %s removed, %+v quarantined", rep.Removed, rep.Quarantined, emptyDir, want)
	}
	if !slices.Equal(r.core.evicted, []int64{empty}) {
		t.Errorf("evicted %v, want job %d's RAMDISK alone", r.core.evicted, empty)
	}
	for _, dir := range []string{liveDir, keptDir} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("gc removed %s: %v", dir, err)
		}
	}
	if j := r.job(lifecycle.OnDeck, lifecycle.Initial); j.ID <= empty {
		t.Errorf("a new job got id %d, which a RAMDISK without a record has", j.ID)
	}

	// Whatever a caller does to what it was given stays its own.
	rep.Quarantined[0].Dir = "/changed"
	q, err := r.svc.Quarantined(r.ctx, strangerPeer)
	if err != nil || !slices.Equal(q, want) {
		t.Fatalf("Quarantined = %+v, %v; want %+v", q, err, want)
	}
	q[0].Dir, q[0].Used = "/changed", 0
	if again, _ := r.svc.Quarantined(r.ctx, strangerPeer); !slices.Equal(again, want) {
		t.Errorf("changing what Quarantined returned changed the service's: %+v", again)
	}
	if n := r.svc.Metrics().Quarantined(r.ctx); n != 1 {
		t.Errorf("the metrics count %d quarantined RAMDISKs, want 1", n)
	}

	for _, tc := range []struct {
		name string
		peer api.Peer
		id   int64
		want error
	}{
		{"a user", ownerPeer, kept, refuse.ErrForbidden},
		{"a live job's", rootPeer, live.ID, refuse.ErrNotFound},
		{"one gc removed", rootPeer, empty, refuse.ErrNotFound},
	} {
		if _, err := r.svc.GC(r.ctx, tc.peer, api.GCRequest{Discard: tc.id}); !errors.Is(err, tc.want) {
			t.Errorf("discard, %s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := os.Stat(liveDir); err != nil {
		t.Fatalf("a refused discard removed %s: %v", liveDir, err)
	}
	rep, err = r.svc.GC(r.ctx, rootPeer, api.GCRequest{Discard: kept})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Removed, []string{keptDir}) || len(rep.Quarantined) != 0 {
		t.Errorf("the discard removed %v, left %+v quarantined; want %s removed, nothing left", rep.Removed, rep.Quarantined, keptDir)
	}
	if q, _ := r.svc.Quarantined(r.ctx, rootPeer); len(q) != 0 {
		t.Errorf("quarantined after the discard: %+v", q)
	}
	if _, err := os.Stat(keptDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the discarded RAMDISK is still at %s: %v", keptDir, err)
	}
}
