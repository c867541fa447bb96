package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/alloc"
	"github.com/rsa-hpc/rsa/internal/asuser"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/holders"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/node"
	"github.com/rsa-hpc/rsa/internal/stage"
	"github.com/rsa-hpc/rsa/internal/units"
)

// start begins action a for j, whose transition is already committed.
// Assign and StopStageIn are quick bookkeeping done in the loop; the rest
// run in goroutines and report back with one completion event.
func (d *Daemon) start(j *job.Job, a lifecycle.Action) {
	switch a.Kind {
	case lifecycle.Assign:
		if m, ok := d.assign(j); ok {
			d.pending = append(d.pending, m)
		}
		return
	case lifecycle.StopStageIn:
		if cancel, ok := d.staging[j.ID]; ok {
			cancel() // the stage-in reports its own end
		} else {
			// Nothing runs (the daemon restarted): it is stopped.
			d.pending = append(d.pending, msg{id: j.ID, ev: lifecycle.Event{Kind: lifecycle.EvStageInStopped, At: time.Now()}})
		}
		return
	}
	ctx := d.actx
	if a.Kind == lifecycle.StageIn {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(d.actx)
		d.staging[j.ID] = cancel
	}
	jj := *j
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		began := time.Now()
		ev := d.run(ctx, &jj, a.Kind)
		ev.At = time.Now()
		d.observeAction(jj.ID, a.Kind, ev.At.Sub(began), ev)
		if ev.Reason != "" {
			d.log.Warn("action failed", "job", jj.ID, "action", a.Kind, "err", ev.Reason)
		}
		d.post(msg{id: jj.ID, ev: ev})
	}()
}

// assign decides on capacity (App. P); the lifecycle asks for it only once
// the job's stage-in time has come. Waiting is not a transition: the job
// stays INITIAL and is tried again on the next tick or release; its first
// wait for capacity is an event (EvWaitCapacity) that starts the wait's
// clock in its record, which the lifecycle bounds (Job.CapacityWait).
func (d *Daemon) assign(j *job.Job) (msg, bool) {
	m := j.Machine()
	req := alloc.Request{
		ComputeNodes: j.Spec.ComputeNodes, Capacity: j.Spec.Capacity,
		Running: j.State == lifecycle.Running, HasInput: m.HasInput, HasOutput: m.HasOutput,
	}
	dec, drains, down := d.plan(j, req)
	if j.Spec.Capacity == 0 && j.Spec.Sized != "" {
		// Sized by its input, which does not fit: no RAMDISK (the
		// proportion rule is for schedulers' jobs).
		dec = alloc.Decision{Verdict: alloc.Ineligible, Reason: j.Spec.Sized}
	}
	if dec.Verdict == alloc.Assign {
		if why := d.overUserCapacity(j, dec.Parts); why != "" {
			dec = alloc.Decision{Verdict: alloc.Wait, Reason: why}
		}
	}
	now := time.Now()
	switch dec.Verdict {
	case alloc.Assign:
		d.setWaiting(j.ID, "", "")
		parts := slices.Clone(dec.Parts)
		if nodes, ok := d.engineNodes(); ok {
			for i := range parts {
				parts[i].Incarnation = nodes.Incarnation(parts[i].Node)
			}
		}
		d.reserved[j.ID] = parts
		d.plans.forget() // less is free now
		dir := engine.DirFor(d.cfg.RamdiskRoot, j.ID)
		return msg{id: j.ID, ev: lifecycle.Event{Kind: lifecycle.EvAssigned, At: now}, edit: func(n *job.Job) {
			n.Alloc, n.Ramdisk, n.Lost = parts, dir, nil
		}}, true
	case alloc.Ineligible:
		d.setWaiting(j.ID, "", "")
		return msg{id: j.ID, ev: lifecycle.Event{Kind: lifecycle.EvIneligible, At: now, Reason: dec.Reason}}, true
	default:
		if drains > 0 {
			dec.Reason += fmt.Sprintf(" (%d of %d RSA nodes drained; rsa nodes)", drains, len(d.cfg.Nodes))
		}
		if nodes, ok := d.engineNodes(); ok && down > 0 {
			dec.Reason += fmt.Sprintf(" (%d of %d RSA nodes %s; rsa nodes)", down, len(d.cfg.Nodes), nodes.Unplaceable())
		}
		if d.setWaiting(j.ID, waitCapacity, dec.Reason) {
			d.log.Info("job waits for capacity", "job", j.ID, "why", dec.Reason)
		}
		if j.WaitingSince.IsZero() {
			// The wait's clock is the record's: a restart neither
			// restarts nor stops it (Job.CapacityWait).
			return msg{id: j.ID, ev: lifecycle.Event{Kind: lifecycle.EvWaitCapacity, At: now}}, true
		}
		return msg{}, false
	}
}

