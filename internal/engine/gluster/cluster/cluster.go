// Package cluster is the gluster engine's view of RSA's hosts: a client of
// the agent on every RSA node and compute node, dialled with the daemon's
// identity, the health each agent last reported (a heartbeat), and how
// each RSA node's glusterd sees the trusted pool (CheckPool). It decides
// nothing: the gluster engine asks it for clients and addresses and
// answers the daemon's questions about its nodes (engine.Nodes) from it,
// and its node access (gluster.Agents) asks it for clients.
package cluster

import (
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rsa-hpc/rsa/internal/agent"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/gluster"
	"github.com/rsa-hpc/rsa/internal/pki"
	"github.com/rsa-hpc/rsa/internal/textsafe"
	"github.com/rsa-hpc/rsa/internal/version"
)

// The states of a node, as its heartbeat tells them.
const (
	StateUp      = "up"      // the last heartbeat was answered
	StateSuspect = "suspect" // silent for less than DownAfter: no new jobs, nothing undone
	StateDown    = "down"    // silent for DownAfter or longer: lost
)

// health is what the daemon last learnt of one agent.
type health struct {
	Node string
	Role string // "storage" or "compute": what RSA asks of it
	// State is StateUp, StateSuspect or StateDown.
	State string
	// Up: the last heartbeat was answered.
	Up bool
	// Silent is when the agent stopped answering (the first missed
	// heartbeat, or the daemon's start for one never seen); zero while up.
	Silent time.Time
	// Seen is when an agent last answered; zero if never.
	Seen time.Time
	// BootID is the node's kernel's boot id. A new Incarnation (which
	// holds it) is a rebooted node, or one whose /run was emptied: its
	// bricks and mounts are gone. A new Started is a restarted agent,
	// which loses nothing.
	BootID      string
	Incarnation string
	Started     time.Time
	Version     string // the agent's, as it reports it
	// Rebooted counts the incarnations seen change while the daemon ran.
	Rebooted     int
	MemAvailable int64
	Bricks       int // bricks on the node
	Mounts       int // volumes mounted on the node
	Err          string
	// Unpooled says why no new RAMDISK may have a brick on the RSA node
	// though its agent answers: the rifts in glusterd's trusted pool
	// that keep it out (CheckPool); "" when there are none.
	Unpooled string
	// Incompatible says why the agent's version does not work with rsa
	// serve's (version.Compatible): an RSA node then takes no new
	// RAMDISK; "" when it does.
	Incompatible string
	// PoolErr is why the node's glusterd did not answer the last
	// question about its pool; "" when it did.
	PoolErr string
	// Cert is the agent's certificate as the last heartbeat's handshake
	// verified it; nil until one was answered. Kept while the agent is
	// silent: its expiry may be why.
	Cert *x509.Certificate
}

// Cluster holds the agents' clients and health. Safe for concurrent use.
type Cluster struct {
	// id is the daemon's identity, loaded again as its files change.
	id *pki.Live
	// epoch is sent with every request to an agent (SetEpoch).
	epoch     int64
	port      int
	downAfter time.Duration
	// heartbeat paces the heartbeat and the looks at a split pool,
	// poolCheck the looks at a whole one, each bounded by poolTimeout
	// (cluster.heartbeat, pool_check, pool_timeout).
	heartbeat, poolCheck, poolTimeout time.Duration
	log                               *slog.Logger
	// now is the heartbeat's clock (time.Now but in tests).
	now func() time.Time
	// version is rsa serve's, which each agent's must be compatible with
	// (version.Compatible); version.String() but in tests.
	version string
	// lost receives every loss, from the heartbeat's goroutine; set
	// before the first Beat (Start).
	lost func(engine.NodeLoss)
	// noted receives each node's incarnation when first seen or changed,
	// from the heartbeat's goroutine; set before the first Beat (Start).
	noted     func(node, incarnation string)
	storage   map[string]string // RSA node → address
	computeAt map[string]string // listed compute node → address

	mu      sync.Mutex
	clients map[string]*agent.Client
	health  map[string]health
	// peers is what each RSA node's glusterd last said of its pool.
	peers map[string][]gluster.Peer
}

