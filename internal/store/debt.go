package store

import (
	"context"
	"time"
)

// Debt is RAM a destroyed RAMDISK still holds on an RSA node that could
// not be reached when it was torn down: the node counts it as held until
// its agent confirms the part is gone.
type Debt struct {
	Node  string
	Job   int64
	Build int // the job's RAMDISK's (engine.Ramdisk.Build)
	Bytes int64
	Since time.Time
	Why   string
}

// AddDebt records d; recording the same node, job and build again keeps
// the first.
func (s *Store) AddDebt(ctx context.Context, d Debt) error {
	err := s.exec(ctx, `INSERT INTO debts(node, job_id, build, bytes, since, why) VALUES(?, ?, ?, ?, ?, ?)
		ON CONFLICT(node, job_id, build) DO NOTHING`, d.Node, d.Job, max(d.Build, 1), d.Bytes, d.Since.UnixNano(), d.Why)
	return err
}

// PayDebt forgets the debt of job's build on node; an absent one is no
// error.
func (s *Store) PayDebt(ctx context.Context, node string, job int64, build int) error {
	err := s.exec(ctx, `DELETE FROM debts WHERE node=? AND job_id=? AND build=?`, node, job, max(build, 1))
	return err
}

// Debts returns every debt, oldest first.
func (s *Store) Debts(ctx context.Context) ([]Debt, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT node, job_id, build, bytes, since, why FROM debts ORDER BY since, node`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Debt
	for rows.Next() {
		var d Debt
		var since int64
		if err := rows.Scan(&d.Node, &d.Job, &d.Build, &d.Bytes, &since, &d.Why); err != nil {
			return nil, err
		}
		d.Since = time.Unix(0, since)
		out = append(out, d)
	}
	return out, rows.Err()
}
