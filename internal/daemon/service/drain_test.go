package service

import (
	"errors"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/refuse"
	"github.com/rsa-hpc/rsa/internal/store"
)

// TestDrainRefusals: only root drains, a node of the config, saying why in
// one line; a refusal drains nothing.
func TestDrainRefusals(t *testing.T) {
	r := newRig(t, nil)
	for _, tc := range []struct {
		name   string
		peer   api.Peer
		node   string
		drain  bool
		reason string
		want   error
	}{
		{"the owner of a job", ownerPeer, "rsa1", true, "memory errors", refuse.ErrForbidden},
		{"a stranger returns a node", strangerPeer, "rsa1", false, "", refuse.ErrForbidden},
		{"root from another host", api.Peer{UID: 0, Remote: true}, "rsa1", true, "memory errors", refuse.ErrForbidden},
		{"an unknown node", rootPeer, "rsa9", true, "memory errors", refuse.ErrNotFound},
		{"an unknown node returned", rootPeer, "rsa9", false, "", refuse.ErrNotFound},
		{"no reason", rootPeer, "rsa1", true, "", refuse.ErrInvalid},
		{"a reason on two lines", rootPeer, "rsa1", true, "memory errors\nrm -rf /", refuse.ErrInvalid},
	} {
		if _, err := r.svc.Drain(r.ctx, tc.peer, tc.node, api.DrainRequest{Drain: tc.drain, Reason: tc.reason}); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if d := r.svc.Drained(); len(d) != 0 {
		t.Errorf("refused drains drained %v", d)
	}
	if d, err := r.store.Drains(r.ctx); err != nil || len(d) != 0 {
		t.Errorf("refused drains stored %v, %v", d, err)
	}
}

// TestDrain: root drains a node and returns it to service; the drain is in
// the store (so a restart keeps it), in Drained, in the node's view and in
// its metrics; a returned node is in none of them.
func TestDrain(t *testing.T) {
	r := newRig(t, nil)
	before := time.Now()
	v, err := r.svc.Drain(r.ctx, rootPeer, "rsa2", api.DrainRequest{Drain: true, Reason: "memory errors"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Name != "rsa2" || v.Drain == nil || v.Drain.Reason != "memory errors" || v.Drain.By != "root" {
		t.Errorf("the drained node's view is %+v", v)
	}
	dr, ok := r.svc.Drained()["rsa2"]
	if !ok || dr.Reason != "memory errors" || dr.By != "root" || dr.Since.Before(before) || len(r.svc.Drained()) != 1 {
		t.Errorf("Drained = %v, want rsa2 alone, drained by root", r.svc.Drained())
	}
	stored, err := r.store.Drains(r.ctx)
	if err != nil || len(stored) != 1 || stored["rsa2"].Reason != "memory errors" || stored["rsa2"].By != "root" {
		t.Errorf("the store keeps the drains %v, %v; want rsa2's", stored, err)
	}
	drained := func() map[string]bool {
		t.Helper()
		nodes, err := r.svc.Nodes(r.ctx, strangerPeer)
		if err != nil {
			t.Fatal(err)
		}
		use, err := r.svc.Metrics().Nodes(r.ctx)
		if err != nil || len(use) != len(nodes) {
			t.Fatalf("metrics of %d nodes, %v; want %d", len(use), err, len(nodes))
		}
		out := map[string]bool{}
		for i, n := range nodes {
			out[n.Name] = n.Drain != nil
			if use[i].Name != n.Name || use[i].Drained != (n.Drain != nil) {
				t.Errorf("the metrics say %+v of node %+v", use[i], n)
			}
		}
		return out
	}
	if got := drained(); !got["rsa2"] || got["rsa1"] {
		t.Errorf("rsa nodes shows drained %v, want rsa2 alone", got)
	}

	// A second drain replaces the reason.
	if _, err := r.svc.Drain(r.ctx, rootPeer, "rsa2", api.DrainRequest{Drain: true, Reason: "replacing DIMMs"}); err != nil {
		t.Fatal(err)
	}
	if got := r.svc.Drained()["rsa2"].Reason; got != "replacing DIMMs" {
		t.Errorf("drained again, the reason is %q", got)
	}

	v, err = r.svc.Drain(r.ctx, rootPeer, "rsa2", api.DrainRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Drain != nil {
		t.Errorf("the returned node's view is %+v", v)
	}
	if d := r.svc.Drained(); len(d) != 0 {
		t.Errorf("Drained = %v after the return", d)
	}
	if stored, err := r.store.Drains(r.ctx); err != nil || len(stored) != 0 {
		t.Errorf("the store keeps %v, %v after the return", stored, err)
	}
	if got := drained(); got["rsa2"] {
		t.Errorf("rsa nodes shows rsa2 drained after its return")
	}
	// Returning a node that is not drained is no error.
	if _, err := r.svc.Drain(r.ctx, rootPeer, "rsa1", api.DrainRequest{}); err != nil {
		t.Errorf("returning a node in service: %v", err)
	}
}

// TestDrainedCopies: a Service starts with the drains it is given, and
// neither that map nor what Drained returns is the Service's own.
func TestDrainedCopies(t *testing.T) {
	r := newRig(t, nil)
	given := map[string]store.Drain{"rsa1": {Node: "rsa1", Reason: "old", By: "root", Since: time.Now()}}
	deps := r.deps()
	deps.Drains = given
	s := New(deps)
	delete(given, "rsa1")
	got := s.Drained()
	if got["rsa1"].Reason != "old" {
		t.Fatalf("Drained = %v, want the drain given", got)
	}
	delete(got, "rsa1")
	got["rsa2"] = store.Drain{Node: "rsa2"}
	if again := s.Drained(); len(again) != 1 || again["rsa1"].Reason != "old" {
		t.Errorf("changing what Drained returned changed the service's drains: %v", again)
	}
}
