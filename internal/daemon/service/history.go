package service

import (
	"context"
	"time"
)

// purge removes the records, events and logs of jobs that ended
// more than history_retention ago: a user's history is personal data and
// does not outlive the site's policy (and a later account with a reused
// uid never sees it, see ownedBy).
func (s *Service) purge(ctx context.Context) {
	if s.cfg.HistoryRetention <= 0 {
		return
	}
	gone, err := s.store.Purge(ctx, time.Now().Add(-s.cfg.HistoryRetention))
	if err != nil {
		s.log.Error("purging old job history", "err", err)
		return
	}
	for _, p := range gone {
		if err := s.logs.Remove(p.ID, p.CreatedAt); err != nil {
			s.log.Error("removing an old job's log", "job", p.ID, "err", err)
		}
	}
	if len(gone) > 0 {
		s.log.Info("purged the history of ended jobs", "jobs", len(gone), "ended_before", s.cfg.HistoryRetention.String()+" ago")
	}
}

// PurgeHistory purges the history of jobs that ended more than
// history_retention ago at once and then every hour, until ctx ends.
func (s *Service) PurgeHistory(ctx context.Context) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		s.purge(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
