package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/access"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/engine/memengine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/stage"
	"github.com/rsa-hpc/rsa/internal/store"
)

// unitGiB is the size of the test's jobs; each of its two RSA nodes has
// unitNodeBytes.
const (
	unitGiB       = 1 << 30
	unitNodeBytes = 4 * unitGiB
)

// unit is a daemon as New builds it (newDaemon), on an engine in memory
// that runs the stages itself (memengine.WithStager) and a node access
// that mounts nothing (fakeAccess): what its actions do runs as the
// test's user, with no mount, no child process and no other user. Its loop
// runs once run is called, until the test ends.
type unit struct {
	t   *testing.T
	d   *Daemon
	mem *memengine.Engine
	acc *fakeAccess
	// uid and gid are the jobs' user, who owns in and out.
	uid, gid uint32
	in, out  string
	// stage is what each stage does once the engine took it; nil:
	// nothing, successfully. Set before run.
	stage memengine.StageFunc
	// began is closed when a stage blockStageIn holds begins.
	began chan struct{}

	mu    sync.Mutex
	calls []unitCall
}

// unitCall is one call of the engine or the node access, with the
// rsa-state of its job in the store at that moment.
type unitCall struct {
	what  string // "Construct", "Destroy", "Stage stage-in", "Bind input directory", "Unbind detach", ...
	job   int64
	state lifecycle.RSAState
	// by are the actions that make such a call: the committed state's
	// work must be one of them.
	by []lifecycle.ActionKind
}

