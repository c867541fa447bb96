// Package watch looks after the RAMDISKs in use on an engine whose parts
// are on nodes apart from this host. It tells the daemon of parts lost (a
// node's incarnation ended, as the engine's watcher reports) and of parts
// out of reach of this host's client (its own probe), each as an
// EvNodeLost event for the job, with a line for the job's log. It
// decides nothing: the lifecycle does, and the daemon drops a report
// that is no news (a second report of one loss, another build).
package watch

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/joblog"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// Jobs is the daemon as the watch sees it.
type Jobs interface {
	// EachActive calls fn with the committed record of every active job;
	// fn must not call back into the daemon.
	EachActive(fn func(*job.Job))
	// Ramdisk describes j's RAMDISK for the engine.
	Ramdisk(j *job.Job) engine.Ramdisk
	// Post hands the daemon's loop an event for job id, with an edit of
	// the record committed with its transition; it does not wait.
	Post(id int64, ev lifecycle.Event, edit func(*job.Job))
}

// Watch reports losses of the RAMDISKs' parts.
type Watch struct {
	Engine engine.Engine
	Jobs   Jobs
	Logs   *joblog.Logs
	Log    *slog.Logger
}

// lossCheckTimeout bounds the engine's check after a lost node; the check
// bounds each question to a node itself, this only the whole.
const lossCheckTimeout = time.Minute

// NodeLost tells every job holding loss.Node that the part of its RAMDISK
// there is gone. The engine's watch calls it before the node is placeable
// again (engine.NodeEvents): which jobs hold a part of the incarnation
// that ended, and in which build, is read at once; whether the rest of
// each RAMDISK still serves every file (asking the engine, which takes a
// while) and the posting happen after, off the caller's goroutine.
func (w *Watch) NodeLost(loss engine.NodeLoss) {
	var hit []engine.Ramdisk
	w.Jobs.EachActive(func(j *job.Job) {
		if !lifecycle.HoldsNodes(j.RSA) || slices.Contains(j.Lost, loss.Node) {
			return
		}
		if slices.ContainsFunc(j.Alloc, func(p job.Part) bool {
			return p.Node == loss.Node && (p.Incarnation == "" || loss.Incarnation == "" || p.Incarnation == loss.Incarnation)
		}) {
			hit = append(hit, w.Jobs.Ramdisk(j))
		}
	})
	for _, rd := range hit {
		go func() {
			// Without replicas a lost node's files are gone: said at
			// once, as a stage-in into that part is failing meanwhile.
			whole := w.replicas() >= 2 && w.servesEveryFile(rd, loss.Node)
			served := "the files there are missing from the RAMDISK"
			if whole {
				served = "its replicas serve the files there"
			}
			w.Jobs.Post(rd.Job, lifecycle.Event{Kind: lifecycle.EvNodeLost, At: time.Now(), Reason: loss.Why, Nodes: []string{loss.Node}, Build: rd.Build, Whole: whole},
				func(n *job.Job) {
					w.Logs.Append(n.ID, n.CreatedAt, fmt.Sprintf("RSA node %s lost (%s): the part of the RAMDISK there is gone; %s; state %s", loss.Node, loss.Why, served, n.RSA))
				})
		}()
	}
}

// replicas is how many copies of each file the engine keeps.
func (w *Watch) replicas() int {
	if p, ok := engine.As[engine.Placer](w.Engine); ok {
		return p.Placement().Replica
	}
	return 0
}

// servesEveryFile reports whether rd, having lost node, still serves every
// file (its replicas), as the engine's check finds it. Unknown counts as
// no: that costs the job its input in RAM, never a file.
func (w *Watch) servesEveryFile(rd engine.Ramdisk, node string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), lossCheckTimeout)
	defer cancel()
	dg, err := w.Engine.Check(ctx, rd)
	if err != nil {
		w.Log.Warn("checking a RAMDISK after a lost node", "job", rd.Job, "node", node, "err", err)
		return false
	}
	return !dg.Missing
}

