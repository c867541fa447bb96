package adapter

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/user"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/asuser"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/refuse"
	"github.com/rsa-hpc/rsa/internal/slurm"
	"github.com/rsa-hpc/rsa/internal/textsafe"
)

// poolGranularity is the unit of the pool RSA reports to Slurm.
const poolGranularity = 1 << 20

// IsScheduler reports whether p acts for the scheduler: root or a user of
// slurm.users, on the RSA host. Only they may call hooks, and they see
// every job in full (slurmctld shows bbstat to whom Slurm allows).
func (a *Adapter) IsScheduler(p api.Peer) bool {
	if p.Remote {
		return false // the scheduler's user acts on the RSA host only
	}
	if p.Root() {
		return true
	}
	u, err := user.LookupId(strconv.FormatUint(uint64(p.UID), 10))
	return err == nil && slices.Contains(a.cfg.Slurm.Users, u.Username)
}

func done(msg string, a ...any) (*api.HookReply, error) {
	return &api.HookReply{Verdict: api.Success, Message: fmt.Sprintf(msg, a...)}, nil
}

func failed(msg string, a ...any) (*api.HookReply, error) {
	return &api.HookReply{Verdict: api.Failure, Message: fmt.Sprintf(msg, a...)}, nil
}

// Hook answers one scheduler hook.
func (a *Adapter) Hook(ctx context.Context, p api.Peer, r api.HookRequest) (*api.HookReply, error) {
	if !a.IsScheduler(p) {
		return nil, refuse.Forbidden("only root and the users in slurm.users may call scheduler hooks")
	}
	if a.cfg.Scheduler == config.SchedulerNone {
		return nil, refuse.Invalid("this rsa daemon runs with scheduler = \"none\"; set scheduler = \"slurm\" or \"slurm-poll\" in its config")
	}
	a.log.Debug("scheduler hook", "hook", r.Hook, "args", r.Args, "via", r.Via)
	via := "rsa"
	switch r.Via {
	case "":
	case api.ViaLuaSocket:
		via = r.Via
	default:
		return nil, refuse.Invalid("hook request via %q: leave via out, or say %q", textsafe.Line(r.Via), api.ViaLuaSocket)
	}
	if known[r.Hook] {
		defer func(began time.Time) { a.metrics.ObserveHook(r.Hook, via, time.Since(began)) }(time.Now())
	}
	arg := func(i int) string {
		if i < len(r.Args) {
			return r.Args[i]
		}
		return ""
	}
	switch r.Hook {
	case "job_process":
		return a.hookJobProcess(r.Script, arg(1))
	case "pools":
		return a.hookPools()
	case "get_status":
		return a.hookStatus(ctx, r.Args)
	}
	// Every other hook is about one job: its arguments start with the
	// Slurm job id and the uid and gid Slurm says it runs as ("" where
	// Slurm 22.05 does not say), and the RSA job must be that user's.
	sj := slurmJob{name: arg(0), uid: arg(1), gid: arg(2)}
	switch r.Hook {
	case "setup":
		return a.hookSetup(ctx, sj, arg(3), r.Script)
	case "data_in", "test_data_in":
		return a.await(ctx, sj, r.Wait, stageInVerdict)
	case "real_size":
		return done("")
	case "paths":
		return a.hookPaths(ctx, sj)
	case "pre_run", "prolog":
		if err := a.slurmStart(ctx, sj, arg(3)); err != nil {
			return failed("%v", err)
		}
		return a.awaitMount(ctx, sj, r.Wait)
	case "post_run":
		return a.finishNamed(ctx, sj, "job ended", r.Wait, nil)
	case "data_out", "test_data_out":
		return a.finishNamed(ctx, sj, "job ended", r.Wait, stageOutVerdict)
	case "epilog":
		return a.finishNamed(ctx, sj, "job ended", r.Wait, unmountVerdict)
	case "teardown":
		return a.finishNamed(ctx, sj, "torn down by Slurm", r.Wait, teardownVerdict)
	}
	return nil, refuse.NotFound("unknown hook %q", r.Hook)
}

// known are the hooks the metrics count; others are errors and would make
// a series for any name a caller sends.
var known = map[string]bool{
	"job_process": true, "pools": true, "get_status": true, "setup": true, "data_in": true, "test_data_in": true,
	"real_size": true, "paths": true, "pre_run": true, "prolog": true, "post_run": true, "data_out": true,
	"test_data_out": true, "epilog": true, "teardown": true,
}

