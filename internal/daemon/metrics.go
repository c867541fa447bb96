package daemon

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/dashboard"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/metrics"
)

// metricsSource is the daemon as the metrics see it at a scrape.
type metricsSource struct{ d *Daemon }

func (s metricsSource) Jobs(ctx context.Context) ([]metrics.JobCount, error) {
	jobs, err := s.d.store.List(ctx, false, 0)
	if err != nil {
		return nil, err
	}
	n := map[[2]string]int{}
	for _, j := range jobs {
		if !j.Machine().Done() {
			n[[2]string{string(j.State), string(j.RSA)}]++
		}
	}
	out := make([]metrics.JobCount, 0, len(n))
	for k, v := range n {
		out = append(out, metrics.JobCount{JobState: k[0], RSAState: k[1], N: v})
	}
	return out, nil
}

func (s metricsSource) Agents(context.Context) []metrics.AgentHealth {
	nodes, ok := s.d.engineNodes()
	if !ok {
		return nil
	}
	var out []metrics.AgentHealth
	for _, h := range nodes.Health() {
		out = append(out, metrics.AgentHealth{Node: h.Node, Role: h.Role, Up: h.Up, State: h.State, Seen: h.Seen, Rebooted: h.Rebooted, Unpooled: h.Unplaceable != ""})
	}
	return out
}

func (s metricsSource) Certificates(context.Context) []metrics.Certificate {
	var out []metrics.Certificate
	for _, c := range s.d.certificates() {
		out = append(out, metrics.Certificate{Node: c.Node, Role: c.Role, NotAfter: c.NotAfter})
	}
	return out
}

func (s metricsSource) Quarantined(context.Context) int {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	return len(s.d.quarantined)
}

func (s metricsSource) Debts(context.Context) []metrics.Debt {
	var out []metrics.Debt
	for _, db := range s.d.owed() {
		out = append(out, metrics.Debt{Node: db.Node, Bytes: db.Bytes, Since: db.Since})
	}
	return out
}

func (s metricsSource) Nodes(ctx context.Context) ([]metrics.NodeUse, error) {
	views, used, err := s.d.ramUse(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]metrics.NodeUse, 0, len(views))
	for _, v := range views {
		out = append(out, metrics.NodeUse{Name: v.Name, Capacity: v.Capacity, Allocated: v.Used, Used: used[v.Name], Drained: v.Drain != nil})
	}
	return out, nil
}

// ramUse is each RSA node's allocation and how much of it the RAMDISKs
// fill (a RAMDISK's fill shared out over its nodes by their parts), from
// one read of the active jobs.
func (d *Daemon) ramUse(ctx context.Context) ([]api.NodeView, map[string]int64, error) {
	jobs, err := d.store.List(ctx, false, 0)
	if err != nil {
		return nil, nil, err
	}
	used := map[string]int64{}
	for _, j := range jobs {
		if !lifecycle.HoldsNodes(j.RSA) || j.Ramdisk == "" || j.Capacity() <= 0 {
			continue
		}
		u, err := d.engine.Usage(d.ramdisk(j))
		if err != nil {
			continue // not built yet, or torn down meanwhile
		}
		for _, p := range j.Alloc {
			used[p.Node] += int64(float64(u.Used) * float64(p.Bytes) / float64(j.Capacity()))
		}
	}
	return d.nodeViews(jobs), used, nil
}

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
	mux.Handle("/", dashboard.Handler(dashSource{d}))
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