// Options are what a Cluster is built from: engine gluster's keys of
// [cluster] it needs, and the hosts whose agents it dials.
type Options struct {
	// PKI is the directory of the daemon's identity (cluster.pki).
	PKI string
	// AgentPort is every agent's TCP port (cluster.agent_port).
	AgentPort int
	// Heartbeat, DownAfter, PoolCheck and PoolTimeout are cluster.heartbeat,
	// down_after, pool_check and pool_timeout.
	Heartbeat, DownAfter, PoolCheck, PoolTimeout time.Duration
	// Storage are the RSA nodes, Compute the compute nodes listed in the
	// config: each host's name and address.
	Storage, Compute []Host
}

// Host is a node's name and the address of its agent.
type Host struct {
	Name, Address string
}

// New loads the daemon's identity from o.PKI and prepares a client per
// configured node; it dials nothing. The identity is loaded again when its
// files change (pki.Live): a renewed certificate, a new CA file or
// revocation list is used from the next connection to each agent on,
// which the log says. It logs a warning if the daemon's certificate
// expires within pki.ExpiryWarning.
func New(o Options, log *slog.Logger) (*Cluster, error) {
	id, err := pki.LoadLive(pki.DirFiles(o.PKI), func(id *pki.Identity, err error) {
		if err != nil {
			log.Warn("cluster.pki: the daemon's certificate files changed and could not be loaded; it goes on with the identity it had", "dir", o.PKI, "err", err)
			return
		}
		c := id.Certificate()
		log.Info("cluster.pki: loaded the daemon's new certificate files", "dir", o.PKI, "serial", pki.FormatSerial(c.SerialNumber), "expires", c.NotAfter.UTC().Format(time.RFC3339))
		warnCertificate(log, c, time.Now())
	})
	if err != nil {
		return nil, fmt.Errorf("cluster.pki: %w", err)
	}
	if r := id.Current().Role(); r != pki.RoleControl {
		return nil, fmt.Errorf("cluster.pki: the certificate in %s has role %s; the daemon needs one of role control (rsa ca issue HOST --role control)", o.PKI, r)
	}
	warnCertificate(log, id.Current().Certificate(), time.Now())
	c := &Cluster{id: id, port: o.AgentPort, downAfter: o.DownAfter,
		heartbeat: o.Heartbeat, poolCheck: o.PoolCheck, poolTimeout: o.PoolTimeout,
		log: log, now: time.Now, version: version.String(), lost: func(engine.NodeLoss) {}, noted: func(string, string) {},
		storage: map[string]string{}, computeAt: map[string]string{},
		clients: map[string]*agent.Client{}, health: map[string]health{}, peers: map[string][]gluster.Peer{}}
	now := time.Now()
	for _, n := range o.Storage {
		c.storage[n.Name] = n.Address
		c.health[n.Name] = health{Node: n.Name, Role: "storage", State: StateSuspect, Silent: now}
	}
	for _, n := range o.Compute {
		c.computeAt[n.Name] = n.Address
		c.health[n.Name] = health{Node: n.Name, Role: "compute", State: StateSuspect, Silent: now}
	}
	return c, nil
}

// firstBeat bounds each agent's answer to Start's heartbeat.
const firstBeat = 5 * time.Second

// Start has ev told, from the heartbeat, of every node lost and every
// incarnation seen (engine.NodeEvents says when), remembers ev.Known,
// and beats and checks the pool once before it returns, so that Up and
// Placeable answer from a look at every node. Called once, before Watch.
func (c *Cluster) Start(ctx context.Context, ev engine.NodeEvents) {
	c.mu.Lock()
	if ev.Lost != nil {
		c.lost = ev.Lost
	}
	if ev.Incarnation != nil {
		c.noted = ev.Incarnation
	}
	c.mu.Unlock()
	c.remember(ev.Known)
	c.Beat(ctx, firstBeat)
	c.CheckPool(ctx, c.poolTimeout)
	for _, h := range c.Health() {
		if !h.Up {
			c.log.Warn("agent not answering", "node", h.Node, "role", h.Role, "err", h.Err)
		}
	}
}

