// Package adapter is RSA's Slurm adapter: it answers Slurm's hooks (the
// burst_buffer/lua calls of scheduler "slurm", and the prolog and epilog
// of both Slurm modes), reads squeue every poll_interval (scheduler
// "slurm-poll") or checks RSA's jobs against Slurm (scheduler "slurm"),
// and keeps the marker files that tell the prolog and epilog which Slurm
// jobs are RSA's. Each turns what Slurm says into lifecycle events on the
// RSA job whose Spec.Name is the Slurm job id; the answers are read off
// the committed state, so a hook asked twice (or after a restart) answers
// the same.
//
// The adapter reaches RSA's jobs only through the Jobs port, which the
// daemon implements: like package slurm, it never touches the store.
package adapter

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/asuser"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/slurm"
)

// Jobs is the daemon as the adapter sees it: RSA's jobs, read from their
// committed state and moved by lifecycle events.
type Jobs interface {
	// Latest is the newest RSA job whose Spec.Name is the Slurm job id
	// name, done or not, or nil (and no error) when there is none.
	Latest(ctx context.Context, name string) (*job.Job, error)
	// List lists RSA's jobs in id order: the active ones, or, when all
	// is set, all of them (the newest limit; 0: no limit).
	List(ctx context.Context, all bool, limit int) ([]*job.Job, error)
	// Create validates spec for the user uid and stores a new job for
	// it, on deck unless prepare changes the record first; scheduler
	// names the Slurm mode that asks (config.SchedulerSlurm or
	// config.SchedulerSlurmPoll). prepare runs under the lock that
	// admits jobs one at a time, so a check there (another RSA job for
	// the same Slurm id) cannot race another creation; its error is
	// Create's. Create returns once the job's first tick is committed.
	// Its errors say why the job was refused, ready for the job's user.
	Create(ctx context.Context, uid, gid uint32, spec job.Spec, scheduler string, prepare func(*job.Job) error) (*job.Job, error)
	// Call applies ev to job id, with edit (if not nil) changing the
	// record in the same commit, and returns the committed job. An
	// event the job's state does not take now (another hook sent it
	// first) changes nothing and gives an error that wraps ErrIgnored.
	// It fails if the daemon is shutting down, or ctx ends first.
	Call(ctx context.Context, id int64, ev lifecycle.Event, edit func(*job.Job)) (*job.Job, error)
	// Post hands ev (and edit) for job id to the daemon and returns
	// without waiting for it to be applied; one the job's state does not
	// take is dropped, and one posted while the daemon shuts down is
	// lost (the job resumes from its committed state).
	Post(id int64, ev lifecycle.Event, edit func(*job.Job))
	// Changed is a channel that is closed at the next commit of any job.
	// Taken before the state it guards is read, it misses no commit.
	Changed() <-chan struct{}
	// CapacityWait is why job id, which holds no RSA node, waits for free
	// RSA capacity, or "" when it does not wait for capacity (an
	// assignment's decision to wait is remembered, not committed).
	CapacityWait(id int64) string
	// JobLog adds a line to j's log, which 'rsa log' shows its user.
	JobLog(j *job.Job, line string)
	// Validate checks spec as a submission by who, with who's rights
	// (nil: a user Slurm has not named yet, checked as nobody), and fills
	// in its defaults; its error names the field and the fix.
	Validate(spec *job.Spec, who *asuser.Identity) error
	// View is what caller may see of j, with its progress.
	View(j *job.Job, caller api.Peer) *api.JobView
	// Pool is what each RSA node holds, in the config's order of the
	// nodes. Uncounted picks the jobs whose bytes Slurm's pool does not
	// count itself.
	Pool(uncounted func(*job.Job) bool) []PoolNode
}

// PoolNode is one RSA node's share of the burst buffer pool.
type PoolNode struct {
	Name     string
	Capacity int64
	// Open: a new RAMDISK may have a part on the node now: it is not
	// drained, and the engine places parts on it.
	Open bool
	// Held is what the node holds: the parts of the jobs that hold
	// nodes, and RAM teardowns left on it (debts).
	Held int64
	// Uncounted is the part of Held that Slurm's pool does not count:
	// the parts of the jobs Pool's uncounted picks, and the debts.
	Uncounted int64
}

// ErrIgnored is wrapped by the error of an event that the job's state did
// not take (Jobs.Call).
var ErrIgnored = errors.New("the event does not apply to the job now")

// HookMetrics records how long each Slurm hook took, by the hook's name
// and how it came ("rsa" or the Lua socket).
type HookMetrics interface {
	ObserveHook(hook, via string, took time.Duration)
}

// Adapter is RSA's side of Slurm, for one daemon.
type Adapter struct {
	cfg     *config.Config
	jobs    Jobs
	slurm   slurm.Client
	log     *slog.Logger
	metrics HookMetrics
	// markers tell the Slurm prolog and epilog which jobs are RSA's
	// while the daemon is down; nil without a scheduler.
	markers *slurm.Markers
	// version caches whether Slurm's get_status names its caller.
	version struct {
		sync.Mutex
		known, namesCaller bool
	}
}

// New is the adapter for the daemon of cfg, which jobs is.
func New(cfg *config.Config, jobs Jobs, log *slog.Logger, metrics HookMetrics) *Adapter {
	a := &Adapter{cfg: cfg, jobs: jobs, slurm: slurm.Client{Bin: cfg.Slurm.Bin}, log: log, metrics: metrics}
	if cfg.Scheduler != config.SchedulerNone {
		a.markers = &slurm.Markers{Dir: cfg.MarkersDir()}
	}
	return a
}

// Run watches Slurm until ctx ends: it polls squeue (slurm-poll) or
// checks RSA's jobs against Slurm (slurm). Without a scheduler it returns
// at once.
func (a *Adapter) Run(ctx context.Context) {
	switch a.cfg.Scheduler {
	case config.SchedulerSlurmPoll:
		a.pollSlurm(ctx)
	case config.SchedulerSlurm:
		a.reconcileSlurm(ctx)
	}
}
