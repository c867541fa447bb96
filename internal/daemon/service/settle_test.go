package service

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/engine/memengine"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/refuse"
	"github.com/rsa-hpc/rsa/internal/store"
)

// nodesEngine is a memengine whose RSA nodes in up answer.
type nodesEngine struct {
	*memengine.Engine
	up []string
}

func (e nodesEngine) Placeable(n string) bool     { return e.Up(n) }
func (e nodesEngine) Unplaceable() string         { return "down" }
func (e nodesEngine) Up(n string) bool            { return slices.Contains(e.up, n) }
func (e nodesEngine) Incarnation(string) string   { return "1" }
func (e nodesEngine) ComputeNodes() []string      { return nil }
func (e nodesEngine) Health() []engine.NodeHealth { return nil }

// TestSettle: root settles the debts owed on a node that does not answer,
// with a one-line reason: they leave the store and the ledger, their RAM
// counts free, and each job owed for keeps who settled it and why in its
// log; the other nodes' debts stay. Every refusal leaves the debts alone.
func TestSettle(t *testing.T) {
	r := newRig(t, nil)
	a := r.job(lifecycle.Finished, lifecycle.Released)
	b := r.job(lifecycle.Finished, lifecycle.Released)
	const purged = 99 // a job whose record is gone with its history
	since := time.Now().Add(-48 * time.Hour)
	for _, db := range []store.Debt{
		{Node: "rsa2", Job: a.ID, Build: 1, Bytes: 64 << 20, Since: since, Why: "silent"},
		{Node: "rsa2", Job: b.ID, Build: 1, Bytes: 32 << 20, Since: since, Why: "silent"},
		{Node: "rsa2", Job: purged, Build: 1, Bytes: 8 << 20, Since: since, Why: "silent"},
		{Node: "rsa1", Job: b.ID, Build: 1, Bytes: 16 << 20, Since: since, Why: "silent"},
	} {
		if err := r.store.AddDebt(r.ctx, db); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.debts.Load(r.ctx); err != nil {
		t.Fatal(err)
	}
	deps := r.deps()
	deps.Engine = nodesEngine{Engine: r.eng, up: []string{"rsa2"}}
	answers := New(deps)
	for _, tc := range []struct {
		name   string
		svc    *Service
		peer   api.Peer
		node   string
		reason string
		want   error
	}{
		{"a user", r.svc, ownerPeer, "rsa2", "gone", refuse.ErrForbidden},
		{"root from another host", r.svc, api.Peer{UID: 0, Remote: true}, "rsa2", "gone", refuse.ErrForbidden},
		{"no reason", r.svc, rootPeer, "rsa2", "", refuse.ErrInvalid},
		{"a reason on two lines", r.svc, rootPeer, "rsa2", "gone\nrm -rf /", refuse.ErrInvalid},
		{"a node owed nothing", r.svc, rootPeer, "rsa3", "gone", refuse.ErrNotFound},
		{"a node that answers", answers, rootPeer, "rsa2", "gone", refuse.ErrNotApplicable},
	} {
		if _, err := tc.svc.Settle(r.ctx, tc.peer, tc.node, api.SettleRequest{Reason: tc.reason}); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if n := len(r.debts.Owed()); n != 4 {
		t.Fatalf("refused settlements changed the debts: %d left, want 4", n)
	}
	owed := func(node string) int64 {
		t.Helper()
		nodes, err := r.svc.Nodes(r.ctx, rootPeer)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			if n.Name == node {
				return n.Owed
			}
		}
		t.Fatalf("no node %s", node)
		return 0
	}
	if got := owed("rsa2"); got != 104<<20 {
		t.Errorf("rsa2 owes %d before the settlement, want %d", got, 104<<20)
	}

	rep, err := r.svc.Settle(r.ctx, rootPeer, "rsa2", api.SettleRequest{Reason: "mainboard dead, node replaced"})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(rep.Jobs)
	if rep.Node != "rsa2" || rep.Settled != 3 || rep.Bytes != 104<<20 || !slices.Equal(rep.Jobs, []int64{a.ID, b.ID, purged}) {
		t.Errorf("the settlement reported %+v", rep)
	}
	if left := r.debts.Owed(); len(left) != 1 || left[0].Node != "rsa1" {
		t.Errorf("the ledger owes %+v after settling rsa2, want rsa1's alone", left)
	}
	if left, err := r.store.Debts(r.ctx); err != nil || len(left) != 1 || left[0].Node != "rsa1" {
		t.Errorf("the store keeps the debts %+v, %v; want rsa1's alone", left, err)
	}
	if got := owed("rsa2"); got != 0 {
		t.Errorf("rsa2 owes %d after the settlement", got)
	}
	for _, j := range []int64{a.ID, b.ID} {
		evs, err := r.store.Events(r.ctx, j)
		if err != nil || len(evs) == 0 {
			t.Fatalf("job %d's events: %v, %v", j, evs, err)
		}
		last := evs[len(evs)-1]
		if last.Kind != "settle" || !strings.Contains(last.Message, "settled by root: mainboard dead, node replaced") {
			t.Errorf("job %d's log does not keep the settlement: %+v", j, last)
		}
	}
}
