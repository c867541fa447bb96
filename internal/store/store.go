// Package store keeps RSA's state in SQLite (WAL, synchronous=FULL): jobs,
// their states and allocations, and an append-only event log per job. It owns
// the schema and its migrations. It must not decide anything: callers commit
// what the lifecycle machine decided, one transaction per transition.
package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// ErrNotFound is returned for an unknown job id.
var ErrNotFound = errors.New("no such job")

// ErrConflict is returned when a job changed since it was read.
var ErrConflict = errors.New("job changed concurrently")

// Store is the state database.
type Store struct {
	db *sql.DB

	// active is a copy of the jobs not done, loaded at Open and updated
	// after each Create and Commit that succeeded. The daemon reads every
	// active job for each scheduling pass and most hooks: decoding 10,000
	// records from SQLite took 113 ms a read (BenchmarkListActive), the
	// copy a few. SQLite stays the truth; the copy is only ever what it
	// committed.
	mu     sync.RWMutex
	active map[int64]*job.Job

	// epoch is the lease's epoch this Store took the state over with
	// (TakeOver); 0: it did not, and its writes are not fenced.
	epoch atomic.Int64
}

// migrations are applied in order; the schema version is their count. Never
// edit one that has shipped: append a new one.
var migrations = []string{
	`CREATE TABLE jobs (
		id          INTEGER PRIMARY KEY AUTOINCREMENT,
		name        TEXT NOT NULL DEFAULT '',
		uid         INTEGER NOT NULL,
		gid         INTEGER NOT NULL,
		user        TEXT NOT NULL,
		job_state   TEXT NOT NULL,
		rsa_state   TEXT NOT NULL,
		record      TEXT NOT NULL,            -- job.Job as JSON
		done        INTEGER NOT NULL DEFAULT 0,
		created_at  INTEGER NOT NULL,
		updated_at  INTEGER NOT NULL,
		version     INTEGER NOT NULL
	);
	CREATE INDEX jobs_active ON jobs(done, id);
	CREATE TABLE events (
		id         INTEGER PRIMARY KEY AUTOINCREMENT,
		job_id     INTEGER NOT NULL REFERENCES jobs(id),
		at         INTEGER NOT NULL,         -- unix nanoseconds
		kind       TEXT NOT NULL,
		job_state  TEXT NOT NULL,
		rsa_state  TEXT NOT NULL,
		message    TEXT NOT NULL
	);
	CREATE INDEX events_job ON events(job_id, id);`,
	// Only jobs a scheduler adapter created answer to a scheduler id. Rows
	// from before this column were named by the hooks or, through a hole
	// since closed, by users; active named ones are kept answering so an
	// upgrade does not strand running Slurm jobs.
	`ALTER TABLE jobs ADD COLUMN scheduler TEXT NOT NULL DEFAULT '';
	UPDATE jobs SET scheduler='slurm' WHERE name != '' AND done = 0;
	CREATE INDEX jobs_name ON jobs(name, scheduler, id);`,
	// RSA nodes an administrator drained: they take no new jobs.
	`CREATE TABLE drains (
		node   TEXT PRIMARY KEY,
		reason TEXT NOT NULL,
		by     TEXT NOT NULL,
		since  INTEGER NOT NULL
	);`,
	// RAM of destroyed RAMDISKs on RSA nodes that were down at teardown.
	`CREATE TABLE debts (
		node   TEXT NOT NULL,
		job_id INTEGER NOT NULL,
		bytes  INTEGER NOT NULL,
		since  INTEGER NOT NULL,
		why    TEXT NOT NULL,
		PRIMARY KEY (node, job_id)
	);`,
	// A job's RAMDISK rebuilt after a lost node is a volume of its own,
	// which a debt names by its build.
	`CREATE TABLE debts2 (
		node   TEXT NOT NULL,
		job_id INTEGER NOT NULL,
		build  INTEGER NOT NULL,
		bytes  INTEGER NOT NULL,
		since  INTEGER NOT NULL,
		why    TEXT NOT NULL,
		PRIMARY KEY (node, job_id, build)
	);
	INSERT INTO debts2(node, job_id, build, bytes, since, why) SELECT node, job_id, 1, bytes, since, why FROM debts;
	DROP TABLE debts;
	ALTER TABLE debts2 RENAME TO debts;`,
	// The incarnation each agent last reported: a node that rebooted
	// while rsa serve was down is lost all the same.
	`CREATE TABLE incarnations (
		node        TEXT PRIMARY KEY,
		incarnation TEXT NOT NULL,
		seen        INTEGER NOT NULL
	);`,
	// A job's record names the scheduler adapter that created it, as its
	// scheduler column does, and the daemon goes by the record: a Slurm
	// job whose record names none would be handled as an rsa submit job.
	// A record that names none while its column does (the active named
	// jobs of migration 2) takes the column's. The record stays a BLOB,
	// as the store writes it, and is read as TEXT: the JSON functions
	// take a BLOB that looks like JSONB for JSONB.
	`UPDATE jobs SET record = CAST(json_set(CAST(record AS TEXT), '$.scheduler', scheduler) AS BLOB)
		WHERE scheduler != '' AND coalesce(json_extract(CAST(record AS TEXT), '$.scheduler'), '') = '';`,
	// The epoch of the rsa serve of a failover pair that took the
	// state over last (lease.go): one row, or none before the first.
	`CREATE TABLE lease (
		id     INTEGER PRIMARY KEY CHECK (id = 1),
		epoch  INTEGER NOT NULL,
		holder TEXT NOT NULL,
		since  INTEGER NOT NULL
	);`,
}

