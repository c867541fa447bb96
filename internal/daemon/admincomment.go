package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// tellSlurmAdmins puts a failed stage-out, and its end, into the Slurm
// job's AdminComment: Slurm shows the job COMPLETED and soon forgets it,
// but administrators read AdminComment in scontrol and sacct, and can
// alert on it. It runs beside the loop: Slurm may be slow or down, and
// the comment is a courtesy, not state (the state is RSA's).
func (d *Daemon) tellSlurmAdmins(before, after *job.Job) {
	if after.Scheduler == "" || after.Spec.Name == "" || d.cfg.Scheduler == config.SchedulerNone || before.RSA == after.RSA {
		return
	}
	var text string
	switch {
	case after.RSA == lifecycle.StageOutFailed:
		text = fmt.Sprintf("RSA: stage-out failed, output kept in RAM (RSA job %d): %s; fix it and run rsa retry slurm:%s, or rsa discard", after.ID, oneLine(after.Error), after.Spec.Name)
	case before.RSA == lifecycle.StageOutFailed && after.RSA == lifecycle.StagingOut:
		text = fmt.Sprintf("RSA: stage-out retried by an administrator (RSA job %d; rsa status shows how it goes)", after.ID)
	case before.RSA == lifecycle.StageOutFailed && after.RSA == lifecycle.Teardown:
		text = fmt.Sprintf("RSA: output of RSA job %d discarded by an administrator", after.ID)
	default:
		return
	}
	id := after.Spec.Name
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := d.slurmc.AdminComment(ctx, id, text); err != nil {
			d.log.Warn("cannot set the Slurm job's AdminComment", "slurm_job", id, "err", err)
		}
	}()
}