// slurmJob is a hook's job: the Slurm job id and, where Slurm passes them,
// the uid and gid it runs as.
type slurmJob struct{ name, uid, gid string }

// hookJobProcess validates a job script at submission. It runs inside
// slurmctld: it reads nothing but the script and the file system.
func (a *Adapter) hookJobProcess(script, uidArg string) (*api.HookReply, error) {
	req, ok, err := a.parseRequest(script)
	if err != nil {
		return failed("%v", err)
	}
	if !ok {
		return done("")
	}
	// Slurm 22.05 does not say who submits; the owner is checked again
	// at setup, which knows.
	var who *asuser.Identity
	if uid, known := parseUID(uidArg); known {
		if who, err = identityOf(uid); err != nil {
			return failed("RSA: %v", err)
		}
	}
	if err := a.jobs.Validate(&req.Spec, who); err != nil {
		return failed("RSA: %v", err)
	}
	if why := a.tooSmall(req); why != "" {
		return failed("RSA: %s", why)
	}
	return done("")
}

// tooSmall says why a job, by its script's own #SBATCH lines, would get no
// RAM under the proportion rule, or "". Refused at sbatch, where the user
// reads it: Slurm 22.05 shows nothing of a hook that succeeds, and such a
// job would otherwise run from disk with only rsa status saying why.
func (a *Adapter) tooSmall(req slurm.Request) string {
	if req.Spec.Capacity > 0 || req.ScriptNodes == 0 || req.ScriptNodes >= a.cfg.MinJobNodes {
		return ""
	}
	return fmt.Sprintf("a %d-node job gets no RSA RAM at this site: whole RSA nodes go to jobs of %d compute nodes or more "+
		"(one RSA node per %d); add '#RSA capacity=SIZE pool=%s' to ask for RAM, or remove the #RSA lines to run from disk "+
		"(RSA reads the node count from the script's #SBATCH lines: if sbatch's command line asks for more nodes, write that number there)",
		req.ScriptNodes, a.cfg.MinJobNodes, a.cfg.Proportion, a.cfg.Slurm.Pool)
}

// identityOf is uid with its primary group and groups, for checks made
// with the user's rights.
func identityOf(uid uint32) (*asuser.Identity, error) {
	id, err := asuser.Lookup(uid)
	if err != nil {
		return nil, fmt.Errorf("uid %d has no account on this host: %w", uid, err)
	}
	return &id, nil
}

func parseUID(s string) (uint32, bool) {
	n, err := strconv.ParseUint(s, 10, 32)
	return uint32(n), err == nil
}

// parseRequest reads a job script's RSA lines; ok is false when it has
// none. Its errors are ready to become the job's Reason.
func (a *Adapter) parseRequest(script string) (req slurm.Request, ok bool, err error) {
	req, ok, err = slurm.Parse([]byte(script))
	if err == nil && req.Pool != "" && req.Pool != a.cfg.Slurm.Pool {
		err = fmt.Errorf("pool=%s is not RSA's pool; write pool=%s", req.Pool, a.cfg.Slurm.Pool)
	}
	if err != nil {
		err = fmt.Errorf("RSA: %w", err)
	}
	return req, ok, err
}

// hookPools reports RSA's RAM as one pool. Slurm counts the jobs that
// asked for pool capacity itself; free space leaves out the RAM that RSA
// holds for other reasons (jobs sized by proportion, rsa run jobs, and
// output kept in RAM after Slurm let go of a job).
func (a *Adapter) hookPools() (*api.HookReply, error) {
	var total, held int64
	for _, n := range a.jobs.Pool(func(j *job.Job) bool { return j.Spec.Pool == "" || lifecycle.NeedsAdmin(j.RSA) }) {
		total += n.Capacity
		if !n.Open {
			// Nothing new fits on a drained node, nor on one the engine
			// makes no part on now (engine.Nodes.Placeable): all of it
			// but what Slurm's own pool jobs hold (Slurm counts those)
			// is taken. The quantity keeps it, so that a job bigger
			// than the live nodes waits for them rather than being
			// refused.
			held += n.Capacity - (n.Held - n.Uncounted)
			continue
		}
		held += n.Uncounted
	}
	free := max(total-held, 0)
	b, _ := json.Marshal(map[string]any{"pools": []map[string]any{{
		"id": a.cfg.Slurm.Pool, "granularity": poolGranularity,
		"quantity": total / poolGranularity, "free": free / poolGranularity,
	}}})
	return done("%s", b)
}

