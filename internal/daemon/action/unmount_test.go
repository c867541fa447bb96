package action_test

import (
	"slices"
	"testing"

	"github.com/rsa-hpc/rsa/internal/access"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// The switch to output unbinds the input without force: a mount in use
// stays, and says so.
func TestUnmount(t *testing.T) {
	unbound := func(t *testing.T, r *rig) {
		want := []accessCall{{method: "Unbind", nodes: r.j.Hosts}}
		if got := r.acc.made(); !slices.EqualFunc(got, want, sameCall) {
			t.Errorf("the node access was asked %+v; want %+v (no detach)", got, want)
		}
	}
	runCases(t, lifecycle.Unmount, []actionCase{
		{name: "unmounted", built: true, want: ev(lifecycle.EvUnmounted), check: unbound},
		{name: "busy", built: true, setup: func(r *rig) { r.acc.failNext("Unbind", access.ErrBusy) },
			want: ev(lifecycle.EvUnmountBusy), reason: []string{access.ErrBusy.Error()}, check: unbound},
		{name: "a compute node out of reach", built: true, setup: func(r *rig) { r.acc.failNext("Unbind", unreachable()) },
			want: ev(lifecycle.EvUnmountBusy), reason: []string{"compute node n1 not reachable"}, check: unbound},
	})
}
