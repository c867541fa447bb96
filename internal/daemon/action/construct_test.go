package action_test

import (
	"slices"
	"testing"

	"github.com/rsa-hpc/rsa/internal/engine/memengine"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// Construct builds the RAMDISK; a failure with an RSA node silent names
// the node, to be built anew without it, and says so in the job's log;
// any other failure is the end of RSA for the job.
func TestConstruct(t *testing.T) {
	present := func(t *testing.T, r *rig) {
		if s, ok := r.mem.State(r.rd()); !ok || !s.Present || s.Ramdisk.Build != 1 {
			t.Errorf("the engine keeps %+v (%v); want build 1 present", s, ok)
		}
	}
	runCases(t, lifecycle.Construct, []actionCase{
		{name: "built", want: ev(lifecycle.EvBooted), check: present},
		{name: "built already (resumed)", built: true, want: ev(lifecycle.EvBooted), check: present},
		{name: "fails with an RSA node silent",
			setup: func(r *rig) {
				r.port.silent = []string{"rsa02"}
				r.mem.FailNext(memengine.Construct, errInjected)
			},
			want:   lifecycle.Event{Kind: lifecycle.EvBootLost, Nodes: []string{"rsa02"}},
			reason: []string{errInjected.Error()},
			log:    []string{"RSA node rsa02 does not answer", "building it anew on live nodes"}},
		{name: "fails", setup: func(r *rig) { r.mem.FailNext(memengine.Construct, errInjected) },
			want: ev(lifecycle.EvBootFailed), reason: []string{errInjected.Error()}, notLog: []string{"does not answer"}},
		{name: "fails with an RSA node silent as the daemon stops",
			setup: func(r *rig) {
				r.port.silent = []string{"rsa02"}
				r.mem.FailNext(memengine.Construct, errInjected)
				r.cancel()
			},
			want: ev(lifecycle.EvBootFailed), reason: []string{errInjected.Error()}, notLog: []string{"does not answer"},
			check: func(t *testing.T, r *rig) {
				if got := r.calls(memengine.Construct); !slices.Equal(got, []string{memengine.Construct}) {
					t.Errorf("the engine was asked %v; want one Construct", got)
				}
			}},
	})
}

// ev is the event of kind with nothing else.
func ev(kind lifecycle.EventKind) lifecycle.Event { return lifecycle.Event{Kind: kind} }