// latest returns the newest RSA job that a scheduler adapter made for a
// Slurm job id, or nil. A job held and released, or requeued, by Slurm is
// set up again as a new RSA job; the newest may be done. Where Slurm says
// whose job it is, the RSA job must be that user's: a job of one user is
// never answered for another's.
func (a *Adapter) latest(ctx context.Context, sj slurmJob) (*job.Job, error) {
	if sj.name == "" {
		return nil, refuse.Invalid("no Slurm job id given")
	}
	if err := slurm.CheckID(sj.name); err != nil {
		return nil, refuse.Invalid("%v", err)
	}
	j, err := a.jobs.Latest(ctx, sj.name)
	if err != nil || j == nil {
		return nil, err
	}
	return j, a.checkSlurmUser(j, sj)
}

// checkSlurmUser refuses j for a hook whose uid or gid (where Slurm passes
// them) is not j's.
func (a *Adapter) checkSlurmUser(j *job.Job, sj slurmJob) error {
	for _, c := range []struct {
		what, arg string
		have      uint32
	}{{"uid", sj.uid, j.UID}, {"gid", sj.gid, j.GID}} {
		if c.arg == "" {
			continue
		}
		n, ok := parseUID(c.arg)
		if !ok {
			return refuse.Invalid("Slurm job %s: %s %q is not a number", sj.name, c.what, c.arg)
		}
		if n != c.have {
			a.log.Warn("hook for a Slurm job whose RSA job is another user's", "slurm_job", sj.name, "job", j.ID, c.what, n, "recorded", c.have)
			return refuse.Forbidden("RSA job %d of Slurm job %s belongs to %s %d, not %d as Slurm says; refusing", j.ID, sj.name, c.what, c.have, n)
		}
	}
	return nil
}

// hookSetup creates the RSA job for a Slurm job that is about to be staged
// in. Asked again for the same job it changes nothing.
func (a *Adapter) hookSetup(ctx context.Context, sj slurmJob, sizeArg, script string) (*api.HookReply, error) {
	name := sj.name
	uid, ok1 := parseUID(sj.uid)
	gid, ok2 := parseUID(sj.gid)
	if !ok1 || !ok2 {
		return failed("RSA: setup of job %s gave no uid/gid", name)
	}
	// A record of a job that already finished is an earlier run (the job
	// was requeued, or held and released, or Slurm's ids started again
	// and it was another user's): this run gets a new one.
	if j, err := a.latest(ctx, slurmJob{name: name}); err != nil {
		return failed("RSA: %v", err)
	} else if j != nil && !j.Machine().Ended() {
		if err := a.checkSlurmUser(j, sj); err != nil {
			return failed("RSA: %v", err)
		}
		return done("RSA job %d is %s", j.ID, j.RSA)
	}
	req, ok, err := a.parseRequest(script)
	switch {
	case err != nil:
		return failed("%v", err)
	case !ok:
		return failed("RSA: the job script of job %s has no #RSA line", name)
	}
	spec := req.Spec
	spec.SchedulerID = name
	if size, err := strconv.ParseInt(sizeArg, 10, 64); err == nil && size > 0 && req.Pool != "" {
		spec.Capacity, spec.Pool = size, req.Pool
	}
	slj, err := a.slurm.Job(ctx, name)
	if err != nil {
		return failed("RSA: reading job %s from Slurm: %v", name, err)
	}
	spec.ComputeNodes = max(slj.Nodes, 1)
	notBefore, expected := a.setupStart(ctx, spec, slj)
	j, err := a.jobs.Create(ctx, uid, gid, spec, config.SchedulerSlurm, func(j *job.Job) error {
		j.NotBefore, j.Expected = notBefore, expected
		// Slurm blocks in data_in while the job waits for RSA; on 22.05
		// that wait can hold up the very job whose RAM it waits for
		// (config.Slurm.CapacityWait). One with capacity= waits in
		// Slurm's queue for pool space instead, never in data_in.
		if spec.Capacity == 0 {
			j.CapacityWait = a.cfg.Slurm.CapacityWait
		}
		return nil
	})
	if err != nil {
		return failed("RSA: %v", err)
	}
	return done("RSA job %d is %s", j.ID, j.RSA)
}

