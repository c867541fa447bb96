package daemon

import (
	"context"
	"time"

	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/notify"
)

// sendNotice tells j's user of kind, off the loop; the job's log says
// whether it went out.
func (d *Daemon) sendNotice(j *job.Job, kind notify.Kind) {
	if d.tell == nil {
		return
	}
	n := notify.NoticeOf(j, kind)
	rec := *j
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.tell.Tell(d.actx, n, func(err error) {
			if err != nil {
				d.log.Warn("telling a job's user", "job", n.Job, "user", n.User, "notice", string(kind), "err", err)
				d.jobLog(&rec, "could not tell %s that the job's %s: %v", n.User, kind, err)
				return
			}
			d.jobLog(&rec, "told %s: %s", n.User, kind)
		})
	}()
}

// remindHeld tells again the user of each job whose output has waited in
// RAM after a failed stage-out for notify.held_after since they were last
// told, and records when. It runs on the loop, as its commits must.
func (d *Daemon) remindHeld(ctx context.Context, now time.Time) {
	if !d.tell.Scan(now) {
		return
	}
	var due []int64
	d.store.EachActive(func(j *job.Job) {
		if d.tell.Due(j, now) {
			due = append(due, j.ID)
		}
	})
	for _, id := range due {
		j, err := d.store.Get(ctx, id)
		if err != nil || j.RSA != lifecycle.StageOutFailed {
			continue
		}
		j.NoticeAt = now
		if err := d.store.Commit(ctx, j, nil); err != nil {
			d.log.Error("recording a reminder", "job", id, "err", err)
			continue
		}
		d.changed()
		d.sendNotice(j, notify.OutputHeld)
	}
}
