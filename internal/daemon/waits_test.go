package daemon

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// TestTimedWaitsSurviveRestart: the two waits that end with time, a job's
// stage-in time and an unstarted job's expiry, are the lifecycle's guards
// over clocks in the job's record, so a restart of the daemon neither
// restarts nor ends them. The RSA node is full, so the job whose stage-in
// time comes shows it by beginning to wait for capacity: the assignment
// ran.
func TestTimedWaitsSurviveRestart(t *testing.T) {
	const (
		gib    = 1 << 30
		expiry = time.Hour
		lead   = 10 * time.Minute
	)
	r := newRestartRig(t, func(dir string) *config.Config {
		return &config.Config{StateDir: dir, Tick: time.Second, Scheduler: config.SchedulerSlurm, Proportion: 1, MinJobNodes: 1,
			Socket: filepath.Join(dir, "rsa.sock"), Nodes: []config.Node{{Name: "rsa01", Capacity: gib}},
			Limits: config.Limits{UnstartedExpiry: expiry}}
	})
	ctx := context.Background()
	open, handleAll, get := r.open, r.run, r.get
	d := open()
	now := time.Now()
	holder := passJob(0, gib, now)
	holder.State, holder.RSA, holder.StartedAt = lifecycle.Running, lifecycle.InUseIn, now
	holder.Alloc = []job.Part{{Node: "rsa01", Bytes: gib}}
	// Due in a day: its stage-in begins ten minutes before.
	later := passJob(1, 0, now)
	later.Expected = now.Add(24 * time.Hour)
	later.NotBefore = later.Expected.Add(-lead)
	// Submitted with rsa submit, never started by its user.
	submitted := passJob(2, 0, now)
	submitted.Scheduler, submitted.Spec.SchedulerID, submitted.UnstartedExpiry = "", "", expiry
	submitted.NotBefore = now.Add(48 * time.Hour) // keeps it from the full node: nothing but time moves it
	for _, j := range []*job.Job{holder, later, submitted} {
		if err := d.store.Create(ctx, j, nil); err != nil {
			t.Fatal(err)
		}
		// Its first step, as create takes it.
		d.pending = append(d.pending, msg{id: j.ID, ev: lifecycle.Event{Kind: lifecycle.EvTick, At: now}})
	}
	handleAll(d, now)
	if j := get(d, later.ID); j.RSA != lifecycle.Initial || !j.WaitingSince.IsZero() || !strings.Contains(d.board.Wait(j.ID).Why, "stage-in starts at") {
		t.Fatalf("before its stage-in time: %s, waiting for capacity since %v, waiting for %q; want INITIAL, held for its stage-in time",
			j.RSA, j.WaitingSince, d.board.Wait(j.ID).Why)
	}
	handleAll(d, now.Add(expiry/2))
	d.store.Close()

	d = open()
	defer d.store.Close()
	handleAll(d, now.Add(expiry-time.Second))
	if j := get(d, submitted.ID); j.State != lifecycle.OnDeck {
		t.Fatalf("after the restart, before its expiry: the submitted job is %s/%s (%q); want ONDECK", j.State, j.RSA, j.Error)
	}
	handleAll(d, now.Add(expiry+time.Second))
	if j := get(d, submitted.ID); j.State != lifecycle.Finished || j.RSA != lifecycle.Released || !strings.Contains(j.Error, "limits.unstarted_expiry") {
		t.Fatalf("after the restart, past its expiry: the submitted job is %s/%s (%q); want FINISHED/RELEASED, the setting named", j.State, j.RSA, j.Error)
	}
	if j := get(d, later.ID); j.State != lifecycle.OnDeck || !j.WaitingSince.IsZero() {
		t.Fatalf("a job of a scheduler expired, or was assigned before its stage-in time: %s/%s, waiting since %v", j.State, j.RSA, j.WaitingSince)
	}

	// Slurm moves its estimate: the stage-in time moves with it.
	d.handle(ctx, msg{id: later.ID, ev: lifecycle.Event{Kind: lifecycle.EvStageInTime, At: now.Add(2 * expiry), NotBefore: now.Add(2*expiry + lead)}})
	handleAll(d, now.Add(2*expiry))
	if j := get(d, later.ID); !j.NotBefore.Equal(now.Add(2*expiry+lead)) || !j.WaitingSince.IsZero() {
		t.Fatalf("the stage-in time moved: not before %v, waiting since %v; want the new time stored, no assignment yet", j.NotBefore, j.WaitingSince)
	}
	at := now.Add(2*expiry + lead)
	handleAll(d, at)
	if j := get(d, later.ID); j.WaitingSince.IsZero() || j.RSA != lifecycle.Initial {
		t.Fatalf("at its stage-in time: %s, waiting for capacity since %v; want the assignment tried, and waiting for the full node", j.RSA, j.WaitingSince)
	}
}

// TestOlderRecordsTakeTheSitesWaits: a pending job whose record an older
// rsa serve wrote, without its own bounds on its waits, takes the site's
// when the daemon starts; a job with its own keeps them, and a job that
// never had one (a Slurm job with capacity=, which waits in Slurm's
// queue) gets none.
func TestOlderRecordsTakeTheSitesWaits(t *testing.T) {
	const (
		expiry = time.Hour
		wait   = 5 * time.Minute
	)
	r := newRestartRig(t, func(dir string) *config.Config {
		return &config.Config{StateDir: dir, Tick: time.Second, Scheduler: config.SchedulerSlurm, Proportion: 1, MinJobNodes: 1,
			Socket: filepath.Join(dir, "rsa.sock"), Nodes: []config.Node{{Name: "rsa01", Capacity: 1 << 30}},
			Limits: config.Limits{UnstartedExpiry: expiry}, Slurm: config.Slurm{CapacityWait: wait}}
	})
	ctx := context.Background()
	d := r.open()
	now := time.Now()
	submitted := passJob(0, 0, now)
	submitted.Scheduler, submitted.Spec.SchedulerID = "", ""
	slurmJob := passJob(1, 0, now)
	sized := passJob(2, 1<<30, now)
	own := passJob(3, 0, now)
	own.CapacityWait = time.Minute
	running := passJob(4, 0, now)
	running.Scheduler, running.Spec.SchedulerID, running.State, running.StartedAt = "", "", lifecycle.Running, now
	for _, j := range []*job.Job{submitted, slurmJob, sized, own, running} {
		if err := d.store.Create(ctx, j, nil); err != nil {
			t.Fatal(err)
		}
	}
	d.store.Close()
	// The new rsa serve starts over the older one's records.
	d = r.open()
	defer d.store.Close()
	for _, m := range d.pending {
		if m.ev.Kind == lifecycle.EvResume {
			d.handle(ctx, m)
		}
	}
	for _, tc := range []struct {
		name   string
		j      *job.Job
		expiry time.Duration
		wait   time.Duration
	}{
		{"rsa submit", submitted, expiry, 0},
		{"Slurm, no capacity=", slurmJob, 0, wait},
		{"Slurm, capacity=", sized, 0, 0},
		{"Slurm, its own wait", own, 0, time.Minute},
		{"rsa submit, running", running, 0, 0},
	} {
		if got := r.get(d, tc.j.ID); got.UnstartedExpiry != tc.expiry || got.CapacityWait != tc.wait {
			t.Errorf("%s: unstarted expiry %v, capacity wait %v; want %v, %v", tc.name, got.UnstartedExpiry, got.CapacityWait, tc.expiry, tc.wait)
		}
	}
}
