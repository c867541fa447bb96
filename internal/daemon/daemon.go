// Package daemon is `rsa serve`: it owns the store and drives every job
// through the lifecycle machine. One goroutine (the loop) applies events in
// order: it loads the job, asks lifecycle.Step, commits the transition, and
// only then starts the returned actions, whose completions come back to the
// loop as events. After a crash the loop resumes each job's in-progress
// action. The package must not hold lifecycle state outside the store: maps
// here only track running processes and progress, which die with the daemon.
//
// The package is the loop, the store's commits and Run, which starts the
// components; its parts live in rooms of their own, each reaching the
// daemon through a small port: the API with the metrics' and dashboard's
// sources and the administrators' operations (package service, through
// service.Core: serviceport.go), the actions (package action, through
// action.Daemon: actionport.go), the Slurm adapter (slurm/adapter, through
// adapter.Jobs: slurmport.go), the report of lost parts (package watch,
// through watch.Jobs: lost.go), the account of the nodes' RAM (package
// book, through book.Source), the debts' ledger (package debt), and the
// progress and waits of jobs in flight (package board). The capacity
// decision is capacity.Decide on the book's snapshot; a spec is checked
// by package admission; a refusal is a refuse error, which only the API
// turns into an HTTP status.
//
// The daemon knows its engine through engine.Engine and engine's optional
// interfaces alone (engine.As), and never a backend, nor a backend's
// keys of the config: its caller hands it the opener of the engine the
// config names (Options.OpenEngine: all.Open in rsa serve), and the
// engine does what its backend needs besides RAMDISKs. An engine with
// nodes of its own watches them and tells the daemon of losses
// (engine.Watcher), says which take new parts (engine.Nodes), stages on
// them (engine.Stager) and admits a job's compute nodes
// (engine.ClientAdmitter); the stages of any other engine run here. An
// engine says how its parts are placed (engine.Placer) and how often the
// daemon looks after its RAMDISKs (engine.Periodic).
//
// Goroutines, all started by Run and ended by its context (actions and
// watchers by actx, cancelled at shutdown, each counted in wg):
//   - the loop (loop): every apply, tick and commit of a transition, and
//     the fields "owned by the loop goroutine" below;
//   - one per running action (start), which posts its completion;
//   - one per rsa run process watched (watchOwner), one per notice sent;
//   - the socket's, remote access's, the failover peer's and the metrics'
//     HTTP servers (service.Listeners), whose handlers call the API;
//   - the Slurm adapter (its Run: polling and reconciling, if configured);
//   - the engine's watcher, the debts' payment, the watch's probe of
//     RAMDISKs in use, the leftover sweep, the history purge and, in a
//     failover pair, the lease's check.
//
// Locks: mu guards the commits' channel; admitting is held from a new
// job's limit check to its creation, and around a marker's removal; the
// store, the board, the book, the API's drains and quarantine, the debts'
// ledger and the metrics lock themselves. No lock is held across a
// call into the engine, an agent or the store's writes, except
// admitting around the creation it guards.
package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/access"
	"github.com/rsa-hpc/rsa/internal/admission"
	"github.com/rsa-hpc/rsa/internal/cgroup"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/daemon/board"
	"github.com/rsa-hpc/rsa/internal/daemon/book"
	"github.com/rsa-hpc/rsa/internal/daemon/debt"
	"github.com/rsa-hpc/rsa/internal/daemon/service"
	"github.com/rsa-hpc/rsa/internal/daemon/watch"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/failover"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/joblog"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/metrics"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/notify"
	"github.com/rsa-hpc/rsa/internal/refuse"
	"github.com/rsa-hpc/rsa/internal/slurm/adapter"
	"github.com/rsa-hpc/rsa/internal/stage"
	"github.com/rsa-hpc/rsa/internal/store"
)

