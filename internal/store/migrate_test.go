package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// A site upgrades rsa over whatever state database its daemon left, of any
// schema version this repository has shipped. testdata/schema holds one
// fixture per version: SQL that remakes what a daemon of that version wrote
// (its schema, as migrations[:N] made it, and rows written through that
// version's store API). README.md there says how each was made and how to
// make the next.

// fixtureDir holds the schema fixtures, vN.sql for schema version N.
const fixtureDir = "testdata/schema"

// firstShippedSchema is the oldest schema version a daemon ever left: the
// store had its first migration from its first commit (f715a9f).
const firstShippedSchema = 1

func fixturePath(version int) string {
	return filepath.Join(fixtureDir, fmt.Sprintf("v%d.sql", version))
}

// Every schema version from the first shipped to this code's has its
// fixture, and there is none for a version this code does not have.
func TestSchemaFixtureForEveryVersion(t *testing.T) {
	if madeAt := os.Getenv(fixtureEnv); madeAt != "" {
		writeSchemaFixture(t, madeAt)
	}
	for v := firstShippedSchema; v <= len(migrations); v++ {
		if _, err := os.Stat(fixturePath(v)); err != nil {
			t.Errorf("schema version %d has no fixture (%v). Every schema version gets one when its migration is added, "+
				"so that later versions are tested upgrading from it: run\n\t%s=<commit or description> go test -run '^TestSchemaFixtureForEveryVersion$' ./internal/store/\n"+
				"after making fillFixture write rows to what the new migration adds (%s/README.md)", v, err, fixtureEnv, fixtureDir)
		}
	}
	entries, err := os.ReadDir(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "README.md" {
			continue
		}
		var v int
		if _, err := fmt.Sscanf(e.Name(), "v%d.sql", &v); err != nil || e.Name() != filepath.Base(fixturePath(v)) ||
			v < firstShippedSchema || v > len(migrations) {
			t.Errorf("%s/%s is not the fixture of a schema version this code has (%d to %d)", fixtureDir, e.Name(), firstShippedSchema, len(migrations))
		}
	}
}

// Opening a database of each shipped schema version migrates it to this
// code's, and every row the old daemon wrote reads back through this
// code's API as it was written; what the old schema had no column for
// reads as its default; the daemon can go on with the old jobs and write
// every table.
func TestMigrateFromEveryShippedSchema(t *testing.T) {
	for v := firstShippedSchema; v <= len(migrations); v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			if _, err := os.Stat(fixturePath(v)); err != nil {
				t.Skipf("no fixture: TestSchemaFixtureForEveryVersion says how to make it")
			}
			ctx := context.Background()
			dir, raw := fixtureDB(t, v)
			checkFixtureSchema(t, raw, v)
			old := readShipped(t, raw)
			values := readTables(t, raw)
			if err := raw.Close(); err != nil {
				t.Fatal(err)
			}

			s, err := Open(ctx, dir)
			if err != nil {
				t.Fatalf("opening a database of schema version %d: %v", v, err)
			}
			defer s.Close()
			if got, err := s.SchemaVersion(ctx); err != nil || got != len(migrations) {
				t.Fatalf("schema version %d %v after opening one of version %d, want %d", got, err, v, len(migrations))
			}
			checkValuesKept(t, valuesAfter(t, values, old), readTables(t, s.db))
			checkJobs(t, s, old)
			checkWantFixtureJobs(t, s)
			checkOtherTables(t, s, old)
			checkGoesOn(t, s, old)
			migrated := readTables(t, s.db)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			// Opened again: nothing is migrated twice.
			s, err = Open(ctx, dir)
			if err != nil {
				t.Fatalf("reopening the migrated database: %v", err)
			}
			defer s.Close()
			if got, err := s.SchemaVersion(ctx); err != nil || got != len(migrations) {
				t.Fatalf("schema version %d %v after reopening, want %d", got, err, len(migrations))
			}
			checkValuesKept(t, migrated, readTables(t, s.db))
		})
	}
}

