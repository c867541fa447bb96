package service

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/admission"
	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/daemon/board"
	"github.com/rsa-hpc/rsa/internal/daemon/debt"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/engine/memengine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/joblog"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/refuse"
	"github.com/rsa-hpc/rsa/internal/store"
)

// The users of the tests: accounts every Debian passwd has, so that no test
// makes one.
const (
	nobody    = 65534 // owns the jobs
	stranger  = 1     // daemon: owns none of them
	scheduler = 2     // bin: the fake scheduler's user
)

var (
	rootPeer      = api.Peer{UID: 0}
	ownerPeer     = api.Peer{UID: nobody, GID: nobody}
	strangerPeer  = api.Peer{UID: stranger, GID: stranger}
	schedulerPeer = api.Peer{UID: scheduler, GID: scheduler}
)

// applied is one call of fakeCore.Apply.
type applied struct {
	id   int64
	kind lifecycle.EventKind
	edit bool
}

// fakeCore is the daemon as the service reaches it, over the rig's store:
// Admit applies the limits and creates the job as the daemon's does; Apply
// steps the machine and commits the record, without the daemon's actions.
type fakeCore struct {
	store  *store.Store
	limits config.Limits
	root   string // the engine's root

	admitting sync.Mutex
	mu        sync.Mutex
	admitted  int
	applied   []applied
	watched   []int64
	evicted   []int64
	notify    chan struct{}
}

var _ Core = (*fakeCore)(nil)

func (c *fakeCore) Admit(ctx context.Context, j *job.Job, prepare func(*job.Job) error, submit job.Event) error {
	c.admitting.Lock()
	defer c.admitting.Unlock()
	c.mu.Lock()
	c.admitted++
	c.mu.Unlock()
	active, err := c.store.List(ctx, false, 0)
	if err != nil {
		return err
	}
	if err := admission.Limit(active, j.UID, j.User, c.limits); err != nil {
		return err
	}
	if prepare != nil {
		if err := prepare(j); err != nil {
			return err
		}
	}
	submit.JobState, submit.RSAState = j.State, j.RSA
	return c.store.Create(ctx, j, []job.Event{submit})
}

func (c *fakeCore) Apply(ctx context.Context, id int64, ev lifecycle.Event, edit func(*job.Job)) (*job.Job, error) {
	c.mu.Lock()
	c.applied = append(c.applied, applied{id: id, kind: ev.Kind, edit: edit != nil})
	c.mu.Unlock()
	j, err := c.store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	out := lifecycle.Step(j.Machine(), ev)
	if out.Ignored {
		return j, refuse.NotApplicable("job %d is %s/%s: %s does not apply now", j.ID, j.State, j.RSA, ev.Kind)
	}
	next := *j
	next.State, next.RSA = out.Job.State, out.Job.RSA
	next.StartedAt, next.FinishedAt, next.Error = out.Job.StartedAt, out.Job.FinishedAt, out.Job.Error
	if edit != nil {
		edit(&next)
	}
	var evs []job.Event
	for _, ch := range out.Changes {
		evs = append(evs, job.Event{At: ev.At, Kind: string(ev.Kind), JobState: ch.ToJob, RSAState: ch.ToRSA, Message: ch.String()})
	}
	next.UpdatedAt = time.Now()
	if err := c.store.Commit(ctx, &next, evs); err != nil {
		return j, err
	}
	c.mu.Lock()
	close(c.notify)
	c.notify = make(chan struct{})
	c.mu.Unlock()
	return &next, nil
}

func (c *fakeCore) Changes() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.notify
}

func (c *fakeCore) WatchOwner(j *job.Job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watched = append(c.watched, j.ID)
}

func (c *fakeCore) Ramdisk(j *job.Job) engine.Ramdisk {
	return engine.Ramdisk{Job: j.ID, Build: j.Build, Dir: engine.DirFor(c.root, j.ID), Parts: j.Alloc, UID: j.UID, GID: j.GID}
}

