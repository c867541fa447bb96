package store

import (
	"context"
	"time"
)

// SetIncarnation records node's incarnation, seen at at.
func (s *Store) SetIncarnation(ctx context.Context, node, incarnation string, at time.Time) error {
	err := s.exec(ctx, `INSERT INTO incarnations(node, incarnation, seen) VALUES(?, ?, ?)
		ON CONFLICT(node) DO UPDATE SET incarnation=excluded.incarnation, seen=excluded.seen`, node, incarnation, at.UnixNano())
	return err
}

// Incarnations returns each node's last recorded incarnation.
func (s *Store) Incarnations(ctx context.Context) (map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT node, incarnation FROM incarnations`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var n, inc string
		if err := rows.Scan(&n, &inc); err != nil {
			return nil, err
		}
		out[n] = inc
	}
	return out, rows.Err()
}