// A database of a schema version newer than this code is refused, with the
// error that says to use a newer rsa, and left as it was: an older rsa
// cannot know what the newer one's rows mean.
func TestOpenRefusesNewerSchema(t *testing.T) {
	newest := 0
	for v := firstShippedSchema; v <= len(migrations); v++ {
		if _, err := os.Stat(fixturePath(v)); err == nil {
			newest = v
		}
	}
	if newest == 0 {
		t.Fatal("no schema fixture: TestSchemaFixtureForEveryVersion says how to make one")
	}
	ctx := context.Background()
	dir, raw := fixtureDB(t, newest)
	future := len(migrations) + 1
	if _, err := raw.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", future)); err != nil {
		t.Fatal(err)
	}
	before := readTables(t, raw)
	raw.Close()

	s, err := Open(ctx, dir)
	if err == nil {
		s.Close()
		t.Fatalf("a database of schema version %d opened with rsa of version %d", future, len(migrations))
	}
	want := fmt.Sprintf("database schema version %d is newer than this rsa (%d): use a newer rsa", future, len(migrations))
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q, want it to say %q", err, want)
	}
	raw, err = sql.Open("sqlite", "file:"+filepath.Join(dir, "rsa.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var v int
	if err := raw.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != future {
		t.Errorf("the refused database has schema version %d %v, want %d as it had", v, err, future)
	}
	checkValuesKept(t, before, readTables(t, raw))
}

// fixtureDB makes a database file from fixture v in a new directory and
// returns the directory and the database, open without the store.
func fixtureDB(t *testing.T, v int) (string, *sql.DB) {
	t.Helper()
	text, err := os.ReadFile(fixturePath(v))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "rsa.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.ExecContext(context.Background(), string(text)); err != nil {
		t.Fatalf("applying %s: %v", fixturePath(v), err)
	}
	return dir, db
}

type schemaObject struct{ Type, Name, Table, SQL string }

