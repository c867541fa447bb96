package action_test

import (
	"context"
	"errors"
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
	"github.com/rsa-hpc/rsa/internal/daemon/action"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/engine/memengine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/joblog"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/stage"
)

var errInjected = errors.New("injected failure")

const gib = 1 << 30

// rig runs one action over real parts where they are cheap: the engine in
// memory, which stages itself (memengine.WithStager, so that no stage
// runs as the job's user in a cgroup), and the jobs' own logs in a
// directory of the test's; the daemon and the compute nodes are fakes
// that record what they were asked.
type rig struct {
	t    *testing.T
	mem  *memengine.Engine
	eng  *scripted // what the actions see
	port *fakeDaemon
	acc  *fakeAccess
	logs *joblog.Logs
	env  *action.Env
	j    *job.Job
	// ctx is the action's; cancel ends it, as the daemon stopping or
	// the lifecycle's StopStageIn does.
	ctx    context.Context
	cancel context.CancelFunc

	mu sync.Mutex
	// stage is what each stage the engine takes does; nil: nothing,
	// successfully.
	stage memengine.StageFunc
	tasks []stage.Task // the stages the engine took
}

// newRig builds the parts and job 7 of the jobs' user (jobUser), with
// input and output directories of that user's, 1 GiB over RSA nodes rsa01
// and rsa02, running on compute nodes n1 and n2. Its RAMDISK is not built
// yet: built does that.
func newRig(t *testing.T) *rig {
	t.Helper()
	// The jobs' user passes the directories down to its own: the
	// actions check them with its rights. t.TempDir's are root's alone.
	base, err := os.MkdirTemp("", "rsa-action-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	uid, gid := jobUser()
	in, out := filepath.Join(base, "in"), filepath.Join(base, "out")
	for _, p := range []string{in, out} {
		userDir(t, p, uid, gid)
	}
	root := filepath.Join(base, "ramdisks")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	logs := joblog.New(filepath.Join(base, "state"), log)
	if err := logs.MakeDir(); err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, mem: memengine.New(root), logs: logs, acc: &fakeAccess{fail: map[string][]error{}}}
	r.eng = &scripted{Stager: memengine.WithStager(r.mem, r.runStage)}
	r.port = &fakeDaemon{root: root, progress: map[int64]job.Progress{}}
	r.j = &job.Job{ID: 7, Build: 1, CreatedAt: time.Now(), UID: uid, GID: gid, User: "alice",
		Spec:    job.Spec{Input: in, Output: out, Capacity: gib, ComputeNodes: 2},
		Alloc:   []job.Part{{Node: "rsa01", Bytes: gib / 2}, {Node: "rsa02", Bytes: gib / 2}},
		Ramdisk: engine.DirFor(root, 7), Hosts: []string{"n1", "n2"}}
	r.env = &action.Env{Config: &config.Config{RamdiskRoot: root, Limits: config.Limits{KillGrace: time.Second}}, Engine: r.eng, Access: r.acc, Logs: logs, Log: log, Daemon: r.port}
	r.ctx, r.cancel = context.WithCancel(t.Context())
	t.Cleanup(r.cancel)
	return r
}

// jobUser is whose the test's jobs are: the test's own user, unless that
// is root, for whom no RAMDISK is built and whose directories RSA never
// mounts over; then a user of no account, given the job's directories.
func jobUser() (uid, gid uint32) {
	if os.Geteuid() == 0 {
		return 4242, 4242
	}
	return uint32(os.Getuid()), uint32(os.Getgid())
}

// userDir makes the directory p, mode 0750, uid's.
func userDir(t *testing.T, p string, uid, gid uint32) {
	t.Helper()
	if err := os.Mkdir(p, 0o750); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(p, int(uid), int(gid)); err != nil {
			t.Fatal(err)
		}
	}
}

// rd is the job's RAMDISK as the daemon describes it.
func (r *rig) rd() engine.Ramdisk { return r.port.Ramdisk(r.j) }

// built builds the job's RAMDISK, as the action before this one did.
func (r *rig) built() {
	r.t.Helper()
	if err := r.mem.Construct(r.t.Context(), r.rd()); err != nil {
		r.t.Fatal(err)
	}
}