// remember takes, before the first Beat, the incarnations (node →
// incarnation) a previous daemon saw: a node that answers with another
// rebooted while no daemon watched, and is lost as one that reboots while
// it runs. Unknown nodes are ignored.
func (c *Cluster) remember(incarnations map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n, inc := range incarnations {
		if h, ok := c.health[n]; ok && h.Incarnation == "" {
			h.Incarnation = inc
			c.health[n] = h
		}
	}
}

// warnCertificate logs a warning if the daemon's certificate c expires
// within pki.ExpiryWarning of now.
func warnCertificate(log *slog.Logger, c *x509.Certificate, now time.Time) {
	if w := pki.ExpiresSoon(c, now); w != "" {
		log.Warn("the daemon's "+w, "expires", c.NotAfter.UTC().Format(time.RFC3339), "serial", pki.FormatSerial(c.SerialNumber))
	}
}

// Name is the control host's name, as its certificate gives it: what
// Gluster's TLS knows it by.
func (c *Cluster) Name() string { return c.id.Current().Certificate().Subject.CommonName }

// Certificates are the daemon's certificate (role control) and each
// agent's as the last heartbeat's handshake with it verified it (an agent
// never answered is left out), the daemon's first, then by node.
func (c *Cluster) Certificates() []engine.Certificate {
	own := c.id.Current().Certificate()
	out := []engine.Certificate{{Node: own.Subject.CommonName, Role: string(pki.RoleControl), NotAfter: own.NotAfter, Serial: pki.FormatSerial(own.SerialNumber)}}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range slices.Sorted(maps.Keys(c.health)) {
		cert := c.health[n].Cert
		if cert == nil {
			continue
		}
		role, _ := pki.CertRole(cert)
		out = append(out, engine.Certificate{Node: n, Role: string(role), NotAfter: cert.NotAfter, Serial: pki.FormatSerial(cert.SerialNumber)})
	}
	return out
}

// StorageNodes are the configured RSA nodes, sorted.
func (c *Cluster) StorageNodes() []string {
	return slices.Sorted(maps.Keys(c.storage))
}

