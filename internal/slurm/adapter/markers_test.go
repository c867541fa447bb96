package adapter

import (
	"context"
	"testing"

	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/slurm"
)

// TestMarkers: the markers are those of the scheduler's jobs not done, and
// a done job's marker stays while a newer run of the same Slurm job (Slurm
// requeued it) lives.
func TestMarkers(t *testing.T) {
	ctx := context.Background()
	a, f := testAdapter(t, "", nil)
	m := slurm.Markers{Dir: t.TempDir()}
	a.markers = &m
	done := slurmJobOf(f, "7", lifecycle.Finished, lifecycle.Released)
	live := slurmJobOf(f, "8", lifecycle.OnDeck, lifecycle.Ready)
	own := f.add(&job.Job{Spec: job.Spec{SchedulerID: "9"}, State: lifecycle.OnDeck, RSA: lifecycle.Ready}) // rsa submit's: no scheduler
	if err := a.SyncMarkers([]*job.Job{done, live, own}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		want bool
	}{{"7", false}, {"8", true}, {"9", false}} {
		if got := m.Has(c.name); got != c.want {
			t.Errorf("after the sync, Slurm job %s marked: %v, want %v", c.name, got, c.want)
		}
	}

	// Slurm requeued job 8: its new run is marked before it is stored,
	// and the old run, done, leaves the marker to it.
	a.Mark("8")
	rerun := slurmJobOf(f, "8", lifecycle.OnDeck, lifecycle.Initial)
	live.State, live.RSA = lifecycle.Finished, lifecycle.Released
	a.Unmark(ctx, "8", live.ID)
	if !m.Has("8") {
		t.Fatal("the done run of Slurm job 8 took the marker of its live rerun")
	}
	rerun.State, rerun.RSA = lifecycle.Finished, lifecycle.Released
	a.Unmark(ctx, "8", rerun.ID)
	if m.Has("8") {
		t.Error("Slurm job 8 is still marked with no run of it live")
	}

	a.markers = nil
	if a.Marking() {
		t.Error("an adapter without markers says it keeps them")
	}
	a.Mark("10") // without a scheduler: nothing, and no panic
	a.Unmark(ctx, "10", 0)
}
