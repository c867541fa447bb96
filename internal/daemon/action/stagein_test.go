package action_test

import (
	"context"
	"slices"
	"testing"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/engine/memengine"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/stage"
)

// A stage-in copies the input through the engine, then asks it whether
// every part stayed in reach: a part lost fails it naming the node; a
// part out of reach whose replicas serve every file makes the job READY
// degraded (Whole, with the nodes), logged once; a stopped stage-in says
// so.
func TestStageIn(t *testing.T) {
	const outOfReach = "the part of the RAMDISK on RSA node rsa02 is out of reach"
	staged := func(t *testing.T, r *rig) {
		tasks := r.stages()
		if len(tasks) != 1 || tasks[0].Phase != "stage-in" || tasks[0].Data != r.j.Spec.Input || tasks[0].User.UID != r.j.UID {
			t.Errorf("the engine staged %+v; want one stage-in of %s as uid %d", tasks, r.j.Spec.Input, r.j.UID)
		}
		if !slices.Contains(r.port.phases, "stage-in") {
			t.Errorf("progress %v; want the stage-in's", r.port.phases)
		}
	}
	runCases(t, lifecycle.StageIn, []actionCase{
		{name: "staged", built: true, want: ev(lifecycle.EvStagedIn), log: []string{"stage-in: built-in copy with", "stage-in done in"},
			check: staged},
		{name: "the copy fails", built: true, setup: func(r *rig) { r.mem.FailNext(memengine.Stage, errInjected) },
			want: ev(lifecycle.EvStageInFailed), reason: []string{errInjected.Error()}, log: []string{"stage-in failed: " + errInjected.Error()}},
		{name: "a part lost", built: true, setup: func(r *rig) { r.degrade(engine.Degraded{Nodes: []string{"rsa02"}, Missing: true}) },
			want:   lifecycle.Event{Kind: lifecycle.EvStageInFailed, Nodes: []string{"rsa02"}},
			reason: []string{outOfReach}, log: []string{"stage-in: " + outOfReach}},
		{name: "a part lost during the copy", built: true,
			setup: func(r *rig) {
				r.stage = func(context.Context, engine.Ramdisk, stage.Task) error {
					r.degrade(engine.Degraded{Nodes: []string{"rsa02"}, Missing: true})
					return nil
				}
			},
			want:   lifecycle.Event{Kind: lifecycle.EvStageInFailed, Nodes: []string{"rsa02"}},
			reason: []string{outOfReach}},
		{name: "a part out of reach, its replicas serving", built: true,
			setup: func(r *rig) { r.degrade(engine.Degraded{Nodes: []string{"rsa02"}}) },
			want:  lifecycle.Event{Kind: lifecycle.EvStagedIn, Nodes: []string{"rsa02"}, Build: 1, Whole: true},
			log:   []string{"stage-in: " + outOfReach + "; its replicas serve every file"}, check: staged},
		{name: "a part out of reach the heartbeat reported already", built: true,
			setup: func(r *rig) {
				r.degrade(engine.Degraded{Nodes: []string{"rsa02"}})
				rec := *r.j
				rec.Lost = []string{"rsa02"}
				r.port.record = &rec
			},
			want:   lifecycle.Event{Kind: lifecycle.EvStagedIn, Nodes: []string{"rsa02"}, Build: 1, Whole: true},
			notLog: []string{outOfReach}},
		{name: "the copy fails as a part goes out of reach", built: true,
			setup: func(r *rig) {
				r.degrade(engine.Degraded{Nodes: []string{"rsa02"}})
				r.mem.FailNext(memengine.Stage, errInjected)
			},
			want:   lifecycle.Event{Kind: lifecycle.EvStageInFailed, Nodes: []string{"rsa02"}},
			reason: []string{outOfReach, "; the copy: " + errInjected.Error()}},
		{name: "the check fails", built: true, setup: func(r *rig) { r.mem.FailNext(memengine.Check, errInjected) },
			// No news: the copy itself succeeded.
			want: ev(lifecycle.EvStagedIn)},
		{name: "stopped", built: true,
			setup: func(r *rig) {
				r.stage = func(ctx context.Context, _ engine.Ramdisk, _ stage.Task) error {
					r.cancel()
					<-ctx.Done()
					return ctx.Err()
				}
			},
			want: ev(lifecycle.EvStageInStopped),
			check: func(t *testing.T, r *rig) {
				if got := r.calls(memengine.Check); len(got) != 0 {
					t.Errorf("a stopped stage-in asked the engine %v", got)
				}
			}},
		{name: "the RAMDISK is not there", want: ev(lifecycle.EvStageInFailed), reason: []string{"stage-in"}},
	})
}
