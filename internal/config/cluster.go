package config

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/rsa-hpc/rsa/internal/units"
)

// parseNodes reads nodes[]: every node serves the one engine of the
// config; a gluster node names its address and a size, since a share
// (50%) would be of this host's RAM, not the node's.
func parseNodes(f *file, c *Config) error {
	seen := map[string]bool{}
	for i, n := range f.Nodes {
		key := fmt.Sprintf("nodes[%d]", i)
		if n.Name == "" || strings.ContainsAny(n.Name, " \t\n/,:") {
			return fmt.Errorf("%s.name: %q must be a non-empty host name", key, n.Name)
		}
		if seen[n.Name] {
			return fmt.Errorf("%s.name: %q is listed twice", key, n.Name)
		}
		seen[n.Name] = true
		eng := n.Engine
		if eng == "" {
			eng = c.Engine
		}
		if eng != c.Engine {
			return fmt.Errorf("%s.engine: %q differs from engine %q: every RSA node serves the config's one engine (drop nodes[].engine)", key, n.Engine, c.Engine)
		}
		node := Node{Name: n.Name, Engine: eng}
		switch eng {
		case EngineLocal:
			if n.Address != "" {
				return fmt.Errorf("%s.address: a node of engine %q is this host; an address is for engine %q", key, EngineLocal, EngineGluster)
			}
			capacity, err := parseCapacity(n.Capacity)
			if err != nil {
				return fmt.Errorf("%s.capacity: %w", key, err)
			}
			node.Capacity = capacity
		case EngineGluster:
			if err := checkAddress(n.Address); err != nil {
				return fmt.Errorf("%s.address: %w", key, err)
			}
			if strings.HasSuffix(strings.TrimSpace(n.Capacity), "%") {
				return fmt.Errorf("%s.capacity: %q is a share of this host's RAM; give an RSA node of engine %q a size such as \"64G\"", key, n.Capacity, EngineGluster)
			}
			capacity, err := parseCapacity(n.Capacity)
			if err != nil {
				return fmt.Errorf("%s.capacity: %w", key, err)
			}
			node.Capacity, node.Address = capacity, n.Address
		}
		c.Nodes = append(c.Nodes, node)
	}
	if c.Engine == EngineGluster && len(c.Nodes) == 0 {
		return fmt.Errorf("engine %q needs RSA nodes: list each under [[nodes]] with name, address and capacity", EngineGluster)
	}
	return nil
}

// defaultCluster is [cluster] at its defaults (docs/config.md).
func defaultCluster() Cluster {
	return Cluster{
		PKI:           "/etc/rsa/pki",
		AgentPort:     9477,
		Heartbeat:     5 * time.Second,
		DownAfter:     30 * time.Second,
		PingTimeout:   10 * time.Second,
		PoolCheck:     10 * time.Second,
		PoolTimeout:   8 * time.Second,
		LeftoverSweep: 20 * time.Second,
		ProbeTimeout:  10 * time.Second,
		CheckTimeout:  15 * time.Second,
		CheckSettle:   15 * time.Second,
		WholeSettle:   10 * time.Second,
	}
}

// glusterRetry is how often a Gluster client tries again to reach a
// brick: a wait for a client to reconnect shorter than this would take a
// brick just back for one out of reach.
const glusterRetry = 3 * time.Second

// parseClusterPeriods reads the daemon's own periods and bounds of
// [cluster]. Their defaults suit production; the emulated test clusters
// (scripts/cluster-up) shorten them.
func parseClusterPeriods(f *file, cl *Cluster) error {
	fc := f.Cluster
	for _, d := range []struct {
		key      string
		v        *string
		dst      *time.Duration
		min, max time.Duration
		why      string // what a value out of bounds would do
	}{
		{"cluster.pool_check", fc.PoolCheck, &cl.PoolCheck, time.Second, time.Hour, ""},
		{"cluster.pool_timeout", fc.PoolTimeout, &cl.PoolTimeout, time.Second, 5 * time.Minute, ""},
		{"cluster.leftover_sweep", fc.LeftoverSweep, &cl.LeftoverSweep, time.Second, time.Hour, ""},
		{"cluster.probe_timeout", fc.ProbeTimeout, &cl.ProbeTimeout, time.Second, 5 * time.Minute, ""},
		{"cluster.check_timeout", fc.CheckTimeout, &cl.CheckTimeout, time.Second, 5 * time.Minute, ""},
		{"cluster.check_settle", fc.CheckSettle, &cl.CheckSettle, glusterRetry, 5 * time.Minute,
			" (a Gluster client tries again every 3s: a shorter wait takes a brick just back for one out of reach)"},
		{"cluster.whole_settle", fc.WholeSettle, &cl.WholeSettle, glusterRetry, 5 * time.Minute,
			" (a Gluster client tries again every 3s: a shorter wait fails a stage-out whose client is still connecting)"},
	} {
		if d.v == nil {
			continue
		}
		v, err := units.ParseDuration(*d.v)
		if err != nil || v < d.min || v > d.max {
			return fmt.Errorf("%s: %q must be a duration between %s and %s%s", d.key, *d.v, shortDuration(d.min), shortDuration(d.max), d.why)
		}
		*d.dst = v
	}
	return nil
}

// shortDuration writes a bound as docs/config.md does: "3s", "5m", "1h".
func shortDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	default:
		return d.String()
	}
}

