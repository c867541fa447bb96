package adapter

import (
	"context"
	"fmt"
	"time"

	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/slurm"
)

// accountTimeout bounds one job's AdminComment update: squeue and scontrol
// answer in milliseconds unless slurmctld is stuck, and then the figures
// are in the job's log anyway.
const accountTimeout = time.Minute

// Accounts reports whether j is a Slurm job whose start Account records:
// one a Slurm adapter made, whose stage-in counted what it copied.
func Accounts(j *job.Job) bool {
	return (j.Scheduler == config.SchedulerSlurm || j.Scheduler == config.SchedulerSlurmPoll) &&
		j.Spec.SchedulerID != "" && j.Staged.In != (job.Amount{})
}

// Account writes what j's stage-in copied into its Slurm job's
// AdminComment, once the job runs, so that sacct shows who used RSA and
// how much (slurmdbd takes it with the job's completion). Slurm accepts
// the update from a pending or running job, not once it completes;
// written while the job is pending it would reset the job's Reason until
// the next scheduling pass. The stage-out's figures come after the
// completion and stay in RSA's record (rsa status, rsa log). The site's
// own AdminComment text is kept. It blocks for at most a minute; the
// job's log says how it went. j must be one Accounts accepts.
func (a *Adapter) Account(ctx context.Context, j *job.Job) {
	ctx, cancel := context.WithTimeout(ctx, accountTimeout)
	defer cancel()
	id := j.Spec.SchedulerID
	token := slurm.AccountingToken(j.Staged.In.Bytes, j.Staged.In.Files)
	old, err := a.slurm.AdminComment(ctx, id)
	if err == nil {
		err = a.slurm.SetAdminComment(ctx, id, slurm.MergeAccounting(old, token))
	}
	if err != nil {
		a.log.Warn("recording the stage-in in the Slurm job's AdminComment", "job", j.ID, "slurm_job", id, "err", err)
		a.jobs.JobLog(j, fmt.Sprintf("could not record the stage-in in Slurm's accounting (AdminComment): %v", err))
		return
	}
	a.jobs.JobLog(j, fmt.Sprintf("recorded in Slurm's accounting (AdminComment): %s", token))
}
