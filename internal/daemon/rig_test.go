package daemon

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/daemon/book"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/store"
)

// restartRig is a daemon over a store in one directory that a test opens
// again as a restart of rsa serve would, and drives by hand: no loop runs,
// and the daemon's time is the test's.
type restartRig struct {
	t   *testing.T
	ctx context.Context
	cfg *config.Config
}

// newRestartRig is a rig for the config cfg makes of the rig's directory.
func newRestartRig(t *testing.T, cfg func(dir string) *config.Config) *restartRig {
	return &restartRig{t: t, ctx: context.Background(), cfg: cfg(t.TempDir())}
}

// open starts a daemon over the rig's store, resumed as rsa serve
// resumes; the caller closes its store (d.store.Close) to stop it.
func (r *restartRig) open() *Daemon {
	r.t.Helper()
	st, err := store.Open(r.ctx, r.cfg.StateDir)
	if err != nil {
		r.t.Fatal(err)
	}
	d := newDaemon(r.cfg, deps{store: st}, Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Version: "test"})
	if err := d.resume(r.ctx); err != nil {
		r.t.Fatal(err)
	}
	return d
}

// run is the loop's work at now: what is pending, the tick, then the
// events its actions posted.
func (r *restartRig) run(d *Daemon, now time.Time) {
	for tick := true; ; tick = false {
		for len(d.pending) > 0 {
			m := d.pending[0]
			d.pending = d.pending[1:]
			d.handle(r.ctx, m)
		}
		if !tick {
			return
		}
		d.tick(r.ctx, now)
	}
}

// get is job id's committed record.
func (r *restartRig) get(d *Daemon, id int64) *job.Job {
	r.t.Helper()
	j, err := d.store.Get(r.ctx, id)
	if err != nil {
		r.t.Fatal(err)
	}
	return j
}

// useEngine makes e the engine of d and of its account of RAM, before
// the test makes d decide.
func (d *Daemon) useEngine(e engine.Engine) {
	d.engine = e
	d.book = book.New(d.cfg, e, bookPort{d})
}