// plan is alloc.Plan for j over what is free now (what the committed jobs
// besides j hold, what is reserved for others, drained and silent nodes
// counted full), with the numbers of drained and silent nodes.
func (d *Daemon) plan(j *job.Job, req alloc.Request) (dec alloc.Decision, drains, down int) {
	// A job that holds nothing sees what every such job sees: its
	// decision to wait is the pass's for its request (d.plans).
	_, reserved := d.reserved[j.ID]
	memo := (!lifecycle.HoldsNodes(j.RSA) || len(j.Alloc) == 0) && !reserved
	if memo {
		if w, ok := d.plans.lookup(d.commitCount(), req); ok {
			return w.dec, w.drains, w.down
		}
	}
	used := d.heldBesides(j)
	// Decisions made but not yet committed hold their RAM too: a tick
	// that assigns several waiting jobs must not give each the same free
	// bytes (audit finding 3).
	for id, parts := range d.reserved {
		if id != j.ID {
			for _, p := range parts {
				used[p.Node] += p.Bytes
			}
		}
	}
	// A drained node gives nothing: it counts as full, so a job waits for
	// it (it is still part of what RSA can ever give) and says why.
	drained := d.drained()
	for _, n := range d.cfg.Nodes {
		if _, ok := drained[n.Name]; ok {
			used[n.Name] = n.Capacity
		} else if !d.placeable(n.Name) {
			// The engine makes no part there now: its node did not
			// answer, or something else keeps new parts off it.
			used[n.Name] = n.Capacity
			down++
		}
	}
	dec = alloc.Plan(alloc.PolicyFrom(d.cfg, d.placement()), d.cfg.Nodes, used, req)
	if memo && dec.Verdict == alloc.Wait {
		d.plans.remember(req, planned{dec, len(drained), down})
	}
	return dec, len(drained), down
}

// commitCount is the number of commits so far.
func (d *Daemon) commitCount() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.commits
}

// planMemo keeps, for one scheduling pass, the decisions to wait made for
// jobs that hold no RAM: a thousand jobs waiting for the same shape of
// RAMDISK cost one plan and one reason, not a thousand (issue 14: a pass
// over 10,000 active jobs). It holds only while nothing is committed and
// nothing reserved; drains and heartbeats that change during a pass are
// seen by the next one. A nil memo remembers nothing.
type planMemo struct {
	commits uint64
	waits   map[alloc.Request]planned
}

type planned struct {
	dec          alloc.Decision
	drains, down int
}

func (p *planMemo) lookup(commits uint64, req alloc.Request) (planned, bool) {
	if p == nil {
		return planned{}, false
	}
	if p.commits != commits {
		p.forget()
		p.commits = commits
		return planned{}, false
	}
	w, ok := p.waits[req]
	return w, ok
}

func (p *planMemo) remember(req alloc.Request, w planned) {
	if p != nil {
		p.waits[req] = w
	}
}

func (p *planMemo) forget() {
	if p != nil {
		clear(p.waits)
	}
}

// overUserCapacity says why j must wait if parts would take its user past
// limits.max_user_capacity, or "".
func (d *Daemon) overUserCapacity(j *job.Job, parts []job.Part) string {
	limit := d.cfg.Limits.MaxUserCapacity
	if limit <= 0 {
		return ""
	}
	total := d.holdings().byUser[j.UID] - own(j)
	for id, ps := range d.reserved {
		if id == j.ID {
			continue
		}
		if o, err := d.store.Get(context.Background(), id); err == nil && o.UID == j.UID {
			for _, p := range ps {
				total += p.Bytes
			}
		}
	}
	var want int64
	for _, p := range parts {
		want += p.Bytes
	}
	if total+want > limit {
		return fmt.Sprintf("waiting: %s's jobs hold %s; %s more would pass the limit of %s per user (limits.max_user_capacity)",
			j.User, units.FormatSize(total), units.FormatSize(want), units.FormatSize(limit))
	}
	return ""
}

// fits reports whether parts still fit beside what the committed jobs
// other than j hold: the last word before an allocation is committed.
func (d *Daemon) fits(j *job.Job, parts []job.Part) bool {
	used := d.heldBesides(j)
	for _, p := range parts {
		used[p.Node] += p.Bytes
	}
	for _, n := range d.cfg.Nodes {
		if used[n.Name] > n.Capacity {
			return false
		}
		delete(used, n.Name)
	}
	for _, b := range used {
		if b > 0 {
			return false // a part on a node not configured never fits
		}
	}
	return true
}

// What a job waits for.
const (
	waitStart    = "start"    // its stage-in time
	waitCapacity = "capacity" // free RAM on RSA nodes
)

// waitForStageIn says why j, held for its stage-in time
// (lifecycle.HoldStageInTime), waits.
func (d *Daemon) waitForStageIn(j *job.Job) {
	why := fmt.Sprintf("stage-in starts at %s, %s before the job's expected start", j.NotBefore.Format(time.DateTime), d.cfg.Slurm.StageInLead)
	if j.Expected.IsZero() {
		why = fmt.Sprintf("Slurm has not yet estimated when the job starts, and its nodes are busy: stage-in waits for the estimate, until %s at the latest", j.NotBefore.Format(time.DateTime))
	}
	if d.setWaiting(j.ID, waitStart, why) {
		d.log.Info("job waits for its stage-in time", "job", j.ID, "not_before", j.NotBefore)
	}
}