// Daemon is the running service.
type Daemon struct {
	cfg   *config.Config
	store *store.Store
	// engine builds the RAMDISKs, and does what else its backend needs
	// through engine's optional interfaces (engine.As): watching its
	// nodes, staging on them, admitting compute nodes.
	engine    engine.Engine
	access    access.Access
	policy    mount.Policy  // which directories may be mounted over
	runner    *stage.Runner // runs the stages of an engine that is no engine.Stager
	admitting sync.Mutex    // held from the job limits' check to the job's creation
	// slurm answers Slurm's hooks, watches Slurm and keeps the job
	// markers for the prolog and epilog; it reaches the jobs through
	// slurmPort.
	slurm   *adapter.Adapter
	log     *slog.Logger
	logs    *joblog.Logs // the jobs' own logs
	debts   *debt.Ledger // what teardowns left on nodes that did not answer
	version string

	inbox   chan msg
	stopped chan struct{}
	closing atomic.Bool
	actx    context.Context // parent of running actions; cancelled at shutdown
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	// Owned by the loop goroutine.
	pending []msg
	staging map[int64]context.CancelFunc

	// board is what readers outside the loop see of jobs in flight:
	// progress and waits.
	board board.Board

	// api answers the socket, remote access and the failover peer, and
	// shows the metrics and the dashboard what they show.
	api *service.Service

	// book is the account of the RSA nodes' RAM: held, reserved, free.
	book *book.Book

	mu     sync.Mutex
	notify chan struct{} // closed and replaced on every commit

	metrics *metrics.Metrics
	// tell tells job users what waits for them; nil without
	// notify.program.
	tell *notify.Teller
	// lease is held while d is the active rsa serve of a failover pair;
	// nil outside one. stopRun ends Run with its cause (fence); set
	// before Run starts anything that calls it.
	lease   *failover.Lease
	stopRun context.CancelCauseFunc
}

// msg is one event for one job, with an optional edit of the record that is
// committed with the transition, and an optional reply for API callers.
type msg struct {
	id    int64
	ev    lifecycle.Event
	edit  func(j *job.Job)
	reply chan reply
}

type reply struct {
	job *job.Job
	err error
}

// Options are what New needs besides the config.
type Options struct {
	Log     *slog.Logger
	Version string
	Self    string // the rsa binary, for staging children
	// OpenEngine builds the engine cfg names and the access that shows
	// its RAMDISKs on the compute nodes, whose directories policy says
	// may be mounted over (all.Open, given Log and Self).
	OpenEngine func(cfg *config.Config, policy mount.Policy, epoch int64) (engine.Engine, access.Access, error)

	// lease is held by the active rsa serve of a failover pair (Serve):
	// New takes the state over under a new epoch, which OpenEngine is
	// given (0 outside a pair) for the agents.
	lease *failover.Lease
}

// New opens the store and prepares the engine; Run starts serving.
func New(ctx context.Context, cfg *config.Config, o Options) (*Daemon, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("rsa serve must run as root: it mounts file systems and stages data as each job's user")
	}
	if err := config.CheckLocalCapacity(cfg.Nodes); err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, cfg.StateDir)
	if err != nil {
		return nil, err
	}
	drains, err := st.Drains(ctx)
	if err != nil {
		st.Close()
		return nil, err
	}
	debts, err := st.Debts(ctx)
	if err != nil {
		st.Close()
		return nil, err
	}
	if err := joblog.New(cfg.StateDir, o.Log).MakeDir(); err != nil {
		st.Close()
		return nil, err
	}
	// Staging cgroups are named after the state directory: a second
	// daemon on the host (with its own state) never kills ours.
	cgroups, err := cgroup.Open(cfg.StateDir)
	if err != nil {
		st.Close()
		return nil, err
	}
	if o.OpenEngine == nil {
		st.Close()
		return nil, errors.New("daemon: no engine to open (Options.OpenEngine)")
	}
	var epoch int64
	if o.lease != nil {
		if epoch, err = takeOver(ctx, cfg, st, o.lease); err != nil {
			st.Close()
			return nil, err
		}
		o.Log.Warn("failover: this rsa serve is the active one now", "epoch", epoch)
	}
	eng, access, err := o.OpenEngine(cfg, policyOf(cfg), epoch)
	if err != nil {
		st.Close()
		return nil, err
	}
	limits := cgroup.Limits{Memory: cfg.Limits.StageMemory, Pids: cfg.Limits.StagePids, CPU: cfg.Limits.StageCPU}
	if _, ok := engine.As[engine.Stager](eng); !ok {
		// Stages run on this host: one that cannot hold them to their
		// limits stops the daemon now, not each job's stage later. (An
		// engine that stages on its own nodes checks those: each RSA
		// node's agent its own host.)
		if err := cgroups.Enable(limits); err != nil {
			st.Close()
			return nil, fmt.Errorf("staging limits: %w", stage.LimitsHint(err))
		}
	}
	runner := &stage.Runner{Self: o.Self, Cgroups: cgroups, BWLimit: cfg.Limits.StageBWLimit,
		Limits: limits, Network: stage.Network(cfg.Limits.StageNetwork)}
	return newDaemon(cfg, deps{store: st, engine: eng, access: access, runner: runner, drains: drains, debts: debts}, o), nil
}