// Ramdisks probes, every interval until ctx ends, the RAMDISKs in use: a
// part out of reach of this host's client (a brick process killed, a link
// cut), which the heartbeat does not see when the node's agent answers,
// makes the job degraded as a lost node does (before the job runs, its
// RAMDISK is rebuilt). A part must be seen out of reach twice in a row: a
// client reconnecting is not a loss.
func (w *Watch) Ramdisks(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	p := prober{Watch: w, seen: map[int64][]string{}, hung: map[int64]<-chan struct{}{}}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.round(ctx)
	}
}

// prober is the state Ramdisks keeps from one round to the next.
type prober struct {
	*Watch
	seen map[int64][]string        // job → nodes out of reach at the last probe
	hung map[int64]<-chan struct{} // job → a probe that never answered, until it does
}

// watched is one RAMDISK to probe, with the nodes its job has lost
// already.
type watched struct {
	rd   engine.Ramdisk
	lost []string
}

// round probes every watched RAMDISK once.
func (p *prober) round(ctx context.Context) {
	var all []watched
	p.Jobs.EachActive(func(j *job.Job) {
		if lifecycle.Watched(j.RSA) && j.Ramdisk != "" {
			all = append(all, watched{p.Jobs.Ramdisk(j), slices.Clone(j.Lost)})
		}
	})
	next := map[int64][]string{}
	for _, w := range all {
		if fresh := p.one(ctx, w); len(fresh) > 0 {
			next[w.rd.Job] = fresh
		}
	}
	p.seen = next
}

// one probes w and reports the nodes newly out of reach if the last round
// saw the same; it returns them, for the next round to compare.
func (p *prober) one(ctx context.Context, w watched) (fresh []string) {
	if done, ok := p.hung[w.rd.Job]; ok {
		select {
		case <-done:
			delete(p.hung, w.rd.Job)
		default:
			return nil // one stuck probe of a hung client is enough
		}
	}
	dg, done, err := Probe(ctx, p.Engine, w.rd)
	if err != nil {
		if done != nil {
			p.hung[w.rd.Job] = done
		}
		return nil // torn down meanwhile, or its client hung: Check at the stage-out asks the nodes
	}
	for _, n := range dg.Nodes {
		if !slices.Contains(w.lost, n) {
			fresh = append(fresh, n)
		}
	}
	if len(fresh) == 0 || !slices.Equal(p.seen[w.rd.Job], fresh) {
		return fresh
	}
	why := "its part is out of reach of this host's view of the RAMDISK (the part's process gone, or the link to its node cut)"
	served := "the files there are missing from the RAMDISK"
	if !dg.Missing {
		served = "its replicas serve the files there"
	}
	p.Log.Warn("part of a RAMDISK out of reach", "job", w.rd.Job, "nodes", fresh, "lost", dg.Missing)
	p.Jobs.Post(w.rd.Job, lifecycle.Event{Kind: lifecycle.EvNodeLost, At: time.Now(), Reason: why, Nodes: fresh, Build: w.rd.Build, Whole: !dg.Missing},
		func(n *job.Job) {
			p.Logs.Append(n.ID, n.CreatedAt, fmt.Sprintf("RSA node %s out of reach: %s; %s; state %s", strings.Join(fresh, ", "), why, served, n.RSA))
		})
	return fresh
}

// Probe is engine.Probe, given up after the engine's probe timeout
// (engine.Periods; engine gluster's cluster.probe_timeout: it reads from
// the RAMDISK's mount, which a hung client would never answer); done,
// when it was given up, closes once the probe returns after all.
func Probe(ctx context.Context, eng engine.Engine, rd engine.Ramdisk) (dg engine.Degraded, done <-chan struct{}, err error) {
	type result struct {
		dg  engine.Degraded
		err error
	}
	timeout := engine.DefaultPeriods().ProbeTimeout
	if p, ok := engine.As[engine.Periodic](eng); ok {
		timeout = p.Periods().ProbeTimeout
	}
	ch := make(chan result, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		dg, err := eng.Probe(rd)
		ch <- result{dg, err}
	}()
	select {
	case r := <-ch:
		return r.dg, nil, r.err
	case <-time.After(timeout):
		return engine.Degraded{}, finished, fmt.Errorf("probing the RAMDISK of job %d: no answer in %v", rd.Job, timeout)
	case <-ctx.Done():
		return engine.Degraded{}, nil, ctx.Err()
	}
}