// newUnit builds the daemon, its loop not running yet: a test sets up
// its jobs and failures first.
func newUnit(t *testing.T) *unit {
	t.Helper()
	// A tmpfs: the store commits synchronously.
	dir, err := os.MkdirTemp("/dev/shm", "rsa-unit-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The jobs' user passes it: the daemon checks their directories with
	// their rights.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	u := &unit{t: t, in: filepath.Join(dir, "in"), out: filepath.Join(dir, "out")}
	u.uid, u.gid = jobUser()
	for _, p := range []string{u.in, u.out} {
		u.userDir(p)
	}
	st, err := store.Open(context.Background(), filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := &config.Config{
		StateDir: filepath.Join(dir, "state"), RamdiskRoot: filepath.Join(dir, "ramdisks"),
		Scheduler: config.SchedulerNone,
		// The loop is driven by the test's events: its own tick never
		// comes.
		Tick:  time.Hour,
		Nodes: []config.Node{{Name: "rsa01", Capacity: unitNodeBytes}, {Name: "rsa02", Capacity: unitNodeBytes}},
	}
	if err := os.Mkdir(filepath.Join(cfg.StateDir, "logs"), 0o700); err != nil {
		t.Fatal(err)
	}
	u.mem = memengine.New(cfg.RamdiskRoot)
	stager := memengine.WithStager(u.mem, func(ctx context.Context, r engine.Ramdisk, task stage.Task) error {
		if u.stage == nil {
			return nil
		}
		return u.stage(ctx, r, task)
	})
	u.acc = &fakeAccess{u: u, fail: map[string][]error{}}
	u.d = newDaemon(cfg, deps{store: st, engine: &recording{Engine: stager, u: u}, access: u.acc},
		Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Version: "test"})
	// After the loop stops: no action of the daemon outlives the test's
	// directories.
	t.Cleanup(func() { u.d.cancel(); u.d.wg.Wait() })
	return u
}

// jobUser is whose the test's jobs are: the test's own user, who owns the
// directories the test makes. Under root, whose directories RSA never
// mounts over and for whom no RAMDISK is built, it is a user of no
// account, given those directories (userDir).
func jobUser() (uid, gid uint32) {
	if os.Geteuid() == 0 {
		return 4242, 4242
	}
	return uint32(os.Getuid()), uint32(os.Getgid())
}

// userDir makes the directory p, the jobs' user's.
func (u *unit) userDir(p string) {
	u.t.Helper()
	if err := os.Mkdir(p, 0o755); err != nil {
		u.t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(p, int(u.uid), int(u.gid)); err != nil {
			u.t.Fatal(err)
		}
	}
}

// run runs the loop until the test ends.
func (u *unit) run() { runLoop(u.t, u.d) }

// job stores a job of the test's user in the given states, with input and
// output directories and 1 GiB, edited by edit; from ASSIGNED on it holds
// a part on rsa01, and a state whose RAMDISK exists has it built.
func (u *unit) job(state lifecycle.JobState, rsa lifecycle.RSAState, edit func(*job.Job)) *job.Job {
	u.t.Helper()
	ctx := context.Background()
	now := time.Now()
	j := &job.Job{Spec: job.Spec{Input: u.in, Output: u.out, Capacity: unitGiB, Delay: 24 * time.Hour, ComputeNodes: 1},
		UID: u.uid, GID: u.gid, User: "alice", State: state, RSA: rsa, CreatedAt: now, UpdatedAt: now}
	if state == lifecycle.Running || state == lifecycle.Finished {
		j.StartedAt = now
	}
	if rsa == lifecycle.InUseIn {
		j.InputAt = now
	}
	if lifecycle.HoldsNodes(rsa) {
		j.Alloc = []job.Part{{Node: "rsa01", Bytes: unitGiB}}
	}
	if edit != nil {
		edit(j)
	}
	if err := u.d.store.Create(ctx, j, nil); err != nil {
		u.t.Fatal(err)
	}
	if !lifecycle.HoldsNodes(rsa) {
		return j
	}
	j.Ramdisk = engine.DirFor(u.d.cfg.RamdiskRoot, j.ID)
	if lifecycle.HasRamdisk(rsa) {
		j.Build = 1
		if err := u.mem.Construct(ctx, u.d.ramdisk(j)); err != nil {
			u.t.Fatal(err)
		}
	}
	if err := u.d.store.Commit(ctx, j, nil); err != nil {
		u.t.Fatal(err)
	}
	return j
}

// send hands ev to the loop and waits for its commit; an event the job's
// state does not take fails the test.
func (u *unit) send(j *job.Job, kind lifecycle.EventKind) {
	u.t.Helper()
	if _, err := u.d.call(context.Background(), msg{id: j.ID, ev: lifecycle.Event{Kind: kind, At: time.Now()}}); err != nil {
		u.t.Fatalf("%s for job %d: %v", kind, j.ID, err)
	}
}

// await returns the job once done holds for its committed record,
// checking after each commit. The minute is a guard against a job that
// never gets there, not a measure of speed.
func (u *unit) await(j *job.Job, done func(*job.Job) bool, what string) *job.Job {
	u.t.Helper()
	guard := time.NewTimer(time.Minute)
	defer guard.Stop()
	for {
		u.d.mu.Lock()
		ch := u.d.notify
		u.d.mu.Unlock()
		got := u.get(j)
		if done(got) {
			return got
		}
		select {
		case <-ch:
		case <-guard.C:
			u.t.Fatalf("job %d never %s: it is %s/%s (error %q); its log:\n%s", j.ID, what, got.State, got.RSA, got.Error, u.events(j))
		}
	}
}

func (u *unit) get(j *job.Job) *job.Job {
	u.t.Helper()
	got, err := u.d.store.Get(context.Background(), j.ID)
	if err != nil {
		u.t.Fatal(err)
	}
	return got
}

// events is the job's event log, one line each.
func (u *unit) events(j *job.Job) string {
	u.t.Helper()
	evs, err := u.d.store.Events(context.Background(), j.ID)
	if err != nil {
		u.t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "  %s: %s/%s (%s)\n", e.Kind, e.JobState, e.RSAState, e.Message)
	}
	return b.String()
}

