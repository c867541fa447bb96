// Package all is the one place that knows every engine: what each reads
// of the config file (Engines, for config.Load) and how each is opened
// with the node access that goes with it (Open, for the daemon). The
// daemon is handed Open (daemon.Options.OpenEngine), so that it links no
// backend, and reaches what an engine does beyond engine.Engine through
// engine.As alone.
package all

import (
	"fmt"
	"log/slog"

	"github.com/rsa-hpc/rsa/internal/access"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/engine/gluster"
	"github.com/rsa-hpc/rsa/internal/engine/local"
	"github.com/rsa-hpc/rsa/internal/mount"
)

// Engines are the keys of every engine, in the order an error lists
// them: the registry config.Load reads a config file with.
func Engines() config.Engines {
	return config.Engines{local.Keys(), gluster.Keys()}
}

// Options are what Open needs besides the config.
type Options struct {
	Log *slog.Logger
	// Self is the rsa binary, which enters a compute node's mount
	// namespace (access.Namespaces).
	Self string
	// Policy says which directories of a job may be mounted over.
	Policy mount.Policy
	// Epoch is the lease epoch of the active rsa serve of a failover
	// pair, which every agent request carries; 0 outside a pair.
	Epoch int64
}

// Open builds cfg's engine, wrapped in the retries it needs, and the
// access that shows its RAMDISKs on the compute nodes: for engine gluster
// the compute nodes' agents, for engine local this host, or with a
// scheduler that names them (slurm.node_namespaces) the mount namespaces
// standing in for compute nodes. cfg must have been loaded with Engines.
func Open(cfg *config.Config, o Options) (engine.Engine, access.Access, error) {
	switch cfg.Engine {
	case gluster.Name:
		return gluster.Open(cfg, o.Log, o.Policy, o.Epoch)
	case local.Name:
		return local.Open(cfg, o.Self, o.Policy)
	}
	return nil, nil, fmt.Errorf("engine: %q is not an engine this program opens", cfg.Engine)
}