func (c *fakeCore) Evict(ctx context.Context, j *job.Job, rd engine.Ramdisk) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evicted = append(c.evicted, j.ID)
	return nil
}

// calls is what Apply was asked, in order.
func (c *fakeCore) calls() []applied {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.applied)
}

// fakeScheduler counts the scheduler's users by uid.
type fakeScheduler struct{ users []uint32 }

func (s fakeScheduler) Hook(context.Context, api.Peer, api.HookRequest) (*api.HookReply, error) {
	return nil, refuse.NotFound("no hooks here")
}

func (s fakeScheduler) IsScheduler(p api.Peer) bool { return slices.Contains(s.users, p.UID) }

// rig is a Service over a real store and memengine, with a fake Core.
type rig struct {
	t     *testing.T
	ctx   context.Context
	cfg   *config.Config
	store *store.Store
	eng   *memengine.Engine
	core  *fakeCore
	logs  *joblog.Logs
	debts *debt.Ledger
	board *board.Board
	svc   *Service
}

// newRig is a rig whose config, two RSA nodes of 1G with the default
// limits, edit may change before the Service is made.
func newRig(t *testing.T, edit func(*config.Config)) *rig {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	cfg := &config.Config{
		StateDir:    dir,
		RamdiskRoot: dir + "/ramdisk",
		Scheduler:   config.SchedulerNone,
		PrivateData: true,
		Nodes:       []config.Node{{Name: "rsa1", Capacity: 1 << 30}, {Name: "rsa2", Capacity: 1 << 30}},
		Limits:      config.Limits{MaxActiveJobs: 256, MaxJobsPerUser: 32},
	}
	if edit != nil {
		edit(cfg)
	}
	st, err := store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.DiscardHandler)
	logs := joblog.New(dir, log)
	if err := logs.MakeDir(); err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, ctx: ctx, cfg: cfg, store: st, eng: memengine.New(cfg.RamdiskRoot), logs: logs, board: &board.Board{}}
	r.core = &fakeCore{store: st, limits: cfg.Limits, root: cfg.RamdiskRoot, notify: make(chan struct{})}
	r.debts = debt.New(st, nil, logs, log, func() {})
	r.svc = New(r.deps())
	return r
}

// deps are what the rig's Service works through.
func (r *rig) deps() Deps {
	return Deps{Config: r.cfg, Store: r.store, Engine: r.eng, Core: r.core, Scheduler: fakeScheduler{users: []uint32{scheduler}},
		Board: r.board, Debts: r.debts, Logs: r.logs, Log: slog.New(slog.DiscardHandler), Version: "test"}
}

// job stores a job of nobody's in the states given, with paths a stranger
// must not see under private_data, as edit changes it.
func (r *rig) job(state lifecycle.JobState, rsa lifecycle.RSAState, edit ...func(*job.Job)) *job.Job {
	r.t.Helper()
	now := time.Now()
	j := &job.Job{Spec: job.Spec{Input: "/home/nobody/in", Output: "/home/nobody/out", Capacity: 1 << 20, ComputeNodes: 1},
		UID: nobody, GID: nobody, User: "nobody", Home: "/home/nobody", Groups: []uint32{nobody},
		State: state, RSA: rsa, CreatedAt: now, UpdatedAt: now}
	if lifecycle.HoldsNodes(rsa) {
		j.Alloc = []job.Part{{Node: "rsa1", Bytes: 1 << 20}}
	}
	if state == lifecycle.Finished {
		j.FinishedAt = now
	}
	for _, e := range edit {
		e(j)
	}
	if err := r.store.Create(r.ctx, j, nil); err != nil {
		r.t.Fatal(err)
	}
	return j
}

// get is job id's record as stored.
func (r *rig) get(id int64) *job.Job {
	r.t.Helper()
	j, err := r.store.Get(r.ctx, id)
	if err != nil {
		r.t.Fatal(err)
	}
	return j
}