// record notes a call about job id, made by one of the actions by.
func (u *unit) record(what string, id int64, by ...lifecycle.ActionKind) {
	var state lifecycle.RSAState
	if j, err := u.d.store.Get(context.Background(), id); err == nil {
		state = j.RSA
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.calls = append(u.calls, unitCall{what: what, job: id, state: state, by: by})
}

// callsOf are the calls about job id so far.
func (u *unit) callsOf(id int64) []unitCall {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(u.calls), func(c unitCall) bool { return c.job != id })
}

// called reports whether job id's calls include one that is exactly what.
func (u *unit) called(id int64, what string) bool {
	return slices.ContainsFunc(u.callsOf(id), func(c unitCall) bool { return c.what == what })
}

// recording is the test's engine: it notes each Construct, Destroy and
// Stage with its job's committed state. Its other optional interfaces are
// found through it (Unwrap).
type recording struct {
	engine.Engine // a *memengine.Stager
	u             *unit
}

var (
	_ engine.Stager    = (*recording)(nil)
	_ engine.Unwrapper = (*recording)(nil)
)

func (e *recording) Unwrap() engine.Engine { return e.Engine }

func (e *recording) Construct(ctx context.Context, r engine.Ramdisk) error {
	e.u.record("Construct", r.Job, lifecycle.Construct)
	return e.Engine.Construct(ctx, r)
}

func (e *recording) Destroy(ctx context.Context, r engine.Ramdisk) error {
	e.u.record("Destroy", r.Job, lifecycle.Destroy)
	return e.Engine.Destroy(ctx, r)
}

func (e *recording) Stage(ctx context.Context, r engine.Ramdisk, t stage.Task) error {
	by := lifecycle.StageIn
	if t.Phase == stage.StageOut {
		by = lifecycle.StageOut
	}
	e.u.record("Stage "+string(t.Phase), r.Job, by)
	return e.Engine.(engine.Stager).Stage(ctx, r, t)
}

// watching is an engine that watches its RSA nodes (engine.Nodes): those
// in down did not answer its last look. Its other optional interfaces are
// found through it (Unwrap).
type watching struct {
	engine.Engine
	down []string
}

var (
	_ engine.Nodes     = (*watching)(nil)
	_ engine.Unwrapper = (*watching)(nil)
)

func (e *watching) Unwrap() engine.Engine       { return e.Engine }
func (e *watching) Placeable(n string) bool     { return e.Up(n) }
func (e *watching) Unplaceable() string         { return "silent in the test" }
func (e *watching) Up(n string) bool            { return !slices.Contains(e.down, n) }
func (e *watching) Incarnation(string) string   { return "" }
func (e *watching) ComputeNodes() []string      { return nil }
func (e *watching) Health() []engine.NodeHealth { return nil }

// fakeAccess is a access.Access that mounts nothing. It notes each call
// with its job's committed state (unit.calls) and fails the next call of
// a method with what failNext queued for it.
type fakeAccess struct {
	u    *unit
	mu   sync.Mutex
	fail map[string][]error // "Bind" or "Unbind" → errors, first next
}

var _ access.Access = (*fakeAccess)(nil)

// failNext makes the next call of method ("Bind", "Unbind") fail with
// err; several queue up.
func (a *fakeAccess) failNext(method string, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fail[method] = append(a.fail[method], err)
}

func (a *fakeAccess) next(method string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	q := a.fail[method]
	if len(q) == 0 {
		return nil
	}
	a.fail[method] = q[1:]
	return q[0]
}

func (a *fakeAccess) Bind(_ context.Context, _ []string, role access.Role, rd engine.Ramdisk, target string) error {
	by := lifecycle.MountIn
	if role == access.OutputRole {
		by = lifecycle.MountOut
	}
	a.u.record("Bind "+string(role)+" "+target, rd.Job, by)
	return a.next("Bind")
}

func (a *fakeAccess) Unbind(_ context.Context, _ []string, rd engine.Ramdisk, detach bool) error {
	if detach {
		a.u.record("Unbind detach", rd.Job, lifecycle.StageOut, lifecycle.Destroy)
	} else {
		a.u.record("Unbind", rd.Job, lifecycle.Unmount)
	}
	return a.next("Unbind")
}
