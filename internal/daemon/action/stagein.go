package action

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/stage"
)

// stageIn copies the job's input into its RAMDISK (or packs it into an
// input image there) as the job's user, then checks that every part of
// the RAMDISK stayed in reach.
type stageIn struct{ *Env }

var _ Action = stageIn{}

func (stageIn) Kind() lifecycle.ActionKind { return lifecycle.StageIn }

// Run stages the input in. Input copied into a part out of reach is not
// there: the event names the nodes, and the RAMDISK is rebuilt and the
// input staged in again. A cancelled ctx (the lifecycle's StopStageIn, or
// the daemon stopping) ends it with EvStageInStopped.
func (a stageIn) Run(ctx context.Context, j *job.Job) lifecycle.Event {
	err := a.stage(ctx, j, stage.StageIn, j.Spec.StageIn, j.Spec.Input, false, false)
	var dg engine.Degraded
	if ctx.Err() == nil {
		var lostEv lifecycle.Event
		var lost bool
		dg, lostEv, lost = a.check(ctx, j, err)
		if lost {
			return lostEv
		}
	}
	switch {
	case err == nil && len(dg.Nodes) > 0:
		return a.degraded(ctx, j, dg)
	case err == nil:
		return done(lifecycle.EvStagedIn)
	case ctx.Err() != nil:
		return done(lifecycle.EvStageInStopped)
	default:
		return failed(lifecycle.EvStageInFailed, err)
	}
}

// check asks the engine whether every part stayed in reach during the
// copy, whose error is copyErr. lost is true, with the failure's event,
// when the input cannot be trusted: a part lost, or, under replica 2, a
// copy that failed as a part went out of reach (a write meeting the
// disconnect, no reason to give the stage-in up). A check that itself
// fails is logged and counts as no news: the copy's own errors and the
// probe still count.
func (a stageIn) check(ctx context.Context, j *job.Job, copyErr error) (engine.Degraded, lifecycle.Event, bool) {
	dg, err := a.Engine.Check(ctx, a.Daemon.Ramdisk(j))
	if err != nil {
		a.Log.Warn("checking the RAMDISK after its stage-in", "job", j.ID, "err", err)
		return engine.Degraded{}, lifecycle.Event{}, false
	}
	if dg.Missing || copyErr != nil && len(dg.Nodes) > 0 {
		why := fmt.Sprintf("the part of the RAMDISK on RSA node %s is out of reach", strings.Join(dg.Nodes, ", "))
		if copyErr != nil {
			why += "; the copy: " + copyErr.Error()
		}
		a.note(j, "stage-in: "+why)
		return dg, lifecycle.Event{Kind: lifecycle.EvStageInFailed, Reason: why, Nodes: dg.Nodes}, true
	}
	return dg, lifecycle.Event{}, false
}

// degraded is the event of a stage-in whose lost parts' replicas hold
// every file: READY is committed with the loss known, so that a later
// report of the same node is a duplicate, never a teardown under a job
// Slurm may be starting. A node the heartbeat reported during the copy is
// in the log already: the user reads of each loss once.
func (a stageIn) degraded(ctx context.Context, j *job.Job, dg engine.Degraded) lifecycle.Event {
	fresh := dg.Nodes
	if cur, err := a.Daemon.Record(ctx, j.ID); err == nil {
		fresh = slices.DeleteFunc(slices.Clone(dg.Nodes), func(n string) bool { return slices.Contains(cur.Lost, n) })
	}
	if len(fresh) > 0 {
		why := fmt.Sprintf("the part of the RAMDISK on RSA node %s is out of reach; its replicas serve every file: the job gets its input from RAM, degraded, and the RAMDISK is rebuilt on live nodes at the switch to output", strings.Join(fresh, ", "))
		a.note(j, "stage-in: "+why)
	}
	return lifecycle.Event{Kind: lifecycle.EvStagedIn, Nodes: dg.Nodes, Build: j.Build, Whole: true}
}
