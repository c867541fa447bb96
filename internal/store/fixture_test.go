package store

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/units"
)

// fixtureEnv names the environment variable that makes
// TestSchemaFixtureForEveryVersion write the missing fixture of this
// code's schema version (writeSchemaFixture); its value says which
// commit's code wrote it, for the fixture's header.
const fixtureEnv = "RSA_WRITE_SCHEMA_FIXTURE"

// writeSchemaFixture writes testdata/schema/vN.sql, N the schema version
// of this code, from a store that fillFixture filled through this code's
// API: the rows a daemon of this version leaves. It is called only when
// asked (testdata/schema/README.md), and never overwrites a fixture: a
// fixture is what a version that shipped wrote, as fixed as its migration.
func writeSchemaFixture(t *testing.T, madeAt string) {
	t.Helper()
	path := fixturePath(len(migrations))
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s exists (%v): a shipped version's fixture is never remade; a new schema version needs a new migration first", path, err)
	}
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	fillFixture(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "rsa.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	text, err := dumpSQL(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	header := fmt.Sprintf(`-- Schema version %d of RSA's state database, as a daemon left it.
-- Made from: %s.
-- How: writeSchemaFixture (fixture_test.go) filled a store through
-- that code's API (fillFixture) and dumped it (dumpSQL).
-- Never edit: TestMigrateFromEveryShippedSchema opens it with every later
-- rsa (README.md).
`, len(migrations), madeAt)
	if err := os.WriteFile(path, []byte(header+text), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}

// fixtureMaker fills a store as a daemon would: jobs created on deck, each
// event stepped through the lifecycle machine and committed with the
// record change and event rows the daemon's apply makes, at times one
// minute apart from a fixed start, so that a fixture is the same each time
// it is made.
type fixtureMaker struct {
	t   testing.TB
	ctx context.Context
	s   *Store
	at  time.Time
}

type fixtureUser struct {
	name     string
	uid, gid uint32
}

// create stores a job as the daemon's create does; prepare, if set, is
// the scheduler adapter's change to the record before it is stored.
func (m *fixtureMaker) create(spec job.Spec, u fixtureUser, scheduler string, prepare func(*job.Job)) *job.Job {
	m.t.Helper()
	m.at = m.at.Add(time.Minute)
	j := &job.Job{Spec: spec, UID: u.uid, GID: u.gid, User: u.name, Home: "/home/" + u.name, Groups: []uint32{u.gid, 100},
		Scheduler: scheduler, CreatedAt: m.at, UpdatedAt: m.at}
	if scheduler == "" {
		j.UnstartedExpiry = time.Hour // limits.unstarted_expiry's default
	}
	entry := lifecycle.NewJob(false, m.at)
	j.State, j.RSA = entry.State, entry.RSA
	if prepare != nil {
		prepare(j)
	}
	by := u.name
	if scheduler != "" {
		by += " through " + scheduler
	}
	if err := m.s.Create(m.ctx, j, []job.Event{{At: m.at, Kind: "submit", JobState: j.State, RSAState: j.RSA, Message: "submitted by " + by}}); err != nil {
		m.t.Fatal(err)
	}
	return j
}

// step applies ev to j as the daemon's apply does; edit is the daemon's
// own change that comes with it (an allocation, the compute nodes). The
// record change is the one daemon.apply copies from Step's outcome: when
// that grows, this follows, or a new version's fixture misses fields.
func (m *fixtureMaker) step(j *job.Job, ev lifecycle.Event, edit func(*job.Job)) {
	m.t.Helper()
	m.at = m.at.Add(time.Minute)
	ev.At = m.at
	out := lifecycle.Step(j.Machine(), ev)
	if out.Ignored {
		m.t.Fatalf("job %d at %s/%s: %s ignored", j.ID, j.State, j.RSA, ev.Kind)
	}
	next := *j
	next.State, next.RSA = out.Job.State, out.Job.RSA
	next.StartedAt, next.InputAt, next.FinishedAt = out.Job.StartedAt, out.Job.InputAt, out.Job.FinishedAt
	next.Build, next.WaitingSince, next.NotBefore = out.Job.Build, out.Job.WaitingSince, out.Job.NotBefore
	next.ImageBuild, next.PrivateBuild, next.PrivateLost = out.Job.ImageBuild, out.Job.PrivateBuild, out.Job.PrivateLost
	next.Lost, next.Error = out.Job.Lost, out.Job.Error
	if edit != nil {
		edit(&next)
	}
	var evs []job.Event
	for _, c := range out.Changes {
		evs = append(evs, job.Event{At: ev.At, Kind: string(ev.Kind), JobState: c.ToJob, RSAState: c.ToRSA, Message: c.String()})
	}
	next.UpdatedAt = m.at
	if err := m.s.Commit(m.ctx, &next, evs); err != nil {
		m.t.Fatal(err)
	}
	*j = next
}

func (m *fixtureMaker) on(j *job.Job, kinds ...lifecycle.EventKind) {
	m.t.Helper()
	for _, k := range kinds {
		m.step(j, lifecycle.Event{Kind: k}, nil)
	}
}

// assigned is the daemon's edit for EvAssigned: the parts, the RAMDISK's
// directory (engine.DirFor under the default ramdisk_root), no lost nodes.
func assigned(id int64, parts ...job.Part) func(*job.Job) {
	return func(n *job.Job) {
		n.Alloc, n.Ramdisk, n.Lost = parts, fmt.Sprintf("/run/rsa/ramdisk/%d/ram", id), nil
	}
}

// fillFixture writes what every schema fixture holds, in this version's
// words: five jobs (wantFixtureJobs says which), a sixth ended and purged,
// a drained node, a debt and the nodes' incarnations. A new schema version
// adds what its migration keeps, so that its fixture has rows in every
// table (TestMigrateFromEveryShippedSchema checks that).
func fillFixture(t testing.TB, s *Store) {
	t.Helper()
	ctx := context.Background()
	m := &fixtureMaker{t: t, ctx: ctx, s: s, at: time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)}
	alice, bob, carol := fixtureUser{"alice", 1001, 1001}, fixtureUser{"bob", 1002, 1002}, fixtureUser{"carol", 1003, 1003}
	// The incarnations the RSA nodes' agents report (boot id/token); a
	// part records its node's.
	incarnations := map[string]string{
		"rsa1": "0b7d3c8e-52a1-4f6e-9d0c-1e2f3a4b5c6d/5f0e9a1b2c3d4e5f",
		"rsa2": "7c1a9e55-0d3b-4e27-8f61-a2b3c4d5e6f7/0a1b2c3d4e5f6071",
		"rsa3": "e4f5a6b7-c8d9-4a0b-9c1d-2e3f4a5b6c7d/8899aabbccddeeff",
	}
	part := func(node string, bytes int64) job.Part {
		return job.Part{Node: node, Bytes: bytes, Incarnation: incarnations[node]}
	}

	// 1: a Slurm burst buffer job that ran, had its output staged out and
	// ended: done, its RAM released (the last of its steps come below).
	j1 := m.create(job.Spec{SchedulerID: "4101", Input: "/home/alice/in", Output: "/home/alice/out", Delay: 10 * time.Minute,
		Capacity: 4 << 30, ComputeNodes: 2, Pool: "rsa", InputMode: job.InputFiles}, alice, "slurm", nil)
	m.step(j1, lifecycle.Event{Kind: lifecycle.EvAssigned}, assigned(j1.ID, part("rsa1", 2<<30), part("rsa2", 2<<30)))
	m.on(j1, lifecycle.EvBooted, lifecycle.EvStagedIn)
	m.step(j1, lifecycle.Event{Kind: lifecycle.EvStarted}, func(n *job.Job) { n.Hosts = []string{"c1", "c2"} })
	m.on(j1, lifecycle.EvMounted)

	// 2: a Slurm job running on its input in RAM.
	j2 := m.create(job.Spec{SchedulerID: "4102", Input: "/scratch/bob/dataset", ComputeNodes: 2, InputMode: job.InputFiles}, bob, "slurm",
		func(j *job.Job) { j.CapacityWait = 5 * time.Minute }) // slurm.capacity_wait's default, for a job without capacity=
	m.step(j2, lifecycle.Event{Kind: lifecycle.EvAssigned}, assigned(j2.ID, part("rsa1", 3<<30), part("rsa2", 3<<30)))
	m.on(j2, lifecycle.EvBooted, lifecycle.EvStagedIn)
	m.step(j2, lifecycle.Event{Kind: lifecycle.EvStarted}, func(n *job.Job) { n.Hosts = []string{"c3", "c4"} })
	m.on(j2, lifecycle.EvMounted)

	// 3: an rsa submit job waiting for capacity, sized by its input.
	m.create(job.Spec{Input: "/home/carol/in", Output: "/home/carol/out", Delay: time.Hour, Capacity: 1 << 30, ComputeNodes: 1,
		Sized:     fmt.Sprintf("%s: the input's %s + output_headroom %s", units.FormatSize(1<<30), units.FormatSize(512<<20), units.FormatSize(512<<20)),
		InputMode: job.InputFiles}, carol, "", nil)

	// 4: a pending Slurm job whose input is in RAM.
	j4 := m.create(job.Spec{SchedulerID: "4104", Input: "/home/alice/in2", Output: "/home/alice/out2", Delay: 5 * time.Minute,
		ComputeNodes: 1, InputMode: job.InputFiles}, alice, "slurm", nil)
	m.step(j4, lifecycle.Event{Kind: lifecycle.EvAssigned}, assigned(j4.ID, part("rsa3", 1<<30)))
	m.on(j4, lifecycle.EvBooted, lifecycle.EvStagedIn)

	// 5: an rsa submit job whose stage-out failed: it ended, and its
	// output waits in RAM for an administrator.
	j5 := m.create(job.Spec{Output: "/home/carol/results", Capacity: 2 << 30, ComputeNodes: 1}, carol, "", nil)
	m.step(j5, lifecycle.Event{Kind: lifecycle.EvAssigned}, assigned(j5.ID, part("rsa3", 2<<30)))
	m.on(j5, lifecycle.EvBooted, lifecycle.EvStarted, lifecycle.EvMounted, lifecycle.EvFinished)
	m.step(j5, lifecycle.Event{Kind: lifecycle.EvStageOutFailed, Reason: "copying results/run.log: no space left on device"}, nil)

	// 6: a job that ended before job 1 and whose history the daemon has
	// removed since (history_retention): its id is never given again.
	j6 := m.create(job.Spec{Output: "/home/bob/out", Capacity: 1 << 30, ComputeNodes: 1}, bob, "", nil)
	m.on(j6, lifecycle.EvFinished)

	// Job 1 switches to output, ends, is staged out and torn down while
	// rsa2 does not answer: its part there is owed.
	m.at = m.at.Add(10 * time.Minute)
	m.on(j1, lifecycle.EvTick, lifecycle.EvUnmounted, lifecycle.EvDestroyed, lifecycle.EvBooted, lifecycle.EvMounted,
		lifecycle.EvFinished, lifecycle.EvStagedOut, lifecycle.EvDestroyed)
	if gone, err := s.Purge(ctx, j6.UpdatedAt.Add(time.Nanosecond)); err != nil || len(gone) != 1 || gone[0].ID != j6.ID {
		t.Fatalf("purged %v %v, want job %d alone", gone, err, j6.ID)
	}
	if err := s.SetDrain(ctx, Drain{Node: "rsa4", Reason: "DIMM errors in memtest", By: "root", Since: m.at}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddDebt(ctx, Debt{Node: "rsa2", Job: j1.ID, Build: j1.Build, Bytes: 2 << 30, Since: m.at,
		Why: `agent rsa2: Post "https://rsa2:7447/v1/destroy": dial tcp 10.0.0.12:7447: connect: no route to host`}); err != nil {
		t.Fatal(err)
	}
	for _, n := range slices.Sorted(maps.Keys(incarnations)) {
		if err := s.SetIncarnation(ctx, n, incarnations[n], m.at); err != nil {
			t.Fatal(err)
		}
	}
	// A failover pair: the state was taken over once.
	if _, err := s.TakeOver(ctx, "ctl1", m.at); err != nil {
		t.Fatal(err)
	}
}

// dumpSQL is SQL text that remakes db in an empty database, in one
// transaction: its tables and indexes as sqlite_master keeps them, every
// row (in rowid order, so the same database always gives the same text),
// the AUTOINCREMENT counters and user_version, which the sqlite3 shell's
// .dump leaves out.
func dumpSQL(ctx context.Context, db *sql.DB) (string, error) {
	var version int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return "", err
	}
	type object struct{ kind, name, sql string }
	rows, err := db.QueryContext(ctx, `SELECT type, name, sql FROM sqlite_master
		WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite!_%' ESCAPE '!' ORDER BY type != 'table', rowid`)
	if err != nil {
		return "", err
	}
	var objects []object
	for rows.Next() {
		var o object
		if err := rows.Scan(&o.kind, &o.name, &o.sql); err != nil {
			rows.Close()
			return "", err
		}
		objects = append(objects, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("BEGIN;\n")
	var tables []string
	for _, o := range objects {
		b.WriteString(o.sql + ";\n")
		if o.kind == "table" {
			tables = append(tables, o.name)
		}
	}
	for _, t := range tables {
		if err := dumpRows(ctx, db, t, &b); err != nil {
			return "", err
		}
	}
	var counters int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name='sqlite_sequence'`).Scan(&counters); err != nil {
		return "", err
	}
	if counters > 0 {
		// The rows inserted with their ids moved the counters already:
		// set them to what the database had, purged ids included.
		b.WriteString("DELETE FROM sqlite_sequence;\n")
		if err := dumpRows(ctx, db, "sqlite_sequence", &b); err != nil {
			return "", err
		}
	}
	fmt.Fprintf(&b, "PRAGMA user_version = %d;\nCOMMIT;\n", version)
	return b.String(), nil
}

// dumpRows writes an INSERT for each row of table t.
func dumpRows(ctx context.Context, db *sql.DB, t string, b *strings.Builder) error {
	rows, err := db.QueryContext(ctx, `SELECT name FROM pragma_table_info(?) ORDER BY cid`, t)
	if err != nil {
		return err
	}
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			rows.Close()
			return err
		}
		cols = append(cols, sqlName(c))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	list := strings.Join(cols, ", ")
	rows, err = db.QueryContext(ctx, fmt.Sprintf(`SELECT %s FROM %s ORDER BY rowid`, list, sqlName(t)))
	if err != nil {
		return err
	}
	defer rows.Close()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		lits := make([]string, len(vals))
		for i, v := range vals {
			l, err := sqlLiteral(v)
			if err != nil {
				return fmt.Errorf("%s.%s: %w", t, cols[i], err)
			}
			lits[i] = l
		}
		fmt.Fprintf(b, "INSERT INTO %s(%s) VALUES(%s);\n", sqlName(t), list, strings.Join(lits, ", "))
	}
	return rows.Err()
}

// sqlLiteral writes v as SQL of the same storage class: a BLOB stays a
// BLOB (the store binds job records as []byte), readable when it is text.
func sqlLiteral(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "NULL", nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		s := strconv.FormatFloat(v, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEN") {
			s += ".0"
		}
		return s, nil
	case string:
		return sqlText(v), nil
	case []byte:
		if utf8.Valid(v) && !strings.ContainsRune(string(v), 0) {
			return "CAST(" + sqlText(string(v)) + " AS BLOB)", nil
		}
		return "X'" + strings.ToUpper(hex.EncodeToString(v)) + "'", nil
	}
	return "", fmt.Errorf("value %v of type %T", v, v)
}

func sqlText(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
func sqlName(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