func schemaOf(t *testing.T, db *sql.DB) []schemaObject {
	t.Helper()
	rows, err := db.Query(`SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []schemaObject
	for rows.Next() {
		var o schemaObject
		if err := rows.Scan(&o.Type, &o.Name, &o.Table, &o.SQL); err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkFixtureSchema checks that fixture v is a database of version v as
// this code's migrations[:v] make it (so that no shipped migration was
// edited since: the databases out there were made by the old text), with
// rows in every table.
func checkFixtureSchema(t *testing.T, raw *sql.DB, v int) {
	t.Helper()
	var got int
	if err := raw.QueryRow("PRAGMA user_version").Scan(&got); err != nil || got != v {
		t.Fatalf("%s sets user_version %d %v, want %d", fixturePath(v), got, err, v)
	}
	want, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "want.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	for i, m := range migrations[:v] {
		if _, err := want.Exec(m); err != nil {
			t.Fatalf("migration %d: %v", i+1, err)
		}
	}
	if g, w := schemaOf(t, raw), schemaOf(t, want); !reflect.DeepEqual(g, w) {
		t.Errorf("the schema of %s is not what migrations[:%d] make: a migration that shipped was edited "+
			"(never edit one: databases out there were made by its old text; append a new one)", fixturePath(v), v)
		for _, o := range g {
			if !slices.Contains(w, o) {
				t.Errorf("fixture has: %+v", o)
			}
		}
		for _, o := range w {
			if !slices.Contains(g, o) {
				t.Errorf("migrations make: %+v", o)
			}
		}
	}
	for _, o := range schemaOf(t, raw) {
		if o.Type != "table" || strings.HasPrefix(o.Name, "sqlite_") {
			continue
		}
		var n int
		if err := raw.QueryRow(fmt.Sprintf(`SELECT count(*) FROM %s`, sqlName(o.Name))).Scan(&n); err != nil || n == 0 {
			t.Errorf("%s has no rows in table %s (%v): a fixture holds what a daemon wrote in every table of its schema (fillFixture)",
				fixturePath(v), o.Name, err)
		}
	}
}

// tableRows is every table of a database (sqlite_sequence too) with its
// rows, each a column's value in canonical form by column name.
type tableRows map[string][]map[string]string

func readTables(t *testing.T, db *sql.DB) tableRows {
	t.Helper()
	out := tableRows{}
	var tables []string
	scanAll(t, db, `SELECT name FROM sqlite_master WHERE type='table'`, func(r *sql.Rows) error {
		var n string
		err := r.Scan(&n)
		tables = append(tables, n)
		return err
	})
	for _, tbl := range tables {
		rows, err := db.Query(fmt.Sprintf(`SELECT * FROM %s`, sqlName(tbl)))
		if err != nil {
			t.Fatal(err)
		}
		cols, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		vals, ptrs := make([]any, len(cols)), make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		out[tbl] = []map[string]string{}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			row := map[string]string{}
			for i, c := range cols {
				row[c], err = sqlLiteral(vals[i])
				if err != nil {
					t.Fatal(err)
				}
			}
			out[tbl] = append(out[tbl], row)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return out
}

// checkValuesKept checks that every value of before is still in its
// table, column and row in after, and that after has no other rows: the
// migrations add tables and columns but never lose or change what an old
// daemon wrote, whatever the API reads of it. (A migration that changes
// old values on purpose makes before expect the change: valuesAfter.)
func checkValuesKept(t *testing.T, before, after tableRows) {
	t.Helper()
	for _, tbl := range slices.Sorted(maps.Keys(before)) {
		rows := before[tbl]
		now, ok := after[tbl]
		if !ok {
			t.Errorf("table %s is gone after the migrations", tbl)
			continue
		}
		if len(rows) == 0 {
			if len(now) > 0 {
				t.Errorf("table %s has %d rows it did not have", tbl, len(now))
			}
			continue
		}
		cols := slices.Sorted(maps.Keys(rows[0]))
		key := func(row map[string]string) string {
			var b strings.Builder
			for _, c := range cols {
				v, ok := row[c]
				if !ok {
					v = "<no column>"
				}
				fmt.Fprintf(&b, "%s=%s; ", c, v)
			}
			return b.String()
		}
		var was, is []string
		for _, r := range rows {
			was = append(was, key(r))
		}
		for _, r := range now {
			is = append(is, key(r))
		}
		slices.Sort(was)
		slices.Sort(is)
		for _, w := range was {
			if i, found := slices.BinarySearch(is, w); found {
				is = slices.Delete(is, i, i+1)
			} else {
				t.Errorf("table %s lost the row %s", tbl, w)
			}
		}
		if len(is) > 0 {
			t.Errorf("table %s has rows it did not have: %v", tbl, is)
		}
	}
}

// shipped is what a fixture's database held, read with plain SQL as it was
// before any migration.
type shipped struct {
	version      int
	jobs         []shippedJob
	events       map[int64][]job.Event
	drains       map[string]Drain // nil: no table
	debts        []Debt           // nil: no table
	incarnations map[string]string
	nextJob      int64 // the jobs' AUTOINCREMENT counter
}

type shippedJob struct {
	id                  int64
	name                string
	scheduler           *string // nil: no column
	uid, gid            int64
	user                string
	jobState, rsaState  string
	record              []byte
	recordType          string // typeof(record): its storage class
	done                bool
	created, updated, v int64
}

func hasTable(t *testing.T, db *sql.DB, name string) bool {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

func hasColumn(t *testing.T, db *sql.DB, table, column string) bool {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM pragma_table_info(?) WHERE name=?`, table, column).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// scanAll runs q and calls scan for each row.
func scanAll(t *testing.T, db *sql.DB, q string, scan func(*sql.Rows) error) {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

func readShipped(t *testing.T, db *sql.DB) shipped {
	t.Helper()
	var sh shipped
	if err := db.QueryRow("PRAGMA user_version").Scan(&sh.version); err != nil {
		t.Fatal(err)
	}
	scheduler := "NULL"
	if hasColumn(t, db, "jobs", "scheduler") {
		scheduler = "scheduler"
	}
	scanAll(t, db, `SELECT id, name, `+scheduler+`, uid, gid, user, job_state, rsa_state, record, typeof(record), done, created_at, updated_at, version FROM jobs ORDER BY id`,
		func(r *sql.Rows) error {
			var j shippedJob
			var sched sql.NullString
			var rec any
			err := r.Scan(&j.id, &j.name, &sched, &j.uid, &j.gid, &j.user, &j.jobState, &j.rsaState, &rec, &j.recordType, &j.done, &j.created, &j.updated, &j.v)
			if sched.Valid {
				j.scheduler = &sched.String
			}
			switch rec := rec.(type) {
			case []byte:
				j.record = rec
			case string:
				j.record = []byte(rec)
			}
			sh.jobs = append(sh.jobs, j)
			return err
		})
	sh.events = map[int64][]job.Event{}
	scanAll(t, db, `SELECT job_id, at, kind, job_state, rsa_state, message FROM events ORDER BY id`, func(r *sql.Rows) error {
		var e job.Event
		var at int64
		err := r.Scan(&e.JobID, &at, &e.Kind, &e.JobState, &e.RSAState, &e.Message)
		e.At = time.Unix(0, at)
		sh.events[e.JobID] = append(sh.events[e.JobID], e)
		return err
	})
	if hasTable(t, db, "drains") {
		sh.drains = map[string]Drain{}
		scanAll(t, db, `SELECT node, reason, by, since FROM drains`, func(r *sql.Rows) error {
			var d Drain
			var since int64
			err := r.Scan(&d.Node, &d.Reason, &d.By, &since)
			d.Since = time.Unix(0, since)
			sh.drains[d.Node] = d
			return err
		})
	}
	if hasTable(t, db, "debts") {
		sh.debts = []Debt{}
		build := "1" // the build of every debt from before builds (migration 5)
		if hasColumn(t, db, "debts", "build") {
			build = "build"
		}
		scanAll(t, db, `SELECT node, job_id, `+build+`, bytes, since, why FROM debts ORDER BY since, node`, func(r *sql.Rows) error {
			var d Debt
			var since int64
			err := r.Scan(&d.Node, &d.Job, &d.Build, &d.Bytes, &since, &d.Why)
			d.Since = time.Unix(0, since)
			sh.debts = append(sh.debts, d)
			return err
		})
	}
	if hasTable(t, db, "incarnations") {
		sh.incarnations = map[string]string{}
		scanAll(t, db, `SELECT node, incarnation FROM incarnations`, func(r *sql.Rows) error {
			var n, inc string
			err := r.Scan(&n, &inc)
			sh.incarnations[n] = inc
			return err
		})
	}
	scanAll(t, db, `SELECT seq FROM sqlite_sequence WHERE name='jobs'`, func(r *sql.Rows) error { return r.Scan(&sh.nextJob) })
	return sh
}

// schedulerAfter is the scheduler column migration 2 gives a job of a
// database without it: only the named jobs still active answer to a
// scheduler id (a done one's name may have been a user's).
func schedulerAfter(j shippedJob) string {
	if j.scheduler != nil {
		return *j.scheduler
	}
	if j.name != "" && !j.done {
		return "slurm"
	}
	return ""
}

// storedRecordType is the storage class of the job records the store
// writes: Create and Commit bind them as []byte (checkGoesOn checks it).
const storedRecordType = "blob"

// recordAfter is o's record after the migrations. Migration 7 gives a
// record that names no scheduler the one its column has (schedulerAfter):
// json_set adds the key at the end of the object and leaves the rest of
// the text as it was, so the record is its old bytes and the key, and
// nothing else of it changes.
func recordAfter(t *testing.T, o shippedJob) []byte {
	t.Helper()
	var rec struct {
		Scheduler *string `json:"scheduler"`
	}
	if err := json.Unmarshal(o.record, &rec); err != nil {
		t.Fatalf("job %d's record: %v", o.id, err)
	}
	sched := schedulerAfter(o)
	if sched == "" || (rec.Scheduler != nil && *rec.Scheduler != "") {
		return o.record
	}
	if rec.Scheduler != nil || !bytes.HasSuffix(o.record, []byte("}")) || bytes.Equal(o.record, []byte("{}")) {
		t.Fatalf("job %d's record %s is not one a store wrote (json.Marshal, scheduler omitted when empty): "+
			"recordAfter does not know what migration 7 makes of it", o.id, o.record)
	}
	key, err := json.Marshal(sched)
	if err != nil {
		t.Fatal(err)
	}
	out := slices.Clone(o.record[:len(o.record)-1])
	out = append(out, `,"scheduler":`...)
	out = append(out, key...)
	return append(out, '}')
}

// valuesAfter is what the tables of a fixture hold after the migrations,
// given what they held before (values, old): the same values but those the
// migrations change on purpose, the records of migration 7 (recordAfter),
// stored as the store stores a record. The columns and tables the
// migrations add are checked elsewhere.
func valuesAfter(t *testing.T, values tableRows, old shipped) tableRows {
	t.Helper()
	out := maps.Clone(values)
	byID := map[string]shippedJob{}
	for _, o := range old.jobs {
		byID[strconv.FormatInt(o.id, 10)] = o
	}
	out["jobs"] = nil
	for _, row := range values["jobs"] {
		o, ok := byID[row["id"]]
		if !ok {
			t.Fatalf("jobs row %v is not one readShipped read", row)
		}
		if rec := recordAfter(t, o); !bytes.Equal(rec, o.record) {
			row = maps.Clone(row)
			lit, err := sqlLiteral(rec) // []byte: a BLOB
			if err != nil {
				t.Fatal(err)
			}
			row["record"] = lit
		}
		out["jobs"] = append(out["jobs"], row)
	}
	return out
}

// checkJobs reads each shipped job back through the store: its columns,
// every field of its record, its events; the active ones in the copy;
// scheduler ids answering as migration 2 says, and the record naming the
// scheduler its column does (migration 7).
func checkJobs(t *testing.T, s *Store, old shipped) {
	t.Helper()
	ctx := context.Background()
	var all, active []int64
	for _, o := range old.jobs {
		all = append(all, o.id)
		if !o.done {
			active = append(active, o.id)
		}
		j, err := s.Get(ctx, o.id)
		if err != nil {
			t.Errorf("job %d: %v", o.id, err)
			continue
		}
		if j.ID != o.id || j.Spec.SchedulerID != o.name || int64(j.UID) != o.uid || int64(j.GID) != o.gid || j.User != o.user ||
			string(j.State) != o.jobState || string(j.RSA) != o.rsaState || j.Machine().Done() != o.done ||
			j.CreatedAt.UnixNano() != o.created || j.UpdatedAt.UnixNano() != o.updated || j.Version != o.v {
			t.Errorf("job %d reads as id %d name %q uid %d gid %d user %q %s/%s done %v created %d updated %d version %d; "+
				"its row had name %q uid %d gid %d user %q %s/%s done %v created %d updated %d version %d",
				o.id, j.ID, j.Spec.SchedulerID, j.UID, j.GID, j.User, j.State, j.RSA, j.Machine().Done(), j.CreatedAt.UnixNano(), j.UpdatedAt.UnixNano(), j.Version,
				o.name, o.uid, o.gid, o.user, o.jobState, o.rsaState, o.done, o.created, o.updated, o.v)
		}
		checkRecord(t, o, j)

		var sched, recType string
		if err := s.db.QueryRowContext(ctx, `SELECT scheduler, typeof(record) FROM jobs WHERE id=?`, o.id).Scan(&sched, &recType); err != nil {
			t.Errorf("job %d: %v", o.id, err)
		}
		if sched != schedulerAfter(o) {
			t.Errorf("job %d's scheduler column is %q, want %q", o.id, sched, schedulerAfter(o))
		}
		// The daemon goes by the record's scheduler: a Slurm job whose
		// record names none would be taken for an rsa submit job.
		if j.Scheduler != schedulerAfter(o) {
			t.Errorf("job %d reads with scheduler %q, want %q, as its scheduler column says", o.id, j.Scheduler, schedulerAfter(o))
		}
		wantType := o.recordType
		if !bytes.Equal(recordAfter(t, o), o.record) {
			wantType = storedRecordType
		}
		if recType != wantType {
			t.Errorf("job %d's record is stored as %s, want %s", o.id, recType, wantType)
		}

		evs, err := s.Events(ctx, o.id)
		if err != nil {
			t.Errorf("job %d's events: %v", o.id, err)
		}
		if len(evs) == 0 || len(evs) != len(old.events[o.id]) {
			t.Errorf("job %d has %d events, its log had %d", o.id, len(evs), len(old.events[o.id]))
		}
		for i := range min(len(evs), len(old.events[o.id])) {
			g, w := evs[i], old.events[o.id][i]
			if g.JobID != w.JobID || !g.At.Equal(w.At) || g.Kind != w.Kind || g.JobState != w.JobState || g.RSAState != w.RSAState || g.Message != w.Message {
				t.Errorf("job %d's event %d reads as %+v, was %+v", o.id, i, g, w)
			}
		}
	}
	ids := func(js []*job.Job, err error) []int64 {
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, j := range js {
			out = append(out, j.ID)
		}
		return out
	}
	if got := ids(s.List(ctx, false, 0)); !slices.Equal(got, active) {
		t.Errorf("active jobs %v, want %v", got, active)
	}
	if got := ids(s.List(ctx, true, 1000)); !slices.Equal(got, all) {
		t.Errorf("all jobs %v, want %v", got, all)
	}

	// The newest job under each name that answers to it, if any.
	names := map[string]int64{}
	for _, o := range old.jobs {
		if _, ok := names[o.name]; !ok && o.name != "" {
			names[o.name] = 0
		}
		if o.name != "" && schedulerAfter(o) != "" {
			names[o.name] = o.id
		}
	}
	for name, want := range names {
		j, err := s.FindByName(ctx, name)
		switch {
		case want == 0 && !errors.Is(err, ErrNotFound):
			t.Errorf("FindByName(%q) = %v %v, want no job: none answers to a scheduler id", name, j, err)
		case want != 0 && (err != nil || j.ID != want):
			t.Errorf("FindByName(%q) = %v %v, want job %d", name, j, err, want)
		}
	}
}

// checkRecord checks that every field of o's record, as the migrations
// leave it (recordAfter), reads back with the value it had, and that the
// fields the record did not have read as their zero values, which
// job.Job's comments give a meaning for old records.
func checkRecord(t *testing.T, o shippedJob, j *job.Job) {
	t.Helper()
	var was, is map[string]any
	if err := json.Unmarshal(recordAfter(t, o), &was); err != nil {
		t.Errorf("job %d's record: %v", o.id, err)
		return
	}
	now, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(now, &is); err != nil {
		t.Fatal(err)
	}
	for _, d := range jsonChanges("", was, is) {
		t.Errorf("job %d's record: %s", o.id, d)
	}
}

// jsonChanges lists how is differs from was beyond fields added with a
// zero value.
func jsonChanges(path string, was, is any) []string {
	wm, wok := was.(map[string]any)
	im, iok := is.(map[string]any)
	if wok && iok {
		var out []string
		for _, k := range slices.Sorted(maps.Keys(wm)) {
			iv, ok := im[k]
			if !ok {
				out = append(out, fmt.Sprintf("%s%s (%v) was dropped", path, k, wm[k]))
				continue
			}
			out = append(out, jsonChanges(path+k+".", wm[k], iv)...)
		}
		for _, k := range slices.Sorted(maps.Keys(im)) {
			if _, ok := wm[k]; !ok && !jsonZero(im[k]) {
				out = append(out, fmt.Sprintf("%s%s, which the record did not have, reads as %v, not its zero value", path, k, im[k]))
			}
		}
		return out
	}
	wa, wok := was.([]any)
	ia, iok := is.([]any)
	if wok && iok && len(wa) == len(ia) {
		var out []string
		for i := range wa {
			out = append(out, jsonChanges(fmt.Sprintf("%s%d.", path, i), wa[i], ia[i])...)
		}
		return out
	}
	if !reflect.DeepEqual(was, is) {
		return []string{fmt.Sprintf("%s was %v, reads as %v", strings.TrimSuffix(path, "."), was, is)}
	}
	return nil
}

func jsonZero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		return !v
	case float64:
		return v == 0
	case string:
		return v == "" || v == (time.Time{}).Format(time.RFC3339Nano)
	case []any:
		return len(v) == 0
	case map[string]any:
		for _, e := range v {
			if !jsonZero(e) {
				return false
			}
		}
		return true
	}
	return false
}