// setWaiting records what a job waits for and why ("": nothing), for
// its view and its start hook; it reports whether the reason changed. How
// long it has waited is the record's (Job.WaitingSince), not this.
func (d *Daemon) setWaiting(id int64, kind, why string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.waiting[id].why == why {
		return false
	}
	if why == "" {
		delete(d.waiting, id)
		return true
	}
	d.waiting[id] = wait{kind: kind, why: why}
	return true
}

// waitingFor is what the job waits for now, or "".
func (d *Daemon) waitingFor(id int64) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.waiting[id].why
}

// allocated sums the RAM held on each node by the jobs whose state holds it
// (and, if only is given, that it keeps).
func (d *Daemon) allocated(only func(*job.Job) bool) map[string]int64 {
	used := map[string]int64{}
	d.store.EachActive(func(j *job.Job) {
		if lifecycle.HoldsNodes(j.RSA) && (only == nil || only(j)) {
			for _, p := range j.Alloc {
				used[p.Node] += p.Bytes
			}
		}
	})
	return used
}

// holdings is the RAM the committed jobs hold, per RSA node and per user.
// The scheduling pass asks for it once per waiting job; it is worked out
// from every active job only when a commit changed it (issue 14: a pass
// over 1,000 waiting and 9,000 holding jobs took 9 s when each decision
// summed the active jobs itself).
type holdings struct {
	byNode map[string]int64
	byUser map[uint32]int64
}

// holdings returns what the committed jobs hold; callers must not change
// it.
func (d *Daemon) holdings() *holdings {
	d.mu.Lock()
	h, gen := d.held, d.commits
	d.mu.Unlock()
	if h != nil {
		return h
	}
	h = &holdings{byNode: map[string]int64{}, byUser: map[uint32]int64{}}
	// RAM a teardown left on a silent node is held there until the node
	// confirms it gone; it is no user's any more.
	for _, db := range d.owed() {
		h.byNode[db.Node] += db.Bytes
	}
	d.store.EachActive(func(j *job.Job) {
		if lifecycle.HoldsNodes(j.RSA) {
			for _, p := range j.Alloc {
				h.byNode[p.Node] += p.Bytes
				h.byUser[j.UID] += p.Bytes
			}
		}
	})
	// Kept only if no commit came between the read and now.
	d.mu.Lock()
	if d.commits == gen {
		d.held = h
	}
	d.mu.Unlock()
	return h
}

// heldBesides is the RAM held on each node by the committed jobs other than
// j: a copy the caller may change.
func (d *Daemon) heldBesides(j *job.Job) map[string]int64 {
	used := maps.Clone(d.holdings().byNode)
	if lifecycle.HoldsNodes(j.RSA) {
		for _, p := range j.Alloc {
			used[p.Node] -= p.Bytes
		}
	}
	return used
}

// own is the RAM j's committed record holds.
func own(j *job.Job) int64 {
	if !lifecycle.HoldsNodes(j.RSA) {
		return 0
	}
	return j.Capacity()
}