// setupStart is when the stage-in of a job Slurm asks RSA to set up
// begins, and the estimate of the job's start that says so (zero: none yet).
//
// Slurm's main scheduler asks for a burst buffer's stage-in as soon as it
// meets the job, before backfill has estimated the job's start: it stamps
// the job with the time of its own pass, which reads as "now" whether or
// not the job's nodes are free (slurmctld's select_nodes tests the burst
// buffer before the nodes). Only backfill, every bf_interval, says when
// the job will run. So a start that is not ahead is believed only when
// enough nodes are idle for the job; otherwise the stage-in waits for
// backfill's estimate (refreshStart), and at most estimate_wait.
func (a *Adapter) setupStart(ctx context.Context, spec job.Spec, sj slurm.Job) (notBefore, expected time.Time) {
	now := time.Now()
	wait := a.cfg.Slurm.EstimateWait
	if sj.Start.After(now) || wait <= 0 || a.cfg.Slurm.StageInLead <= 0 {
		return a.stageInTime(spec, sj.Start), sj.Start
	}
	idle, err := a.slurm.IdleNodes(ctx)
	switch {
	case err != nil:
		a.log.Warn("counting Slurm's idle nodes; staging in at once", "slurm_job", sj.ID, "err", err)
		return time.Time{}, sj.Start
	case idle >= spec.ComputeNodes:
		return time.Time{}, sj.Start
	}
	return now.Add(wait), time.Time{}
}

// awaitingEstimate tells whether j's stage-in is held for Slurm's first
// estimate of its start (setupStart) and sj still shows none: its start
// is the main scheduler's stamp from before the setup. Backfill's
// estimates, also "now" for a job whose nodes are free, come after it.
func awaitingEstimate(j *job.Job, sj slurm.Job) bool {
	return j.Expected.IsZero() && !j.NotBefore.IsZero() && !sj.Start.After(j.CreatedAt)
}

// stageInTime is when a stage-in for a job expected to start at start
// should begin: the lead time plus the time to fill its RAMDISK.
func (a *Adapter) stageInTime(spec job.Spec, start time.Time) time.Time {
	var nodeCapacity int64
	if len(a.cfg.Nodes) > 0 {
		nodeCapacity = a.cfg.Nodes[0].Capacity
	}
	size := lifecycle.StageInSize(spec.Capacity, nodeCapacity)
	return lifecycle.StageInTime(start, time.Now(), a.cfg.Slurm.StageInLead, size, float64(a.cfg.Slurm.StageRate))
}

// verdict reads a hook's answer off a job's committed state.
type verdict func(j *job.Job) (string, string)

// await answers once v says the job is no longer busy, or Busy when wait
// has passed.
func (a *Adapter) await(ctx context.Context, sj slurmJob, wait time.Duration, v verdict) (*api.HookReply, error) {
	rep := &api.HookReply{Verdict: api.Busy}
	err := job.Await(ctx, wait, a.jobs.Changed, func() (bool, error) {
		j, err := a.latest(ctx, sj)
		switch {
		case err != nil:
			return false, err
		case j == nil:
			rep.Verdict, rep.Message = api.Success, fmt.Sprintf("job %s does not use RSA", sj.name)
		default:
			rep.Verdict, rep.Message = v(j)
		}
		return rep.Verdict != api.Busy, nil
	})
	if err != nil {
		return nil, err
	}
	return rep, nil
}

func stageInVerdict(j *job.Job) (string, string) { return Verdict(lifecycle.GateStageIn, j) }

// Verdict is the lifecycle's verdict at gate g for j, as a Slurm hook
// answers it: Slurm's verdict (api.Success, api.Failure or api.Busy) and a
// message that words why with what the record knows.
func Verdict(g lifecycle.Gate, j *job.Job) (string, string) {
	a, why := lifecycle.Verdict(g, j.Machine())
	v := api.Busy
	switch a {
	case lifecycle.Pass:
		v = api.Success
	case lifecycle.Refuse:
		v = api.Failure
	}
	return v, wordVerdict(why, j)
}

