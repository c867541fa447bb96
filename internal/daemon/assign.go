package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/alloc"
	"github.com/rsa-hpc/rsa/internal/capacity"
	"github.com/rsa-hpc/rsa/internal/daemon/board"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/holders"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
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
		ev := d.execute(ctx, &jj, a.Kind)
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
	dec := d.decide(j)
	now := time.Now()
	switch dec.Verdict {
	case alloc.Assign:
		d.board.SetWait(j.ID, "", "")
		parts := slices.Clone(dec.Parts)
		if nodes, ok := d.engineNodes(); ok {
			for i := range parts {
				parts[i].Incarnation = nodes.Incarnation(parts[i].Node)
			}
		}
		d.reserved[j.ID] = parts
		d.plans.Forget() // less is free now
		dir := engine.DirFor(d.cfg.RamdiskRoot, j.ID)
		return msg{id: j.ID, ev: lifecycle.Event{Kind: lifecycle.EvAssigned, At: now}, edit: func(n *job.Job) {
			n.Alloc, n.Ramdisk, n.Lost = parts, dir, nil
		}}, true
	case alloc.Ineligible:
		d.board.SetWait(j.ID, "", "")
		return msg{id: j.ID, ev: lifecycle.Event{Kind: lifecycle.EvIneligible, At: now, Reason: dec.Reason}}, true
	default:
		if d.board.SetWait(j.ID, board.WaitCapacity, dec.Reason) {
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

// request is what j asks of capacity.Decide.
func request(j *job.Job) capacity.Job {
	m := j.Machine()
	return capacity.Job{Request: alloc.Request{
		ComputeNodes: j.Spec.ComputeNodes, Capacity: j.Spec.Capacity,
		Running: j.State == lifecycle.Running, HasInput: m.HasInput, HasOutput: m.HasOutput,
	}, Sized: j.Spec.Sized, User: j.User}
}

// decide is capacity.Decide for j over what is free now. A job that holds
// nothing sees what every such job sees: its decision to wait is the
// pass's for its request (d.plans).
func (d *Daemon) decide(j *job.Job) capacity.Decision {
	cj := request(j)
	_, reserved := d.reserved[j.ID]
	memo := (!lifecycle.HoldsNodes(j.RSA) || len(j.Alloc) == 0) && !reserved && (cj.Capacity != 0 || cj.Sized == "")
	if memo {
		if dec, ok := d.plans.Lookup(d.commitCount(), cj.Request); ok {
			return dec
		}
	}
	dec := capacity.Decide(cj, d.snapshot(j))
	if memo {
		d.plans.Remember(cj.Request, dec)
	}
	return dec
}

// snapshot is what is free for j now: what the committed jobs besides j
// hold, what is reserved for others, drained and silent nodes counted
// full.
func (d *Daemon) snapshot(j *job.Job) capacity.Snapshot {
	s := capacity.Snapshot{Policy: alloc.PolicyFrom(d.cfg, d.placement()), Nodes: d.cfg.Nodes, Used: d.heldBesides(j)}
	// Decisions made but not yet committed hold their RAM too: a tick
	// that assigns several waiting jobs must not give each the same free
	// bytes.
	for id, parts := range d.reserved {
		if id != j.ID {
			for _, p := range parts {
				s.Used[p.Node] += p.Bytes
			}
		}
	}
	// A drained node gives nothing: it counts as full, so a job waits for
	// it (it is still part of what RSA can ever give) and says why.
	drained := d.api.Drained()
	for _, n := range d.cfg.Nodes {
		if _, ok := drained[n.Name]; ok {
			s.Used[n.Name] = n.Capacity
		} else if !d.placeable(n.Name) {
			// The engine makes no part there now: its node did not
			// answer, or something else keeps new parts off it.
			s.Used[n.Name] = n.Capacity
			s.Down++
		}
	}
	s.Drained = len(drained)
	if nodes, ok := d.engineNodes(); ok {
		s.DownWord = nodes.Unplaceable()
	}
	if s.UserLimit = d.cfg.Limits.MaxUserCapacity; s.UserLimit > 0 {
		s.UserHeld = d.userHeld(j)
	}
	return s
}

// commitCount is the number of commits so far.
func (d *Daemon) commitCount() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.commits
}

// userHeld is what j's user holds besides j: committed and reserved.
func (d *Daemon) userHeld(j *job.Job) int64 {
	total := d.holdings().ByUser[j.UID] - own(j)
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
	return total
}

// fits reports whether parts still fit beside what the committed jobs
// other than j hold: the last word before an allocation is committed.
func (d *Daemon) fits(j *job.Job, parts []job.Part) bool {
	return capacity.Fits(d.cfg.Nodes, d.heldBesides(j), parts)
}

// waitForStageIn says why j, held for its stage-in time
// (lifecycle.HoldStageInTime), waits.
func (d *Daemon) waitForStageIn(j *job.Job) {
	why := fmt.Sprintf("stage-in starts at %s, %s before the job's expected start", j.NotBefore.Format(time.DateTime), d.cfg.Slurm.StageInLead)
	if j.Expected.IsZero() {
		why = fmt.Sprintf("Slurm has not yet estimated when the job starts, and its nodes are busy: stage-in waits for the estimate, until %s at the latest", j.NotBefore.Format(time.DateTime))
	}
	if d.board.SetWait(j.ID, board.WaitStart, why) {
		d.log.Info("job waits for its stage-in time", "job", j.ID, "not_before", j.NotBefore)
	}
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

// holdings returns what the committed jobs hold, per RSA node and per
// user; callers must not change it. The scheduling pass asks for it once
// per waiting job; it is worked out from every active job only when a
// commit changed it (a pass over 1,000 waiting and 9,000 holding jobs
// took 9 s when each decision summed the active jobs itself).
func (d *Daemon) holdings() *capacity.Holdings {
	d.mu.Lock()
	h, gen := d.held, d.commits
	d.mu.Unlock()
	if h != nil {
		return h
	}
	h = capacity.NewHoldings()
	// RAM a teardown left on a silent node is held there until the node
	// confirms it gone; it is no user's any more.
	for _, db := range d.owed() {
		h.Owe(db.Node, db.Bytes)
	}
	d.store.EachActive(func(j *job.Job) {
		if lifecycle.HoldsNodes(j.RSA) {
			h.Hold(j.UID, j.Alloc)
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
	if lifecycle.HoldsNodes(j.RSA) {
		return d.holdings().Besides(j.Alloc)
	}
	return d.holdings().Besides(nil)
}

// own is the RAM j's committed record holds.
func own(j *job.Job) int64 {
	if !lifecycle.HoldsNodes(j.RSA) {
		return 0
	}
	return j.Capacity()
}

// stageLog is the file of j's own log.
func (d *Daemon) stageLog(j *job.Job) string { return d.logs.Path(j.ID, j.CreatedAt) }

// jobLog adds a line to j's own log, which 'rsa log' shows its user.
func (d *Daemon) jobLog(j *job.Job, format string, a ...any) {
	d.logs.Append(j.ID, j.CreatedAt, fmt.Sprintf(format, a...))
}

// appendStageLog adds a line, and a list under it, to j's own log.
func (d *Daemon) appendStageLog(j *job.Job, line string, more ...string) {
	d.logs.Append(j.ID, j.CreatedAt, line, more...)
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