// Open opens (creating if needed) the database in dir, which is made 0700
// and must not be writable by users.
func Open(ctx context.Context, dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating state dir: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("securing state dir: %w", err)
	}
	path := filepath.Join(dir, "rsa.db")
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	// One writer at a time is all SQLite allows; a few connections let
	// readers (status, wait) proceed beside it under WAL.
	db.SetMaxOpenConns(4)
	s := &Store{db: db}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrating %s: %w", path, err)
	}
	if err := s.load(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("reading the active jobs of %s: %w", path, err)
	}
	return s, nil
}

// load fills the copy of the active jobs from the database.
func (s *Store) load(ctx context.Context) error {
	jobs, err := s.query(ctx, `SELECT record FROM jobs WHERE done=0 ORDER BY id`)
	if err != nil {
		return err
	}
	active := make(map[int64]*job.Job, len(jobs))
	for _, j := range jobs {
		active[j.ID] = j
	}
	s.mu.Lock()
	s.active = active
	s.mu.Unlock()
	return nil
}

// remember keeps the committed j in the copy of the active jobs, or drops
// it from there once it is done.
func (s *Store) remember(j *job.Job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j.Machine().Done() {
		delete(s.active, j.ID)
		return
	}
	s.active[j.ID] = clone(j)
}

// clone is a copy of j that shares nothing a caller could change.
func clone(j *job.Job) *job.Job {
	c := *j
	c.Groups = slices.Clone(j.Groups)
	c.Alloc = slices.Clone(j.Alloc)
	c.Hosts = slices.Clone(j.Hosts)
	return &c
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

func (s *Store) migrate(ctx context.Context) error {
	var v int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	if v > len(migrations) {
		return fmt.Errorf("database schema version %d is newer than this rsa (%d): use a newer rsa", v, len(migrations))
	}
	for i := v; i < len(migrations); i++ {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", i+1)); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// SchemaVersion reports the schema version in use.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	return v, err
}

// Create inserts a new job, assigning its id, with its first events.
func (s *Store) Create(ctx context.Context, j *job.Job, events []job.Event) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	j.Version = 1
	now := j.UpdatedAt.UnixNano()
	if j.Spec.SchedulerID != "" && j.Scheduler == "" {
		return fmt.Errorf("job named %q has no scheduler: only a scheduler adapter names jobs", j.Spec.SchedulerID)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO jobs(name, scheduler, uid, gid, user, job_state, rsa_state, record, done, created_at, updated_at, version)
		VALUES(?,?,?,?,?,?,?,'{}',0,?,?,1)`, j.Spec.SchedulerID, j.Scheduler, j.UID, j.GID, j.User, j.State, j.RSA, j.CreatedAt.UnixNano(), now)
	if err != nil {
		return fmt.Errorf("inserting job: %w", err)
	}
	if j.ID, err = res.LastInsertId(); err != nil {
		return err
	}
	rec, err := json.Marshal(j)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE jobs SET record=? WHERE id=?`, rec, j.ID); err != nil {
		return err
	}
	if err := insertEvents(ctx, tx, j.ID, events); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.remember(j)
	return nil
}

// Commit stores j (whose Version must be the one read) and appends events,
// atomically. On success j.Version is incremented.
func (s *Store) Commit(ctx context.Context, j *job.Job, events []job.Event) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	next := *j
	next.Version++
	rec, err := json.Marshal(&next)
	if err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `UPDATE jobs SET job_state=?, rsa_state=?, record=?, done=?, updated_at=?, version=?
		WHERE id=? AND version=?`, next.State, next.RSA, rec, boolInt(next.Machine().Done()), next.UpdatedAt.UnixNano(), next.Version, j.ID, j.Version)
	if err != nil {
		return fmt.Errorf("updating job %d: %w", j.ID, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("job %d: %w", j.ID, ErrConflict)
	}
	if err := insertEvents(ctx, tx, j.ID, events); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("committing job %d: %w", j.ID, err)
	}
	j.Version = next.Version
	s.remember(&next)
	return nil
}

