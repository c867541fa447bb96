package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/refuse"
	"github.com/rsa-hpc/rsa/internal/store"
	"github.com/rsa-hpc/rsa/internal/units"
)

// Settle forgets every debt owed on node: what teardowns left there while
// it was silent, for a node that will not answer again (replaced, or gone
// for good). Its RAM there counts as free from then on, and should the
// node come back after all, the leftover sweep removes what it still
// holds of jobs that ended. Each job owed for keeps a record of who
// settled its debt, when and why (an event in its log), as does the
// daemon's log. A node whose agent answers pays its own debts, so it
// cannot be settled.
func (s *Service) Settle(ctx context.Context, p api.Peer, node string, r api.SettleRequest) (*api.SettleReport, error) {
	if !p.Root() {
		return nil, refuse.Forbidden("only root may settle a node's debts")
	}
	if err := reasonGiven("reason", r.Reason, "say why node "+node+" will not answer again (--reason): the jobs' records keep it"); err != nil {
		return nil, err
	}
	var owed []store.Debt
	for _, db := range s.debts.Owed() {
		if db.Node == node {
			owed = append(owed, db)
		}
	}
	if len(owed) == 0 {
		return nil, refuse.NotFound("nothing is owed on node %q (rsa nodes shows what is)", node)
	}
	if nodes, ok := s.engineNodes(); ok && nodes.Up(node) {
		return nil, refuse.NotApplicable("node %s answers: it pays its debts itself (rsa nodes shows them shrink); settle only a node that will not answer again", node)
	}
	by := userName(p.UID)
	rep := &api.SettleReport{Node: node, Jobs: []int64{}}
	var errs []error
	for _, db := range owed {
		if err := s.store.PayDebt(ctx, db.Node, db.Job, db.Build); err != nil {
			errs = append(errs, fmt.Errorf("settling job %d's debt on %s: %w", db.Job, node, err))
			continue
		}
		rep.Settled++
		rep.Bytes += db.Bytes
		rep.Jobs = append(rep.Jobs, db.Job)
		msg := fmt.Sprintf("what the teardown left on node %s (%s, since %s) settled by %s: %s",
			node, units.FormatSize(db.Bytes), db.Since.Format(time.RFC3339), by, r.Reason)
		if err := s.recordSettled(ctx, db.Job, msg); err != nil {
			errs = append(errs, err)
		}
		s.log.Warn("debt settled: the node is taken for gone", "node", node, "job", db.Job, "bytes", db.Bytes, "by", by, "reason", r.Reason)
	}
	if err := s.debts.Load(ctx); err != nil {
		errs = append(errs, err)
	}
	return rep, errors.Join(errs...)
}

// recordSettled adds msg to the log of job id, if its record is kept.
func (s *Service) recordSettled(ctx context.Context, id int64, msg string) error {
	for range 3 { // the loop may commit the record meanwhile
		j, err := s.store.Get(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil // purged with its history
		}
		if err != nil {
			return err
		}
		err = s.store.Commit(ctx, j, []job.Event{{At: time.Now(), Kind: "settle", JobState: j.State, RSAState: j.RSA, Message: msg}})
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("recording job %d's settled debt: its record kept changing", id)
}