// deps are what a Daemon works through besides its config. New opens
// them as root, after its checks; the package's unit tests hand in their
// own (an engine.Stager from memengine, a access.Access of their own) and
// run as a normal user.
type deps struct {
	store  *store.Store
	engine engine.Engine
	access access.Access
	// runner runs the stages of an engine that is no engine.Stager; it
	// may be nil beside an engine that is one.
	runner *stage.Runner
	// drains and debts are the store's, as New read them; nil: none.
	drains map[string]store.Drain
	debts  []store.Debt
}

// newDaemon builds the Daemon for cfg on dp, its loop and actions not
// started and their bookkeeping empty. It checks nothing: New does.
func newDaemon(cfg *config.Config, dp deps, o Options) *Daemon {
	if dp.drains == nil {
		dp.drains = map[string]store.Drain{}
	}
	d := &Daemon{
		cfg:     cfg,
		store:   dp.store,
		engine:  dp.engine,
		access:  dp.access,
		policy:  policyOf(cfg),
		runner:  dp.runner,
		log:     o.Log,
		logs:    joblog.New(cfg.StateDir, o.Log),
		version: o.Version,
		inbox:   make(chan msg, 256),
		stopped: make(chan struct{}),
		staging: map[int64]context.CancelFunc{},
		notify:  make(chan struct{}),
	}
	d.lease = o.lease
	d.debts = debt.New(dp.store, dp.debts, d.logs, o.Log, d.changed)
	d.api = service.New(d.serviceDeps(dp.drains))
	d.book = book.New(cfg, dp.engine, bookPort{d})
	d.metrics = metrics.New(d.api.Metrics(), o.Version)
	d.slurm = adapter.New(cfg, slurmPort{d}, o.Log, d.metrics)
	d.tell = notify.NewTeller(cfg.Notify)
	d.actx, d.cancel = context.WithCancel(context.Background())
	return d
}

// policyOf is which directories cfg lets RSA mount over.
func policyOf(cfg *config.Config) mount.Policy {
	return mount.Policy{RefuseFSTypes: cfg.RefusedFSTypes, AllowedPaths: cfg.AllowedPaths}
}