func insertEvents(ctx context.Context, tx *sql.Tx, id int64, events []job.Event) error {
	for _, e := range events {
		if _, err := tx.ExecContext(ctx, `INSERT INTO events(job_id, at, kind, job_state, rsa_state, message) VALUES(?,?,?,?,?,?)`,
			id, e.At.UnixNano(), e.Kind, e.JobState, e.RSAState, e.Message); err != nil {
			return fmt.Errorf("logging event of job %d: %w", id, err)
		}
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Purged is a job whose record Purge removed.
type Purged struct {
	ID        int64
	CreatedAt time.Time
}

// purgeBatch bounds the jobs one purge transaction removes: a transaction
// holds the database's write lock, which every transition of every job
// waits for (100,000 jobs at once took 6.7 s here; 500 take about 40 ms).
const purgeBatch = 500

// Purge removes the jobs that ended (done) and have not changed since
// before, with their events, and reports them. Ids are never given again
// (AUTOINCREMENT), so no later job inherits a purged one's history. It
// works in batches of its own transactions, so the daemon's commits go on
// between them; it is idempotent.
func (s *Store) Purge(ctx context.Context, before time.Time) ([]Purged, error) {
	var out []Purged
	for {
		batch, err := s.purgeBatch(ctx, before)
		out = append(out, batch...)
		if err != nil || len(batch) < purgeBatch {
			return out, err
		}
	}
}

func (s *Store) purgeBatch(ctx context.Context, before time.Time) ([]Purged, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT id, created_at FROM jobs WHERE done=1 AND updated_at < ? ORDER BY id LIMIT ?`,
		before.UnixNano(), purgeBatch)
	if err != nil {
		return nil, fmt.Errorf("finding old jobs: %w", err)
	}
	var out []Purged
	for rows.Next() {
		var p Purged
		var created int64
		if err := rows.Scan(&p.ID, &created); err != nil {
			rows.Close()
			return nil, err
		}
		p.CreatedAt = time.Unix(0, created)
		out = append(out, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, p := range out {
		if _, err := tx.ExecContext(ctx, `DELETE FROM events WHERE job_id=?`, p.ID); err != nil {
			return nil, fmt.Errorf("purging job %d: %w", p.ID, err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM jobs WHERE id=? AND done=1`, p.ID); err != nil {
			return nil, fmt.Errorf("purging job %d: %w", p.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("purging old jobs: %w", err)
	}
	return out, nil
}

// Get returns one job, from the copy if it is active.
func (s *Store) Get(ctx context.Context, id int64) (*job.Job, error) {
	s.mu.RLock()
	j, ok := s.active[id]
	s.mu.RUnlock()
	if ok {
		return clone(j), nil
	}
	var rec []byte
	err := s.db.QueryRowContext(ctx, `SELECT record FROM jobs WHERE id=?`, id).Scan(&rec)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return decode(rec)
}

// FindByName returns the newest job that a scheduler adapter created under
// the scheduler's id name. Jobs made through rsa run or rsa submit never
// match, whatever they are called.
func (s *Store) FindByName(ctx context.Context, name string) (*job.Job, error) {
	if name == "" {
		return nil, fmt.Errorf("no scheduler id: %w", ErrNotFound)
	}
	var rec []byte
	err := s.db.QueryRowContext(ctx, `SELECT record FROM jobs WHERE name=? AND scheduler != '' ORDER BY id DESC LIMIT 1`, name).Scan(&rec)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("job %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return decode(rec)
}

func decode(rec []byte) (*job.Job, error) {
	var j job.Job
	if err := json.Unmarshal(rec, &j); err != nil {
		return nil, fmt.Errorf("decoding job record: %w", err)
	}
	return &j, nil
}

// List returns jobs in id order: the active ones (from the copy), or all
// when all is set (the newest limit of them).
func (s *Store) List(ctx context.Context, all bool, limit int) ([]*job.Job, error) {
	if all {
		return s.query(ctx, fmt.Sprintf(`SELECT record FROM (SELECT id, record FROM jobs ORDER BY id DESC LIMIT %d) ORDER BY id`, limit))
	}
	s.mu.RLock()
	out := make([]*job.Job, 0, len(s.active))
	for _, j := range s.active {
		out = append(out, clone(j))
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b *job.Job) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// EachActive calls fn for every active job, in no order, under a read
// lock: fn must not change j, keep it, or call the store's writers. It is
// List without the copies, for passes over every active job that read a
// few fields of each (10,000 copies cost about 10 ms).
func (s *Store) EachActive(fn func(j *job.Job)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, j := range s.active {
		fn(j)
	}
}

// query decodes the job records a query selects.
func (s *Store) query(ctx context.Context, q string) ([]*job.Job, error) {
	rows, err := s.db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*job.Job
	for rows.Next() {
		var rec []byte
		if err := rows.Scan(&rec); err != nil {
			return nil, err
		}
		j, err := decode(rec)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// Events returns a job's log, oldest first.
func (s *Store) Events(ctx context.Context, id int64) ([]job.Event, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT at, kind, job_state, rsa_state, message FROM events WHERE job_id=? ORDER BY id`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []job.Event
	for rows.Next() {
		var at int64
		e := job.Event{JobID: id}
		var js, rs string
		if err := rows.Scan(&at, &e.Kind, &js, &rs, &e.Message); err != nil {
			return nil, err
		}
		e.At = time.Unix(0, at)
		e.JobState, e.RSAState = lifecycle.JobState(js), lifecycle.RSAState(rs)
		out = append(out, e)
	}
	return out, rows.Err()
}
