package daemon

import (
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/slurm/adapter"
)

// stagedBy is what the stage that ev ends copied, as its progress last
// counted it; ok is false for any other event, and for a stage that
// counted nothing (a stage program of the user's own reports no
// progress: its amount is unknown, not zero).
func (d *Daemon) stagedBy(id int64, ev lifecycle.EventKind) (job.Amount, bool) {
	if ev != lifecycle.EvStagedIn && ev != lifecycle.EvStagedOut {
		return job.Amount{}, false
	}
	p, _ := d.board.Progress(id)
	if p.Files == 0 && p.Bytes == 0 {
		return job.Amount{}, false
	}
	return job.Amount{Files: p.Files, Bytes: p.Bytes}, true
}

// account records what j's stage-in copied in Slurm's accounting
// (adapter.Account), off the loop, once the job runs.
func (d *Daemon) account(j *job.Job) {
	if !adapter.Accounts(j) {
		return
	}
	rec := *j
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.slurm.Account(d.actx, &rec)
	}()
}