// Run recovers, then serves the socket until ctx ends.
func (d *Daemon) Run(ctx context.Context) error {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	d.stopRun = stop
	lock, err := lockState(d.cfg.StateDir)
	if err != nil {
		return err
	}
	defer lock.Close()
	ls, err := d.api.Listen()
	if err != nil {
		return err
	}
	if d.lease != nil {
		d.wg.Add(1)
		go func() { defer d.wg.Done(); d.holdLease(d.actx, stop) }()
	}
	d.startWatching(ctx)
	if err := d.recover(ctx); err != nil {
		ls.Close()
		return err
	}
	loopDone := make(chan struct{})
	go func() { defer close(loopDone); d.loop(ctx) }()
	d.wg.Add(2)
	go func() { defer d.wg.Done(); d.api.PurgeHistory(d.actx) }()
	go func() { defer d.wg.Done(); d.slurm.Run(ctx) }()
	srvErr := ls.Serve(d.api, d.metrics.Handler())
	d.log.Info("rsa serving", "socket", d.cfg.Socket, "state", d.cfg.StateDir, "ramdisks", d.cfg.RamdiskRoot,
		"nodes", len(d.cfg.Nodes), "config", cmp.Or(d.cfg.Path, "embedded default"),
		"kernel", mount.KernelRelease(), "mount_table", mount.Table().String())

	select {
	case <-ctx.Done():
	case err = <-srvErr:
	}
	d.closing.Store(true)
	ls.Shutdown()
	<-loopDone
	d.stop()
	if cause := context.Cause(ctx); errors.Is(cause, store.ErrFenced) {
		return cause
	}
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// startWatching ends the staging processes a previous daemon left, and
// starts what watches the engine's nodes and RAMDISKs: the engine's own
// watcher, and, for an engine with nodes apart from this host, the
// payment of debts, the probe of RAMDISKs in use and the sweep of
// leftovers. Each runs until d.actx ends.
func (d *Daemon) startWatching(ctx context.Context) {
	if n, err := d.runner.Cgroups.KillAll(ctx); err != nil {
		d.log.Error("killing staging processes left by a previous daemon", "err", err)
	} else if n > 0 {
		d.log.Warn("killed staging processes left by a previous daemon", "cgroups", n)
	}
	if w, ok := engine.As[engine.Watcher](d.engine); ok {
		// Who is up decides where jobs go and what gc may reach: the
		// engine looks at every node before either. A node that
		// rebooted while no daemon watched is lost too.
		incs, err := d.store.Incarnations(ctx)
		if err != nil {
			d.log.Error("reading the agents' last incarnations: a node that rebooted while rsa serve was down goes unnoticed until its parts are checked", "err", err)
			incs = nil
		}
		w.Start(ctx, engine.NodeEvents{Known: incs, Lost: d.watcher().NodeLost, Incarnation: func(node, inc string) {
			if err := d.store.SetIncarnation(context.WithoutCancel(ctx), node, inc, time.Now()); err != nil {
				d.log.Error("recording an agent's incarnation", "node", node, "err", err)
			}
		}})
		d.wg.Add(1)
		go func() { defer d.wg.Done(); w.Watch(d.actx) }()
	}
	if _, ok := d.engineNodes(); !ok {
		return
	}
	// Parts on nodes apart from this host can be left behind by a
	// teardown (debts), go out of reach while a job uses them, and come
	// back after their RAMDISK was destroyed (leftovers).
	periods := d.periods()
	seen := map[engine.Found]bool{}
	d.wg.Add(3)
	go func() { defer d.wg.Done(); every(d.actx, max(periods.Heartbeat, 5*time.Second), d.payDebts) }()
	go func() { defer d.wg.Done(); d.watcher().Ramdisks(d.actx, periods.Heartbeat) }()
	go func() {
		defer d.wg.Done()
		every(d.actx, periods.LeftoverSweep, func(ctx context.Context) { d.sweepLeftovers(ctx, seen) })
	}()
}

// recover removes the RAMDISKs no job holds and resumes every job's
// action in progress.
func (d *Daemon) recover(ctx context.Context) error {
	if rep, err := d.api.Collect(ctx); err != nil {
		d.log.Error("gc at start", "err", err)
	} else if len(rep.Removed) > 0 {
		d.log.Warn("removed RAMDISKs no job holds", "removed", rep.Removed)
	}
	if err := d.resume(ctx); err != nil {
		return fmt.Errorf("resuming jobs: %w", err)
	}
	return nil
}

// stop ends the running actions (waiting a bounded time for them), closes
// the engine, the socket's file and the store.
func (d *Daemon) stop() {
	d.cancel()
	waitTimeout(&d.wg, 15*time.Second)
	if c, ok := engine.As[io.Closer](d.engine); ok {
		if err := c.Close(); err != nil {
			d.log.Error("closing the engine", "err", err)
		}
	}
	os.Remove(d.cfg.Socket)
	d.store.Close()
	d.log.Info("rsa stopped")
}

func waitTimeout(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// lockState keeps a second daemon off the same state.
func lockState(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "rsa.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another rsa daemon holds %s: stop it first", dir)
	}
	return f, nil
}

