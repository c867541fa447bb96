package action

import (
	"context"

	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// unmount takes the job's RAMDISK away from its input directory on its
// compute nodes (the switch to output), unless something there still uses
// it.
type unmount struct{ *Env }

var _ Action = unmount{}

func (unmount) Kind() lifecycle.ActionKind { return lifecycle.Unmount }

// Run unbinds without force: a busy mount is EvUnmountBusy, and the job
// keeps reading its input from RAM.
func (a unmount) Run(ctx context.Context, j *job.Job) lifecycle.Event {
	if err := a.Access.Unbind(ctx, j.Hosts, a.Daemon.Ramdisk(j), false); err != nil {
		return failed(lifecycle.EvUnmountBusy, err)
	}
	return done(lifecycle.EvUnmounted)
}
