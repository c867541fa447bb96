package gluster

import (
	"log/slog"
	"time"

	"github.com/rsa-hpc/rsa/internal/access"
	"github.com/rsa-hpc/rsa/internal/agent"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/engine/gluster/cluster"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/stage"
)

var (
	_ Nodes   = (*cluster.Cluster)(nil)
	_ Clients = (*cluster.Cluster)(nil)
)

// Open builds the gluster engine of cfg, retried as its agents need, and
// the node access that mounts its volumes on the compute nodes (their
// agents, checking jobs' directories by policy). It loads the daemon's
// identity (cluster.pki) and checks this host's Gluster TLS; it dials no
// agent: the engine's Start does. epoch is the lease epoch of the active
// rsa serve of a failover pair, which every request to an agent carries
// (0 outside a pair), and every volume admits the other control host
// (failover.peer, failover.peer_address) as it admits this one.
func Open(cfg *config.Config, log *slog.Logger, policy mount.Policy, epoch int64) (engine.Engine, access.Access, error) {
	gc, err := ConfigOf(cfg)
	if err != nil {
		return nil, nil, err
	}
	cl, err := NewCluster(cfg, log)
	if err != nil {
		return nil, nil, err
	}
	cl.SetEpoch(epoch)
	g := &Engine{Root: cfg.RamdiskRoot, Nodes: cl, Control: gc.Address,
		OtherControl: cfg.Failover.PeerAddress, OtherControlName: cfg.Failover.Peer,
		Replica: gc.Replica, Shard: gc.Shard, Profiling: gc.Profile, PingTimeout: gc.PingTimeout,
		CheckTimeout: gc.CheckTimeout, CheckSettle: gc.CheckSettle,
		BWLimit: cfg.Limits.StageBWLimit, WholeSettle: gc.WholeSettle,
		DaemonPeriods: engine.Periods{Heartbeat: gc.Heartbeat, LeftoverSweep: gc.LeftoverSweep, ProbeTimeout: gc.ProbeTimeout},
		StageLimits: agent.StageLimits{Memory: cfg.Limits.StageMemory, Pids: cfg.Limits.StagePids, CPU: cfg.Limits.StageCPU,
			Network: stage.Network(cfg.Limits.StageNetwork)},
		Log: log}
	if err := g.Prepare(); err != nil {
		return nil, nil, err
	}
	// An agent restarting, or glusterd busy with another job's
	// transaction, passes within half a minute.
	return engine.WithRetry(g, 6, time.Second), Agents{Clients: cl, Servers: g.servers, Policy: policy, ImageLoop: cfg.ImageLoop}, nil
}

// NewCluster builds the engine's view of cfg's hosts (package cluster),
// as Open does: it loads the daemon's identity and dials no agent.
func NewCluster(cfg *config.Config, log *slog.Logger) (*cluster.Cluster, error) {
	gc, err := ConfigOf(cfg)
	if err != nil {
		return nil, err
	}
	o := cluster.Options{PKI: gc.PKI, AgentPort: gc.AgentPort, Heartbeat: gc.Heartbeat, DownAfter: gc.DownAfter,
		PoolCheck: gc.PoolCheck, PoolTimeout: gc.PoolTimeout}
	for _, n := range cfg.Nodes {
		o.Storage = append(o.Storage, cluster.Host{Name: n.Name, Address: n.Address})
	}
	for _, n := range gc.Compute {
		o.Compute = append(o.Compute, cluster.Host{Name: n.Name, Address: n.Address})
	}
	return cluster.New(o, log)
}
