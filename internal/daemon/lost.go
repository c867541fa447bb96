package daemon

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// lost checks, when the daemon starts, that a job whose state says it has a
// RAMDISK still has one. A reboot of the RSA host takes every RAMDISK with
// it; the job must then not wait for a retry of a stage-out from RAM that
// is gone, nor hold that RAM, nor have its stage-in resumed into a plain
// directory. The event says what was lost.
func (d *Daemon) lost(ctx context.Context, j *job.Job) (msg, bool) {
	if !lifecycle.HasRamdisk(j.RSA) || j.Ramdisk == "" {
		return msg{}, false
	}
	rd := d.ramdisk(j)
	if _, ok, err := d.engine.Device(rd); err != nil || ok {
		if err != nil {
			d.log.Error("checking a job's RAMDISK", "job", j.ID, "err", err)
		}
		return msg{}, false
	}
	if r, ok := engine.As[engine.Reattacher](d.engine); ok {
		// Not mounted here: this host may have taken the state over
		// from another one, which had it mounted.
		if ok, err := r.Reattach(ctx, rd); err != nil || ok {
			if err != nil {
				d.log.Error("mounting a job's RAMDISK on this host again", "job", j.ID, "err", err)
			}
			return msg{}, false
		}
	}
	// What is left is the empty mount point and its gate.
	if err := d.engine.Destroy(ctx, rd); err != nil {
		d.log.Error("removing what is left of a lost RAMDISK", "job", j.ID, "err", err)
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
	d.log.Warn("RAMDISK lost", "job", j.ID, "rsa", j.RSA, "ramdisk", rd.Dir)
	d.appendStageLog(j, "RAMDISK lost: "+why)
	return msg{id: j.ID, ev: lifecycle.Event{Kind: lifecycle.EvLost, At: time.Now(), Reason: why}}, true
}

// nodeLost tells every job holding node that the part of its RAMDISK
// there is gone. Called from the engine's watch before the node is
// placeable again (engine.NodeEvents): which jobs hold a part of the
// incarnation that ended, and in which build, is read at once; whether
// the rest of each RAMDISK still serves every file (asking the engine,
// which takes a while) and the posting happen after. It decides nothing.
func (d *Daemon) nodeLost(loss engine.NodeLoss) {
	var hit []engine.Ramdisk
	d.store.EachActive(func(j *job.Job) {
		if !lifecycle.HoldsNodes(j.RSA) || slices.Contains(j.Lost, loss.Node) {
			return
		}
		if slices.ContainsFunc(j.Alloc, func(p job.Part) bool {
			return p.Node == loss.Node && (p.Incarnation == "" || loss.Incarnation == "" || p.Incarnation == loss.Incarnation)
		}) {
			hit = append(hit, d.ramdisk(j))
		}
	})
	for _, rd := range hit {
		go func() {
			// Without replicas a lost node's files are gone: said at
			// once, as a stage-in into that part is failing meanwhile.
			whole := d.placement().Replica >= 2 && d.servesEveryFile(rd, loss.Node)
			served := "the files there are missing from the RAMDISK"
			if whole {
				served = "its replicas serve the files there"
			}
			d.post(msg{id: rd.Job, ev: lifecycle.Event{Kind: lifecycle.EvNodeLost, At: time.Now(), Reason: loss.Why, Nodes: []string{loss.Node}, Build: rd.Build, Whole: whole},
				edit: func(n *job.Job) {
					d.appendStageLog(n, fmt.Sprintf("RSA node %s lost (%s): the part of the RAMDISK there is gone; %s; state %s", loss.Node, loss.Why, served, n.RSA))
				}})
		}()
	}
}

// lossCheckTimeout bounds the engine's check after a lost node; the check
// bounds each question to a node itself, this only the whole.
const lossCheckTimeout = time.Minute

// servesEveryFile reports whether rd, having lost node, still serves every
// file (its replicas), as the engine's check finds it. Unknown counts as
// no: that costs the job its input in RAM, never a file.
func (d *Daemon) servesEveryFile(rd engine.Ramdisk, node string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), lossCheckTimeout)
	defer cancel()
	dg, err := d.engine.Check(ctx, rd)
	if err != nil {
		d.log.Warn("checking a RAMDISK after a lost node", "job", rd.Job, "node", node, "err", err)
		return false
	}
	return !dg.Lost
}