// ComputeNodes are the compute nodes the daemon knows an agent of: those
// configured and those dialled since it started, sorted.
func (c *Cluster) ComputeNodes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for n, h := range c.health {
		if h.Role == "compute" {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// Address is where node is reached (its agent, its glusterd, its FUSE
// client as auth.allow sees it): the configured address, or for a compute
// node not listed, its name.
func (c *Cluster) Address(node string) (string, error) {
	if a, ok := c.storage[node]; ok {
		return a, nil
	}
	if a, ok := c.computeAt[node]; ok {
		return a, nil
	}
	if err := checkNodeName(node); err != nil {
		return "", err
	}
	return node, nil
}

// checkNodeName accepts a scheduler's node name as a DNS name to dial.
func checkNodeName(n string) error {
	if n == "" || len(n) > 253 || n[0] == '-' || n[0] == '.' ||
		strings.IndexFunc(n, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.')
		}) >= 0 {
		return fmt.Errorf("compute node %q: not a host name RSA can dial; list it under [[compute]] with its address", n)
	}
	return nil
}

// SetEpoch makes every agent request carry epoch, the lease epoch of the
// active rsa serve of a failover pair (agent.EpochHeader); 0, the default,
// sends none. Call it before the first Client.
func (c *Cluster) SetEpoch(epoch int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch = epoch
}

// Client is the agent client of node, made on first use.
func (c *Cluster) Client(node string) (*agent.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.clients[node]; ok {
		return cl, nil
	}
	addr, err := c.Address(node)
	if err != nil {
		return nil, err
	}
	cl, err := agent.NewClient(c.id, node, fmt.Sprintf("%s:%d", bracket(addr), c.port))
	if err != nil {
		return nil, err
	}
	cl.Epoch = c.epoch
	c.clients[node] = cl
	if _, ok := c.health[node]; !ok {
		c.health[node] = health{Node: node, Role: "compute", State: StateSuspect, Silent: time.Now()}
	}
	return cl, nil
}

// bracket puts an IPv6 address in brackets for HOST:PORT.
func bracket(a string) string {
	if strings.Contains(a, ":") {
		return "[" + a + "]"
	}
	return a
}

// Up reports whether node's agent answered the last heartbeat.
func (c *Cluster) Up(node string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.health[node].Up
}

// Down reports whether node is lost: silent for DownAfter or longer.
func (c *Cluster) Down(node string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.health[node].State == StateDown
}

// Health is every known agent's health, by node name.
func (c *Cluster) Health() []engine.NodeHealth {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]engine.NodeHealth, 0, len(c.health))
	for _, h := range c.health {
		out = append(out, engine.NodeHealth{Node: h.Node, Role: h.Role, State: h.State, Up: h.Up, Seen: h.Seen, Rebooted: h.Rebooted,
			BootID: h.BootID, Version: h.Version, MemAvailable: h.MemAvailable, Parts: h.Bricks, Err: h.Err, Unplaceable: cmp.Or(h.Incompatible, h.Unpooled), CheckErr: h.PoolErr})
	}
	slices.SortFunc(out, func(a, b engine.NodeHealth) int { return strings.Compare(a.Node, b.Node) })
	return out
}

// Beat reads every known agent's status once, all at once, each bounded
// by timeout, and records what it learnt.
func (c *Cluster) Beat(ctx context.Context, timeout time.Duration) {
	c.mu.Lock()
	nodes := slices.Collect(maps.Keys(c.health))
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := c.Client(n)
			var st *agent.Status
			if err == nil {
				cctx, cancel := context.WithTimeout(ctx, timeout)
				st, err = cl.Status(cctx)
				cancel()
			}
			if ctx.Err() != nil {
				return
			}
			loss, inc := c.record(n, st, err)
			c.mu.Lock()
			lost, noted := c.lost, c.noted
			c.mu.Unlock()
			if inc != "" {
				noted(n, inc)
			}
			if loss != nil {
				lost(*loss)
				if inc != "" {
					c.placeable(n, inc)
				}
			}
		}()
	}
	wg.Wait()
}

