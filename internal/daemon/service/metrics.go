package service

import (
	"context"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/metrics"
)

// Metrics is the source of the metrics (metrics.New): the service as a
// scrape sees it.
func (s *Service) Metrics() metrics.Source { return metricsSource{s} }

type metricsSource struct{ s *Service }

func (m metricsSource) Jobs(ctx context.Context) ([]metrics.JobCount, error) {
	jobs, err := m.s.store.List(ctx, false, 0)
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

func (m metricsSource) Agents(context.Context) []metrics.AgentHealth {
	nodes, ok := m.s.engineNodes()
	if !ok {
		return nil
	}
	var out []metrics.AgentHealth
	for _, h := range nodes.Health() {
		out = append(out, metrics.AgentHealth{Node: h.Node, Role: h.Role, Up: h.Up, State: h.State, Seen: h.Seen, Rebooted: h.Rebooted, Unpooled: h.Unplaceable != ""})
	}
	return out
}

func (m metricsSource) Certificates(context.Context) []metrics.Certificate {
	var out []metrics.Certificate
	for _, c := range m.s.certificates() {
		out = append(out, metrics.Certificate{Node: c.Node, Role: c.Role, NotAfter: c.NotAfter})
	}
	return out
}

func (m metricsSource) Quarantined(context.Context) int {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	return len(m.s.quarantined)
}

func (m metricsSource) Debts(context.Context) []metrics.Debt {
	var out []metrics.Debt
	for _, db := range m.s.debts.Owed() {
		out = append(out, metrics.Debt{Node: db.Node, Bytes: db.Bytes, Since: db.Since})
	}
	return out
}

func (m metricsSource) Nodes(ctx context.Context) ([]metrics.NodeUse, error) {
	views, used, err := m.s.ramUse(ctx)
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
func (s *Service) ramUse(ctx context.Context) ([]api.NodeView, map[string]int64, error) {
	jobs, err := s.store.List(ctx, false, 0)
	if err != nil {
		return nil, nil, err
	}
	used := map[string]int64{}
	for _, j := range jobs {
		if !lifecycle.HoldsNodes(j.RSA) || j.Ramdisk == "" || j.Capacity() <= 0 {
			continue
		}
		u, err := s.engine.Usage(s.core.Ramdisk(j))
		if err != nil {
			continue // not built yet, or torn down meanwhile
		}
		for _, p := range j.Alloc {
			used[p.Node] += int64(float64(u.Used) * float64(p.Bytes) / float64(j.Capacity()))
		}
	}
	return s.nodeViews(jobs), used, nil
}
