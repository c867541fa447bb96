// Package all opens the engine a config names, with the node access that
// goes with it: the one place that knows every engine. The daemon builds
// its engine here and reaches what it does beyond engine.Engine through
// engine.As alone.
package all

import (
	"log/slog"
	"time"

	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/engine/gluster"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/node"
)

// Options are what Open needs besides the config.
type Options struct {
	Log *slog.Logger
	// Self is the rsa binary, which enters a compute node's mount
	// namespace (node.Namespaces).
	Self string
	// Policy says which directories of a job may be mounted over.
	Policy mount.Policy
}

// Open builds cfg's engine, wrapped in the retries it needs, and the
// access that shows its RAMDISKs on the compute nodes: for engine gluster
// the compute nodes' agents, for engine local this host, or with a
// scheduler that names them (slurm.node_namespaces) the mount namespaces
// standing in for compute nodes.
func Open(cfg *config.Config, o Options) (engine.Engine, node.Access, error) {
	if cfg.Engine == config.EngineGluster {
		return gluster.Open(cfg, o.Log, o.Policy)
	}
	local, err := engine.NewLocal(cfg.RamdiskRoot)
	if err != nil {
		return nil, nil, err
	}
	var access node.Access = node.Local{Policy: o.Policy}
	if cfg.Slurm.NodeNamespaces != "" && cfg.Scheduler != config.SchedulerNone {
		access = node.Namespaces{Dir: cfg.Slurm.NodeNamespaces, Self: o.Self, Policy: o.Policy}
	}
	return engine.WithRetry(local, 3, 200*time.Millisecond), access, nil
}
