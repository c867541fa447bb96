package daemon

import (
	"context"

	"github.com/rsa-hpc/rsa/internal/admission"
	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/daemon/book"
	"github.com/rsa-hpc/rsa/internal/daemon/service"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/store"
)

// serviceDeps are what d's API works through, with the drains the store
// holds.
func (d *Daemon) serviceDeps(drains map[string]store.Drain) service.Deps {
	return service.Deps{Config: d.cfg, Store: d.store, Engine: d.engine, Access: d.access, Policy: d.policy,
		Core: servicePort{d}, Scheduler: schedulerPort{d}, Board: &d.board, Debts: d.debts, Logs: d.logs, Log: d.log,
		Version: d.version, Pair: d.lease != nil, Drains: drains}
}

// servicePort is the daemon as its API (package service) reaches it.
type servicePort struct{ d *Daemon }

var _ service.Core = servicePort{}

func (p servicePort) Admit(ctx context.Context, j *job.Job, prepare func(*job.Job) error, submit job.Event) error {
	d := p.d
	d.admitting.Lock()
	defer d.admitting.Unlock()
	active, err := d.store.List(ctx, false, 0)
	if err != nil {
		return err
	}
	if err := admission.Limit(active, j.UID, j.User, d.cfg.Limits); err != nil {
		return err
	}
	if prepare != nil {
		if err := prepare(j); err != nil {
			return err
		}
	}
	submit.JobState, submit.RSAState = j.State, j.RSA
	// Marked before it is stored, under the same lock as unmark: an
	// earlier record of the same Slurm id that ends meanwhile cannot take
	// the new job's marker away.
	if j.Scheduler != "" {
		d.mark(j.Spec.SchedulerID)
	}
	if err := d.store.Create(ctx, j, []job.Event{submit}); err != nil {
		d.fenced(err)
		d.unmarkUnlocked(ctx, j.Spec.SchedulerID, 0)
		return err
	}
	return nil
}

func (p servicePort) Apply(ctx context.Context, id int64, ev lifecycle.Event, edit func(*job.Job)) (*job.Job, error) {
	return p.d.call(ctx, msg{id: id, ev: ev, edit: edit})
}

func (p servicePort) Changes() <-chan struct{} { return p.d.changes() }

func (p servicePort) WatchOwner(j *job.Job) { p.d.watchOwner(j) }

func (p servicePort) Ramdisk(j *job.Job) engine.Ramdisk { return p.d.ramdisk(j) }

func (p servicePort) Evict(ctx context.Context, j *job.Job, rd engine.Ramdisk) error {
	return p.d.actionEnv().Evict(ctx, j, rd)
}

// schedulerPort is the Slurm adapter as the API reaches it; the adapter
// is made after the API, whose metrics it records in.
type schedulerPort struct{ d *Daemon }

var _ service.Scheduler = schedulerPort{}

func (p schedulerPort) Hook(ctx context.Context, pr api.Peer, r api.HookRequest) (*api.HookReply, error) {
	return p.d.slurm.Hook(ctx, pr, r)
}

func (p schedulerPort) IsScheduler(pr api.Peer) bool { return p.d.slurm.IsScheduler(pr) }

// changes is a channel closed at the next commit.
func (d *Daemon) changes() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.notify
}

// bookPort is the daemon as its account of RAM (package book) reads it.
type bookPort struct{ d *Daemon }

var _ book.Source = bookPort{}

func (p bookPort) EachActive(fn func(*job.Job))    { p.d.store.EachActive(fn) }
func (p bookPort) Owed() []store.Debt              { return p.d.owed() }
func (p bookPort) Drained() map[string]store.Drain { return p.d.api.Drained() }
