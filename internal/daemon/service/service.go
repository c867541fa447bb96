package service

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

func (s *Service) Version(ctx context.Context) api.VersionInfo {
	v, _ := s.store.SchemaVersion(ctx)
	info := api.VersionInfo{Version: s.version, Schema: v, Config: cmp.Or(s.cfg.Path, "embedded default")}
	if s.pair {
		info.Host, _ = os.Hostname()
		info.Epoch = s.store.Epoch()
	}
	return info
}

// Submit validates a job against the caller's own rights and creates it. On
// this scheduler ("none") the job is on deck at once.
func (s *Service) Submit(ctx context.Context, p api.Peer, r api.SubmitRequest) (*api.JobView, error) {
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
	j, err := s.Create(ctx, p.UID, p.GID, r.Spec, "", func(j *job.Job) error {
		if r.Attach {
			return attach(j, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.View(j, p), nil
}

// Create validates spec for the user uid and creates the job, on deck
// unless prepare says otherwise; scheduler names the adapter that asks
// ("" for rsa run and rsa submit).
func (s *Service) Create(ctx context.Context, uid, gid uint32, spec job.Spec, scheduler string, prepare func(*job.Job) error) (*job.Job, error) {
	if uid == 0 {
		return nil, refuse.Forbidden("RSA jobs run as a normal user: root's directories are never mounted over")
	}
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return nil, refuse.Forbidden("uid %d has no account on this host: %v", uid, err)
	}
	who := asuser.Identity{UID: uid, GID: gid, Groups: groups(u)}
	if err := s.Checker().Validate(&spec, &who); err != nil {
		return nil, err
	}
	if scheduler == "" && s.cfg.Scheduler == config.SchedulerNone && spec.Capacity == 0 {
		if err := s.Checker().Size(&spec, &who); err != nil {
			return nil, err
		}
	}
	now := time.Now()
	j := &job.Job{Spec: spec, UID: uid, GID: gid, User: u.Username, Home: u.HomeDir, Groups: who.Groups, Scheduler: scheduler,
		CreatedAt: now, UpdatedAt: now}
	if scheduler == "" {
		// No scheduler will ever start it: its user does, or it ends.
		j.UnstartedExpiry = s.cfg.Limits.UnstartedExpiry
	}
	m := lifecycle.NewJob(false, now)
	j.State, j.RSA = m.State, m.RSA
	by := u.Username
	if scheduler != "" {
		by += " through " + scheduler
	}
	said := fmt.Sprintf("submitted by %s: %s", by, admission.Describe(spec))
	if err := s.core.Admit(ctx, j, prepare, job.Event{At: now, Kind: "submit", Message: said}); err != nil {
		return nil, err
	}
	s.log.Info("job submitted", "job", j.ID, "user", u.Username, "via", cmp.Or(scheduler, "rsa"), "spec", admission.Describe(spec))
	s.core.WatchOwner(j)
	return s.core.Apply(ctx, j.ID, lifecycle.Event{Kind: lifecycle.EvTick, At: time.Now()}, nil)
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

// View is what peer p may see of j: all of it for the job's user, root and
// the scheduler's users; for anyone else, with private_data, only the id,
// user, states, size and progress (like Slurm's PrivateData=jobs).
func (s *Service) View(j *job.Job, p api.Peer) *api.JobView {
	v := api.NewJobView(*j)
	if pr, ok := s.board.Progress(j.ID); ok {
		v.Progress = &pr
	}
	v.Waiting = s.board.Wait(j.ID).Why
	if lifecycle.HoldsNodes(j.RSA) && j.Ramdisk != "" {
		if u, err := s.engine.Usage(s.core.Ramdisk(j)); err == nil {
			v.Used = u.Used
		}
	}
	if s.cfg.PrivateData && !s.mayInspect(p, j) {
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
func (s *Service) mayInspect(p api.Peer, j *job.Job) bool {
	return p.Root() || ownedBy(p, j) || s.scheduler.IsScheduler(p)
}

func (s *Service) Jobs(ctx context.Context, p api.Peer, all bool) ([]api.JobView, error) {
	js, err := s.store.List(ctx, all, 1000)
	if err != nil {
		return nil, err
	}
	out := make([]api.JobView, 0, len(js))
	for _, j := range js {
		out = append(out, *s.View(j, p))
	}
	return out, nil
}

func (s *Service) get(ctx context.Context, id int64) (*job.Job, error) {
	j, err := s.store.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, refuse.NotFound("job %d not found", id)
	}
	return j, err
}

// Job long-polls: it returns once the job's version passes after, or when
// wait has elapsed.
func (s *Service) Job(ctx context.Context, p api.Peer, id, after int64, wait time.Duration) (*api.JobView, error) {
	var j *job.Job
	err := job.Await(ctx, wait, s.core.Changes, func() (bool, error) {
		var err error
		j, err = s.get(ctx, id)
		return err != nil || j.Version > after, err
	})
	if err != nil {
		return nil, err
	}
	return s.View(j, p), nil
}

func (s *Service) Events(ctx context.Context, p api.Peer, id int64) ([]job.Event, string, error) {
	j, err := s.get(ctx, id)
	if err != nil {
		return nil, "", err
	}
	if !p.Root() && !ownedBy(p, j) {
		return nil, "", refuse.Forbidden("job %d belongs to %s; only its user and root may read its log", id, j.User)
	}
	evs, err := s.store.Events(ctx, id)
	if err != nil {
		return nil, "", err
	}
	return evs, s.logs.Tail(j.ID, j.CreatedAt, 64<<10), nil
}

// Act applies a verb: the job's user (or root) starts, finishes and cancels
// it, and retries or discards a failed stage-out (lifecycle.OwnersToFix);
// only root retries a failed teardown. A retry may stage the output out to
// another directory (o.To), which the job's user must be able to write,
// checked with their rights as at submission.
func (s *Service) Act(ctx context.Context, p api.Peer, id int64, verb string, o api.ActOptions) (*api.JobView, error) {
	j, err := s.get(ctx, id)
	if err != nil {
		return nil, err
	}
	owner := p.Root() || ownedBy(p, j)
	who := "uid " + strconv.FormatUint(uint64(p.UID), 10)
	if u, err := user.LookupId(strconv.FormatUint(uint64(p.UID), 10)); err == nil {
		who = u.Username
	}
	ev := lifecycle.Event{At: time.Now()}
	var edit func(*job.Job)
	switch verb {
	case api.VerbStart:
		ev.Kind = lifecycle.EvStarted
		if o.Attach && !p.Root() {
			var o job.Job
			if err := attach(&o, p); err != nil {
				return nil, err
			}
			edit = func(n *job.Job) { n.Owner = o.Owner }
		}
	case api.VerbFinish:
		ev.Kind = lifecycle.EvFinished
	case api.VerbCancel:
		ev.Kind, ev.Reason = lifecycle.EvFinished, "cancelled by "+who
	case api.VerbRetry:
		ev.Kind = lifecycle.EvRetry
	case api.VerbDiscard:
		ev.Kind = lifecycle.EvDiscard
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
	if ev.Kind == lifecycle.EvFinished && j.Machine().Ended() {
		return s.View(j, p), nil // finishing twice is harmless
	}
	if ev.Kind == lifecycle.EvRetry || ev.Kind == lifecycle.EvDiscard {
		if !lifecycle.NeedsAdmin(j.RSA) || (verb == api.VerbDiscard && !lifecycle.Discardable(j.RSA)) {
			return nil, refuse.NotApplicable("job %d is %s: %s applies only to a failed stage-out%s", id, j.RSA, verb,
				map[bool]string{true: " or teardown", false: ""}[verb == api.VerbRetry])
		}
	}
	if o.To != "" {
		if err := s.Checker().RetryTo(j, o.To); err != nil {
			return nil, err
		}
		edit = func(n *job.Job) { n.Spec.Output = o.To }
	}
	got, err := s.core.Apply(ctx, id, ev, edit)
	if err != nil {
		return nil, err
	}
	if o.To != "" {
		s.logs.Append(got.ID, got.CreatedAt, fmt.Sprintf("stage-out retried by %s to %q instead of %q", who, o.To, j.Spec.Output))
	}
	if verb == api.VerbStart && edit != nil {
		s.core.WatchOwner(got)
	}
	if got.Machine().Ended() && verb != api.VerbFinish {
		s.log.Info("job ended", "job", id, "by", who, "verb", verb)
	}
	return s.View(got, p), nil
}

func (s *Service) Nodes(ctx context.Context, _ api.Peer) ([]api.NodeView, error) {
	jobs, err := s.store.List(ctx, false, 0)
	if err != nil {
		return nil, err
	}
	return s.nodeViews(jobs), nil
}

// nodeViews is each RSA node's allocation by the active jobs.
func (s *Service) nodeViews(jobs []*job.Job) []api.NodeView {
	drained := s.Drained()
	agents := map[string]api.AgentView{}
	if nodes, ok := s.engineNodes(); ok {
		for _, h := range nodes.Health() {
			agents[h.Node] = api.AgentView{State: h.State, Up: h.Up, Rebooted: h.Rebooted, Seen: h.Seen, BootID: h.BootID, Version: h.Version, MemAvailable: h.MemAvailable, Bricks: h.Parts, Error: h.Err,
				Unpooled: h.Unplaceable, PoolError: h.CheckErr}
		}
	}
	var out []api.NodeView
	for _, n := range s.cfg.Nodes {
		v := api.NodeView{Name: n.Name, Engine: n.Engine, Capacity: n.Capacity}
		if a, ok := agents[n.Name]; ok {
			v.Agent = &a
		}
		if dr, ok := drained[n.Name]; ok {
			v.Drain = &api.DrainView{Reason: dr.Reason, By: dr.By, Since: dr.Since}
		}
		for _, db := range s.debts.Owed() {
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
func (s *Service) Certificates(context.Context, api.Peer) ([]api.CertificateView, error) {
	out := []api.CertificateView{}
	for _, c := range s.certificates() {
		out = append(out, api.CertificateView{Node: c.Node, Role: c.Role, NotAfter: c.NotAfter, Serial: c.Serial})
	}
	return out, nil
}

func (s *Service) GC(ctx context.Context, p api.Peer, r api.GCRequest) (*api.GCReport, error) {
	if !p.Root() {
		return nil, refuse.Forbidden("only root may run gc")
	}
	if r.Discard != 0 {
		return s.discardQuarantined(ctx, r.Discard)
	}
	return s.Collect(ctx)
}

// Collect destroys RAMDISKs that no job in the store holds: leftovers of a
// previous run, or one the engine's nodes brought back (sweepLeftovers).
// A RAMDISK of a job that holds RSA nodes, or may again (one waiting
// to be assigned, as after a lost node), is never touched: its gate and
// directory are its live RAMDISK's too. One a debt is owed for is left to
// the debt's payer. One whose job has no record at all (a lost state
// directory, one restored from an older backup) is destroyed only if its
// engine says it holds nothing: else it is quarantined (quarantine.go).
func (s *Service) Collect(ctx context.Context) (*api.GCReport, error) {
	return s.CollectWhere(ctx, func(engine.Found) bool { return true })
}

// removeFound destroys f, a RAMDISK no job holds: its gate closed, what
// still holds it ended, then the RAMDISK itself.
func (s *Service) removeFound(ctx context.Context, f engine.Found) error {
	rd := engine.Ramdisk{Job: f.Job, Build: f.Build, Dir: f.Dir}
	if err := s.engine.Revoke(ctx, rd); err != nil {
		return err
	}
	if err := s.core.Evict(ctx, &job.Job{ID: f.Job}, rd); err != nil {
		return err
	}
	return s.engine.Destroy(ctx, rd)
}

// CollectWhere is Collect of the leftovers remove accepts; remove sees
// only RAMDISKs no job holds.
func (s *Service) CollectWhere(ctx context.Context, remove func(engine.Found) bool) (*api.GCReport, error) {
	found, err := s.engine.List(ctx)
	if err != nil {
		return nil, err
	}
	rep := &api.GCReport{Removed: []string{}}
	var errs []error
	debts := s.debts.Owed()
	for _, f := range found {
		// Read after the listing: a RAMDISK is built only after its
		// job's record says so.
		j, err := s.store.Get(ctx, f.Job)
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
			q, keep, err := s.unknownRamdisk(ctx, f)
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
		if err := s.removeFound(ctx, f); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", f.Dir, err))
			continue
		}
		s.log.Warn("gc removed a RAMDISK no job holds", "dir", f.Dir, "job", f.Job)
		rep.Removed = append(rep.Removed, f.Dir)
	}
	s.setQuarantined(rep.Quarantined)
	return rep, errors.Join(errs...)
}

// Checker checks specs against the config, the engine and its access as
// they are now.
func (s *Service) Checker() *admission.Checker {
	_, images := s.access.(access.ImageBinder)
	_, private := s.access.(access.PrivateBinder)
	c := &admission.Checker{Config: s.cfg, Policy: s.policy, Images: images, Private: private}
	if s.engine != nil {
		c.Engine = s.engine.Name()
	}
	return c
}
