package daemon

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/rsa-hpc/rsa/internal/dashboard"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/metrics"
)

// phaseOf is the metrics' name of the phase an action is.
var phaseOf = map[lifecycle.ActionKind]string{
	lifecycle.Construct: metrics.Construct,
	lifecycle.StageIn:   metrics.StageIn,
	lifecycle.MountIn:   metrics.Mount,
	lifecycle.MountOut:  metrics.Mount,
	lifecycle.Unmount:   metrics.Switch,
	lifecycle.StageOut:  metrics.StageOut,
	lifecycle.Destroy:   metrics.Teardown,
}

// observeAction records an action's duration and, for a stage that
// succeeded, what it copied.
func (d *Daemon) observeAction(id int64, kind lifecycle.ActionKind, took time.Duration, ev lifecycle.Event) {
	phase, ok := phaseOf[kind]
	if !ok {
		return
	}
	d.metrics.ObservePhase(phase, took)
	dir := map[lifecycle.EventKind]string{lifecycle.EvStagedIn: "in", lifecycle.EvStagedOut: "out"}[ev.Kind]
	if dir == "" {
		return
	}
	if a, ok := d.stagedBy(id, ev.Kind); ok {
		d.metrics.AddStaged(dir, a.Files, a.Bytes)
	}
}

// serveMetrics serves /metrics and the read-only dashboard (/) on the
// configured address until ctx ends.
func (d *Daemon) serveMetrics(ctx context.Context) (*http.Server, error) {
	// Anyone on the host may connect: connections are bounded in number
	// and in time, so that none can hold the root daemon's descriptors.
	ln, err := metrics.Listen(d.cfg.Metrics.Listen)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", d.metrics.Handler())
	mux.Handle("/", dashboard.Handler(d.api.Dashboard()))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: time.Minute, IdleTimeout: 30 * time.Second, MaxHeaderBytes: 16 << 10}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error("metrics stopped", "err", err)
		}
	}()
	d.log.Info("metrics for Prometheus and the dashboard", "listen", ln.Addr().String())
	return srv, nil
}
