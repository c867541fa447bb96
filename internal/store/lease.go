package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ErrFenced is returned by every write of a Store whose epoch is no longer
// the lease's: the other rsa serve of a failover pair took the state over
// since this one did, and this one must stop at once.
var ErrFenced = errors.New("fenced: another rsa serve took the state over (a newer lease epoch); this one must stop")

// TakeOver makes this Store the state's writer for a new epoch of the
// lease, one above the last, and returns it; holder says who (for rsa
// status and the log). From then on each write checks, in its own
// transaction, that the lease's epoch is still this one, and fails with
// ErrFenced once another Store took over: a daemon that lost the lease
// without noticing commits nothing more, and so, since a transition is
// committed before its action starts, starts nothing more either.
//
// The caller holds the lease (package failover) when it calls TakeOver:
// the epoch orders the holders, it does not arbitrate between them.
func (s *Store) TakeOver(ctx context.Context, holder string, at time.Time) (int64, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	var epoch int64
	if err := tx.QueryRowContext(ctx, `INSERT INTO lease(id, epoch, holder, since) VALUES(1, 1, ?, ?)
		ON CONFLICT(id) DO UPDATE SET epoch=epoch+1, holder=excluded.holder, since=excluded.since
		RETURNING epoch`, holder, at.UnixNano()).Scan(&epoch); err != nil {
		return 0, fmt.Errorf("taking the state over: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("taking the state over: %w", err)
	}
	s.epoch.Store(epoch)
	return epoch, nil
}

// Lease is the last take-over of the state: its epoch, holder and time.
type Lease struct {
	Epoch  int64
	Holder string
	Since  time.Time
}

// Lease reads the last take-over; a zero Lease if there was none.
func (s *Store) Lease(ctx context.Context) (Lease, error) {
	var l Lease
	var since int64
	err := s.db.QueryRowContext(ctx, `SELECT epoch, holder, since FROM lease WHERE id=1`).Scan(&l.Epoch, &l.Holder, &since)
	if errors.Is(err, sql.ErrNoRows) {
		return Lease{}, nil
	}
	if err != nil {
		return Lease{}, err
	}
	l.Since = time.Unix(0, since)
	return l, nil
}

// Epoch is the epoch this Store took over with; 0 if it did not.
func (s *Store) Epoch() int64 { return s.epoch.Load() }

// begin starts a write transaction, fenced: it fails with ErrFenced if
// this Store took the state over (TakeOver) and the lease's epoch is no
// longer its own. The check and the writes are one transaction, so no
// write of a fenced Store is ever committed.
func (s *Store) begin(ctx context.Context) (*sql.Tx, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	mine := s.epoch.Load()
	if mine == 0 {
		return tx, nil
	}
	var epoch int64
	if err := tx.QueryRowContext(ctx, `SELECT epoch FROM lease WHERE id=1`).Scan(&epoch); err != nil {
		tx.Rollback()
		return nil, fmt.Errorf("checking the lease's epoch: %w", err)
	}
	if epoch != mine {
		tx.Rollback()
		return nil, fmt.Errorf("%w (epoch %d, this one's %d)", ErrFenced, epoch, mine)
	}
	return tx, nil
}

// exec runs one statement in a fenced transaction (begin).
func (s *Store) exec(ctx context.Context, q string, args ...any) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, q, args...); err != nil {
		return err
	}
	return tx.Commit()
}