// wantFixtureJob is one of the jobs every fixture holds, as fillFixture
// (and the throwaway programs that made the fixtures of older commits,
// after it) wrote it.
type wantFixtureJob struct {
	id         int64
	name, user string
	uid        uint32
	state      lifecycle.JobState
	rsa        lifecycle.RSAState
	input      string
	output     string
	alloc      []job.Part // nodes and bytes
	hosts      []string
	error      string
}

// checkWantFixtureJobs checks the fixtures' own jobs field by field, so that
// a fixture that lost them, or a decoding that loses what matters, fails
// here by name.
func checkWantFixtureJobs(t *testing.T, s *Store) {
	t.Helper()
	const gib = 1 << 30
	want := []wantFixtureJob{
		{1, "4101", "alice", 1001, lifecycle.Finished, lifecycle.Released, "/home/alice/in", "/home/alice/out",
			[]job.Part{{Node: "rsa1", Bytes: 2 * gib}, {Node: "rsa2", Bytes: 2 * gib}}, []string{"c1", "c2"}, ""},
		{2, "4102", "bob", 1002, lifecycle.Running, lifecycle.InUseIn, "/scratch/bob/dataset", "",
			[]job.Part{{Node: "rsa1", Bytes: 3 * gib}, {Node: "rsa2", Bytes: 3 * gib}}, []string{"c3", "c4"}, ""},
		{3, "", "carol", 1003, lifecycle.OnDeck, lifecycle.Initial, "/home/carol/in", "/home/carol/out", nil, nil, ""},
		{4, "4104", "alice", 1001, lifecycle.OnDeck, lifecycle.Ready, "/home/alice/in2", "/home/alice/out2",
			[]job.Part{{Node: "rsa3", Bytes: gib}}, nil, ""},
		{5, "", "carol", 1003, lifecycle.Finished, lifecycle.StageOutFailed, "", "/home/carol/results",
			[]job.Part{{Node: "rsa3", Bytes: 2 * gib}}, nil, "copying results/run.log: no space left on device"},
	}
	for _, w := range want {
		j, err := s.Get(context.Background(), w.id)
		if err != nil {
			t.Errorf("job %d: %v", w.id, err)
			continue
		}
		var alloc []job.Part
		for _, p := range j.Alloc {
			alloc = append(alloc, job.Part{Node: p.Node, Bytes: p.Bytes})
		}
		got := wantFixtureJob{j.ID, j.Spec.SchedulerID, j.User, j.UID, j.State, j.RSA, j.Spec.Input, j.Spec.Output, alloc, j.Hosts, j.Error}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("job %d reads as\n\t%+v, want\n\t%+v", w.id, got, w)
		}
		if w.alloc != nil && !strings.HasPrefix(j.Ramdisk, fmt.Sprintf("/run/rsa/ramdisk/%d", w.id)) {
			t.Errorf("job %d's RAMDISK is at %q", w.id, j.Ramdisk)
		}
	}
}

