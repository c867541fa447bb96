package action

import (
	"context"
	"fmt"
	"strings"

	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// construct builds the job's RAMDISK on its assigned parts.
type construct struct{ *Env }

var _ Action = construct{}

func (construct) Kind() lifecycle.ActionKind { return lifecycle.Construct }

// Run builds the RAMDISK. A node that stopped answering is no reason to
// give RSA up: the event names it, and the RAMDISK is built anew on live
// nodes.
func (a construct) Run(ctx context.Context, j *job.Job) lifecycle.Event {
	if err := a.Engine.Construct(ctx, a.Daemon.Ramdisk(j)); err != nil {
		if silent := a.Daemon.Silent(j.Alloc); len(silent) > 0 && ctx.Err() == nil {
			a.note(j, fmt.Sprintf("building the RAMDISK: RSA node %s does not answer (%v); building it anew on live nodes", strings.Join(silent, ", "), err))
			return lifecycle.Event{Kind: lifecycle.EvBootLost, Reason: err.Error(), Nodes: silent}
		}
		return failed(lifecycle.EvBootFailed, err)
	}
	return done(lifecycle.EvBooted)
}
