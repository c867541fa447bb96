package daemon

import (
	"context"
	"time"
)

// purgeHistory removes the records, events and logs of jobs that ended
// more than history_retention ago: a user's history is personal data and
// does not outlive the site's policy (and a later account with a reused
// uid never sees it, see ownedBy).
func (d *Daemon) purgeHistory(ctx context.Context) {
	if d.cfg.HistoryRetention <= 0 {
		return
	}
	gone, err := d.store.Purge(ctx, time.Now().Add(-d.cfg.HistoryRetention))
	if err != nil {
		d.log.Error("purging old job history", "err", err)
		return
	}
	for _, p := range gone {
		if err := d.logs.Remove(p.ID, p.CreatedAt); err != nil {
			d.log.Error("removing an old job's log", "job", p.ID, "err", err)
		}
	}
	if len(gone) > 0 {
		d.log.Info("purged the history of ended jobs", "jobs", len(gone), "ended_before", d.cfg.HistoryRetention.String()+" ago")
	}
}

// purgeLoop purges at start and then every hour.
func (d *Daemon) purgeLoop(ctx context.Context) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		d.purgeHistory(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
