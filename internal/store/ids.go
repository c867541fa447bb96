package store

import (
	"context"
	"fmt"
)

// ReserveIDs makes sure no job created from now on gets an id of id or
// below: a RAMDISK the daemon finds without a record (a state directory
// restored from a backup older than it) keeps its job's id, and a new job
// given that id would be handed that RAMDISK's directories.
func (s *Store) ReserveIDs(ctx context.Context, id int64) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// AUTOINCREMENT keeps the largest id ever given in sqlite_sequence;
	// the row is there once a job was ever created.
	if _, err := tx.ExecContext(ctx, `INSERT INTO sqlite_sequence(name, seq)
		SELECT 'jobs', 0 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'jobs')`); err != nil {
		return fmt.Errorf("reserving job ids through %d: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'jobs'`, id); err != nil {
		return fmt.Errorf("reserving job ids through %d: %w", id, err)
	}
	return tx.Commit()
}
