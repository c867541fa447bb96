package daemon

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/daemon/service"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/engine/memengine"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/store"
)

// upNodes is an engine whose nodes all answer: a node that answers pays
// its own debts and cannot be settled.
type upNodes struct{ *memengine.Engine }

func (upNodes) Placeable(string) bool       { return true }
func (upNodes) Unplaceable() string         { return "" }
func (upNodes) Up(string) bool              { return true }
func (upNodes) Incarnation(string) string   { return "1" }
func (upNodes) ComputeNodes() []string      { return nil }
func (upNodes) Health() []engine.NodeHealth { return nil }

// Settling a node forgets its debts alone, counts their RAM free, and
// leaves in each job's log who settled it and why; only root may, with a
// reason, a node owed something that does not answer.
func TestSettle(t *testing.T) {
	d := startDaemon(t, 2, 1<<30, time.Second)
	ctx := context.Background()
	a := slurmJobOf(t, d, "11", lifecycle.Finished, lifecycle.Released, 1<<20)
	b := slurmJobOf(t, d, "12", lifecycle.Finished, lifecycle.Released, 1<<20)
	since := time.Now().Add(-48 * time.Hour)
	for _, db := range []store.Debt{
		{Node: "rsa02", Job: a.ID, Build: 1, Bytes: 64 << 20, Since: since, Why: "silent"},
		{Node: "rsa02", Job: b.ID, Build: 1, Bytes: 32 << 20, Since: since, Why: "silent"},
		{Node: "rsa01", Job: b.ID, Build: 1, Bytes: 16 << 20, Since: since, Why: "silent"},
	} {
		if err := d.store.AddDebt(ctx, db); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.loadDebts(ctx); err != nil {
		t.Fatal(err)
	}
	root := api.Peer{UID: 0}
	for _, c := range []struct {
		name   string
		peer   api.Peer
		node   string
		reason string
		status int
		want   string
	}{
		{"a user", api.Peer{UID: 1000}, "rsa02", "gone", 403, "only root"},
		{"no reason", root, "rsa02", "", 400, "say why"},
		{"a reason on two lines", root, "rsa02", "gone\nrm -rf", 400, "reason"},
		{"a node owed nothing", root, "rsa03", "gone", 404, "nothing is owed"},
	} {
		_, err := d.api.Settle(ctx, c.peer, c.node, api.SettleRequest{Reason: c.reason})
		if api.StatusOf(err) != c.status || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want status %d saying %q", c.name, err, c.status, c.want)
		}
	}
	if n := len(d.owed()); n != 3 {
		t.Fatalf("a refused settle changed the debts: %d left, want 3", n)
	}

	rep, err := d.api.Settle(ctx, root, "rsa02", api.SettleRequest{Reason: "mainboard dead, node replaced"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Settled != 2 || rep.Bytes != 96<<20 || len(rep.Jobs) != 2 {
		t.Fatalf("settle reported %+v, want 2 debts of 96M", rep)
	}
	left := d.owed()
	if len(left) != 1 || left[0].Node != "rsa01" {
		t.Fatalf("after settling rsa02 the debts are %+v, want rsa01's alone", left)
	}
	if st, _ := d.store.Debts(ctx); len(st) != 1 {
		t.Fatalf("the store keeps %d debts, want 1", len(st))
	}
	for _, id := range []int64{a.ID, b.ID} {
		evs, err := d.store.Events(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(evs[len(evs)-1].Message, "settled by root: mainboard dead, node replaced") {
			t.Errorf("job %d's log does not record the settling: %+v", id, evs[len(evs)-1])
		}
	}

	// A node that answers pays its own debts.
	deps := d.serviceDeps(nil)
	deps.Engine = upNodes{memengine.New(t.TempDir())}
	if _, err := service.New(deps).Settle(ctx, root, "rsa01", api.SettleRequest{Reason: "gone"}); err == nil || !strings.Contains(err.Error(), "answers") {
		t.Errorf("settling a node that answers: %v", err)
	}
}