// record notes one heartbeat's answer and returns the loss it reveals,
// if any, and the node's incarnation if it is new. A node back with a new
// incarnation is recorded up but not Up (not placeable) until placeable:
// its loss is published first.
func (c *Cluster) record(node string, st *agent.Status, err error) (*engine.NodeLoss, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.health[node]
	was := h.State
	now := c.now()
	if err != nil {
		h.Up, h.Err = false, err.Error()
		if h.Silent.IsZero() {
			h.Silent = now
		}
		h.State = StateSuspect
		if now.Sub(h.Silent) >= c.downAfter {
			h.State = StateDown
		}
		c.health[node] = h
		switch {
		case h.State == was:
		case h.State == StateSuspect:
			c.log.Warn("agent not answering", "node", node, "err", err)
		case h.State == StateDown:
			silent := now.Sub(h.Silent).Round(time.Second)
			c.log.Error("node lost: its agent has not answered for "+silent.String(), "node", node, "err", err)
			return &engine.NodeLoss{Node: node, Why: fmt.Sprintf("%s %s has not answered for %s (%s)", kind(h.Role), node, silent, err), Incarnation: h.Incarnation}, ""
		}
		return nil, ""
	}
	var loss *engine.NodeLoss
	inc := cmp.Or(st.Incarnation, st.BootID) // an agent of before incarnations: its boot id
	noted := ""
	if h.Incarnation != inc {
		noted = inc
	}
	if h.Incarnation != "" && h.Incarnation != inc {
		h.Rebooted++
		c.log.Error("node lost: it rebooted (a new incarnation); its bricks and mounts are gone", "node", node, "incarnation", inc)
		loss = &engine.NodeLoss{Node: node, Why: fmt.Sprintf("%s %s rebooted: its RAM is gone", kind(h.Role), node), Incarnation: h.Incarnation}
	}
	if was != StateUp {
		c.log.Info("agent up", "node", node, "boot_id", st.BootID, "started", st.Started, "version", textsafe.Line(st.Version))
	}
	if st.Version != h.Version {
		ok, why := version.Compatible(st.Version, c.version)
		h.Incompatible = ""
		switch {
		case !ok:
			h.Incompatible = fmt.Sprintf("its agent runs %s, rsa serve %s: %s", textsafe.Line(st.Version), c.version, why)
			c.log.Error("agent's version is outside the versions rsa serve works with; its node takes no new RAMDISK until it is upgraded", "node", node,
				"agent_version", textsafe.Line(st.Version), "daemon_version", c.version, "why", why)
		case st.Version != c.version:
			c.log.Warn("agent runs another version than rsa serve, within the one release apart RSA supports; finish the upgrade", "node", node,
				"agent_version", textsafe.Line(st.Version), "daemon_version", c.version)
		}
	}
	h.State, h.Up, h.Err, h.Seen, h.Silent = StateUp, true, "", now, time.Time{}
	h.BootID, h.Incarnation, h.Started, h.MemAvailable = st.BootID, inc, st.Started, st.MemAvailable
	h.Version = st.Version
	h.Bricks, h.Mounts = len(st.Bricks), len(st.Mounts)
	if st.Certificate != nil {
		h.Cert = st.Certificate
	}
	if loss != nil && noted != "" {
		h.Up = false // until placeable, once the loss is published
	}
	c.health[node] = h
	return loss, noted
}

// placeable makes node, back as incarnation inc after a loss that has been
// published, Up again, unless a later heartbeat said otherwise meanwhile.
func (c *Cluster) placeable(node, inc string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.health[node]; h.State == StateUp && h.Incarnation == inc {
		h.Up = true
		c.health[node] = h
	}
}

// Incarnation is node's incarnation as the last heartbeat that reached it
// said; "" if none did.
func (c *Cluster) Incarnation(node string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.health[node].Incarnation
}

// kind names a node by its role in messages.
func kind(role string) string {
	if role == "compute" {
		return "compute node"
	}
	return "RSA node"
}

// Watch beats every heartbeat and checks the pool every pool_check (every
// heartbeat while it is split) until ctx ends, and returns when both
// have stopped.
func (c *Cluster) Watch(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); c.beatEvery(ctx, c.heartbeat) }()
	go func() { defer wg.Done(); c.checkPoolEvery(ctx, c.heartbeat) }()
	wg.Wait()
}

// beatEvery beats every interval until ctx ends.
func (c *Cluster) beatEvery(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		c.Beat(ctx, max(interval, 2*time.Second))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// checkPoolEvery looks, every interval until ctx ends, whether the pool
// is due a check: pool_check after the last one, or at once while it is
// split, so that a node kept out takes new RAMDISKs again as soon as
// glusterd heals, not up to pool_check later.
func (c *Cluster) checkPoolEvery(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if time.Since(last) >= c.poolCheck || c.Unpooled() {
			c.CheckPool(ctx, c.poolTimeout)
			last = time.Now()
		}
	}
}

// Close closes every client's idle connections.
func (c *Cluster) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.clients {
		cl.Close()
	}
}

// ErrDown is returned for a node whose agent did not answer the last
// heartbeat.
var ErrDown = errors.New("agent not answering")
