package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/daemon/service"
	"github.com/rsa-hpc/rsa/internal/failover"
	"github.com/rsa-hpc/rsa/internal/store"
)

// Failover (docs/operations.md, "Controller failover"): the rsa serve of
// a pair that holds the lease on the shared state directory is active and
// runs as a lone one does, with three additions: it writes the state only
// under its lease's epoch (store.TakeOver), sends that epoch to every
// agent, and takes the requests the standby forwards (failover.listen).
// The other is the standby: it serves its socket by forwarding, and takes
// the lease, the state and every job over the moment the lease is free.

// leaseCheck is how often the active rsa serve checks that it still holds
// its lease (failover.Lease.Check), and leaseRetry how often the standby
// tries to take it.
const (
	leaseCheck = 5 * time.Second
	leaseRetry = time.Second
)

// Serve runs rsa serve as cfg says: New and Run alone, or, in a failover
// pair, the standby until it holds the lease, then the active one.
func Serve(ctx context.Context, cfg *config.Config, o Options) error {
	if !cfg.Failover.Enabled() {
		d, err := New(ctx, cfg, o)
		if err != nil {
			return err
		}
		return d.Run(ctx)
	}
	if os.Geteuid() != 0 {
		return errors.New("rsa serve must run as root: it mounts file systems and stages data as each job's user")
	}
	lease, err := failover.Standby{StateDir: cfg.StateDir, Socket: cfg.Socket, Limits: service.SocketLimits(cfg),
		MungeSocket: cfg.Remote.MungeSocket, Retry: leaseRetry, Log: o.Log}.Wait(ctx)
	if err != nil {
		return err
	}
	defer lease.Release()
	o.lease = lease
	d, err := New(ctx, cfg, o)
	if err != nil {
		return err
	}
	return d.Run(ctx)
}

// takeOver makes d's store the state's writer under a new epoch and
// announces d as the active one; New calls it before it opens the engine,
// which sends the epoch to the agents.
func takeOver(ctx context.Context, cfg *config.Config, st *store.Store, lease *failover.Lease) (int64, error) {
	host, _ := os.Hostname()
	epoch, err := st.TakeOver(ctx, host, time.Now())
	if err != nil {
		return 0, err
	}
	if err := lease.Announce(failover.Info{Host: host, Addr: cfg.Failover.Advertise, PID: os.Getpid(), Epoch: epoch, Since: time.Now()}); err != nil {
		return 0, err
	}
	return epoch, nil
}

// holdLease checks the lease every leaseCheck while ctx lasts, and stops
// d at once (stop) if it is lost: another rsa serve may hold it now.
func (d *Daemon) holdLease(ctx context.Context, stop context.CancelCauseFunc) {
	every(ctx, leaseCheck, func(context.Context) {
		if err := d.lease.Check(); err != nil {
			d.fence(stop, fmt.Errorf("%w: %w", store.ErrFenced, err))
		}
	})
}

// fence stops d because it may no longer act: its lease is lost, or its
// store refused a write under an old epoch. Once is enough; the cause is
// what Run returns.
func (d *Daemon) fence(stop context.CancelCauseFunc, cause error) {
	d.log.Error("failover: this rsa serve lost the lease and stops now; the standby takes over", "err", cause)
	stop(cause)
}

// fenced reports whether err is a write refused for an old epoch, and then
// stops d (Run's stop).
func (d *Daemon) fenced(err error) {
	if errors.Is(err, store.ErrFenced) && d.stopRun != nil {
		d.fence(d.stopRun, err)
	}
}
