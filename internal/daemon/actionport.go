package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/rsa-hpc/rsa/internal/access"
	"github.com/rsa-hpc/rsa/internal/daemon/action"
	"github.com/rsa-hpc/rsa/internal/daemon/watch"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// execute carries out one action of j's committed transition and returns
// its completion event.
func (d *Daemon) execute(ctx context.Context, j *job.Job, kind lifecycle.ActionKind) lifecycle.Event {
	a, ok := action.Set(d.actionEnv())[kind]
	if !ok {
		return lifecycle.Event{Kind: lifecycle.EvDestroyFailed, Reason: fmt.Sprintf("unknown action %s", kind)}
	}
	return a.Run(ctx, j)
}

// actionEnv is what the actions work through: the daemon's engine,
// access and runner as they are now.
func (d *Daemon) actionEnv() *action.Env {
	return &action.Env{Config: d.cfg, Engine: d.engine, Access: d.access, Policy: d.policy, Runner: d.runner,
		Logs: d.logs, Log: d.log, Daemon: actionPort{d}}
}

// actionPort is the daemon as the actions see it (action.Daemon).
type actionPort struct{ d *Daemon }

var _ action.Daemon = actionPort{}

func (p actionPort) Ramdisk(j *job.Job) engine.Ramdisk { return p.d.ramdisk(j) }

func (p actionPort) Silent(parts []job.Part) []string { return watch.Silent(p.d.engine, parts) }

func (p actionPort) Record(ctx context.Context, id int64) (*job.Job, error) {
	return p.d.store.Get(ctx, id)
}

func (p actionPort) Probe(ctx context.Context, rd engine.Ramdisk) (engine.Degraded, <-chan struct{}, error) {
	return watch.Probe(ctx, p.d.engine, rd)
}

func (p actionPort) Owe(ctx context.Context, j *job.Job, debt *engine.DebtError) error {
	return p.d.debts.Owe(ctx, j, debt)
}

func (p actionPort) OweMounts(ctx context.Context, j *job.Job, un *access.UnreachableError) error {
	return p.d.debts.OweMounts(ctx, j, un)
}

func (p actionPort) Forget(id int64) { p.d.forget(id) }

func (p actionPort) Progress(id int64) job.Progress { pr, _ := p.d.board.Progress(id); return pr }

func (p actionPort) SetProgress(id int64, pr job.Progress) { p.d.board.SetProgress(id, pr) }

func (p actionPort) ImageBuilt(bytes int64, took time.Duration) { p.d.metrics.ImageBuilt(bytes, took) }