// LossFor is the part of a loss report that is news for j's current
// RAMDISK: its nodes that j holds and has not yet lost. A report about
// another build (one torn down since, or a probe that raced a rebuild),
// about nodes j does not hold, or about losses already recorded (a second
// report of the same loss) is stale: stale says why, and the report must
// change nothing, its log line included.
func LossFor(j *job.Job, ev lifecycle.Event) (nodes []string, stale string) {
	if ev.Build != j.Build {
		return nil, fmt.Sprintf("it is about build %d of the RAMDISK, which is build %d now", ev.Build, j.Build)
	}
	for _, n := range ev.Nodes {
		if slices.ContainsFunc(j.Alloc, func(p job.Part) bool { return p.Node == n }) && !slices.Contains(j.Lost, n) {
			nodes = append(nodes, n)
		}
	}
	if len(nodes) == 0 {
		return nil, fmt.Sprintf("the job holds none of the nodes %s, or has lost them already", strings.Join(ev.Nodes, ", "))
	}
	return nodes, ""
}

// Gone checks, when the daemon starts, that j, whose state may say it has
// a RAMDISK, still has one; if not, ev is the loss to tell j's machine. A reboot of the RSA host takes every RAMDISK with
// it; the job must then not wait for a retry of a stage-out from RAM that
// is gone, nor hold that RAM, nor have its stage-in resumed into a plain
// directory. The event says what was lost.
func (w *Watch) Gone(ctx context.Context, j *job.Job) (ev lifecycle.Event, gone bool) {
	if !lifecycle.HasRamdisk(j.RSA) || j.Ramdisk == "" {
		return lifecycle.Event{}, false
	}
	rd := w.Jobs.Ramdisk(j)
	if _, ok, err := w.Engine.Device(rd); err != nil || ok {
		if err != nil {
			w.Log.Error("checking a job's RAMDISK", "job", j.ID, "err", err)
		}
		return lifecycle.Event{}, false
	}
	if r, ok := engine.As[engine.Reattacher](w.Engine); ok {
		// Not mounted here: this host may have taken the state over
		// from another one, which had it mounted.
		if ok, err := r.Reattach(ctx, rd); err != nil || ok {
			if err != nil {
				w.Log.Error("mounting a job's RAMDISK on this host again", "job", j.ID, "err", err)
			}
			return lifecycle.Event{}, false
		}
	}
	// What is left is the empty mount point and its gate.
	if err := w.Engine.Destroy(ctx, rd); err != nil {
		w.Log.Error("removing what is left of a lost RAMDISK", "job", j.ID, "err", err)
	}
	why := "its RAMDISK is gone (the RSA host restarted, or it was unmounted)"
	switch j.RSA {
	case lifecycle.StageOutFailed:
		why += "; the output it held had not been verified on persistent storage and is lost. When its stage-out failed: " + j.Error
	case lifecycle.StagingOut:
		why += fmt.Sprintf("; its stage-out was cut short: output it had not yet verified in %s is lost", j.Spec.Output)
	case lifecycle.InUseOut, lifecycle.Mounting:
		why += fmt.Sprintf("; what the job wrote into RAM at %s is lost (nothing of it had been staged out)", j.Spec.Output)
	default:
		why += "; it held nothing that is not on disk"
	}
	w.Log.Warn("RAMDISK lost", "job", j.ID, "rsa", j.RSA, "ramdisk", rd.Dir)
	w.Logs.Append(j.ID, j.CreatedAt, "RAMDISK lost: "+why)
	return lifecycle.Event{Kind: lifecycle.EvRamdiskLost, At: time.Now(), Reason: why}, true
}

// Silent are the RSA nodes of parts that did not answer e's last look,
// sorted; none on an engine whose parts are all on this host.
func Silent(e engine.Engine, parts []job.Part) []string {
	var silent []string
	nodes, ok := engine.As[engine.Nodes](e)
	if !ok {
		return nil
	}
	for _, p := range parts {
		if !nodes.Up(p.Node) && !slices.Contains(silent, p.Node) {
			silent = append(silent, p.Node)
		}
	}
	slices.Sort(silent)
	return silent
}
