package service

import (
	"context"
	"fmt"
	"slices"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/refuse"
)

// A RAMDISK whose job has no record in the store is one RSA knows nothing
// of: its state directory was lost, or restored from a backup older than
// the RAMDISK. It may hold a job's only copy of its output. gc destroys it
// only if its engine says it holds nothing (engine.Usage: no bytes, no
// files); any other, or one whose engine cannot tell, is quarantined:
// never destroyed automatically, reported (rsa gc, rsa health, the metric
// rsa_quarantined_ramdisks, the daemon's log), its id kept from new jobs,
// until an administrator saves what it holds and discards it (rsa gc
// --discard ID). The list is found anew by every gc; it is no state of
// its own.

// unknownRamdisk decides on f, a RAMDISK without a job record: keep says
// whether it is quarantined (q). Its id is reserved either way, before
// anything else can give it to a new job.
func (s *Service) unknownRamdisk(ctx context.Context, f engine.Found) (q api.QuarantinedView, keep bool, err error) {
	if err := s.store.ReserveIDs(ctx, f.Job); err != nil {
		return q, false, err
	}
	q = api.QuarantinedView{Job: f.Job, Dir: f.Dir, Used: -1, Files: -1}
	u, err := s.engine.Usage(engine.Ramdisk{Job: f.Job, Build: f.Build, Dir: f.Dir})
	if err != nil {
		if !s.wasQuarantined(f.Job) {
			s.log.Warn("a RAMDISK no job record knows of, whose fill cannot be read: quarantined, never destroyed by RSA; save what it holds, then rsa gc --discard ID",
				"job", f.Job, "dir", f.Dir, "err", err)
		}
		return q, true, nil
	}
	q.Used, q.Files = u.Used, u.Files
	if u.Used == 0 && u.Files == 0 {
		return q, false, nil
	}
	if !s.wasQuarantined(f.Job) {
		s.log.Warn("a RAMDISK no job record knows of holds data: quarantined, never destroyed by RSA; save what it holds, then rsa gc --discard ID",
			"job", f.Job, "dir", f.Dir, "bytes", u.Used, "files", u.Files)
	}
	return q, true, nil
}

// setQuarantined records what the last gc quarantined.
func (s *Service) setQuarantined(qs []api.QuarantinedView) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.quarantined = slices.Clone(qs)
}

func (s *Service) wasQuarantined(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.ContainsFunc(s.quarantined, func(q api.QuarantinedView) bool { return q.Job == id })
}

// Quarantined is what the last gc quarantined, to anyone: ids and RSA's
// own paths, nothing of a job's.
func (s *Service) Quarantined(context.Context, api.Peer) ([]api.QuarantinedView, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]api.QuarantinedView{}, s.quarantined...), nil
}

// discardQuarantined destroys the quarantined RAMDISK of job id, data and
// all, as an administrator asked; a gc then reports what is left.
func (s *Service) discardQuarantined(ctx context.Context, id int64) (*api.GCReport, error) {
	found, err := s.engine.List(ctx)
	if err != nil {
		return nil, err
	}
	if !s.wasQuarantined(id) {
		return nil, refuse.NotFound("no RAMDISK of job %d is quarantined (rsa gc lists those that are)", id)
	}
	if _, err := s.store.Get(ctx, id); err == nil {
		return nil, refuse.NotApplicable("job %d has a record now: it is no longer quarantined", id)
	}
	removed := []string{}
	for _, f := range found {
		if f.Job != id {
			continue
		}
		if err := s.removeFound(ctx, f); err != nil {
			return nil, fmt.Errorf("discarding %s: %w", f.Dir, err)
		}
		s.log.Warn("an administrator discarded a quarantined RAMDISK", "job", f.Job, "dir", f.Dir)
		removed = append(removed, f.Dir)
	}
	rep, err := s.Collect(ctx)
	if rep != nil {
		rep.Removed = append(removed, rep.Removed...)
	}
	return rep, err
}
