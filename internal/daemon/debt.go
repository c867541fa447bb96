package daemon

import (
	"context"
	"maps"
	"time"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/store"
)

// owed is a copy of the debts.
func (d *Daemon) owed() []store.Debt { return d.debts.Owed() }

// loadDebts refreshes the daemon's copy of the debts, which the holdings
// count.
func (d *Daemon) loadDebts(ctx context.Context) error { return d.debts.Load(ctx) }

// payDebts pays the debts of the engine's nodes that answer now.
func (d *Daemon) payDebts(ctx context.Context) {
	if nodes, ok := d.engineNodes(); ok {
		d.debts.Pay(ctx, nodes, d.engine, d.access, d.cfg.RamdiskRoot)
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
	_, err := d.api.CollectWhere(ctx, func(f engine.Found) bool {
		found[f] = true
		return seen[f]
	})
	clear(seen)
	maps.Copy(seen, found)
	if err != nil && ctx.Err() == nil {
		d.log.Warn("removing RAMDISKs no job holds", "err", err)
	}
}
