// Package local is what engine local (engine.Local: one tmpfs per job on
// this host) adds to the config and to the daemon: the rules of its RSA
// nodes (Keys) and how the daemon opens it (Open). It is a package of its
// own, not part of package engine, because it depends on package config,
// which engine, the interface every engine and the daemon share, must not.
package local

import (
	"fmt"
	"time"

	"github.com/rsa-hpc/rsa/internal/access"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/mount"
)

// Name is the value of the config's engine key that picks this engine,
// the one a config that names none gets.
const Name = config.EngineLocal

// Keys are what engine local reads of the config file: the size of each
// RSA node, which is this host (a size, or a share of the RAM available
// now), and no address. It has no tables of its own.
func Keys() config.EngineKeys {
	return config.EngineKeys{Name: Name, About: "for a tmpfs on this host", Node: parseNode}
}

// parseNode reads the size of one of nodes[] and refuses an address.
func parseNode(key string, n config.NodeKeys, node *config.Node) error {
	if n.Address != "" {
		return fmt.Errorf("%s.address: a node of engine %q is this host; an address is for engine %q", key, Name, "gluster")
	}
	capacity, err := config.ParseCapacity(n.Capacity)
	if err != nil {
		return fmt.Errorf("%s.capacity: %w", key, err)
	}
	node.Capacity = capacity
	return nil
}

// Open builds the local engine of cfg, retried, and the access that shows
// its RAMDISKs on the compute nodes: this host, or with a scheduler that
// names them (slurm.node_namespaces) the mount namespaces standing in for
// compute nodes. self is the rsa binary, which enters such a namespace.
func Open(cfg *config.Config, self string, policy mount.Policy) (engine.Engine, access.Access, error) {
	l, err := engine.NewLocal(cfg.RamdiskRoot)
	if err != nil {
		return nil, nil, err
	}
	var acc access.Access = access.Local{Policy: policy}
	if cfg.Slurm.NodeNamespaces != "" && cfg.Scheduler != config.SchedulerNone {
		acc = access.Namespaces{Dir: cfg.Slurm.NodeNamespaces, Self: self, Policy: policy}
	}
	return engine.WithRetry(l, 3, 200*time.Millisecond), acc, nil
}
