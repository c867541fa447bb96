package daemon

import (
	"time"

	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/metrics"
)

// phaseOf is the metrics' name of the phase an action is.
var phaseOf = map[lifecycle.ActionKind]string{
	lifecycle.Construct: metrics.Construct,
	lifecycle.StageIn:   metrics.StageIn,
	lifecycle.MountIn:   metrics.Mount,
	lifecycle.MountOut:  metrics.Mount,
	lifecycle.Unmount:   metrics.Switch,
	lifecycle.StageOut:  metrics.StageOut,
	lifecycle.Destroy:   metrics.Teardown,
}

// observeAction records an action's duration and, for a stage that
// succeeded, what it copied.
func (d *Daemon) observeAction(id int64, kind lifecycle.ActionKind, took time.Duration, ev lifecycle.Event) {
	phase, ok := phaseOf[kind]
	if !ok {
		return
	}
	d.metrics.ObservePhase(phase, took)
	dir := map[lifecycle.EventKind]string{lifecycle.EvStagedIn: "in", lifecycle.EvStagedOut: "out"}[ev.Kind]
	if dir == "" {
		return
	}
	if a, ok := d.stagedBy(id, ev.Kind); ok {
		d.metrics.AddStaged(dir, a.Files, a.Bytes)
	}
}