// wordVerdict says why in the words Slurm shows the job's user (scontrol,
// the job's comment) and its admin (slurmctld.log).
func wordVerdict(why lifecycle.Why, j *job.Job) string {
	switch why {
	case lifecycle.WhyRebuilding:
		return fmt.Sprintf("RSA node %s lost: the RAMDISK is rebuilt on live nodes and the input staged in again", strings.Join(j.Lost, ", "))
	case lifecycle.WhyEndedBeforeInput:
		return "RSA: the job ended before its stage-in"
	case lifecycle.WhyWithoutRSA:
		return "job runs without RSA: " + j.Error
	case lifecycle.WhyStageInFailed:
		if j.Error != "" {
			return "RSA stage-in failed: " + j.Error
		}
		return "RSA: the stage-in was stopped"
	case lifecycle.WhyMountedIn:
		return fmt.Sprintf("RAMDISK mounted at %s on %s", j.Spec.Input, hostsOf(j))
	case lifecycle.WhyMountedOut:
		return fmt.Sprintf("RAMDISK mounted at %s on %s", j.Spec.Output, hostsOf(j))
	case lifecycle.WhyStageOutFailed:
		return fmt.Sprintf("RSA stage-out failed: %s; the output stays in RAM (RSA job %d: fix it, then `rsa retry slurm:%s`, or `rsa discard slurm:%s`)", j.Error, j.ID, j.Spec.SchedulerID, j.Spec.SchedulerID)
	case lifecycle.WhyOutputLost:
		return fmt.Sprintf("RSA lost the output (RSA job %d): %s", j.ID, j.Error)
	case lifecycle.WhyKeptForAdmin:
		return fmt.Sprintf("RSA keeps job %d's RAMDISK for an administrator (%s): %s", j.ID, j.RSA, j.Error)
	case lifecycle.WhyAdminTeardownWait:
		return fmt.Sprintf("%s (RSA job %d, %s: %s)", why, j.ID, j.RSA, j.Error)
	case lifecycle.WhyNoVerdict:
		return fmt.Sprintf("RSA has no verdict for a job %s/%s; waiting", j.State, j.RSA)
	}
	return string(why)
}

