package daemon

import (
	"context"
	"time"

	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/slurm"
)

// stagedBy is what the stage that ev ends copied, as its progress last
// counted it; ok is false for any other event, and for a stage that
// counted nothing (a stage program of the user's own reports no
// progress: its amount is unknown, not zero).
func (d *Daemon) stagedBy(id int64, ev lifecycle.EventKind) (job.Amount, bool) {
	if ev != lifecycle.EvStagedIn && ev != lifecycle.EvStagedOut {
		return job.Amount{}, false
	}
	p := d.progressOf(id)
	if p.Files == 0 && p.Bytes == 0 {
		return job.Amount{}, false
	}
	return job.Amount{Files: p.Files, Bytes: p.Bytes}, true
}

// progressOf is the job's staging progress as last reported; zero if none.
func (d *Daemon) progressOf(id int64) job.Progress {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.progress[id]
}

// accountTimeout bounds one job's AdminComment update: squeue and scontrol
// answer in milliseconds unless slurmctld is stuck, and then the figures
// are in the job's log anyway.
const accountTimeout = time.Minute

// account writes what j's stage-in copied into its Slurm job's
// AdminComment, off the loop, once the job runs, so that sacct shows who
// used RSA and how much (slurmdbd takes it with the job's completion).
// Slurm accepts the update from a pending or running job, not once it
// completes; written while the job is pending it would reset the job's
// Reason until the next scheduling pass. The stage-out's figures come
// after the completion and stay in RSA's record (rsa status, rsa log).
// The site's own AdminComment text is kept.
func (d *Daemon) account(j *job.Job) {
	if j.Scheduler != config.SchedulerSlurm && j.Scheduler != config.SchedulerSlurmPoll || j.Spec.SchedulerID == "" || j.Staged.In == (job.Amount{}) {
		return
	}
	rec := *j
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		ctx, cancel := context.WithTimeout(d.actx, accountTimeout)
		defer cancel()
		id := rec.Spec.SchedulerID
		token := slurm.AccountingToken(rec.Staged.In.Bytes, rec.Staged.In.Files)
		old, err := d.slurmc.AdminComment(ctx, id)
		if err == nil {
			err = d.slurmc.SetAdminComment(ctx, id, slurm.MergeAccounting(old, token))
		}
		if err != nil {
			d.log.Warn("recording the stage-in in the Slurm job's AdminComment", "job", rec.ID, "slurm_job", id, "err", err)
			d.jobLog(&rec, "could not record the stage-in in Slurm's accounting (AdminComment): %v", err)
			return
		}
		d.jobLog(&rec, "recorded in Slurm's accounting (AdminComment): %s", token)
	}()
}
