package store

import (
	"context"
	"time"
)

// Drain is an administrator's word that an RSA node takes no new jobs.
type Drain struct {
	Node   string
	Reason string
	By     string
	Since  time.Time
}

// SetDrain marks node drained (again: the newest reason wins).
func (s *Store) SetDrain(ctx context.Context, d Drain) error {
	err := s.exec(ctx, `INSERT INTO drains(node, reason, by, since) VALUES(?, ?, ?, ?)
		ON CONFLICT(node) DO UPDATE SET reason=excluded.reason, by=excluded.by, since=excluded.since`,
		d.Node, d.Reason, d.By, d.Since.UnixNano())
	return err
}

// ClearDrain returns node to service; clearing a node that is not drained
// does nothing.
func (s *Store) ClearDrain(ctx context.Context, node string) error {
	err := s.exec(ctx, `DELETE FROM drains WHERE node=?`, node)
	return err
}

// Drains returns every drained node by name.
func (s *Store) Drains(ctx context.Context) (map[string]Drain, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT node, reason, by, since FROM drains`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]Drain{}
	for rows.Next() {
		var d Drain
		var since int64
		if err := rows.Scan(&d.Node, &d.Reason, &d.By, &since); err != nil {
			return nil, err
		}
		d.Since = time.Unix(0, since)
		out[d.Node] = d
	}
	return out, rows.Err()
}
