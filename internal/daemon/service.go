package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"time"

	"github.com/rsa-hpc/rsa/internal/access"
	"github.com/rsa-hpc/rsa/internal/admission"
	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/asuser"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/holders"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/refuse"
	"github.com/rsa-hpc/rsa/internal/store"
)

var _ api.Service = (*Daemon)(nil)

func (d *Daemon) Version(ctx context.Context) api.VersionInfo {
	v, _ := d.store.SchemaVersion(ctx)
	info := api.VersionInfo{Version: d.version, Schema: v, Config: cmp.Or(d.cfg.Path, "embedded default")}
	if d.lease != nil {
		info.Host, _ = os.Hostname()
		info.Epoch = d.store.Epoch()
	}
	return info
}

// Submit validates a job against the caller's own rights and creates it. On
// this scheduler ("none") the job is on deck at once.
func (d *Daemon) Submit(ctx context.Context, p api.Peer, r api.SubmitRequest) (*api.JobView, error) {
	if p.Root() {
		return nil, refuse.Forbidden("RSA jobs run as a normal user: root's directories are never mounted over; submit as the job's user")
	}
	// A scheduler id names a job only when a scheduler adapter made it:
	// a user who could name a job after someone else's pending Slurm job
	// would get that job's hooks (docs/security.md).
	if r.Spec.Sized != "" {
		return nil, refuse.Invalid("spec.sized is RSA's own note of how it sized a job; leave it out")
	}
	if r.Spec.SchedulerID != "" {
		return nil, refuse.Invalid("spec.name is the scheduler's job id, set only by the scheduler's hooks; leave it out (rsa run and rsa submit jobs are known by their RSA id)")
	}
	if r.Spec.Pool != "" {
		return nil, refuse.Invalid("spec.pool is Slurm's burst buffer pool, set only through Slurm; leave it out")
	}
	j, err := d.create(ctx, p.UID, p.GID, r.Spec, "", func(j *job.Job) error {
		if r.Attach {
			return attach(j, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d.view(j, p), nil
}

// create validates spec for the user uid and creates the job, on deck
// unless prepare says otherwise; scheduler names the adapter that asks
// ("" for rsa run and rsa submit).
func (d *Daemon) create(ctx context.Context, uid, gid uint32, spec job.Spec, scheduler string, prepare func(*job.Job) error) (*job.Job, error) {
	if uid == 0 {
		return nil, refuse.Forbidden("RSA jobs run as a normal user: root's directories are never mounted over")
	}
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return nil, refuse.Forbidden("uid %d has no account on this host: %v", uid, err)
	}
	who := asuser.Identity{UID: uid, GID: gid, Groups: groups(u)}
	if err := d.checker().Validate(&spec, &who); err != nil {
		return nil, err
	}
	if scheduler == "" && d.cfg.Scheduler == config.SchedulerNone && spec.Capacity == 0 {
		if err := d.checker().Size(&spec, &who); err != nil {
			return nil, err
		}
	}
	now := time.Now()
	j := &job.Job{Spec: spec, UID: uid, GID: gid, User: u.Username, Home: u.HomeDir, Groups: who.Groups, Scheduler: scheduler,
		CreatedAt: now, UpdatedAt: now}
	if scheduler == "" {
		// No scheduler will ever start it: its user does, or it ends.
		j.UnstartedExpiry = d.cfg.Limits.UnstartedExpiry
	}
	m := lifecycle.NewJob(false, now)
	j.State, j.RSA = m.State, m.RSA
	by := u.Username
	if scheduler != "" {
		by += " through " + scheduler
	}
	said := fmt.Sprintf("submitted by %s: %s", by, admission.Describe(spec))
	if err := d.admitAndCreate(ctx, j, prepare, job.Event{At: now, Kind: "submit", Message: said}); err != nil {
		return nil, err
	}
	d.log.Info("job submitted", "job", j.ID, "user", u.Username, "via", cmp.Or(scheduler, "rsa"), "spec", admission.Describe(spec))
	d.watchOwner(j)
	return d.call(ctx, msg{id: j.ID, ev: lifecycle.Event{Kind: lifecycle.EvTick, At: time.Now()}})
}

// admitAndCreate applies the job limits to j and stores it, as one step:
// two submissions at once must not both fit under a limit that has room
// for one.
func (d *Daemon) admitAndCreate(ctx context.Context, j *job.Job, prepare func(*job.Job) error, submit job.Event) error {
	d.admitting.Lock()
	defer d.admitting.Unlock()
	if err := d.admit(ctx, j.UID, j.User); err != nil {
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

// admit applies the job limits, the site's and the user's, before a new
// job of uid is created.
func (d *Daemon) admit(ctx context.Context, uid uint32, name string) error {
	active, err := d.store.List(ctx, false, 0)
	if err != nil {
		return err
	}
	var all, mine int
	for _, j := range active {
		if lifecycle.CountsTowardLimits(j.Machine()) {
			all++
			if j.UID == uid {
				mine++
			}
		}
	}
	l := d.cfg.Limits
	if mine >= l.MaxJobsPerUser {
		return refuse.Limit("%s already has %d active RSA jobs (limits.max_jobs_per_user); wait for one to end, or cancel one (rsa status, rsa cancel ID)", name, mine)
	}
	if all >= l.MaxActiveJobs {
		return refuse.Unavailable("RSA already tracks %d active jobs (limits.max_active_jobs); try again later", all)
	}
	return nil
}

// attach makes the calling process (rsa run) the job's owner: the job
// finishes when it exits.
func attach(j *job.Job, p api.Peer) error {
	if p.PID == 0 {
		return refuse.Invalid("rsa run came through the standby rsa serve of a failover pair, whose host the active one cannot watch the process of: run it on the active one's host, or use rsa submit")
	}
	st, err := holders.StartTime(int(p.PID))
	if err != nil {
		return refuse.Invalid("cannot identify the calling process %d: %v", p.PID, err)
	}
	j.Owner = job.Owner{PID: int(p.PID), StartTime: st}
	return nil
}

func groups(u *user.User) []uint32 {
	ids, _ := u.GroupIds()
	var out []uint32
	for _, s := range ids {
		if n, err := strconv.ParseUint(s, 10, 32); err == nil {
			out = append(out, uint32(n))
		}
	}
	return out
}

// view is what peer p may see of j: all of it for the job's user, root and
// the scheduler's users; for anyone else, with private_data, only the id,
// user, states, size and progress (like Slurm's PrivateData=jobs).
func (d *Daemon) view(j *job.Job, p api.Peer) *api.JobView {
	v := api.NewJobView(*j)
	if pr, ok := d.board.Progress(j.ID); ok {
		v.Progress = &pr
	}
	v.Waiting = d.board.Wait(j.ID).Why
	if lifecycle.HoldsNodes(j.RSA) && j.Ramdisk != "" {
		if u, err := d.engine.Usage(d.ramdisk(j)); err == nil {
			v.Used = u.Used
		}
	}
	if d.cfg.PrivateData && !d.mayInspect(p, j) {
		v.Job = job.Job{ID: j.ID, UID: j.UID, User: j.User, State: j.State, RSA: j.RSA, Alloc: j.Alloc,
			CreatedAt: j.CreatedAt, StartedAt: j.StartedAt, FinishedAt: j.FinishedAt, UpdatedAt: j.UpdatedAt, Version: j.Version}
		v.Waiting = ""
		v.Private = true
	}
	return v
}

// ownedBy reports whether p is j's user: the same uid, and still the same
// account. A uid given to a new account after the old one was deleted
// does not inherit the old account's jobs, logs or errors.
func ownedBy(p api.Peer, j *job.Job) bool {
	if p.UID != j.UID {
		return false
	}
	u, err := user.LookupId(strconv.FormatUint(uint64(p.UID), 10))
	return err == nil && u.Username == j.User
}

// mayInspect reports whether p may see all of j: its user, root, and the
// scheduler's users (slurmctld shows bbstat to whom Slurm allows).
func (d *Daemon) mayInspect(p api.Peer, j *job.Job) bool {
	return p.Root() || ownedBy(p, j) || d.hookCaller(p)
}

func (d *Daemon) Jobs(ctx context.Context, p api.Peer, all bool) ([]api.JobView, error) {
	js, err := d.store.List(ctx, all, 1000)
	if err != nil {
		return nil, err
	}
	out := make([]api.JobView, 0, len(js))
	for _, j := range js {
		out = append(out, *d.view(j, p))
	}
	return out, nil
}

func (d *Daemon) get(ctx context.Context, id int64) (*job.Job, error) {
	j, err := d.store.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, refuse.NotFound("job %d not found", id)
	}
	return j, err
}

// Job long-polls: it returns once the job's version passes after, or when
// wait has elapsed.
func (d *Daemon) Job(ctx context.Context, p api.Peer, id, after int64, wait time.Duration) (*api.JobView, error) {
	var j *job.Job
	err := job.Await(ctx, wait, d.changes, func() (bool, error) {
		var err error
		j, err = d.get(ctx, id)
		return err != nil || j.Version > after, err
	})
	if err != nil {
		return nil, err
	}
	return d.view(j, p), nil
}

// changes is a channel closed at the next commit.
func (d *Daemon) changes() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.notify
}

func (d *Daemon) Events(ctx context.Context, p api.Peer, id int64) ([]job.Event, string, error) {
	j, err := d.get(ctx, id)
	if err != nil {
		return nil, "", err
	}
	if !p.Root() && !ownedBy(p, j) {
		return nil, "", refuse.Forbidden("job %d belongs to %s; only its user and root may read its log", id, j.User)
	}
	evs, err := d.store.Events(ctx, id)
	if err != nil {
		return nil, "", err
	}
	return evs, d.logs.Tail(j.ID, j.CreatedAt, 64<<10), nil
}

// Act applies a verb: the job's user (or root) starts, finishes and cancels
// it, and retries or discards a failed stage-out (lifecycle.OwnersToFix);
// only root retries a failed teardown. A retry may stage the output out to
// another directory (o.To), which the job's user must be able to write,
// checked with their rights as at submission.
func (d *Daemon) Act(ctx context.Context, p api.Peer, id int64, verb string, o api.ActOptions) (*api.JobView, error) {
	j, err := d.get(ctx, id)
	if err != nil {
		return nil, err
	}
	owner := p.Root() || ownedBy(p, j)
	who := "uid " + strconv.FormatUint(uint64(p.UID), 10)
	if u, err := user.LookupId(strconv.FormatUint(uint64(p.UID), 10)); err == nil {
		who = u.Username
	}
	m := msg{id: id, ev: lifecycle.Event{At: time.Now()}}
	switch verb {
	case api.VerbStart:
		m.ev.Kind = lifecycle.EvStarted
		if o.Attach && !p.Root() {
			var o job.Job
			if err := attach(&o, p); err != nil {
				return nil, err
			}
			m.edit = func(n *job.Job) { n.Owner = o.Owner }
		}
	case api.VerbFinish:
		m.ev.Kind = lifecycle.EvFinished
	case api.VerbCancel:
		m.ev.Kind, m.ev.Reason = lifecycle.EvFinished, "cancelled by "+who
	case api.VerbRetry:
		m.ev.Kind = lifecycle.EvRetry
	case api.VerbDiscard:
		m.ev.Kind = lifecycle.EvDiscard
	default:
		return nil, refuse.NotFound("unknown action %q (start, finish, cancel, retry, discard)", verb)
	}
	switch {
	case !owner:
		return nil, refuse.Forbidden("job %d belongs to %s; only its user and root may %s it", id, j.User, verb)
	case (verb == api.VerbRetry || verb == api.VerbDiscard) && !p.Root() && !lifecycle.OwnersToFix(j.RSA):
		return nil, refuse.Forbidden("job %d is %s: only root may %s it (its user may retry or discard a failed stage-out)", id, j.RSA, verb)
	case o.To != "" && verb != api.VerbRetry:
		return nil, refuse.Invalid("a directory to stage out to is given only with retry")
	}
	if m.ev.Kind == lifecycle.EvFinished && j.Machine().Ended() {
		return d.view(j, p), nil // finishing twice is harmless
	}
	if m.ev.Kind == lifecycle.EvRetry || m.ev.Kind == lifecycle.EvDiscard {
		if !lifecycle.NeedsAdmin(j.RSA) || (verb == api.VerbDiscard && !lifecycle.Discardable(j.RSA)) {
			return nil, refuse.NotApplicable("job %d is %s: %s applies only to a failed stage-out%s", id, j.RSA, verb,
				map[bool]string{true: " or teardown", false: ""}[verb == api.VerbRetry])
		}
	}
	if o.To != "" {
		if err := d.checker().RetryTo(j, o.To); err != nil {
			return nil, err
		}
		m.edit = func(n *job.Job) { n.Spec.Output = o.To }
	}
	got, err := d.call(ctx, m)
	if err != nil {
		return nil, err
	}
	if o.To != "" {
		d.jobLog(got, "stage-out retried by %s to %q instead of %q", who, o.To, j.Spec.Output)
	}
	if verb == api.VerbStart && m.edit != nil {
		d.watchOwner(got)
	}
	if got.Machine().Ended() && verb != api.VerbFinish {
		d.log.Info("job ended", "job", id, "by", who, "verb", verb)
	}
	return d.view(got, p), nil
}

func (d *Daemon) Nodes(ctx context.Context, _ api.Peer) ([]api.NodeView, error) {
	jobs, err := d.store.List(ctx, false, 0)
	if err != nil {
		return nil, err
	}
	return d.nodeViews(jobs), nil
}

// nodeViews is each RSA node's allocation by the active jobs.
func (d *Daemon) nodeViews(jobs []*job.Job) []api.NodeView {
	drained := d.drained()
	agents := map[string]api.AgentView{}
	if nodes, ok := d.engineNodes(); ok {
		for _, h := range nodes.Health() {
			agents[h.Node] = api.AgentView{State: h.State, Up: h.Up, Rebooted: h.Rebooted, Seen: h.Seen, BootID: h.BootID, Version: h.Version, MemAvailable: h.MemAvailable, Bricks: h.Parts, Error: h.Err,
				Unpooled: h.Unplaceable, PoolError: h.CheckErr}
		}
	}
	var out []api.NodeView
	for _, n := range d.cfg.Nodes {
		v := api.NodeView{Name: n.Name, Engine: n.Engine, Capacity: n.Capacity}
		if a, ok := agents[n.Name]; ok {
			v.Agent = &a
		}
		if dr, ok := drained[n.Name]; ok {
			v.Drain = &api.DrainView{Reason: dr.Reason, By: dr.By, Since: dr.Since}
		}
		for _, db := range d.owed() {
			if db.Node == n.Name {
				v.Used += db.Bytes
				v.Owed += db.Bytes
			}
		}
		for _, j := range jobs {
			if !lifecycle.HoldsNodes(j.RSA) {
				continue
			}
			for _, p := range j.Alloc {
				if p.Node == n.Name {
					v.Used += p.Bytes
					v.Jobs = append(v.Jobs, j.ID)
				}
			}
		}
		out = append(out, v)
	}
	return out
}

// Certificates are the daemon's certificate and each agent's, to anyone:
// a certificate's name, role and expiry are no secret.
func (d *Daemon) Certificates(context.Context, api.Peer) ([]api.CertificateView, error) {
	out := []api.CertificateView{}
	for _, c := range d.certificates() {
		out = append(out, api.CertificateView{Node: c.Node, Role: c.Role, NotAfter: c.NotAfter, Serial: c.Serial})
	}
	return out, nil
}

func (d *Daemon) GC(ctx context.Context, p api.Peer, r api.GCRequest) (*api.GCReport, error) {
	if !p.Root() {
		return nil, refuse.Forbidden("only root may run gc")
	}
	if r.Discard != 0 {
		return d.discardQuarantined(ctx, r.Discard)
	}
	return d.gc(ctx)
}

// gc destroys RAMDISKs that no job in the store holds: leftovers of a
// previous run, or one the engine's nodes brought back (sweepLeftovers).
// A RAMDISK of a job that holds RSA nodes, or may again (one waiting
// to be assigned, as after a lost node), is never touched: its gate and
// directory are its live RAMDISK's too. One a debt is owed for is left to
// the debt's payer. One whose job has no record at all (a lost state
// directory, one restored from an older backup) is destroyed only if its
// engine says it holds nothing: else it is quarantined (quarantine.go).
func (d *Daemon) gc(ctx context.Context) (*api.GCReport, error) {
	return d.gcWhere(ctx, func(engine.Found) bool { return true })
}

// removeFound destroys f, a RAMDISK no job holds: its gate closed, what
// still holds it ended, then the RAMDISK itself.
func (d *Daemon) removeFound(ctx context.Context, f engine.Found) error {
	rd := engine.Ramdisk{Job: f.Job, Build: f.Build, Dir: f.Dir}
	if err := d.engine.Revoke(ctx, rd); err != nil {
		return err
	}
	if err := d.actionEnv().Evict(ctx, &job.Job{ID: f.Job}, rd); err != nil {
		return err
	}
	return d.engine.Destroy(ctx, rd)
}

// gcWhere is gc of the leftovers remove accepts; remove sees only
// RAMDISKs no job holds.
func (d *Daemon) gcWhere(ctx context.Context, remove func(engine.Found) bool) (*api.GCReport, error) {
	found, err := d.engine.List(ctx)
	if err != nil {
		return nil, err
	}
	rep := &api.GCReport{Removed: []string{}}
	var errs []error
	debts := d.owed()
	for _, f := range found {
		// Read after the listing: a RAMDISK is built only after its
		// job's record says so.
		j, err := d.store.Get(ctx, f.Job)
		if err == nil && lifecycle.KeepsRamdisk(j.Machine()) {
			continue
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return rep, err
		}
		if slices.ContainsFunc(debts, func(db store.Debt) bool { return db.Job == f.Job && max(db.Build, 1) == f.Build }) {
			continue
		}
		if err != nil { // no record: RSA knows nothing of what it holds
			q, keep, err := d.unknownRamdisk(ctx, f)
			if err != nil {
				return rep, err
			}
			if keep {
				rep.Quarantined = append(rep.Quarantined, q)
				continue
			}
		}
		if !remove(f) {
			continue
		}
		// One leftover that cannot go (a process of root's holds it)
		// must not keep gc from the others.
		if err := d.removeFound(ctx, f); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", f.Dir, err))
			continue
		}
		d.log.Warn("gc removed a RAMDISK no job holds", "dir", f.Dir, "job", f.Job)
		rep.Removed = append(rep.Removed, f.Dir)
	}
	d.setQuarantined(rep.Quarantined)
	return rep, errors.Join(errs...)
}

// checker checks specs against the config, the engine and its access as
// they are now.
func (d *Daemon) checker() *admission.Checker {
	_, images := d.access.(access.ImageBinder)
	_, private := d.access.(access.PrivateBinder)
	c := &admission.Checker{Config: d.cfg, Policy: d.policy, Images: images, Private: private}
	if d.engine != nil {
		c.Engine = d.engine.Name()
	}
	return c
}
