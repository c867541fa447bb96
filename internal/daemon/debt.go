package daemon

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/node"
	"github.com/rsa-hpc/rsa/internal/store"
)

// owe records what a teardown left on silent RSA nodes: each node's part
// of j stays counted as held there until its agent confirms it gone.
func (d *Daemon) owe(ctx context.Context, j *job.Job, debt *engine.DebtError) error {
	for _, n := range debt.Nodes {
		var bytes int64
		for _, p := range j.Alloc {
			if p.Node == n && !debt.Freed {
				bytes += p.Bytes
			}
		}
		err := d.store.AddDebt(ctx, store.Debt{Node: n, Job: j.ID, Build: j.Build, Bytes: bytes, Since: time.Now(), Why: debt.Err.Error()})
		if err != nil {
			return fmt.Errorf("recording what job %d leaves on %s: %w", j.ID, n, err)
		}
		d.log.Warn("RAMDISK part left on an RSA node: removed when it can be", "job", j.ID, "node", n, "bytes", bytes)
	}
	d.appendStageLog(j, "teardown: "+debt.Error())
	return d.loadDebts(ctx)
}

// oweMounts records the client mounts of j's RAMDISK a teardown left on
// compute nodes out of reach: each is removed when its node answers
// again. They hold no RSA RAM (a debt of 0 bytes).
func (d *Daemon) oweMounts(ctx context.Context, j *job.Job, un *node.UnreachableError) error {
	for _, n := range un.Nodes {
		err := d.store.AddDebt(ctx, store.Debt{Node: n, Job: j.ID, Build: j.Build, Since: time.Now(), Why: "its mount of the RAMDISK: " + un.Err.Error()})
		if err != nil {
			return fmt.Errorf("recording what job %d leaves on %s: %w", j.ID, n, err)
		}
	}
	d.appendStageLog(j, fmt.Sprintf("teardown: compute node %s out of reach (%v): its mount of the RAMDISK is removed when it answers", strings.Join(un.Nodes, ", "), un.Err))
	return d.loadDebts(ctx)
}

// loadDebts refreshes the daemon's copy of the debts, which the
// holdings count.
func (d *Daemon) loadDebts(ctx context.Context) error {
	debts, err := d.store.Debts(ctx)
	if err != nil {
		return fmt.Errorf("reading debts: %w", err)
	}
	d.mu.Lock()
	d.debts = debts
	d.mu.Unlock()
	d.changed()
	return nil
}

// owed is a copy of the debts.
func (d *Daemon) owed() []store.Debt {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.debts)
}

// payDebts destroys again, node by node, what teardowns left on nodes
// that answer now, and forgets each debt its node confirmed.
func (d *Daemon) payDebts(ctx context.Context) {
	nodes, ok := d.engineNodes()
	if !ok {
		return // nothing is owed where every part is on this host
	}
	paid := false
	for _, db := range d.owed() {
		if !nodes.Up(db.Node) {
			continue
		}
		rd := engine.Ramdisk{Job: db.Job, Build: db.Build, Dir: engine.DirFor(d.cfg.RamdiskRoot, db.Job),
			Parts: []job.Part{{Node: db.Node, Bytes: db.Bytes}}}
		if slices.Contains(nodes.ComputeNodes(), db.Node) {
			// A client mount: the node's agent lets go of it.
			rd.Parts = nil
			if err := d.access.Unbind(ctx, []string{db.Node}, rd, true); err != nil {
				d.log.Warn("paying a debt", "job", db.Job, "node", db.Node, "err", err)
				continue
			}
		} else if err := d.engine.Destroy(ctx, rd); err != nil {
			if debt := (*engine.DebtError)(nil); !errors.As(err, &debt) {
				d.log.Warn("paying a debt", "job", db.Job, "node", db.Node, "err", err)
			}
			continue
		}
		if err := d.store.PayDebt(ctx, db.Node, db.Job, db.Build); err != nil {
			d.log.Error("forgetting a paid debt", "job", db.Job, "node", db.Node, "err", err)
			continue
		}
		d.log.Info("debt paid: the node confirmed the RAMDISK part gone", "job", db.Job, "node", db.Node, "bytes", db.Bytes,
			"owed_s", time.Since(db.Since).Seconds())
		paid = true
	}
	if paid {
		// The RAM counts as free from the loop's next tick on.
		if err := d.loadDebts(ctx); err != nil {
			d.log.Error("after paying debts", "err", err)
		}
	}
}

// every runs fn every interval until ctx ends: the daemon's watchers that
// poll (debts, leftovers).
func every(ctx context.Context, interval time.Duration, fn func(context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn(ctx)
		}
	}
}

// sweepLeftovers is gc while the daemon runs. A leftover can appear long
// after its job let it go: an engine whose nodes keep their own record of
// RAMDISKs may find one again when a node that was down returns
// (engine gluster's List says when).
//
// A leftover goes when two sweeps in a row find it: one found once may be
// in the making by someone else (one the engine lists while it builds
// it), which a sweep must not pull from under it. seen holds what the
// last sweep found and is the sweep's alone.
func (d *Daemon) sweepLeftovers(ctx context.Context, seen map[engine.Found]bool) {
	found := map[engine.Found]bool{}
	_, err := d.gcWhere(ctx, func(f engine.Found) bool {
		found[f] = true
		return seen[f]
	})
	clear(seen)
	maps.Copy(seen, found)
	if err != nil && ctx.Err() == nil {
		d.log.Warn("removing RAMDISKs no job holds", "err", err)
	}
}
