// Package debt keeps the ledger of what teardowns left on nodes that did
// not answer: a RAMDISK's part on a silent RSA node (its RAM counted as
// held there until the node confirms it gone), or a client mount on a
// compute node out of reach. Each debt is in the store, so a restart
// keeps it; the ledger holds a copy for the capacity decisions, and pays
// the debts of nodes that answer again.
package debt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rsa-hpc/rsa/internal/access"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/joblog"
	"github.com/rsa-hpc/rsa/internal/store"
)

// Ledger is the debts. Its methods are safe for concurrent use.
type Ledger struct {
	store *store.Store
	logs  *joblog.Logs
	log   *slog.Logger
	// changed is called after the copy changed: what the committed
	// jobs and debts hold is to be worked out again.
	changed func()

	mu    sync.Mutex
	debts []store.Debt
}

// New is the ledger of st holding debts (as read from st), calling
// changed after each change of its copy.
func New(st *store.Store, debts []store.Debt, logs *joblog.Logs, log *slog.Logger, changed func()) *Ledger {
	return &Ledger{store: st, debts: debts, logs: logs, log: log, changed: changed}
}

// Owe records what a teardown of j left on silent RSA nodes: each node's
// part of j stays counted as held there until its agent confirms it gone
// (none if the engine says the RAM is free already).
func (l *Ledger) Owe(ctx context.Context, j *job.Job, debt *engine.DebtError) error {
	for _, n := range debt.Nodes {
		var bytes int64
		for _, p := range j.Alloc {
			if p.Node == n && !debt.Freed {
				bytes += p.Bytes
			}
		}
		err := l.store.AddDebt(ctx, store.Debt{Node: n, Job: j.ID, Build: j.Build, Bytes: bytes, Since: time.Now(), Why: debt.Err.Error()})
		if err != nil {
			return fmt.Errorf("recording what job %d leaves on %s: %w", j.ID, n, err)
		}
		l.log.Warn("RAMDISK part left on an RSA node: removed when it can be", "job", j.ID, "node", n, "bytes", bytes)
	}
	l.logs.Append(j.ID, j.CreatedAt, "teardown: "+debt.Error())
	return l.Load(ctx)
}

// OweMounts records the client mounts of j's RAMDISK a teardown left on
// compute nodes out of reach: each is removed when its node answers
// again. They hold no RSA RAM (a debt of 0 bytes).
func (l *Ledger) OweMounts(ctx context.Context, j *job.Job, un *access.UnreachableError) error {
	for _, n := range un.Nodes {
		err := l.store.AddDebt(ctx, store.Debt{Node: n, Job: j.ID, Build: j.Build, Since: time.Now(), Why: "its mount of the RAMDISK: " + un.Err.Error()})
		if err != nil {
			return fmt.Errorf("recording what job %d leaves on %s: %w", j.ID, n, err)
		}
	}
	l.logs.Append(j.ID, j.CreatedAt, fmt.Sprintf("teardown: compute node %s out of reach (%v): its mount of the RAMDISK is removed when it answers", strings.Join(un.Nodes, ", "), un.Err))
	return l.Load(ctx)
}

// Load refreshes the ledger's copy from the store.
func (l *Ledger) Load(ctx context.Context) error {
	debts, err := l.store.Debts(ctx)
	if err != nil {
		return fmt.Errorf("reading debts: %w", err)
	}
	l.mu.Lock()
	l.debts = debts
	l.mu.Unlock()
	l.changed()
	return nil
}

// Owed is a copy of the debts.
func (l *Ledger) Owed() []store.Debt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.debts)
}

// Pay destroys again, node by node, what teardowns left on nodes that
// answer now (nodes.Up), and forgets each debt its node confirmed: a
// client mount through access, a part through the engine. ramdiskRoot is
// where the RAMDISKs' directories are.
func (l *Ledger) Pay(ctx context.Context, nodes engine.Nodes, eng engine.Engine, access access.Access, ramdiskRoot string) {
	paid := false
	for _, db := range l.Owed() {
		if !nodes.Up(db.Node) {
			continue
		}
		rd := engine.Ramdisk{Job: db.Job, Build: db.Build, Dir: engine.DirFor(ramdiskRoot, db.Job),
			Parts: []job.Part{{Node: db.Node, Bytes: db.Bytes}}}
		if slices.Contains(nodes.ComputeNodes(), db.Node) {
			// A client mount: the node's agent lets go of it.
			rd.Parts = nil
			if err := access.Unbind(ctx, []string{db.Node}, rd, true); err != nil {
				l.log.Warn("paying a debt", "job", db.Job, "node", db.Node, "err", err)
				continue
			}
		} else if err := eng.Destroy(ctx, rd); err != nil {
			if debt := (*engine.DebtError)(nil); !errors.As(err, &debt) {
				l.log.Warn("paying a debt", "job", db.Job, "node", db.Node, "err", err)
			}
			continue
		}
		if err := l.store.PayDebt(ctx, db.Node, db.Job, db.Build); err != nil {
			l.log.Error("forgetting a paid debt", "job", db.Job, "node", db.Node, "err", err)
			continue
		}
		l.log.Info("debt paid: the node confirmed the RAMDISK part gone", "job", db.Job, "node", db.Node, "bytes", db.Bytes,
			"owed_s", time.Since(db.Since).Seconds())
		paid = true
	}
	if paid {
		// The RAM counts as free from the loop's next tick on.
		if err := l.Load(ctx); err != nil {
			l.log.Error("after paying debts", "err", err)
		}
	}
}