// awaitMount answers a start hook (pre_run, the prolog) once the started
// job's RAMDISK is at its paths on the job's compute nodes or RSA has let
// the job go without one, or Busy when wait has passed. Slurm runs the
// batch script when the hook returns: an answer before the mounts would
// let the job write on disk where RSA then mounts.
//
// A started job never waits for RSA capacity: when the assignment that
// runs with its start finds none free, the job is let go without RSA for
// good (INELIGIBLE), never given a RAMDISK later over directories it
// already uses. A job still INITIAL that no assignment has turned down is
// waited for: its assignment is under way.
func (a *Adapter) awaitMount(ctx context.Context, sj slurmJob, wait time.Duration) (*api.HookReply, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	// An assignment's decision to wait commits nothing, so no commit
	// wakes this loop for it: it looks again every tick, when the
	// assignment is tried again.
	again := time.NewTicker(max(a.cfg.Tick, 100*time.Millisecond))
	defer again.Stop()
	for {
		changed := a.jobs.Changed()
		j, err := a.latest(ctx, sj)
		if err != nil {
			return nil, err
		}
		if j == nil {
			return done("job %s does not use RSA", sj.name)
		}
		if why := a.noCapacityAtStart(j); why != "" {
			reason := "no RSA capacity was free when the job started (" + why + "), and RSA mounts nothing over a running job's directories later"
			n, err := a.jobs.Call(ctx, j.ID, lifecycle.Event{Kind: lifecycle.EvIneligible, At: time.Now(), Reason: reason}, nil)
			switch {
			case err == nil:
				a.jobs.JobLog(n, "runs without RSA: "+reason)
			case unlessSentFirst(err) != nil:
				return nil, err
			}
			continue // an assignment that came first (conflict) goes on
		}
		v, m := mountVerdict(j)
		if v != api.Busy {
			return &api.HookReply{Verdict: v, Message: m}, nil
		}
		select {
		case <-changed:
		case <-again.C:
		case <-deadline.C:
			return &api.HookReply{Verdict: api.Busy, Message: m}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// noCapacityAtStart is why j, started and holding nothing, waits for RSA
// capacity, or "" when it does not: the assignment that runs with a start
// records its decision to wait before the start is answered, so a job still
// INITIAL without one is being assigned.
func (a *Adapter) noCapacityAtStart(j *job.Job) string {
	if m := j.Machine(); !m.Runs() || !m.AwaitsNodes() {
		return ""
	}
	return a.jobs.CapacityWait(j.ID)
}

// mountVerdict: the started job's RAMDISK is on its compute nodes, or
// RSA has nothing to mount for it.
func mountVerdict(j *job.Job) (string, string) { return Verdict(lifecycle.GateStart, j) }

func hostsOf(j *job.Job) string {
	if len(j.Hosts) == 0 {
		return "this host"
	}
	return strings.Join(j.Hosts, ",")
}

func unmountVerdict(j *job.Job) (string, string) { return Verdict(lifecycle.GateUnmount, j) }

func stageOutVerdict(j *job.Job) (string, string) { return Verdict(lifecycle.GateStageOut, j) }

func teardownVerdict(j *job.Job) (string, string) { return Verdict(lifecycle.GateTeardown, j) }

// finishNamed tells the lifecycle the Slurm job ended, then answers by v
// (or at once when v is nil).
func (a *Adapter) finishNamed(ctx context.Context, sj slurmJob, why string, wait time.Duration, v verdict) (*api.HookReply, error) {
	j, err := a.latest(ctx, sj)
	if err != nil {
		return nil, err
	}
	if j == nil {
		return done("job %s does not use RSA", sj.name)
	}
	if !j.Machine().Ended() {
		if _, err := a.jobs.Call(ctx, j.ID, lifecycle.Event{Kind: lifecycle.EvFinished, At: time.Now(), Reason: why}, nil); unlessSentFirst(err) != nil {
			return nil, err
		}
	}
	if v == nil {
		return done("")
	}
	return a.await(ctx, sj, wait, v)
}

// slurmStart tells the lifecycle the Slurm job started on the nodes of
// nodelist (read from Slurm when empty). In polling mode a job RSA has no
// record of is read from Slurm (its script's #RSA lines) and taken on here,
// started: the hook that calls this holds the job until its mounts are
// made, so a job RSA serves never runs before its RAMDISK is in place,
// whether or not the poller has met it.
func (a *Adapter) slurmStart(ctx context.Context, sj slurmJob, nodelist string) error {
	j, err := a.latest(ctx, sj)
	if err != nil {
		return err
	}
	if j == nil || j.Machine().Done() {
		if a.cfg.Scheduler != config.SchedulerSlurmPoll {
			return nil // burst_buffer/lua set up every job that uses RSA
		}
		if err := a.adoptStarted(ctx, sj.name, nodelist); !errors.Is(err, errAdopted) {
			return err
		}
		// The poller took it on meanwhile, on deck: it starts as such.
		if j, err = a.latest(ctx, sj); err != nil || j == nil {
			return err
		}
	}
	if !j.Machine().Pending() {
		return nil // started already: pre_run and the prolog both say so
	}
	if nodelist == "" {
		slj, err := a.slurmJobPatiently(ctx, sj.name)
		if err != nil {
			return fmt.Errorf("reading job %s from Slurm: %w", sj.name, err)
		}
		nodelist = slj.NodeList
	}
	hosts, err := slurm.ExpandHosts(nodelist)
	if err != nil {
		return err
	}
	_, err = a.jobs.Call(ctx, j.ID, lifecycle.Event{Kind: lifecycle.EvStarted, At: time.Now()},
		func(n *job.Job) { n.Hosts = hosts })
	return unlessSentFirst(err)
}

// adoptStarted takes on Slurm job name, which starts on the nodes of
// nodelist before RSA has met it: it gets a RAMDISK for its output, under
// the RUNNING rules (App. K l.27); its input is read from disk. A job that
// cannot be taken on runs without RSA, and its comment tells its user why,
// as the poller's does for a pending job.
func (a *Adapter) adoptStarted(ctx context.Context, name, nodelist string) error {
	slj, err := a.slurmJobPatiently(ctx, name)
	if err != nil {
		return fmt.Errorf("reading job %s from Slurm: %w", name, err)
	}
	slj.NodeList = cmp.Or(nodelist, slj.NodeList)
	_, err = a.adopt(ctx, slj, true)
	if err != nil && !errors.Is(err, errAdopted) {
		if cerr := a.slurm.Comment(ctx, name, "RSA: "+oneLine(err.Error())); cerr != nil {
			a.log.Warn("setting the job's comment", "slurm", name, "err", cerr)
		}
	}
	return err
}

// slurmctldRestart bounds how long a hook that must read a job from Slurm
// waits for slurmctld: pre_run runs while slurmctld may be restarting (a
// failed pre_run requeues the job and holds it).
const slurmctldRestart = time.Minute

// slurmJobPatiently reads a job from Slurm, asking again for up to
// slurmctldRestart while squeue fails.
func (a *Adapter) slurmJobPatiently(ctx context.Context, name string) (slurm.Job, error) {
	deadline := time.Now().Add(slurmctldRestart)
	for {
		j, err := a.slurm.Job(ctx, name)
		if err == nil || time.Now().After(deadline) {
			return j, err
		}
		a.log.Warn("reading a job from Slurm failed; asking again", "slurm_job", name, "err", err)
		select {
		case <-ctx.Done():
			return j, err
		case <-time.After(time.Second):
		}
	}
}

// unlessSentFirst drops the error of an event that another hook sent first (the
// prolog and pre_run both report a start; post_run and the epilog an end).
func unlessSentFirst(err error) error {
	if errors.Is(err, ErrIgnored) {
		return nil
	}
	return err
}

// envLine is what Slurm's path file may get: one RSA_* variable per
// line, its value free of control characters.
var envLine = regexp.MustCompile(`^RSA_[A-Z_]+=[^\x00-\x1f\x7f]*$`)

func (a *Adapter) hookPaths(ctx context.Context, sj slurmJob) (*api.HookReply, error) {
	j, err := a.latest(ctx, sj)
	if err != nil || j == nil {
		return &api.HookReply{Verdict: api.Success}, err
	}
	env := append(slurm.EnvLines(j.Ramdisk, j.Spec), "RSA_JOB_ID="+strconv.FormatInt(j.ID, 10))
	// Checked again here, where the lines leave for the job's
	// environment, whatever was checked when the job was made (a record
	// from an older rsa, a bug elsewhere).
	for _, l := range env {
		if !envLine.MatchString(l) || job.CheckText("environment line", l) != nil {
			a.log.Error("refusing an environment line for a Slurm job", "slurm_job", sj.name, "job", j.ID, "line", strconv.Quote(l))
			return failed("RSA: job %d has a value RSA will not put into a job's environment; see the rsa serve log", j.ID)
		}
	}
	return &api.HookReply{Verdict: api.Success, Env: env}, nil
}

// hookStatus answers `scontrol show bbstat [JOBID...]`.
func (a *Adapter) hookStatus(ctx context.Context, args []string) (*api.HookReply, error) {
	// 23.02+ put the caller's uid and gid first; 22.05 does not say who
	// asks, so the private part of every job stays hidden there. Which
	// it is comes from Slurm, never from the arguments: on 22.05 they
	// are all the user's (scontrol show bbstat 0 0 must not be root).
	caller := api.Peer{UID: 65534, GID: 65534}
	if len(args) >= 2 && a.statusNamesCaller(ctx) {
		uid, ok1 := parseUID(args[0])
		gid, ok2 := parseUID(args[1])
		if ok1 && ok2 {
			caller = api.Peer{UID: uid, GID: gid}
			args = args[2:]
		}
	}
	jobs, err := a.jobs.List(ctx, len(args) > 0, 1000)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %-6s %-10s %-9s %-17s %s\n", "JOBID", "RSAJOB", "USER", "JOBSTATE", "RSASTATE", "PROGRESS")
	for _, j := range jobs {
		if j.Spec.SchedulerID == "" || len(args) > 0 && !slices.Contains(args, j.Spec.SchedulerID) {
			continue
		}
		fmt.Fprintf(&b, "%-8s %-6d %-10s %-9s %-17s %s\n", j.Spec.SchedulerID, j.ID, j.User, j.State, j.RSA, textsafe.Line(statusNote(a.jobs.View(j, caller))))
	}
	return done("%s", strings.TrimRight(b.String(), "\n"))
}

// statusNamesCaller reports whether this Slurm passes get_status the
// caller's uid and gid (23.02 and later), asking scontrol once. Until it
// has an answer it says no: the caller then sees what anyone may.
func (a *Adapter) statusNamesCaller(ctx context.Context) bool {
	a.version.Lock()
	defer a.version.Unlock()
	if !a.version.known {
		major, minor, err := a.slurm.Version(ctx)
		if err != nil {
			a.log.Warn("cannot tell Slurm's version; scontrol show bbstat shows every caller only public job details", "err", err)
			return false
		}
		a.version.known, a.version.namesCaller = true, major > 23 || major == 23 && minor >= 2
	}
	return a.version.namesCaller
}

func statusNote(v *api.JobView) string {
	if line := v.ProgressLine(); line != "" {
		return line
	}
	return cmp.Or(v.Error, "-")
}