// silentAmong are the RSA nodes of parts that did not answer the engine's
// last look, sorted.
func (d *Daemon) silentAmong(parts []job.Part) []string {
	var silent []string
	nodes, ok := d.engineNodes()
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

// watchRamdisks probes, every interval until ctx ends, the RAMDISKs in
// use: a part out of reach of this host's client (a brick process killed,
// a link cut), which the heartbeat does not see when the node's agent
// answers, makes the job degraded as a lost node does (before the job
// runs, its RAMDISK is rebuilt). A part must be seen out of reach twice in
// a row: a client reconnecting is not a loss.
func (d *Daemon) watchRamdisks(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	seen := map[int64][]string{}        // job → nodes out of reach at the last probe
	hung := map[int64]<-chan struct{}{} // job → a probe that never answered, until it does
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		type probe struct {
			rd   engine.Ramdisk
			lost []string
		}
		var probes []probe
		d.store.EachActive(func(j *job.Job) {
			if lifecycle.Watched(j.RSA) && j.Ramdisk != "" {
				probes = append(probes, probe{d.ramdisk(j), slices.Clone(j.Lost)})
			}
		})
		next := map[int64][]string{}
		for _, p := range probes {
			if done, ok := hung[p.rd.Job]; ok {
				select {
				case <-done:
					delete(hung, p.rd.Job)
				default:
					continue // one stuck probe of a hung client is enough
				}
			}
			dg, done, err := d.probe(ctx, p.rd)
			if err != nil {
				if done != nil {
					hung[p.rd.Job] = done
				}
				continue // torn down meanwhile, or its client hung: Check at the stage-out asks the nodes
			}
			var fresh []string
			for _, n := range dg.Nodes {
				if !slices.Contains(p.lost, n) {
					fresh = append(fresh, n)
				}
			}
			if len(fresh) == 0 {
				continue
			}
			next[p.rd.Job] = fresh
			if !slices.Equal(seen[p.rd.Job], fresh) {
				continue
			}
			why := "its part is out of reach of this host's view of the RAMDISK (the part's process gone, or the link to its node cut)"
			served := "the files there are missing from the RAMDISK"
			if !dg.Lost {
				served = "its replicas serve the files there"
			}
			d.log.Warn("part of a RAMDISK out of reach", "job", p.rd.Job, "nodes", fresh, "lost", dg.Lost)
			d.post(msg{id: p.rd.Job, ev: lifecycle.Event{Kind: lifecycle.EvNodeLost, At: time.Now(), Reason: why, Nodes: fresh, Build: p.rd.Build, Whole: !dg.Lost},
				edit: func(n *job.Job) {
					d.appendStageLog(n, fmt.Sprintf("RSA node %s out of reach: %s; %s; state %s", strings.Join(fresh, ", "), why, served, n.RSA))
				}})
		}
		seen = next
	}
}

// probe is engine.Probe, given up after the engine's probe timeout
// (engine.Periods; engine gluster's cluster.probe_timeout: it reads
// from the RAMDISK's mount, which a hung client would never answer);
// done, when it was given up, closes once the probe returns after all.
func (d *Daemon) probe(ctx context.Context, rd engine.Ramdisk) (dg engine.Degraded, done <-chan struct{}, err error) {
	type result struct {
		dg  engine.Degraded
		err error
	}
	timeout := d.periods().ProbeTimeout
	ch := make(chan result, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		dg, err := d.engine.Probe(rd)
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
