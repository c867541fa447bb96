package gluster

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/units"
)

// Name is the value of the config's engine key that picks this engine.
const Name = "gluster"

// Config is what engine gluster reads of the config file beside the core
// keys: [cluster] and [[compute]] (docs/config.md). Load puts it in
// config.Config.EngineConfig.
type Config struct {
	// PKI is the directory of the control host's ca.crt, node.crt and
	// node.key (rsa ca issue HOST --role control).
	PKI string
	// Address is the control host's own address as the RSA nodes see it:
	// it is allowed to mount every job's volume.
	Address string
	// AgentPort is the TCP port of every agent.
	AgentPort int
	// Heartbeat is how often every agent's status is read.
	Heartbeat time.Duration
	// DownAfter is how long an agent may stay silent before its node
	// counts as lost: its jobs' RAMDISKs are then rebuilt, or their
	// output reported lost. Between one missed heartbeat and DownAfter
	// the node is suspect: it takes no new job, and nothing is undone.
	DownAfter time.Duration
	// Replica is 0 (distribute: each file on one node) or 2 (each file
	// on two nodes; a job is charged twice its capacity).
	Replica int
	// Shard splits files into 64 MiB pieces spread over the bricks, for
	// files bigger than one node's share.
	Shard bool
	// Profile turns every job's volume's profile on: its bricks count
	// and time each file operation, written to the job's log when its
	// RAMDISK is torn down.
	Profile bool
	// PingTimeout is how long a Gluster client waits for a silent brick.
	PingTimeout time.Duration
	// PoolCheck is how often the daemon asks every RSA node's glusterd
	// how it sees its trusted pool while the pool is whole (every
	// heartbeat while it is not), and PoolTimeout how long one answer may
	// take: glusterd answers after the transaction its agent is running,
	// which under load takes seconds.
	PoolCheck   time.Duration
	PoolTimeout time.Duration
	// LeftoverSweep is how often the daemon looks for RAMDISKs no job
	// holds: a volume deleted while one of its nodes was down comes back
	// with that node's glusterd.
	LeftoverSweep time.Duration
	// ProbeTimeout bounds one look at a RAMDISK in use through the control
	// host's Gluster client, which a hung client would never answer.
	ProbeTimeout time.Duration
	// CheckTimeout bounds glusterd's answer when a RAMDISK is checked
	// after a stage: on a cut link it waits for its peer until TCP gives
	// up. CheckSettle bounds that check's wait for glusterd and the
	// control host's client to agree (a client reconnects every 3 s).
	CheckTimeout time.Duration
	CheckSettle  time.Duration
	// WholeSettle bounds how long a stage-out on an RSA node waits for
	// that node's client to reach every part before it lists the
	// RAMDISK; the daemon sends it with each stage.
	WholeSettle time.Duration
	// Compute are the compute nodes with agents; a node not listed is
	// dialled by its name.
	Compute []ComputeNode
}

// ComputeNode is a compute node whose agent RSA dials.
type ComputeNode struct {
	Name    string // the scheduler's name of the node
	Address string // its agent's address
}

// AgentAddr is the HOST:PORT of the agent at address.
func (c *Config) AgentAddr(address string) string {
	return net.JoinHostPort(address, fmt.Sprint(c.AgentPort))
}

// ConfigOf is engine gluster's part of cfg, as Load read it with Keys.
func ConfigOf(cfg *config.Config) (*Config, error) {
	gc, ok := cfg.EngineConfig.(*Config)
	if !ok || gc == nil {
		return nil, fmt.Errorf("engine %q: the config holds no [cluster] read by the engine (load it with all.Engines)", Name)
	}
	return gc, nil
}

// Keys are what engine gluster reads of the config file: its RSA nodes'
// address and size (a share, such as 50%, would be of this host's RAM,
// not the node's), [cluster] and [[compute]].
func Keys() config.EngineKeys {
	return config.EngineKeys{Name: Name, About: "across RSA nodes", Node: parseNode,
		Tables: []string{"[cluster]", "[[compute]]"}, Parse: parse}
}

// clusterFile mirrors [cluster]; strings are parsed so errors can name
// keys.
type clusterFile struct {
	PKI         *string `toml:"pki"`
	Address     *string `toml:"address"`
	AgentPort   *int    `toml:"agent_port"`
	Heartbeat   *string `toml:"heartbeat"`
	DownAfter   *string `toml:"down_after"`
	Replica     *int    `toml:"replica"`
	Shard       *bool   `toml:"shard"`
	Profile     *bool   `toml:"profile"`
	PingTimeout *string `toml:"ping_timeout"`
	// The daemon's own periods and bounds (see Config).
	PoolCheck     *string `toml:"pool_check"`
	PoolTimeout   *string `toml:"pool_timeout"`
	LeftoverSweep *string `toml:"leftover_sweep"`
	ProbeTimeout  *string `toml:"probe_timeout"`
	CheckTimeout  *string `toml:"check_timeout"`
	CheckSettle   *string `toml:"check_settle"`
	WholeSettle   *string `toml:"whole_settle"`
}

// computeFile mirrors one entry of [[compute]].
type computeFile struct {
	Name    string `toml:"name"`
	Address string `toml:"address"`
}

