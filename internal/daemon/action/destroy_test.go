package action_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/engine/memengine"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// A teardown unbinds the compute nodes by force, closes the gate and
// destroys the RAMDISK; parts left on silent RSA nodes become debts the
// daemon records, and the event names those nodes unless their RAM is
// free; compute nodes out of reach keep their mounts, owed.
func TestDestroy(t *testing.T) {
	// gone: the RAMDISK is gone and the daemon forgot it, after a forced
	// unbind, the gate closed.
	gone := func(t *testing.T, r *rig) {
		if s, ok := r.mem.State(r.rd()); ok && s.Present {
			t.Errorf("the engine keeps %+v after the teardown", s)
		}
		wantForgot(t, r, true)
		wantUnbound(t, r)
		if got := r.calls(memengine.Revoke, memengine.Destroy); !slices.Equal(got, []string{memengine.Revoke, memengine.Destroy}) {
			t.Errorf("the engine was asked %v; want the gate closed before the RAMDISK is destroyed", got)
		}
	}
	kept := func(t *testing.T, r *rig) { wantForgot(t, r, false) }
	debt := func(nodes []string, freed bool) func(*rig) {
		return func(r *rig) {
			r.eng.destroy = func(engine.Ramdisk) error {
				return &engine.DebtError{Nodes: nodes, Err: errInjected, Freed: freed}
			}
		}
	}
	owes := func(nodes ...string) func(t *testing.T, r *rig) {
		return func(t *testing.T, r *rig) {
			if len(r.port.owed) != 1 || !slices.Equal(r.port.owed[0].Nodes, nodes) {
				t.Errorf("the daemon was told to owe %+v; want one debt on %v", r.port.owed, nodes)
			}
			wantForgot(t, r, true)
		}
	}
	runCases(t, lifecycle.Destroy, []actionCase{
		{name: "destroyed", built: true, want: ev(lifecycle.EvDestroyed), check: gone, notLog: []string{"RAMDISK profile"}},
		{name: "profiled", built: true, setup: func(r *rig) {
			r.eng.profile = func(engine.Ramdisk) ([]engine.OpStat, bool, error) {
				return []engine.OpStat{{Op: "WRITE", Calls: 16384, Mean: 52 * time.Microsecond}, {Op: "CREATE", Calls: 2048, Mean: 213 * time.Microsecond}}, true, nil
			}
		}, want: ev(lifecycle.EvDestroyed), check: gone,
			log: []string{"RAMDISK profile: the file operations its parts served", "  WRITE             16384 calls, mean 0.052 ms\n  CREATE             2048 calls, mean 0.213 ms\n"}},
		{name: "profile not read", built: true, setup: func(r *rig) {
			r.eng.profile = func(engine.Ramdisk) ([]engine.OpStat, bool, error) { return nil, true, errInjected }
		}, want: ev(lifecycle.EvDestroyed), check: gone, log: []string{"RAMDISK profile: not read (" + errInjected.Error()}},
		{name: "gone already (resumed)", want: ev(lifecycle.EvDestroyed), check: func(t *testing.T, r *rig) { wantForgot(t, r, true) }},
		{name: "an RSA node silent", built: true, setup: func(r *rig) { r.mem.Silence("rsa02") },
			want:   lifecycle.Event{Kind: lifecycle.EvDestroyed, Nodes: []string{"rsa02"}},
			reason: []string{"RSA node rsa02 out of reach: its part stays until it answers"},
			check: func(t *testing.T, r *rig) {
				owes("rsa02")(t, r)
				if s, ok := r.mem.State(r.rd()); !ok || s.Present || !slices.Equal(s.Owed, []string{"rsa02"}) {
					t.Errorf("the engine keeps %+v (%v); want the part on rsa02 alone, owed", s, ok)
				}
			}},
		{name: "a debt", built: true, setup: debt([]string{"rsa01", "rsa02"}, false),
			want:   lifecycle.Event{Kind: lifecycle.EvDestroyed, Nodes: []string{"rsa01", "rsa02"}},
			reason: []string{"RSA nodes rsa01, rsa02 out of reach"}, check: owes("rsa01", "rsa02")},
		{name: "a debt whose RAM is free", built: true, setup: debt([]string{"rsa02"}, true),
			want:   ev(lifecycle.EvDestroyed),
			reason: []string{"the RAM on RSA node rsa02 is free"}, check: owes("rsa02")},
		{name: "a debt the daemon cannot record", built: true,
			setup: func(r *rig) {
				debt([]string{"rsa02"}, false)(r)
				r.port.oweErr = errInjected
			},
			want: ev(lifecycle.EvDestroyFailed), reason: []string{errInjected.Error()}, check: kept},
		{name: "the engine fails", built: true, setup: func(r *rig) { r.mem.FailNext(memengine.Destroy, errInjected) },
			want: ev(lifecycle.EvDestroyFailed), reason: []string{errInjected.Error()}, check: kept},
		{name: "held again for a moment after the eviction", built: true,
			setup: func(r *rig) {
				busy := true
				r.eng.destroy = func(rd engine.Ramdisk) error {
					if busy {
						busy = false
						return fmt.Errorf("unmounting: %w", engine.ErrBusy)
					}
					return r.eng.Stager.Destroy(r.t.Context(), rd)
				}
			},
			want: ev(lifecycle.EvDestroyed), check: func(t *testing.T, r *rig) { wantForgot(t, r, true) }},
		{name: "the RAMDISK held open", built: true, setup: func(r *rig) { r.t.Cleanup(r.mem.Hold(r.rd())) },
			want: ev(lifecycle.EvDestroyFailed), reason: []string{engine.ErrBusy.Error(), "no process holds it itself", "findmnt -t nsfs", "rsa retry 7"}, check: kept},
		{name: "the gate does not close", built: true, setup: func(r *rig) { r.mem.FailNext(memengine.Revoke, errInjected) },
			want: ev(lifecycle.EvDestroyFailed), reason: []string{errInjected.Error()},
			check: func(t *testing.T, r *rig) {
				kept(t, r)
				if got := r.calls(memengine.Destroy); len(got) != 0 {
					t.Errorf("the RAMDISK was destroyed with its gate open")
				}
			}},
		{name: "the mounts stay", built: true, setup: func(r *rig) { r.acc.failNext("Unbind", errInjected) },
			want: ev(lifecycle.EvDestroyFailed), reason: []string{errInjected.Error()},
			check: func(t *testing.T, r *rig) {
				kept(t, r)
				if got := r.calls(memengine.Revoke, memengine.Destroy); len(got) != 0 {
					t.Errorf("the engine was asked %v with the compute nodes' mounts in place", got)
				}
			}},
		{name: "a compute node out of reach", built: true, setup: func(r *rig) { r.acc.failNext("Unbind", unreachable()) },
			want: ev(lifecycle.EvDestroyed),
			check: func(t *testing.T, r *rig) {
				gone(t, r)
				if len(r.port.owedMount) != 1 || !slices.Equal(r.port.owedMount[0].Nodes, []string{"n1"}) {
					t.Errorf("the daemon was told to owe the mounts %+v; want n1's", r.port.owedMount)
				}
			}},
		{name: "a compute node out of reach the daemon cannot record", built: true,
			setup: func(r *rig) {
				r.acc.failNext("Unbind", unreachable())
				r.port.mountErr = errInjected
			},
			want: ev(lifecycle.EvDestroyFailed), reason: []string{errInjected.Error()},
			check: func(t *testing.T, r *rig) {
				kept(t, r)
				if got := r.calls(memengine.Destroy); len(got) != 0 {
					t.Errorf("the RAMDISK was destroyed with a mount of it owed nowhere")
				}
			}},
	})
}

// wantForgot checks whether the daemon was told to forget the job.
func wantForgot(t *testing.T, r *rig, want bool) {
	t.Helper()
	if got := slices.Equal(r.port.forgot, []int64{r.j.ID}); got != want || !want && len(r.port.forgot) > 0 {
		t.Errorf("the daemon was told to forget %v; want job %d forgotten: %v", r.port.forgot, r.j.ID, want)
	}
}

// wantUnbound checks that the job's compute nodes were unbound by force
// first.
func wantUnbound(t *testing.T, r *rig) {
	t.Helper()
	if got := r.acc.made(); len(got) == 0 || !sameCall(got[0], accessCall{method: "Unbind", nodes: r.j.Hosts, detach: true}) {
		t.Errorf("the node access was asked %+v; want a forced Unbind of %v first", got, r.j.Hosts)
	}
}
