// Package action carries out the lifecycle's actions (lifecycle.Action):
// one type per kind, each in a file of its own. The daemon commits a
// transition, then runs its action through Set's map, and posts the event
// Run returns back to its loop.
//
// Every action must be idempotent: after a crash the daemon runs the
// action of a committed transition again from its start (lifecycle's
// "work" contract), over whatever the first run left. An action never
// writes the store: what it finds that the record must hold it returns in
// its event (Nodes, Build, Whole); what must be recorded beside the job
// (debts) it hands to the Daemon port, which commits it.
package action

import (
	"context"
	"log/slog"
	"time"

	"github.com/rsa-hpc/rsa/internal/access"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/joblog"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/stage"
)

// Action is one kind of the lifecycle's actions.
type Action interface {
	// Kind is the lifecycle action this carries out.
	Kind() lifecycle.ActionKind
	// Run carries the action out for j, a copy of the committed record,
	// and returns its completion event (its At is the caller's to set).
	// It returns when the work is done, failed, or ctx ended (the daemon
	// stops); it never panics on a failure of the world: a failure is an
	// event of the lifecycle's (EvStageInFailed, EvDestroyFailed, ...).
	Run(ctx context.Context, j *job.Job) lifecycle.Event
}

// Daemon is what the actions ask of the daemon that runs them.
type Daemon interface {
	// Ramdisk describes j's RAMDISK for the engine.
	Ramdisk(j *job.Job) engine.Ramdisk
	// Silent are the RSA nodes of parts that did not answer the engine's
	// last look, sorted; none on an engine whose parts are all here.
	Silent(parts []job.Part) []string
	// Record is the committed record of job id.
	Record(ctx context.Context, id int64) (*job.Job, error)
	// Probe is engine.Probe bounded by the engine's probe timeout; done,
	// when it was given up, closes once the probe returns after all.
	Probe(ctx context.Context, rd engine.Ramdisk) (dg engine.Degraded, done <-chan struct{}, err error)
	// Owe records, committed, the parts a teardown of j left on silent
	// RSA nodes, held there until their agents confirm them gone.
	Owe(ctx context.Context, j *job.Job, debt *engine.DebtError) error
	// OweMounts records, committed, the client mounts of j's RAMDISK a
	// teardown left on compute nodes out of reach.
	OweMounts(ctx context.Context, j *job.Job, un *access.UnreachableError) error
	// Forget drops what the daemon keeps in memory of job id's RAMDISK
	// (its reservation): it is gone.
	Forget(id int64)
	// Progress is job id's staging progress; SetProgress replaces it.
	Progress(id int64) job.Progress
	SetProgress(id int64, p job.Progress)
	// ImageBuilt counts one input image built, for the metrics.
	ImageBuilt(bytes int64, took time.Duration)
}

// Env is what the actions work through.
type Env struct {
	Config *config.Config
	// Engine builds the RAMDISKs; Access shows them on compute nodes.
	Engine engine.Engine
	Access access.Access
	Policy mount.Policy // which directories may be mounted over
	// Runner runs the stages of an engine that is no engine.Stager, and
	// a private output's stage-out, here; nil beside a Stager engine
	// with no private output.
	Runner *stage.Runner
	Logs   *joblog.Logs // the jobs' own logs, which their users read
	Log    *slog.Logger // the daemon's log
	Daemon Daemon
}

// Set is every action, by kind, working through env. The lifecycle's
// bookkeeping actions (Assign, StopStageIn) are the daemon's own and not
// here.
func Set(env *Env) map[lifecycle.ActionKind]Action {
	set := map[lifecycle.ActionKind]Action{}
	for _, a := range []Action{
		construct{env},
		stageIn{env},
		mountIn{env},
		mountOut{env},
		unmount{env},
		stageOut{env},
		destroy{env},
	} {
		set[a.Kind()] = a
	}
	return set
}

// done is the event of an action that succeeded.
func done(k lifecycle.EventKind) lifecycle.Event { return lifecycle.Event{Kind: k} }

// failed is the event of an action that failed with err.
func failed(k lifecycle.EventKind, err error) lifecycle.Event {
	return lifecycle.Event{Kind: k, Reason: err.Error()}
}

// note adds a line, and a list under it, to j's own log.
func (e *Env) note(j *job.Job, line string, more ...string) {
	e.Logs.Append(j.ID, j.CreatedAt, line, more...)
}