// parseCluster reads [cluster] and compute[], which only engine gluster
// uses.
func parseCluster(f *file, c *Config) error {
	fc := f.Cluster
	given := fc.PKI != nil || fc.Address != nil || fc.AgentPort != nil || fc.Heartbeat != nil || fc.DownAfter != nil ||
		fc.Replica != nil || fc.Shard != nil || fc.PingTimeout != nil || len(f.Compute) > 0 ||
		fc.PoolCheck != nil || fc.PoolTimeout != nil || fc.LeftoverSweep != nil || fc.ProbeTimeout != nil ||
		fc.CheckTimeout != nil || fc.CheckSettle != nil || fc.WholeSettle != nil
	if c.Engine != EngineGluster {
		if given {
			return fmt.Errorf("[cluster] and [[compute]] configure engine %q; set engine = %q or remove them", EngineGluster, EngineGluster)
		}
		return nil
	}
	cl := &c.Cluster
	if err := setPath("cluster.pki", fc.PKI, &cl.PKI); err != nil {
		return err
	}
	if fc.Address == nil {
		return fmt.Errorf("cluster.address: missing: give this control host's address as the RSA nodes reach it (it may mount every job's volume)")
	}
	if err := checkAddress(*fc.Address); err != nil {
		return fmt.Errorf("cluster.address: %w", err)
	}
	cl.Address = *fc.Address
	if fc.AgentPort != nil {
		if *fc.AgentPort < 1 || *fc.AgentPort > 65535 {
			return fmt.Errorf("cluster.agent_port: %d is not a TCP port", *fc.AgentPort)
		}
		cl.AgentPort = *fc.AgentPort
	}
	if fc.Heartbeat != nil {
		d, err := units.ParseDuration(*fc.Heartbeat)
		if err != nil || d < 100*time.Millisecond || d > time.Minute {
			return fmt.Errorf("cluster.heartbeat: %q must be a duration between 100ms and 1m", *fc.Heartbeat)
		}
		cl.Heartbeat = d
	}
	if fc.DownAfter != nil {
		d, err := units.ParseDuration(*fc.DownAfter)
		if err != nil || d < time.Second || d > time.Hour {
			return fmt.Errorf("cluster.down_after: %q must be a duration between 1s and 1h", *fc.DownAfter)
		}
		cl.DownAfter = d
	}
	if cl.DownAfter < 2*cl.Heartbeat {
		return fmt.Errorf("cluster.down_after: %s is less than two heartbeats (%s): one late answer would count a node as lost; raise down_after or shorten heartbeat", cl.DownAfter, cl.Heartbeat)
	}
	if fc.Replica != nil {
		if *fc.Replica != 0 && *fc.Replica != 2 {
			return fmt.Errorf("cluster.replica: %d must be 0 (each file on one node) or 2 (each file on two)", *fc.Replica)
		}
		cl.Replica = *fc.Replica
		if cl.Replica == 2 && len(c.Nodes) < 2 {
			return fmt.Errorf("cluster.replica: 2 needs at least two RSA nodes, [[nodes]] lists %d", len(c.Nodes))
		}
	}
	if fc.Shard != nil {
		cl.Shard = *fc.Shard
	}
	if fc.PingTimeout != nil {
		d, err := units.ParseDuration(*fc.PingTimeout)
		if err != nil || d < time.Second || d > 10*time.Second || d%time.Second != 0 {
			return fmt.Errorf("cluster.ping_timeout: %q must be whole seconds from 1s to 10s (a dead node stalls I/O that long)", *fc.PingTimeout)
		}
		cl.PingTimeout = d
	}
	if err := parseClusterPeriods(f, cl); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, n := range c.Nodes {
		seen[n.Name] = true
	}
	for i, n := range f.Compute {
		key := fmt.Sprintf("compute[%d]", i)
		if n.Name == "" || strings.ContainsAny(n.Name, " \t\n/,:") {
			return fmt.Errorf("%s.name: %q must be the scheduler's name of a compute node", key, n.Name)
		}
		if seen[n.Name] {
			return fmt.Errorf("%s.name: %q is listed twice (a node that is both RSA node and compute node is listed once, under [[nodes]])", key, n.Name)
		}
		seen[n.Name] = true
		if err := checkAddress(n.Address); err != nil {
			return fmt.Errorf("%s.address: %w", key, err)
		}
		cl.Compute = append(cl.Compute, ComputeNode{Name: n.Name, Address: n.Address})
	}
	return nil
}

// checkAddress accepts an IP address or a DNS name that Gluster will take
// for a brick or auth.allow: not loopback (Gluster refuses it for bricks,
// and it names a different host on every node), nothing that could read as
// an option or a list.
func checkAddress(a string) error {
	if a == "" {
		return fmt.Errorf("missing: give the host's IP address or DNS name")
	}
	if ip := net.ParseIP(a); ip != nil {
		if ip.IsLoopback() || ip.IsUnspecified() {
			return fmt.Errorf("%q is a loopback or unspecified address; give one other hosts reach this one at", a)
		}
		return nil
	}
	if a == "localhost" || len(a) > 253 || a[0] == '-' || a[0] == '.' {
		return fmt.Errorf("%q is not an address other hosts reach this one at (an IP address or a DNS name)", a)
	}
	for _, r := range a {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return fmt.Errorf("%q is not an IP address or a DNS name", a)
		}
	}
	return nil
}

// AgentAddr is the HOST:PORT of the agent at address.
func (c *Config) AgentAddr(address string) string {
	return net.JoinHostPort(address, fmt.Sprint(c.Cluster.AgentPort))
}