// checkOtherTables reads the drains, debts and incarnations back; a table
// the old schema did not have reads empty.
func checkOtherTables(t *testing.T, s *Store, old shipped) {
	t.Helper()
	ctx := context.Background()
	drains, err := s.Drains(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(drains) != len(old.drains) {
		t.Errorf("drains %+v, want %+v", drains, old.drains)
	}
	for n, w := range old.drains {
		if g := drains[n]; g.Node != w.Node || g.Reason != w.Reason || g.By != w.By || !g.Since.Equal(w.Since) {
			t.Errorf("drain of %s reads as %+v, was %+v", n, g, w)
		}
	}
	debts, err := s.Debts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(debts) != len(old.debts) {
		t.Errorf("debts %+v, want %+v", debts, old.debts)
	}
	for i := range min(len(debts), len(old.debts)) {
		if g, w := debts[i], old.debts[i]; g.Node != w.Node || g.Job != w.Job || g.Build != w.Build || g.Bytes != w.Bytes || !g.Since.Equal(w.Since) || g.Why != w.Why {
			t.Errorf("debt %d reads as %+v, was %+v", i, g, w)
		}
	}
	incs, err := s.Incarnations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(incs) != len(old.incarnations) || (len(incs) > 0 && !maps.Equal(incs, old.incarnations)) {
		t.Errorf("incarnations %v, want %v", incs, old.incarnations)
	}
}

// checkGoesOn has the daemon go on after the upgrade: each active job
// takes a commit (its record's version is its row's), a new job gets an id
// no job ever had, and every table takes rows.
func checkGoesOn(t *testing.T, s *Store, old shipped) {
	t.Helper()
	ctx := context.Background()
	later := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	active, err := s.List(ctx, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range active {
		v := j.Version
		j.UpdatedAt = later
		if err := s.Commit(ctx, j, []job.Event{{At: later, Kind: "resume", JobState: j.State, RSAState: j.RSA, Message: "rsa serve started"}}); err != nil {
			t.Errorf("committing job %d after the upgrade: %v", j.ID, err)
		} else if got, _ := s.Get(ctx, j.ID); got.Version != v+1 || !got.UpdatedAt.Equal(later) {
			t.Errorf("job %d after its commit: version %d updated %v", j.ID, got.Version, got.UpdatedAt)
		}
	}
	top := old.nextJob
	for _, o := range old.jobs {
		top = max(top, o.id)
	}
	n := &job.Job{Spec: job.Spec{SchedulerID: "5001", Input: "/home/dave/in"}, UID: 1004, GID: 1004, User: "dave", Scheduler: "slurm",
		State: lifecycle.OnDeck, RSA: lifecycle.Initial, CreatedAt: later, UpdatedAt: later}
	if err := s.Create(ctx, n, nil); err != nil {
		t.Fatalf("a new job after the upgrade: %v", err)
	}
	if n.ID <= top {
		t.Errorf("a new job got id %d; job ids up to %d were given before", n.ID, top)
	}
	var types []string
	scanAll(t, s.db, fmt.Sprintf(`SELECT DISTINCT typeof(record) FROM jobs WHERE id=%d OR updated_at=%d`, n.ID, later.UnixNano()),
		func(r *sql.Rows) error {
			var ty string
			err := r.Scan(&ty)
			types = append(types, ty)
			return err
		})
	if !slices.Equal(types, []string{storedRecordType}) {
		t.Errorf("the store writes records as %v, not %s as the tests of old records expect", types, storedRecordType)
	}
	if j, err := s.FindByName(ctx, "5001"); err != nil || j.ID != n.ID {
		t.Errorf("FindByName of the new job: %v %v", j, err)
	}

	if err := s.SetDrain(ctx, Drain{Node: "rsa9", Reason: "after the upgrade", By: "root", Since: later}); err != nil {
		t.Errorf("SetDrain after the upgrade: %v", err)
	}
	if d, err := s.Drains(ctx); err != nil || d["rsa9"].Reason != "after the upgrade" || len(d) != len(old.drains)+1 {
		t.Errorf("drains after the upgrade: %v %v", d, err)
	}
	// A debt of a later build of a node and job already owed is a debt of
	// its own (migration 5).
	for _, d := range append(slices.Clone(old.debts), Debt{Node: "rsa9", Job: n.ID, Build: 1}) {
		d.Build++
		d.Bytes, d.Since, d.Why = 1, later, "after the upgrade"
		if err := s.AddDebt(ctx, d); err != nil {
			t.Errorf("AddDebt after the upgrade: %v", err)
		}
	}
	if d, err := s.Debts(ctx); err != nil || len(d) != 2*len(old.debts)+1 {
		t.Errorf("debts after the upgrade: %d %v, want %d", len(d), err, 2*len(old.debts)+1)
	}
	if err := s.SetIncarnation(ctx, "rsa9", "boot/token", later); err != nil {
		t.Errorf("SetIncarnation after the upgrade: %v", err)
	}
	if inc, err := s.Incarnations(ctx); err != nil || inc["rsa9"] != "boot/token" {
		t.Errorf("incarnations after the upgrade: %v %v", inc, err)
	}
}

// A fixture is what dumpSQL wrote; dumping its database again gives the
// same SQL, so the fixtures remake exactly what was dumped (a record stays
// a BLOB, a purged id stays counted).
func TestSchemaFixturesRoundTrip(t *testing.T) {
	for v := firstShippedSchema; v <= len(migrations); v++ {
		text, err := os.ReadFile(fixturePath(v))
		if err != nil {
			continue // TestSchemaFixtureForEveryVersion reports it
		}
		_, raw := fixtureDB(t, v)
		again, err := dumpSQL(context.Background(), raw)
		if err != nil {
			t.Fatal(err)
		}
		if body := text[bytes.Index(text, []byte("\nBEGIN;\n"))+1:]; string(body) != again {
			t.Errorf("%s does not remake what it was dumped from: dumped again it differs", fixturePath(v))
		}
	}
}