// parseNode reads the address and the size of one of nodes[].
func parseNode(key string, n config.NodeKeys, node *config.Node) error {
	if err := checkAddress(n.Address); err != nil {
		return fmt.Errorf("%s.address: %w", key, err)
	}
	if strings.HasSuffix(strings.TrimSpace(n.Capacity), "%") {
		return fmt.Errorf("%s.capacity: %q is a share of this host's RAM; give an RSA node of engine %q a size such as \"64G\"", key, n.Capacity, Name)
	}
	capacity, err := config.ParseCapacity(n.Capacity)
	if err != nil {
		return fmt.Errorf("%s.capacity: %w", key, err)
	}
	node.Capacity, node.Address = capacity, n.Address
	return nil
}

// defaultConfig is [cluster] at its defaults (docs/config.md).
func defaultConfig() Config {
	return Config{
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

// parse reads [cluster] and [[compute]], with the core keys and nodes[]
// in c.
func parse(s config.Section, c *config.Config) (any, error) {
	if len(c.Nodes) == 0 {
		return nil, fmt.Errorf("engine %q needs RSA nodes: list each under [[nodes]] with name, address and capacity", Name)
	}
	var fc clusterFile
	var compute []computeFile
	if err := s.Decode("cluster", &fc); err != nil {
		return nil, err
	}
	if err := s.Decode("compute", &compute); err != nil {
		return nil, err
	}
	cl := defaultConfig()
	if err := config.SetPath("cluster.pki", fc.PKI, &cl.PKI); err != nil {
		return nil, err
	}
	if fc.Address == nil {
		return nil, fmt.Errorf("cluster.address: missing: give this control host's address as the RSA nodes reach it (it may mount every job's volume)")
	}
	if err := checkAddress(*fc.Address); err != nil {
		return nil, fmt.Errorf("cluster.address: %w", err)
	}
	cl.Address = *fc.Address
	if fc.AgentPort != nil {
		if *fc.AgentPort < 1 || *fc.AgentPort > 65535 {
			return nil, fmt.Errorf("cluster.agent_port: %d is not a TCP port", *fc.AgentPort)
		}
		cl.AgentPort = *fc.AgentPort
	}
	if fc.Heartbeat != nil {
		d, err := units.ParseDuration(*fc.Heartbeat)
		if err != nil || d < 100*time.Millisecond || d > time.Minute {
			return nil, fmt.Errorf("cluster.heartbeat: %q must be a duration between 100ms and 1m", *fc.Heartbeat)
		}
		cl.Heartbeat = d
	}
	if fc.DownAfter != nil {
		d, err := units.ParseDuration(*fc.DownAfter)
		if err != nil || d < time.Second || d > time.Hour {
			return nil, fmt.Errorf("cluster.down_after: %q must be a duration between 1s and 1h", *fc.DownAfter)
		}
		cl.DownAfter = d
	}
	if cl.DownAfter < 2*cl.Heartbeat {
		return nil, fmt.Errorf("cluster.down_after: %s is less than two heartbeats (%s): one late answer would count a node as lost; raise down_after or shorten heartbeat", cl.DownAfter, cl.Heartbeat)
	}
	if fc.Replica != nil {
		if *fc.Replica != 0 && *fc.Replica != 2 {
			return nil, fmt.Errorf("cluster.replica: %d must be 0 (each file on one node) or 2 (each file on two)", *fc.Replica)
		}
		cl.Replica = *fc.Replica
		if cl.Replica == 2 && len(c.Nodes) < 2 {
			return nil, fmt.Errorf("cluster.replica: 2 needs at least two RSA nodes, [[nodes]] lists %d", len(c.Nodes))
		}
	}
	if fc.Shard != nil {
		cl.Shard = *fc.Shard
	}
	if fc.Profile != nil {
		cl.Profile = *fc.Profile
	}
	if fc.PingTimeout != nil {
		d, err := units.ParseDuration(*fc.PingTimeout)
		if err != nil || d < time.Second || d > 10*time.Second || d%time.Second != 0 {
			return nil, fmt.Errorf("cluster.ping_timeout: %q must be whole seconds from 1s to 10s (a dead node stalls I/O that long)", *fc.PingTimeout)
		}
		cl.PingTimeout = d
	}
	if err := parsePeriods(&fc, &cl); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, n := range c.Nodes {
		seen[n.Name] = true
	}
	for i, n := range compute {
		key := fmt.Sprintf("compute[%d]", i)
		if n.Name == "" || strings.ContainsAny(n.Name, " \t\n/,:") {
			return nil, fmt.Errorf("%s.name: %q must be the scheduler's name of a compute node", key, n.Name)
		}
		if seen[n.Name] {
			return nil, fmt.Errorf("%s.name: %q is listed twice (a node that is both RSA node and compute node is listed once, under [[nodes]])", key, n.Name)
		}
		seen[n.Name] = true
		if err := checkAddress(n.Address); err != nil {
			return nil, fmt.Errorf("%s.address: %w", key, err)
		}
		cl.Compute = append(cl.Compute, ComputeNode{Name: n.Name, Address: n.Address})
	}
	return &cl, nil
}

// parsePeriods reads the daemon's own periods and bounds of [cluster].
// Their defaults suit production; the emulated test clusters
// (scripts/cluster-up) shorten them.
func parsePeriods(fc *clusterFile, cl *Config) error {
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
