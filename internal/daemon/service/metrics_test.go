package service

import (
	"cmp"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/dashboard"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/metrics"
	"github.com/rsa-hpc/rsa/internal/store"
)

// TestSources: the metrics and the dashboard count the active jobs by
// state, each node's RAM as the jobs hold it and as their RAMDISKs fill
// it, and the debts; the dashboard gives a job's states as its events
// record them, and no job for one that is not there.
func TestSources(t *testing.T) {
	r := newRig(t, nil)
	r.job(lifecycle.OnDeck, lifecycle.Initial)
	r.job(lifecycle.OnDeck, lifecycle.Initial)
	r.job(lifecycle.Finished, lifecycle.Released)
	holding := r.job(lifecycle.Running, lifecycle.InUseIn, func(j *job.Job) {
		j.Ramdisk = engine.DirFor(r.cfg.RamdiskRoot, 4)
		j.Alloc = []job.Part{{Node: "rsa1", Bytes: 3 << 20}, {Node: "rsa2", Bytes: 1 << 20}}
	})
	if holding.ID != 4 {
		t.Fatalf("the holding job is %d, want 4", holding.ID)
	}
	r.build(holding.ID, 4000)
	since := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := r.store.AddDebt(r.ctx, store.Debt{Node: "rsa2", Job: 3, Build: 1, Bytes: 5 << 20, Since: since, Why: "silent"}); err != nil {
		t.Fatal(err)
	}
	if err := r.debts.Load(r.ctx); err != nil {
		t.Fatal(err)
	}
	m := r.svc.Metrics()

	counts, err := m.Jobs(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(counts, func(a, b metrics.JobCount) int { return cmp.Compare(a.JobState, b.JobState) })
	want := []metrics.JobCount{{JobState: "ONDECK", RSAState: "INITIAL", N: 2}, {JobState: "RUNNING", RSAState: "INUSE_IN", N: 1}}
	if !slices.Equal(counts, want) {
		t.Errorf("the metrics count the jobs %+v, want %+v", counts, want)
	}

	nodes, err := m.Nodes(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantNodes := []metrics.NodeUse{
		{Name: "rsa1", Capacity: 1 << 30, Allocated: 3 << 20, Used: 3000},
		{Name: "rsa2", Capacity: 1 << 30, Allocated: 6 << 20, Used: 1000},
	}
	if !slices.Equal(nodes, wantNodes) {
		t.Errorf("the metrics' nodes are %+v, want %+v", nodes, wantNodes)
	}
	dnodes, err := r.svc.Dashboard().Nodes(r.ctx)
	if err != nil || len(dnodes) != 2 || dnodes[0].Allocated != 3<<20 || dnodes[0].Used != 3000 || dnodes[1].Allocated != 6<<20 {
		t.Errorf("the dashboard's nodes are %+v, %v", dnodes, err)
	}
	if v := r.svc.View(holding, ownerPeer); v.Used != 4000 {
		t.Errorf("the holding job's view says %d bytes used, want 4000", v.Used)
	}
	if debts := m.Debts(r.ctx); !slices.Equal(debts, []metrics.Debt{{Node: "rsa2", Bytes: 5 << 20, Since: since}}) {
		t.Errorf("the metrics' debts are %+v", debts)
	}
	if a, c := m.Agents(r.ctx), m.Certificates(r.ctx); a != nil || c != nil {
		t.Errorf("an engine without agents has agents %+v, certificates %+v", a, c)
	}

	if _, err := r.svc.Act(r.ctx, ownerPeer, 1, api.VerbCancel, api.ActOptions{}); err != nil {
		t.Fatal(err)
	}
	evs, err := r.svc.Dashboard().Events(r.ctx, 1)
	if err != nil || len(evs) == 0 {
		t.Fatalf("the dashboard's events of a cancelled job: %+v, %v", evs, err)
	}
	if last := evs[len(evs)-1]; last.JobState != string(lifecycle.Finished) {
		t.Errorf("the dashboard's last event is %+v", last)
	}
	if evs, err := r.svc.Dashboard().Events(r.ctx, 2); err != nil || len(evs) != 0 {
		t.Errorf("the dashboard's events of a job without any: %+v, %v", evs, err)
	}
	if _, err := r.svc.Dashboard().Events(r.ctx, 42); !errors.Is(err, dashboard.ErrNotFound) {
		t.Errorf("the dashboard's events of no job: %v", err)
	}
}