// run carries out one action and returns its completion event.
func (d *Daemon) run(ctx context.Context, j *job.Job, kind lifecycle.ActionKind) lifecycle.Event {
	rd := d.ramdisk(j)
	ok := func(k lifecycle.EventKind) lifecycle.Event { return lifecycle.Event{Kind: k} }
	fail := func(k lifecycle.EventKind, err error) lifecycle.Event {
		return lifecycle.Event{Kind: k, Reason: err.Error()}
	}
	switch kind {
	case lifecycle.Construct:
		if err := d.engine.Construct(ctx, rd); err != nil {
			// A node that stopped answering is no reason to give RSA
			// up: the RAMDISK is built anew on live nodes.
			if silent := d.silentAmong(j.Alloc); len(silent) > 0 && ctx.Err() == nil {
				d.appendStageLog(j, fmt.Sprintf("building the RAMDISK: RSA node %s does not answer (%v); building it anew on live nodes", strings.Join(silent, ", "), err))
				return lifecycle.Event{Kind: lifecycle.EvBootLost, Reason: err.Error(), Nodes: silent}
			}
			return fail(lifecycle.EvBootFailed, err)
		}
		return ok(lifecycle.EvBooted)
	case lifecycle.StageIn:
		err := d.stage(ctx, j, "stage-in", j.Spec.StageIn, j.Spec.Input, false)
		var dg engine.Degraded
		if ctx.Err() == nil {
			// Input copied into a part out of reach is not there: the
			// RAMDISK is rebuilt and the input staged in again.
			var cerr error
			dg, cerr = d.engine.Check(ctx, rd)
			if cerr != nil {
				// The copy's own errors and the probe still count.
				d.log.Warn("checking the RAMDISK after its stage-in", "job", j.ID, "err", cerr)
				dg = engine.Degraded{}
			} else if dg.Lost || err != nil && len(dg.Nodes) > 0 {
				// Under replica 2 a copy that failed as a part went out
				// of reach failed for that (a write meeting the
				// disconnect): no reason to give the stage-in up.
				why := fmt.Sprintf("the part of the RAMDISK on RSA node %s is out of reach", strings.Join(dg.Nodes, ", "))
				if err != nil {
					why += "; the copy: " + err.Error()
				}
				d.appendStageLog(j, "stage-in: "+why)
				return lifecycle.Event{Kind: lifecycle.EvStageInFailed, Reason: why, Nodes: dg.Nodes}
			}
		}
		switch {
		case err == nil && len(dg.Nodes) > 0:
			// Replicas hold every file of the lost part: READY is
			// committed with the loss known, so that a later report
			// of the same node is a duplicate, never a teardown under
			// a job Slurm may be starting.
			// A node the heartbeat reported during the copy is in the
			// log already: the user reads of each loss once.
			fresh := dg.Nodes
			if cur, err := d.store.Get(ctx, j.ID); err == nil {
				fresh = slices.DeleteFunc(slices.Clone(dg.Nodes), func(n string) bool { return slices.Contains(cur.Lost, n) })
			}
			if len(fresh) > 0 {
				why := fmt.Sprintf("the part of the RAMDISK on RSA node %s is out of reach; its replicas serve every file: the job gets its input from RAM, degraded, and the RAMDISK is rebuilt on live nodes at the switch to output", strings.Join(fresh, ", "))
				d.appendStageLog(j, "stage-in: "+why)
			}
			return lifecycle.Event{Kind: lifecycle.EvStagedIn, Nodes: dg.Nodes, Build: j.Build, Whole: true}
		case err == nil:
			return ok(lifecycle.EvStagedIn)
		case ctx.Err() != nil:
			return ok(lifecycle.EvStageInStopped)
		default:
			return fail(lifecycle.EvStageInFailed, err)
		}
	case lifecycle.MountIn:
		// A RAMDISK that lost a part would show the job its input with
		// files missing, and say nothing: the job reads from disk
		// instead, and the RAMDISK is rebuilt for its output.
		if dg, _, err := d.probe(ctx, rd); err == nil && dg.Lost {
			why := fmt.Sprintf("the part of the RAMDISK on RSA node %s is out of reach: the job reads its input from disk", strings.Join(dg.Nodes, ", "))
			d.appendStageLog(j, "mount: "+why)
			return lifecycle.Event{Kind: lifecycle.EvMountFailed, Reason: why, Nodes: dg.Nodes}
		}
		if rd.RootOnly {
			if err := d.bindImage(ctx, j, rd); err != nil {
				// Refused (a node lost with a piece of it, damage) or
				// not mounted: nothing of it is shown anywhere.
				why := fmt.Sprintf("the input image cannot be mounted: the job reads its input from disk: %v", err)
				d.appendStageLog(j, "mount: "+why)
				return fail(lifecycle.EvMountFailed, errors.New(why))
			}
			return ok(lifecycle.EvMounted)
		}
		if err := d.bind(ctx, j, node.InputRole, j.Spec.Input); err != nil {
			return fail(lifecycle.EvMountFailed, err)
		}
		return ok(lifecycle.EvMounted)
	case lifecycle.MountOut:
		if rd.RootOnly {
			if err := d.bindPrivate(ctx, j, rd); err != nil {
				return fail(lifecycle.EvMountFailed, err)
			}
			return ok(lifecycle.EvMounted)
		}
		if err := d.bind(ctx, j, node.OutputRole, j.Spec.Output); err != nil {
			return fail(lifecycle.EvMountFailed, err)
		}
		return ok(lifecycle.EvMounted)
	case lifecycle.Unmount:
		if err := d.access.Unbind(ctx, j.Hosts, rd, false); err != nil {
			return fail(lifecycle.EvUnmountBusy, err)
		}
		return ok(lifecycle.EvUnmounted)
	case lifecycle.StageOut:
		if rd.RootOnly {
			if err := d.stageOutPrivate(ctx, j, rd); err != nil {
				ev := fail(lifecycle.EvStageOutFailed, err)
				if lost := (*writesLostError)(nil); errors.As(err, &lost) {
					ev.Nodes = lost.Nodes() // recorded: job.PrivateLost
				}
				return ev
			}
			return ok(lifecycle.EvStagedOut)
		}
		// The job has ended: its mounts go first, busy or not, then the
		// processes it left holding the RAMDISK, and the RAMDISK turns
		// read-only, so nothing writes while the output is copied and
		// verified: a late write fails (EROFS) instead of vanishing.
		fence := false
		if err := d.access.Unbind(ctx, j.Hosts, rd, true); err != nil {
			// A compute node out of reach may still write into the
			// RAMDISK: the seal below fences it (the bricks refuse
			// every client's writes, connections already open
			// included), and the copy goes on without it.
			fence = true
			un, ok := unreachable(err)
			if !ok {
				return fail(lifecycle.EvStageOutFailed, err)
			}
			d.log.Warn("compute node out of reach at stage-out: fenced by sealing the RAMDISK", "job", j.ID, "nodes", un.Nodes, "err", un.Err)
			d.appendStageLog(j, fmt.Sprintf("stage-out: compute node %s out of reach (%v): fenced, the RAMDISK is read-only for it from now on; what it wrote before is staged out",
				strings.Join(un.Nodes, ", "), un.Err))
		}
		if err := d.seal(ctx, j, rd, fence); err != nil {
			return fail(lifecycle.EvStageOutFailed, err)
		}
		// A part out of reach drops its files from the listing without
		// an error: what is copied is copied, but the stage-out is
		// verified only if every part was in reach, without a break,
		// from before the copy to after it. A part back after it left
		// (in reach at the end, but not at the start, or gone and back
		// meanwhile) may have had files left out: the copy runs again,
		// over what is on disk already.
		before, cerr := d.engine.Check(ctx, rd)
		err := d.stage(ctx, j, "stage-out", j.Spec.StageOut, j.Spec.Output, len(before.Nodes) > 0)
		steady := false
		for round := 1; cerr == nil && ctx.Err() == nil; round++ {
			var after engine.Degraded
			after, cerr = d.engine.Check(ctx, rd)
			if cerr != nil {
				break
			}
			steady = before.Steady(after)
			if steady || after.Lost || round == stageOutRounds {
				before = before.Merge(after)
				break
			}
			d.log.Info("a part of the RAMDISK came back during its stage-out: copying again", "job", j.ID, "round", round+1)
			d.appendStageLog(j, "stage-out: a part of the RAMDISK came back during the copy, which may have left its files out: copying again")
			before = after
			err = d.stage(ctx, j, "stage-out", j.Spec.StageOut, j.Spec.Output, len(before.Nodes) > 0)
		}
		switch {
		case ctx.Err() != nil:
			// The daemon stops: the stage-out runs again, checks and all.
			err = cmp.Or(err, ctx.Err())
		case before.Lost:
			// Named first: it is why files are missing, whatever the
			// copy met on its way.
			why := fmt.Sprintf("not verified: the part of the RAMDISK on RSA node %s was out of reach, and the files there are not on disk (those copied are). 'rsa retry %d' completes it if the node comes back with its RAM (a brick restarted, a cut link healed); if it rebooted they are gone, and 'rsa discard %d' gives them up",
				strings.Join(before.Nodes, ", "), j.ID, j.ID)
			if err != nil {
				why += "; the copy: " + err.Error()
			}
			err = errors.New(why)
		case err != nil:
		case cerr != nil:
			err = fmt.Errorf("the copy ended, but whether every part of the RAMDISK was in reach is unknown: %w", cerr)
		case !steady:
			err = fmt.Errorf("not verified: a part of the RAMDISK left and came back during each of %d copies, which may have left its files out; 'rsa retry %d' copies again once the RSA nodes are steady", stageOutRounds, j.ID)
		case len(before.Nodes) > 0:
			d.appendStageLog(j, fmt.Sprintf("stage-out: RSA node %s out of reach; its replicas were copied instead", strings.Join(before.Nodes, ", ")))
		}
		if err != nil {
			// Not when the daemon stops: the stage-out runs again.
			if ctx.Err() == nil {
				if held := d.inventory(j, rd); held != "" {
					if before.Lost {
						// A distribute volume keeps a file's name on
						// the file's own brick alone.
						held += fmt.Sprintf("; that counts the parts in reach alone: the files on %s cannot be listed until the node is back", strings.Join(before.Nodes, ", "))
					}
					err = fmt.Errorf("%w; %s", err, held)
				}
			}
			return fail(lifecycle.EvStageOutFailed, err)
		}
		return ok(lifecycle.EvStagedOut)
	case lifecycle.Destroy:
		// The compute nodes' mounts first: each keeps the tmpfs, and so
		// its RAM, alive. Then the gate closes, the processes still
		// holding the RAMDISK end, and only then is it unmounted: its RAM
		// counts as held until it is really gone. An input image or a
		// private output mounted here holds its file in the RAMDISK open
		// until the last process using it lets go: their holders are
		// ended too, found by their devices, pinned before their mounts
		// here go.
		if err := d.unbindAndEvict(ctx, j, rd, true); err != nil {
			return fail(lifecycle.EvDestroyFailed, err)
		}
		if err := d.engine.Destroy(ctx, rd); err != nil {
			debt := (*engine.DebtError)(nil)
			if !errors.As(err, &debt) {
				return fail(lifecycle.EvDestroyFailed, err)
			}
			// The teardown returns: the silent nodes' parts become
			// debts, held on those nodes until their agents confirm
			// them gone.
			if err := d.owe(ctx, j, debt); err != nil {
				return fail(lifecycle.EvDestroyFailed, err)
			}
			// A node that did not answer gets no part of a rebuild:
			// the RAMDISK is assigned anew on live nodes. (One whose
			// RAM is free answered: it may.)
			d.forget(j.ID)
			if debt.Freed {
				return lifecycle.Event{Kind: lifecycle.EvDestroyed, Reason: debt.Error()}
			}
			return lifecycle.Event{Kind: lifecycle.EvDestroyed, Nodes: debt.Nodes, Reason: debt.Error()}
		}
		d.forget(j.ID)
		return ok(lifecycle.EvDestroyed)
	}
	return fail(lifecycle.EvDestroyFailed, fmt.Errorf("unknown action %s", kind))
}

