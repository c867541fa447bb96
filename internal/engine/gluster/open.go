package gluster

import (
	"log/slog"
	"time"

	"github.com/rsa-hpc/rsa/internal/agent"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/engine/gluster/cluster"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/node"
	"github.com/rsa-hpc/rsa/internal/stage"
)

var _ Nodes = (*cluster.Cluster)(nil)

// Open builds the gluster engine of cfg, retried as its agents need, and
// the node access that mounts its volumes on the compute nodes (their
// agents, checking jobs' directories by policy). It loads the daemon's
// identity (cluster.pki) and checks this host's Gluster TLS; it dials no
// agent: the engine's Start does.
func Open(cfg *config.Config, log *slog.Logger, policy mount.Policy) (engine.Engine, node.Access, error) {
	cl, err := cluster.New(cfg, log)
	if err != nil {
		return nil, nil, err
	}
	g := &Engine{Root: cfg.RamdiskRoot, Nodes: cl, Control: cfg.Cluster.Address,
		Replica: cfg.Cluster.Replica, Shard: cfg.Cluster.Shard, PingTimeout: cfg.Cluster.PingTimeout,
		CheckTimeout: cfg.Cluster.CheckTimeout, CheckSettle: cfg.Cluster.CheckSettle,
		BWLimit: cfg.Limits.StageBWLimit, WholeSettle: cfg.Cluster.WholeSettle,
		StageLimits: agent.StageLimits{Memory: cfg.Limits.StageMemory, Pids: cfg.Limits.StagePids, CPU: cfg.Limits.StageCPU,
			Network: stage.Network(cfg.Limits.StageNetwork)},
		Log: log}
	if err := g.Prepare(); err != nil {
		return nil, nil, err
	}
	// An agent restarting, or glusterd busy with another job's
	// transaction, passes within half a minute.
	return engine.WithRetry(g, 6, time.Second), node.Agents{Clients: cl, Servers: g.servers, Policy: policy}, nil
}