// post hands an event to the loop; after shutdown began it is dropped, and
// the job resumes from its committed state at the next start.
func (d *Daemon) post(m msg) bool {
	if d.closing.Load() {
		return false
	}
	select {
	case d.inbox <- m:
		return true
	case <-d.stopped:
		return false
	}
}

// call posts an event and waits for the committed result.
func (d *Daemon) call(ctx context.Context, m msg) (*job.Job, error) {
	m.reply = make(chan reply, 1)
	if !d.post(m) {
		return nil, refuse.Unavailable("rsa daemon is shutting down; try again")
	}
	select {
	case r := <-m.reply:
		return r.job, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (d *Daemon) loop(ctx context.Context) {
	defer close(d.stopped)
	tick := time.NewTicker(d.cfg.Tick)
	defer tick.Stop()
	for {
		for len(d.pending) > 0 {
			m := d.pending[0]
			d.pending = d.pending[1:]
			d.handle(ctx, m)
		}
		select {
		case <-ctx.Done():
			return
		case m := <-d.inbox:
			d.handle(ctx, m)
		case now := <-tick.C:
			d.tick(ctx, now)
			d.remindHeld(ctx, now)
		}
	}
}

// tick re-evaluates the jobs that can move with time or capacity: those
// waiting for nodes and those whose input-to-output switch may be due.
func (d *Daemon) tick(ctx context.Context, now time.Time) {
	// Decided on the store's copies under its read lock, handled after
	// it: handling commits.
	defer d.book.BeginPass()()
	var due []msg
	d.store.EachActive(func(j *job.Job) {
		m := j.Machine()
		if !lifecycle.TimeSensitive(m) {
			return
		}
		ev := lifecycle.Event{Kind: lifecycle.EvTick, At: now}
		// Step is pure and cheap: a job the tick leaves as it is (most
		// running jobs, most of the time) costs no read of its record.
		if out := lifecycle.Step(m, ev); len(out.Changes) > 0 || len(out.Actions) > 0 {
			due = append(due, msg{id: j.ID, ev: ev})
		}
	})
	// In order of submission: the first waiting job gets the RAM first.
	slices.SortFunc(due, func(a, b msg) int { return cmp.Compare(a.id, b.id) })
	for _, m := range due {
		d.handle(ctx, m)
	}
}

// handle applies one event: Step, commit, then start the actions.
func (d *Daemon) handle(ctx context.Context, m msg) {
	j, err := d.apply(ctx, m)
	if m.reply != nil {
		m.reply <- reply{j, err}
	}
	if err != nil && m.reply == nil {
		d.log.Error("applying event", "job", m.id, "event", m.ev.Kind, "err", err)
	}
}

// apply applies one event to its job: the screens of events that must
// change nothing, lifecycle.Step, the commit of the transition with the
// record's change and its events, and then, committed, what follows:
// notices, accounting, markers, and the transition's actions.
//
// A transition that frees capacity ends in a tick, within this apply and
// the loop's goroutine, so that waiting jobs try at once and in order of
// submission (the simulator does the same). That tick may apply further
// events, and each that frees capacity ticks again: the nesting is as
// deep as the number of jobs that give capacity back in a row, and every
// nested apply sees the store as the outer one committed it.
func (d *Daemon) apply(ctx context.Context, m msg) (*job.Job, error) {
	j, err := d.store.Get(ctx, m.id)
	if err != nil {
		return nil, err
	}
	if !d.admissible(j, &m) {
		return j, nil
	}
	out := lifecycle.Step(j.Machine(), m.ev)
	if out.Ignored {
		// An event the machine does not take changes nothing, edits
		// included: a stale allocation must not overwrite one, a second
		// start must not take over the job.
		if m.reply != nil {
			return j, refuse.NotApplicable("job %d is %s/%s: %s does not apply now", j.ID, j.State, j.RSA, m.ev.Kind)
		}
		d.log.Debug("event ignored", "job", j.ID, "event", m.ev.Kind, "state", j.State, "rsa", j.RSA)
		return j, nil
	}
	next, recorded := d.next(j, m, out)
	notice, tell := notify.For(j, &next)
	if tell && d.tell != nil && notice == notify.StageOutFailed {
		next.NoticeAt = m.ev.At
	}
	if err := d.commit(ctx, j, &next, m, out, recorded); err != nil {
		return j, err
	}
	if tell {
		d.sendNotice(&next, notice)
	}
	d.follow(ctx, j, &next, out)
	if lifecycle.HoldsNodes(j.RSA) && !lifecycle.HoldsNodes(next.RSA) {
		// Capacity came free: let waiting jobs try now, in order.
		d.tick(ctx, m.ev.At)
	}
	return &next, nil
}

// admissible reports whether m may go to the machine for j, after the
// bookkeeping its event ends: a stage-in's end releases its context; an
// allocation is committed only if it still fits (whatever happened since
// the decision, no byte is ever given twice); a loss report keeps only
// what is news for j (watch.LossFor), and one with none changes nothing.
func (d *Daemon) admissible(j *job.Job, m *msg) bool {
	switch m.ev.Kind {
	case lifecycle.EvStagedIn, lifecycle.EvStageInFailed, lifecycle.EvStageInStopped:
		if cancel, ok := d.staging[j.ID]; ok {
			cancel() // releases the stage-in's context
			delete(d.staging, j.ID)
		}
	case lifecycle.EvAssigned:
		d.book.Release(j.ID)
		var probe job.Job
		if m.edit != nil {
			m.edit(&probe)
		}
		if !d.book.Fits(j, probe.Alloc) {
			d.log.Error("an allocation no longer fits; the job waits again", "job", j.ID, "alloc", probe.Alloc)
			return false
		}
	case lifecycle.EvNodeLost:
		var stale string
		m.ev.Nodes, stale = watch.LossFor(j, m.ev)
		if stale != "" {
			d.log.Info("loss report ignored", "job", j.ID, "why", stale)
			return false
		}
	}
	return true
}

// next is j's record after out, m's transition, with m's edit; recorded
// says whether it changed in what only the record holds (no event says
// it). The record change is the machine's (Step): states, times, build,
// the wait for capacity, lost nodes, the last failure. Build counts every
// RAMDISK built, also one rebuilt for output on the same nodes, which an
// engine must not confuse with the old one (engine.Ramdisk.Build).
func (d *Daemon) next(j *job.Job, m msg, out lifecycle.Outcome) (next job.Job, recorded bool) {
	next = *j
	next.State, next.RSA = out.Job.State, out.Job.RSA
	next.StartedAt, next.InputAt, next.FinishedAt = out.Job.StartedAt, out.Job.InputAt, out.Job.FinishedAt
	next.Build, next.WaitingSince, next.NotBefore = out.Job.Build, out.Job.WaitingSince, out.Job.NotBefore
	next.ImageBuild, next.PrivateBuild, next.PrivateLost = out.Job.ImageBuild, out.Job.PrivateBuild, out.Job.PrivateLost
	next.Lost, next.Error = out.Job.Lost, out.Job.Error
	recorded = next.Build != j.Build || !next.WaitingSince.Equal(j.WaitingSince) || !next.NotBefore.Equal(j.NotBefore) ||
		len(next.Lost) != len(j.Lost) || next.PrivateLost != j.PrivateLost
	if a, ok := d.stagedBy(j.ID, m.ev.Kind); ok {
		if m.ev.Kind == lifecycle.EvStagedIn {
			next.Staged.In = a
		} else {
			next.Staged.Out = a
		}
		recorded = true
	}
	if out.Failure != "" {
		d.metrics.Failure(out.Failure)
		if why := d.board.Wait(j.ID).Why; why != "" {
			next.Error += "; last: " + why
		}
		if out.Failure == lifecycle.FailureExpired {
			d.log.Warn("job expired", "job", j.ID, "user", j.User, "why", out.Error)
		}
	}
	if m.ev.Kind.IsFailure() {
		d.metrics.Failure(string(m.ev.Kind))
	}
	if m.edit != nil {
		m.edit(&next)
	}
	return next, recorded
}

// commit stores next, with an event for each of out's changes, if
// anything changed, and wakes the readers waiting for a change.
func (d *Daemon) commit(ctx context.Context, j, next *job.Job, m msg, out lifecycle.Outcome, recorded bool) error {
	var evs []job.Event
	for _, c := range out.Changes {
		evs = append(evs, job.Event{At: m.ev.At, Kind: string(m.ev.Kind), JobState: c.ToJob, RSAState: c.ToRSA, Message: c.String()})
		d.log.Info("transition", "job", j.ID, "event", m.ev.Kind, "change", c.String())
	}
	if len(evs) == 0 && m.edit == nil && !recorded {
		return nil
	}
	next.UpdatedAt = time.Now()
	if err := d.store.Commit(ctx, next, evs); err != nil {
		d.fenced(err)
		return fmt.Errorf("committing job %d: %w", j.ID, err)
	}
	d.changed()
	return nil
}

// follow does what a committed transition from j to next brings besides
// its actions, then starts them: the accounting of a job that started,
// the end of a done job's bookkeeping and marker, the wait for a stage-in
// time.
func (d *Daemon) follow(ctx context.Context, j, next *job.Job, out lifecycle.Outcome) {
	if j.State != lifecycle.Running && next.State == lifecycle.Running {
		d.account(next)
	}
	if next.Machine().Done() {
		d.forget(next.ID)
		d.unmark(ctx, next)
	}
	if out.Hold == lifecycle.HoldStageInTime {
		d.waitForStageIn(next)
	}
	for _, a := range out.Actions {
		d.start(next, a)
	}
}

// changed wakes every long-polling reader and drops what the holdings
// were.
func (d *Daemon) changed() {
	d.book.Changed()
	d.mu.Lock()
	close(d.notify)
	d.notify = make(chan struct{})
	d.mu.Unlock()
}

func (d *Daemon) forget(id int64) { d.board.Forget(id) }

// resume restarts every active job's in-progress action, watches the
// processes that own running jobs and puts the Slurm markers right.
func (d *Daemon) resume(ctx context.Context) error {
	jobs, err := d.store.List(ctx, false, 0)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if ev, lost := d.watcher().Gone(ctx, j); lost {
			// Not resumed as well: the lost event's transitions start
			// what the job's new state needs, and a resume after them
			// would start that action a second time (two constructs
			// racing to mount the same RAMDISK).
			d.pending = append(d.pending, msg{id: j.ID, ev: ev})
		} else {
			if _, busy := lifecycle.Work(j.RSA); busy {
				d.log.Info("resuming", "job", j.ID, "state", j.State, "rsa", j.RSA)
			}
			d.pending = append(d.pending, msg{id: j.ID, ev: lifecycle.Event{Kind: lifecycle.EvResume, At: time.Now()}, edit: admission.Bounds(j, d.cfg)})
		}
		d.watchOwner(j)
	}
	if err := d.syncMarkers(jobs); err != nil {
		d.log.Error("marking RSA's Slurm jobs for the prolog", "err", err)
	}
	return nil
}

// engineNodes is the engine's view of the nodes its RAMDISKs have parts
// on; ok is false for an engine whose parts are all on this host.
func (d *Daemon) engineNodes() (engine.Nodes, bool) { return engine.As[engine.Nodes](d.engine) }

// periods are how often the daemon looks after the engine's RAMDISKs:
// the engine's own if it is an engine.Periodic.
func (d *Daemon) periods() engine.Periods {
	if p, ok := engine.As[engine.Periodic](d.engine); ok {
		return p.Periods()
	}
	return engine.DefaultPeriods()
}

// ramdisk describes j's RAMDISK for the engine.
func (d *Daemon) ramdisk(j *job.Job) engine.Ramdisk {
	return engine.Ramdisk{Job: j.ID, Dir: engine.DirFor(d.cfg.RamdiskRoot, j.ID), Parts: j.Alloc, Build: j.Build, UID: j.UID, GID: j.GID,
		Inodes: j.Capacity() / max(d.cfg.Limits.BytesPerInode, 1), RootOnly: j.Machine().HoldsImage() || j.Machine().HoldsPrivateOutput()}
}