// write puts a file of the job's into its RAMDISK.
func (r *rig) write(name, content string) {
	r.t.Helper()
	if err := os.WriteFile(filepath.Join(r.rd().Dir, name), []byte(content), 0o600); err != nil {
		r.t.Fatal(err)
	}
}

// degrade makes the engine's Check and Probe of the RAMDISK report dg.
func (r *rig) degrade(dg engine.Degraded) { r.mem.Degrade(r.rd(), dg) }

func (r *rig) runStage(ctx context.Context, rd engine.Ramdisk, t stage.Task) error {
	r.mu.Lock()
	r.tasks = append(r.tasks, t)
	fn := r.stage
	r.mu.Unlock()
	if fn == nil {
		return nil
	}
	return fn(ctx, rd, t)
}

// stages are the stages the engine took, in order.
func (r *rig) stages() []stage.Task {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.tasks)
}

// calls are the engine's calls of the methods given, in order.
func (r *rig) calls(methods ...string) []string {
	var out []string
	for _, c := range r.mem.Calls() {
		if slices.Contains(methods, c.Method) {
			out = append(out, c.Method)
		}
	}
	return out
}

// log is the job's own log.
func (r *rig) log() string { return r.logs.Tail(r.j.ID, r.j.CreatedAt, 1<<20) }

// actionCase is one run of an action and what it must end with.
type actionCase struct {
	name  string
	built bool       // the RAMDISK is there when the action starts
	setup func(*rig) // failures and states to come, before the run
	// want is the event's kind, Nodes, Build and Whole; its Reason must
	// contain each of reason, or be empty if reason is.
	want   lifecycle.Event
	reason []string
	// The job's log contains each of log, and none of notLog.
	log, notLog []string
	check       func(t *testing.T, r *rig)
}

// runCases runs each case's action of kind on a rig of its own.
func runCases(t *testing.T, kind lifecycle.ActionKind, cases []actionCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t)
			if c.built {
				r.built()
			}
			if c.setup != nil {
				c.setup(r)
			}
			a, ok := action.Set(r.env)[kind]
			if !ok {
				t.Fatalf("no action %s in the set", kind)
			}
			ev := a.Run(r.ctx, r.j)
			if ev.Kind != c.want.Kind || !slices.Equal(ev.Nodes, c.want.Nodes) || ev.Build != c.want.Build || ev.Whole != c.want.Whole {
				t.Errorf("event %s (nodes %v, build %d, whole %v, reason %q); want %s (nodes %v, build %d, whole %v)",
					ev.Kind, ev.Nodes, ev.Build, ev.Whole, ev.Reason, c.want.Kind, c.want.Nodes, c.want.Build, c.want.Whole)
			}
			if len(c.reason) == 0 && ev.Reason != "" {
				t.Errorf("event %s has the reason %q; want none", ev.Kind, ev.Reason)
			}
			for _, s := range c.reason {
				if !strings.Contains(ev.Reason, s) {
					t.Errorf("the reason %q lacks %q", ev.Reason, s)
				}
			}
			log := r.log()
			for _, s := range c.log {
				if !strings.Contains(log, s) {
					t.Errorf("the job's log lacks %q; it is:\n%s", s, log)
				}
			}
			for _, s := range c.notLog {
				if strings.Contains(log, s) {
					t.Errorf("the job's log has %q; it is:\n%s", s, log)
				}
			}
			if c.check != nil {
				c.check(t, r)
			}
		})
	}
}

// scripted is the engine in memory, with the answers of Check and
// Destroy replaced where a case says (nil: the engine's own).
type scripted struct {
	*memengine.Stager
	mu      sync.Mutex
	checks  int
	check   func(n int, r engine.Ramdisk) (engine.Degraded, error) // n counts the Checks from 1
	destroy func(r engine.Ramdisk) error
	// profile answers Profile; nil: the engine counts nothing.
	profile func(r engine.Ramdisk) ([]engine.OpStat, bool, error)
}

func (e *scripted) Profile(_ context.Context, r engine.Ramdisk) ([]engine.OpStat, bool, error) {
	if e.profile == nil {
		return nil, false, nil
	}
	return e.profile(r)
}

func (e *scripted) Check(ctx context.Context, r engine.Ramdisk) (engine.Degraded, error) {
	e.mu.Lock()
	e.checks++
	n, fn := e.checks, e.check
	e.mu.Unlock()
	// Asked all the same: the engine's calls list every Check.
	dg, err := e.Stager.Check(ctx, r)
	if fn != nil {
		return fn(n, r)
	}
	return dg, err
}

