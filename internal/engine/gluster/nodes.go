package gluster

import (
	"context"

	"github.com/rsa-hpc/rsa/internal/engine"
)

// The engine's nodes, as the daemon sees them (engine.Nodes,
// engine.Watcher, io.Closer): what e.Nodes, the agents' heartbeat and the
// checks of glusterd's pool, found.

func (e *Engine) Placeable(node string) bool { return e.Nodes.Placeable(node) }

// Unplaceable: a node takes no new brick while its agent is silent, nor
// while a rift in glusterd's trusted pool keeps it out (no volume over
// both sides of a rift can be made).
func (e *Engine) Unplaceable() string { return "down or split from glusterd's pool" }

func (e *Engine) Up(node string) bool { return e.Nodes.Up(node) }

func (e *Engine) Incarnation(node string) string { return e.Nodes.Incarnation(node) }

func (e *Engine) ComputeNodes() []string { return e.Nodes.ComputeNodes() }

func (e *Engine) Health() []engine.NodeHealth { return e.Nodes.Health() }

// Certificates: the daemon's certificate and each agent's (engine.Certificates).
func (e *Engine) Certificates() []engine.Certificate { return e.Nodes.Certificates() }

// Start beats once and checks glusterd's pool once, each node bounded.
func (e *Engine) Start(ctx context.Context, ev engine.NodeEvents) { e.Nodes.Start(ctx, ev) }

// Watch beats every cluster.heartbeat and checks glusterd's pool every
// cluster.pool_check, every heartbeat while it is split.
func (e *Engine) Watch(ctx context.Context) { e.Nodes.Watch(ctx) }

// Close closes the agents' clients' idle connections.
func (e *Engine) Close() error {
	e.Nodes.Close()
	return nil
}
