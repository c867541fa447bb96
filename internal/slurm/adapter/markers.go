package adapter

import (
	"context"

	"github.com/rsa-hpc/rsa/internal/job"
)

// Marking reports whether the adapter keeps the Slurm job markers
// (slurm.Markers): under any scheduler but "none".
func (a *Adapter) Marking() bool { return a.markers != nil }

// SyncMarkers makes the Slurm job markers those of the jobs of jobs that a
// scheduler adapter made and that are not done.
func (a *Adapter) SyncMarkers(jobs []*job.Job) error {
	if a.markers == nil {
		return nil
	}
	var live []string
	for _, j := range jobs {
		if j.Scheduler != "" && j.Spec.SchedulerID != "" && !j.Machine().Done() {
			live = append(live, j.Spec.SchedulerID)
		}
	}
	return a.markers.Sync(live)
}

// Mark tells the Slurm prolog that Slurm job name is RSA's, before its RSA
// job is stored.
func (a *Adapter) Mark(name string) {
	if a.markers == nil || name == "" {
		return
	}
	if err := a.markers.Set(name); err != nil {
		a.log.Error("marking a Slurm job for the prolog", "slurm_job", name, "err", err)
	}
}

// Unmark clears the marker of Slurm job name unless a live RSA job other
// than except has it (Slurm requeued the job). The caller holds the lock
// under which jobs are created, so that a creation under way, which may be
// that newer job, cannot lose its marker.
func (a *Adapter) Unmark(ctx context.Context, name string, except int64) {
	if a.markers == nil || name == "" {
		return
	}
	if o, err := a.jobs.Latest(ctx, name); err == nil && o != nil && o.ID != except && !o.Machine().Done() {
		return
	}
	if err := a.markers.Clear(name); err != nil {
		a.log.Error("unmarking a Slurm job", "slurm_job", name, "err", err)
	}
}