// bind shows the RAMDISK at one of the job's directories, with that
// directory's owner, group, permission bits and ACLs on the RAMDISK's
// root, so the job, and whoever the directory admits, see no difference,
// and nobody gets more than the directory gave (a project directory's
// owner stays its owner). The job's user is checked again, with the
// user's rights, for the access the directory's role needs. (No one else
// reaches the RAMDISK's root through r.Dir: the engine's gate admits the
// job's user alone.)
func (d *Daemon) bind(ctx context.Context, j *job.Job, role, target string) error {
	fd, err := d.policy.OpenTarget(role, target, j.UID)
	if err != nil {
		if showsRamdisk(target, j.Ramdisk) {
			// A resumed mount that already happened: the target shows
			// this job's own RAMDISK (which the policy refuses as a
			// target); Bind finds it in place.
			return d.access.Bind(ctx, j.Hosts, role, d.ramdisk(j), target)
		}
		return err
	}
	defer unix.Close(fd)
	who := asuser.Identity{UID: j.UID, GID: j.GID, Groups: j.Groups}
	if err := d.asUser(&who, func() error { return d.policy.CheckTarget(role, target, j.UID) }); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("examining %s %s: %w", role, target, err)
	}
	// Through a descriptor opened without following symlinks: the
	// RAMDISK's root belongs to the user, who must not steer root's
	// chown elsewhere.
	rfd, err := unix.Openat2(unix.AT_FDCWD, j.Ramdisk, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return fmt.Errorf("opening RAMDISK root: %w", err)
	}
	defer unix.Close(rfd)
	if err := unix.Fchownat(rfd, "", int(st.Uid), int(st.Gid), unix.AT_EMPTY_PATH); err != nil {
		return fmt.Errorf("setting RAMDISK owner and group: %w", err)
	}
	// fchmodat cannot take AT_EMPTY_PATH on an O_PATH descriptor; the
	// magic link of this very descriptor names the same inode.
	if err := unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", rfd), st.Mode&0o7777); err != nil {
		return fmt.Errorf("setting RAMDISK mode: %w", err)
	}
	if err := mount.CopyACLs(fd, rfd); err != nil {
		return fmt.Errorf("giving the RAMDISK (engine %s) the ACLs of %s %s: %w; a directory shared by ACLs needs an engine that keeps them (local does): use a group directory without ACLs, or one of your own", d.engine.Name(), role, target, err)
	}
	if a, ok := engine.As[engine.ClientAdmitter](d.engine); ok {
		if err := a.AdmitClients(ctx, d.ramdisk(j), j.Hosts); err != nil {
			return err
		}
	}
	return d.access.Bind(ctx, j.Hosts, role, d.ramdisk(j), target)
}

