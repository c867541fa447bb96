package daemon

import (
	"context"
	"errors"
	"fmt"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/asuser"
	"github.com/rsa-hpc/rsa/internal/daemon/board"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/refuse"
	"github.com/rsa-hpc/rsa/internal/slurm/adapter"
	"github.com/rsa-hpc/rsa/internal/store"
)

// The Slurm adapter (internal/slurm/adapter) answers Slurm's hooks and
// watches Slurm; it reaches the jobs through slurmPort alone, and the
// daemon reaches it for the hooks, the job markers and who the scheduler
// is.

// syncMarkers makes the Slurm job markers those of the jobs not done.
func (d *Daemon) syncMarkers(jobs []*job.Job) error { return d.slurm.SyncMarkers(jobs) }

// mark tells the Slurm prolog that a job is RSA's, before it is stored.
func (d *Daemon) mark(name string) { d.slurm.Mark(name) }

// unmark drops a done job's marker, unless a newer RSA job (Slurm requeued
// the job) has the same Slurm id. It waits for a submission under way,
// which may be that newer job.
func (d *Daemon) unmark(ctx context.Context, j *job.Job) {
	if !d.slurm.Marking() || j.Scheduler == "" || j.Spec.SchedulerID == "" {
		return
	}
	d.admitting.Lock()
	defer d.admitting.Unlock()
	d.unmarkUnlocked(ctx, j.Spec.SchedulerID, j.ID)
}

// unmarkUnlocked clears the marker of Slurm job name unless a live RSA job
// other than except has it; d.admitting is held.
func (d *Daemon) unmarkUnlocked(ctx context.Context, name string, except int64) {
	d.slurm.Unmark(ctx, name, except)
}

// slurmPort is the daemon as the Slurm adapter sees it.
type slurmPort struct{ d *Daemon }

var _ adapter.Jobs = slurmPort{}

func (p slurmPort) Latest(ctx context.Context, name string) (*job.Job, error) {
	j, err := p.d.store.FindByName(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return j, nil
}

func (p slurmPort) List(ctx context.Context, all bool, limit int) ([]*job.Job, error) {
	return p.d.store.List(ctx, all, limit)
}

func (p slurmPort) Create(ctx context.Context, uid, gid uint32, spec job.Spec, scheduler string, prepare func(*job.Job) error) (*job.Job, error) {
	return p.d.api.Create(ctx, uid, gid, spec, scheduler, prepare)
}

func (p slurmPort) Call(ctx context.Context, id int64, ev lifecycle.Event, edit func(*job.Job)) (*job.Job, error) {
	j, err := p.d.call(ctx, msg{id: id, ev: ev, edit: edit})
	// apply refuses an event the machine does not take as not
	// applicable.
	if errors.Is(err, refuse.ErrNotApplicable) {
		return j, fmt.Errorf("%w: %w", adapter.ErrIgnored, err)
	}
	return j, err
}

func (p slurmPort) Post(id int64, ev lifecycle.Event, edit func(*job.Job)) {
	p.d.post(msg{id: id, ev: ev, edit: edit})
}

func (p slurmPort) Changed() <-chan struct{} { return p.d.changes() }

func (p slurmPort) CapacityWait(id int64) string {
	if w := p.d.board.Wait(id); w.Kind == board.WaitCapacity {
		return w.Why
	}
	return ""
}

func (p slurmPort) JobLog(j *job.Job, line string) { p.d.appendStageLog(j, line) }

func (p slurmPort) Validate(spec *job.Spec, who *asuser.Identity) error {
	return p.d.api.Checker().Validate(spec, who)
}

func (p slurmPort) View(j *job.Job, caller api.Peer) *api.JobView { return p.d.api.View(j, caller) }

func (p slurmPort) Pool(uncounted func(*job.Job) bool) []adapter.PoolNode {
	d := p.d
	unaccounted := d.book.Allocated(uncounted)
	for _, db := range d.owed() {
		unaccounted[db.Node] += db.Bytes // of jobs Slurm is done with
	}
	all := d.book.Holdings().ByNode
	drained := d.api.Drained()
	nodes := make([]adapter.PoolNode, 0, len(d.cfg.Nodes))
	for _, n := range d.cfg.Nodes {
		_, isDrained := drained[n.Name]
		nodes = append(nodes, adapter.PoolNode{Name: n.Name, Capacity: n.Capacity, Open: !isDrained && d.book.Placeable(n.Name),
			Held: all[n.Name], Uncounted: unaccounted[n.Name]})
	}
	return nodes
}