func (e *scripted) Destroy(ctx context.Context, r engine.Ramdisk) error {
	if e.destroy != nil {
		return e.destroy(r)
	}
	return e.Stager.Destroy(ctx, r)
}

// fakeDaemon is the daemon as the actions see it: it answers as the case
// set it, and records what it was told.
type fakeDaemon struct {
	root     string
	rootOnly bool     // the RAMDISK holds an input image or private output
	silent   []string // Silent's answer
	record   *job.Job // Record's answer; nil: Record fails
	probe    engine.Degraded
	probeErr error
	oweErr   error
	mountErr error

	mu        sync.Mutex
	owed      []*engine.DebtError
	owedMount []*access.UnreachableError
	forgot    []int64
	progress  map[int64]job.Progress
	phases    []string // the phases SetProgress was given, in order
}

var _ action.Daemon = (*fakeDaemon)(nil)

func (d *fakeDaemon) Ramdisk(j *job.Job) engine.Ramdisk {
	return engine.Ramdisk{Job: j.ID, Dir: engine.DirFor(d.root, j.ID), Parts: j.Alloc, Build: j.Build, UID: j.UID, GID: j.GID, RootOnly: d.rootOnly}
}

func (d *fakeDaemon) Silent([]job.Part) []string { return slices.Clone(d.silent) }

func (d *fakeDaemon) Record(_ context.Context, id int64) (*job.Job, error) {
	if d.record == nil {
		return nil, errors.New("no record in the test")
	}
	return d.record, nil
}

func (d *fakeDaemon) Probe(context.Context, engine.Ramdisk) (engine.Degraded, <-chan struct{}, error) {
	done := make(chan struct{})
	close(done)
	return d.probe, done, d.probeErr
}

func (d *fakeDaemon) Owe(_ context.Context, _ *job.Job, debt *engine.DebtError) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.owed = append(d.owed, debt)
	return d.oweErr
}

func (d *fakeDaemon) OweMounts(_ context.Context, _ *job.Job, un *access.UnreachableError) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.owedMount = append(d.owedMount, un)
	return d.mountErr
}

func (d *fakeDaemon) Forget(id int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.forgot = append(d.forgot, id)
}

func (d *fakeDaemon) Progress(id int64) job.Progress {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.progress[id]
}

func (d *fakeDaemon) SetProgress(id int64, p job.Progress) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.progress[id] = p
	d.phases = append(d.phases, p.Phase)
}

func (d *fakeDaemon) ImageBuilt(int64, time.Duration) {}

// fakeAccess is compute nodes that mount nothing: it records each call
// and fails the next call of a method with what failNext queued.
type fakeAccess struct {
	mu    sync.Mutex
	calls []accessCall
	fail  map[string][]error // "Bind" or "Unbind" → errors, first next
}

// accessCall is one call of the node access.
type accessCall struct {
	method string // "Bind" or "Unbind"
	nodes  []string
	role   access.Role // Bind's
	target string      // Bind's
	detach bool        // Unbind's
}

var _ access.Access = (*fakeAccess)(nil)

func (a *fakeAccess) failNext(method string, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fail[method] = append(a.fail[method], err)
}

func (a *fakeAccess) called(c accessCall) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, c)
	q := a.fail[c.method]
	if len(q) == 0 {
		return nil
	}
	a.fail[c.method] = q[1:]
	return q[0]
}

func (a *fakeAccess) Bind(_ context.Context, nodes []string, role access.Role, _ engine.Ramdisk, target string) error {
	return a.called(accessCall{method: "Bind", nodes: slices.Clone(nodes), role: role, target: target})
}

func (a *fakeAccess) Unbind(_ context.Context, nodes []string, _ engine.Ramdisk, detach bool) error {
	return a.called(accessCall{method: "Unbind", nodes: slices.Clone(nodes), detach: detach})
}

// made are the calls so far.
func (a *fakeAccess) made() []accessCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.calls)
}

// unreachable is the node access's answer when compute node n1 alone
// could not be reached.
func unreachable() error { return &access.UnreachableError{Nodes: []string{"n1"}, Err: errInjected} }