// bindImage shows the job's input image at its input directory on its
// compute nodes. The image's root carries the input directory's own
// owner, group and mode (its pack's first entry), so, unlike a RAMDISK's
// root, it needs none set.
func (d *Daemon) bindImage(ctx context.Context, j *job.Job, rd engine.Ramdisk) error {
	ib, ok := d.access.(node.ImageBinder)
	if !ok {
		return fmt.Errorf("the compute nodes of engine %s cannot mount an input image; the job reads its input from disk (input=files stages it into RAM)", d.engine.Name())
	}
	if a, ok := engine.As[engine.ClientAdmitter](d.engine); ok {
		if err := a.AdmitClients(ctx, rd, j.Hosts); err != nil {
			return err
		}
	}
	backing, err := ib.BindImage(ctx, j.Hosts, rd, j.Spec.Input, mount.ImageOptions{Loop: d.cfg.ImageLoop})
	if err != nil {
		return err
	}
	if backing != "" {
		d.appendStageLog(j, fmt.Sprintf("mount: input image mounted read-only at the input directory (%s-backed)", backing))
	}
	return nil
}

// statClose is the status of the file open as fd, which it closes.
func statClose(fd int) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstat(fd, &st)
	unix.Close(fd)
	return st, err
}

// showsRamdisk reports whether target, reached without symlinks, is the
// root of the RAMDISK at ramdisk.
func showsRamdisk(target, ramdisk string) bool {
	var a, b unix.Stat_t
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	for _, p := range []struct {
		path string
		st   *unix.Stat_t
	}{{target, &a}, {ramdisk, &b}} {
		fd, err := unix.Openat2(unix.AT_FDCWD, p.path, how)
		if err != nil {
			return false
		}
		err = unix.Fstat(fd, p.st)
		unix.Close(fd)
		if err != nil {
			return false
		}
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}

// seal makes the RAMDISK read-only. A file still open for writing (a
// process the job left behind) blocks that: the holders are ended first.
// A RAMDISK sealed but for a part cut off from the rest (the engine could
// not confirm it, engine.ErrPartlySealed) is staged out all the same, its
// log saying so, when the job's compute nodes are unbound and their
// processes gone: nobody is left to write. With fence (a compute node out
// of reach kept its mount) the seal is all that stops that node, and a
// part it may still write fails the stage-out, to be retried once the
// RSA nodes are in touch again.
func (d *Daemon) seal(ctx context.Context, j *job.Job, rd engine.Ramdisk, fence bool) error {
	err := d.engine.Seal(ctx, rd)
	if errors.Is(err, engine.ErrBusy) {
		if err := d.evict(ctx, j, rd); err != nil {
			return err
		}
		err = d.engine.Seal(ctx, rd)
	}
	if errors.Is(err, engine.ErrPartlySealed) && !fence {
		d.log.Warn("RAMDISK sealed but for a part", "job", j.ID, "err", err)
		d.appendStageLog(j, fmt.Sprintf("stage-out: the RAMDISK is read-only except, maybe, a part cut off from the rest (%v); staging out all the same", err))
		return nil
	}
	return err
}

// unbindAndEvict removes the job's mounts on its compute nodes and ends
// what still holds the RAMDISK or the file systems mounted beside it here
// (an input image, private output), which are pinned from before their
// mounts go until their holders are gone: see engine.PinBeside. At
// teardown the gate closes first, and a compute node out of reach keeps
// its client mount until it answers again (a debt, paid then; it holds no
// RSA RAM); before a private stage-out every node must answer.
func (d *Daemon) unbindAndEvict(ctx context.Context, j *job.Job, rd engine.Ramdisk, teardown bool) error {
	beside, unpin, err := engine.PinBeside(rd)
	if err != nil {
		return err
	}
	defer unpin()
	if err := d.access.Unbind(ctx, j.Hosts, rd, true); err != nil {
		un, ok := unreachable(err)
		if !ok || !teardown {
			return err
		}
		d.log.Warn("compute node out of reach at teardown: its mount is removed when it answers", "job", j.ID, "nodes", un.Nodes, "err", un.Err)
		if err := d.oweMounts(ctx, j, un); err != nil {
			return err
		}
	}
	if teardown {
		if err := d.engine.Revoke(ctx, rd); err != nil {
			return err
		}
	}
	return d.evict(ctx, j, rd, beside...)
}

// evict ends the processes that still hold a finished job's RAMDISK, the
// policy docs/security.md states: every process not root's gets SIGTERM,
// and SIGKILL limits.kill_grace later; root's processes are never
// signalled but are waited for as long, since many hold it only for a
// moment (a new mount namespace copies every mount until its maker drops
// RSA's). One still there after that keeps the RAMDISK (counted as held)
// until an administrator ends it and retries. Each signal is
// written to the job's log and the daemon's.
func (d *Daemon) evict(ctx context.Context, j *job.Job, rd engine.Ramdisk, also ...uint64) error {
	dev, ok, err := d.engine.Device(rd)
	if err != nil {
		return err
	}
	devs := slices.DeleteFunc(also, func(n uint64) bool { return n == 0 })
	if ok {
		devs = append(devs, dev)
	}
	if len(devs) == 0 {
		return nil
	}
	grace := d.cfg.Limits.KillGrace
	started := time.Now()
	termed := map[int]bool{}
	for {
		var hs []holders.Holder
		for _, dev := range devs {
			h, err := d.findHolders(ctx, dev)
			if err != nil {
				return fmt.Errorf("looking for processes that hold the RAMDISK: %w", err)
			}
			hs = append(hs, h...)
		}
		var roots []string
		live := 0
		for _, h := range hs {
			if h.UID == 0 {
				roots = append(roots, h.String())
				continue
			}
			live++
			sig, name := unix.SIGTERM, "SIGTERM"
			if termed[h.PID] && time.Since(started) >= grace {
				sig, name = unix.SIGKILL, "SIGKILL"
			} else if termed[h.PID] {
				continue
			}
			termed[h.PID] = true
			d.jobLog(j, "RAMDISK still held after the job ended by %s: sending %s", h, name)
			d.log.Warn("ending a process that holds a finished job's RAMDISK", "job", j.ID, "pid", h.PID, "uid", h.UID,
				"comm", strconv.Quote(h.Comm), "by", h.What, "signal", name)
			if err := holders.Signal(h, sig); err != nil {
				return err
			}
		}
		if live == 0 && len(roots) == 0 {
			return nil
		}
		if live == 0 && time.Since(started) >= grace {
			return fmt.Errorf("RAMDISK held by root's %s; RSA never signals root's processes: end them, then rsa retry %d", strings.Join(roots, ", "), j.ID)
		}
		if time.Since(started) > grace+10*time.Second {
			return fmt.Errorf("RAMDISK still held %s after SIGKILL (a process stuck in the kernel?); rsa retry %d when it is gone", time.Since(started).Round(time.Second), j.ID)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// findHolders bounds the /proc search in time: it never asks a file
// system, but /proc itself can be slow on a loaded host.
func (d *Daemon) findHolders(ctx context.Context, dev uint64) ([]holders.Holder, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return holders.Find(ctx, dev)
}

// jobLog appends one line to the job's stage log (a RAMDISK no job
// record holds, found by gc, has none).
func (d *Daemon) jobLog(j *job.Job, format string, a ...any) {
	if j.CreatedAt.IsZero() {
		return
	}
	f, err := os.OpenFile(d.stageLog(j), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		d.log.Error("writing job log", "job", j.ID, "err", err)
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s\n", time.Now().Format(time.RFC3339), fmt.Sprintf(format, a...))
}

// stage runs one staging phase as the job's user, logging to the job's
// stage log and recording progress.
func (d *Daemon) stage(ctx context.Context, j *job.Job, phase, program, data string, degraded bool) error {
	return d.stageOn(ctx, j, phase, program, data, degraded, false)
}

// stageOn is stage; here runs it on this host, through j.Ramdisk, even
// with an engine that stages on its own nodes (a private output's tree,
// mounted here for its stage-out).
func (d *Daemon) stageOn(ctx context.Context, j *job.Job, phase, program, data string, degraded, here bool) error {
	if d.cfg.Limits.StageTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.cfg.Limits.StageTimeout)
		defer cancel()
	}
	logf, err := os.OpenFile(d.stageLog(j), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening stage log: %w", err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "%s %s: %s\n", time.Now().Format(time.RFC3339), phase, describe(program, data))
	started := time.Now()
	d.setProgress(j.ID, job.Progress{Phase: phase, Started: started, Updated: started})
	rd := d.ramdisk(j)
	task := stage.Task{
		Job: j.ID, Phase: phase, User: identity(j), Program: program, Ramdisk: j.Ramdisk, Data: data, Log: logf,
		Degraded: degraded, Image: phase == "stage-in" && rd.RootOnly,
		Built: func(st stage.ImageStats) { d.metrics.ImageBuilt(st.Bytes, st.Took) },
		Progress: func(p stage.Progress) {
			d.setProgress(j.ID, job.Progress{Phase: phase, Files: p.Files, Bytes: p.Bytes, TotalFiles: p.TotalFiles,
				TotalBytes: p.TotalBytes, Started: started, Updated: time.Now()})
		},
	}
	if s, ok := engine.As[engine.Stager](d.engine); ok && !here {
		err = s.Stage(ctx, rd, task)
	} else {
		// The engine's RAMDISK is one file system here, which nobody
		// looks into before the stage-in ends and whose loss the daemon
		// sees whole (engine.Stager).
		task.Private = true
		err = d.runner.Run(ctx, task)
	}
	if err != nil {
		fmt.Fprintf(logf, "%s %s failed: %v\n", time.Now().Format(time.RFC3339), phase, err)
	} else {
		fmt.Fprintf(logf, "%s %s done in %s\n", time.Now().Format(time.RFC3339), phase, time.Since(started).Round(time.Millisecond))
	}
	return err
}

func describe(program, data string) string {
	if stage.BuiltIn(program) {
		return "built-in " + program + " with " + data
	}
	if program != "" {
		return fmt.Sprintf("running %s RAMDISK %s", program, data)
	}
	return "built-in copy with " + data
}

func identity(j *job.Job) stage.Identity {
	return stage.Identity{UID: j.UID, GID: j.GID, Groups: j.Groups, Name: j.User, Home: j.Home}
}

// stageOutRounds bounds the copies of one stage-out that a part of the
// RAMDISK coming back starts again: a node that comes and goes all the
// time is for the admin to see.
const stageOutRounds = 3

// stageLog is the job's log file, named by its id and creation time: a
// state directory reset (or restored) never shows one user a log of an
// earlier job that had the same id.
func (d *Daemon) stageLog(j *job.Job) string { return d.stageLogOf(j.ID, j.CreatedAt) }

func (d *Daemon) stageLogOf(id int64, created time.Time) string {
	return filepath.Join(d.cfg.StateDir, "logs", fmt.Sprintf("%d-%d.log", id, created.UnixNano()))
}

func (d *Daemon) setProgress(id int64, p job.Progress) {
	d.mu.Lock()
	d.progress[id] = p
	d.mu.Unlock()
}

// watchOwner finishes j when the process that owns it (rsa run) exits,
// however it exits.
func (d *Daemon) watchOwner(j *job.Job) {
	if j.Owner.PID == 0 || j.State == lifecycle.Finished {
		return
	}
	gone := func(why string) {
		d.post(msg{id: j.ID, ev: lifecycle.Event{Kind: lifecycle.EvFinished, At: time.Now(), Reason: why}})
	}
	if st, err := holders.StartTime(j.Owner.PID); err != nil || st != j.Owner.StartTime {
		gone(fmt.Sprintf("its rsa run process %d is gone", j.Owner.PID))
		return
	}
	fd, err := unix.PidfdOpen(j.Owner.PID, 0)
	if err != nil {
		gone(fmt.Sprintf("its rsa run process %d is gone", j.Owner.PID))
		return
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer unix.Close(fd)
		for d.actx.Err() == nil {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, 1000)
			if err != nil && !errors.Is(err, unix.EINTR) {
				return
			}
			if n > 0 {
				gone(fmt.Sprintf("its rsa run process %d exited", j.Owner.PID))
				return
			}
		}
	}()
}

// unreachable is the compute nodes an unbind could not reach, if that is
// all that failed: their mounts stay until they answer.
func unreachable(err error) (*node.UnreachableError, bool) {
	// Unbind returns one bare when nothing else failed; joined with
	// other errors it is not all, and errors.As would find it anyway.
	un, ok := err.(*node.UnreachableError)
	return un, ok
}
