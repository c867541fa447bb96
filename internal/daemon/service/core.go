// Package service is rsa serve's API (api.Service) and what it shows the
// metrics and the dashboard: it checks who asks for what, turns a user's
// verb into an event for the daemon's loop, and builds the views of jobs
// and nodes. It also holds the administrators' own operations that need
// no transition: drains, the settling of debts, gc and its quarantine, the
// purge of old history.
//
// It reaches the daemon through Core alone; the store, the engine, the
// job logs, the debts' ledger and the board of jobs in flight it reads
// directly, and every write of a job's record goes through the loop,
// except the events the purge and a settlement add to a record.
package service

import (
	"context"
	"log/slog"
	"sync"

	"github.com/rsa-hpc/rsa/internal/access"
	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/daemon/board"
	"github.com/rsa-hpc/rsa/internal/daemon/debt"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/joblog"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/store"
)

// Core is the daemon as the service needs it.
type Core interface {
	// Admit applies the job limits to j, a new job, calls prepare (if
	// not nil) on it and stores it with submit, as one step: two
	// submissions at once must not both fit under a limit with room
	// for one. It does not start the job.
	Admit(ctx context.Context, j *job.Job, prepare func(*job.Job) error, submit job.Event) error
	// Apply hands ev, with edit, to job id's loop and returns the record
	// as committed, or the refusal (refuse.ErrNotApplicable: the event
	// does not apply in the job's state).
	Apply(ctx context.Context, id int64, ev lifecycle.Event, edit func(*job.Job)) (*job.Job, error)
	// Changes is a channel closed at the next commit.
	Changes() <-chan struct{}
	// WatchOwner finishes j when the process that owns it (rsa run,
	// job.Owner) exits; nothing for a job without one.
	WatchOwner(j *job.Job)
	// Ramdisk describes j's RAMDISK for the engine.
	Ramdisk(j *job.Job) engine.Ramdisk
	// Evict ends what still holds rd, a RAMDISK of j's that is to go, as
	// a teardown does.
	Evict(ctx context.Context, j *job.Job, rd engine.Ramdisk) error
}

// Scheduler is the scheduler adapter as the API needs it.
type Scheduler interface {
	// Hook answers one of the scheduler's hooks.
	Hook(ctx context.Context, p api.Peer, r api.HookRequest) (*api.HookReply, error)
	// IsScheduler reports whether p is one of the scheduler's users, who
	// see every job whole.
	IsScheduler(p api.Peer) bool
}

// Deps are what a Service works through.
type Deps struct {
	Config *config.Config
	Store  *store.Store
	// Engine builds the RAMDISKs; Access shows them on compute nodes
	// (which modes it offers decides what a spec may ask).
	Engine    engine.Engine
	Access    access.Access
	Policy    mount.Policy
	Core      Core
	Scheduler Scheduler
	Board     *board.Board
	Debts     *debt.Ledger
	Logs      *joblog.Logs
	Log       *slog.Logger
	Version   string
	// Pair says the daemon is the active one of a failover pair: its
	// version names its host and epoch.
	Pair bool
	// Drains are the drains the store holds, as the daemon read them.
	Drains map[string]store.Drain
}

// Service is the API of one daemon. Its methods may be called from any
// goroutine.
type Service struct {
	cfg       *config.Config
	store     *store.Store
	engine    engine.Engine
	access    access.Access
	policy    mount.Policy
	core      Core
	scheduler Scheduler
	board     *board.Board
	debts     *debt.Ledger
	logs      *joblog.Logs
	log       *slog.Logger
	version   string
	pair      bool

	mu     sync.Mutex
	drains map[string]store.Drain // RSA nodes an administrator drained
	// quarantined: RAMDISKs the last gc left alone for holding data no
	// job record knows of (quarantine.go).
	quarantined []api.QuarantinedView
}

var _ api.Service = (*Service)(nil)

// New is the Service of dp.
func New(dp Deps) *Service {
	drains := map[string]store.Drain{}
	for k, v := range dp.Drains {
		drains[k] = v
	}
	return &Service{cfg: dp.Config, store: dp.Store, engine: dp.Engine, access: dp.Access, policy: dp.Policy,
		core: dp.Core, scheduler: dp.Scheduler, board: dp.Board, debts: dp.Debts, logs: dp.Logs, log: dp.Log,
		version: dp.Version, pair: dp.Pair, drains: drains}
}

// Hook answers a scheduler hook through the scheduler adapter.
func (s *Service) Hook(ctx context.Context, p api.Peer, r api.HookRequest) (*api.HookReply, error) {
	return s.scheduler.Hook(ctx, p, r)
}

// engineNodes is the engine's view of the nodes its RAMDISKs have parts
// on; ok is false for an engine whose parts are all on this host.
func (s *Service) engineNodes() (engine.Nodes, bool) { return engine.As[engine.Nodes](s.engine) }

// certificates are the TLS certificates the engine knows the expiry of.
func (s *Service) certificates() []engine.Certificate {
	if c, ok := engine.As[engine.Certificates](s.engine); ok {
		return c.Certificates()
	}
	return nil
}
