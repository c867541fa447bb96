package engine

import (
	"context"
	"time"

	"github.com/rsa-hpc/rsa/internal/stage"
)

// An Engine may do more than build RAMDISKs. The optional interfaces here
// say what: it watches nodes of its own (Nodes, Watcher), stages on them
// (Stager), admits compute nodes to a RAMDISK (ClientAdmitter), counts
// its RAMDISKs' file operations (Profiler), needs its parts placed in a
// way of its own (Placer), sets how often the daemon looks after its
// RAMDISKs (Periodic), or holds something to let go of at the end
// (io.Closer). The daemon finds them with As, never through an engine's
// concrete type, so that the wrappers around an engine (WithRetry) stay
// in the path.

// Unwrapper is an Engine that wraps another, adding a behaviour to some
// of its methods (WithRetry).
type Unwrapper interface {
	// Unwrap returns the engine wrapped.
	Unwrap() Engine
}

// As finds the first engine in e's chain of wrappers that is a T: e
// itself, else what e unwraps to, and so on. A wrapper that implements T
// is found before what it wraps: one that adds a behaviour to an optional
// method implements that method itself, and one that does not is looked
// through, leaving T to the engine inside. ok is false when no engine of
// the chain is a T, and when e is nil.
func As[T any](e Engine) (T, bool) {
	for e != nil {
		if t, ok := e.(T); ok {
			return t, true
		}
		u, ok := e.(Unwrapper)
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	var zero T
	return zero, false
}

// Reattacher is an Engine whose RAMDISKs outlive this host's mount of
// them: their parts live on nodes apart from this host, which only mounts
// them (engine gluster). When another host took the state over (the
// standby of a failover pair), a RAMDISK not mounted here may exist all
// the same; the daemon reattaches it before it takes it for lost.
type Reattacher interface {
	// Reattach mounts r on this host again, its gate closed (root alone
	// reaches it here), if r still exists, and reports whether it does:
	// ok is false, with no error, only when r is gone. A RAMDISK mounted
	// here already is ok. An error says nothing either way (a node out
	// of reach): the caller must not take r for lost on it.
	Reattach(ctx context.Context, r Ramdisk) (ok bool, err error)
}

// Nodes is an Engine whose RAMDISKs have parts on nodes apart from this
// host, whose agents it watches (engine gluster: the RSA nodes, and the
// compute nodes that mount its RAMDISKs). It answers from its last look,
// without asking a node. An engine that is not Nodes keeps its parts on
// this host, where every node is up and placeable and nothing is owed.
// Safe for concurrent use.
type Nodes interface {
	// Placeable reports whether a new RAMDISK may have a part on RSA
	// node n now: it answered the last look, and nothing else keeps new
	// parts off it.
	Placeable(node string) bool
	// Unplaceable says in a few words, for users, what keeps the nodes
	// that are not Placeable from new parts ("down or split from
	// glusterd's pool").
	Unplaceable() string
	// Up reports whether node answered the last look: its parts are in
	// reach, and what a teardown left there (a DebtError's, an
	// UnreachableError's) can be removed now.
	Up(node string) bool
	// Incarnation is node's incarnation as the last look that reached it
	// found it, "" if none did. A part made on one incarnation is gone
	// when the node comes back as another (NodeLoss).
	Incarnation(node string) string
	// ComputeNodes are the compute nodes the engine knows an agent of,
	// sorted: what a teardown leaves there is a mount of a RAMDISK, not a
	// part of one.
	ComputeNodes() []string
	// Health is what the engine last learnt of every node it knows, by
	// name.
	Health() []NodeHealth
}

// NodeHealth is what an engine last learnt of one node's agent.
type NodeHealth struct {
	Node string
	Role string // "storage" (an RSA node) or "compute"
	// State is "up" (the last look was answered), "suspect" (silent for
	// a while: no new parts there, nothing undone) or "down" (silent for
	// long enough to be lost).
	State string
	// Up: the last look was answered.
	Up bool
	// Seen is when the node last answered; zero if never.
	Seen time.Time
	// Rebooted counts the new incarnations seen while the daemon ran.
	Rebooted     int
	BootID       string // the node's kernel's boot id
	Version      string // the agent's version
	MemAvailable int64
	Parts        int    // RAMDISK parts on the node (engine gluster: bricks)
	Err          string // why the node did not answer; "" when it did
	// Unplaceable says why no new RAMDISK may have a part on the node
	// though it answers (engine gluster: the rifts in glusterd's trusted
	// pool that keep it out); "" when nothing does.
	Unplaceable string
	// CheckErr is why the node did not answer the engine's last look
	// beyond its agent's (engine gluster: its glusterd's view of the
	// pool); "" when it did.
	CheckErr string
}

// Certificates is an Engine that reaches its nodes with TLS certificates,
// which expire (engine gluster: the daemon's and its agents'). Safe for
// concurrent use.
type Certificates interface {
	// Certificates lists the daemon's own certificate first, then each
	// node's as the engine last verified it; a node never reached is
	// left out.
	Certificates() []Certificate
}

// Certificate is one host's certificate, as far as its expiry goes.
type Certificate struct {
	Node string // the host's name: the daemon's own, or a node's
	// Role is the certificate's role: control (the daemon's own),
	// storage, compute or both.
	Role     string
	NotAfter time.Time // when it expires
	Serial   string    // its serial number, in hex
}

// NodeLoss is a node lost to the jobs on it: silent for long enough, or
// back as a new incarnation (its parts went with the old one).
type NodeLoss struct {
	Node string
	Why  string
	// Incarnation is the node's incarnation that ended: parts built on a
	// later one lost nothing. "" when none was ever seen.
	Incarnation string
}

// NodeEvents are whom a Watcher tells what it finds, and what it is to
// remember from before the daemon started.
type NodeEvents struct {
	// Known are the incarnations (node → incarnation) current when the
	// daemon last ran: a node that answers as another rebooted while no
	// daemon watched, and is lost as one that reboots while it runs.
	Known map[string]string
	// Lost is told of every node lost: once when it goes down, once for
	// each new incarnation. A node back as a new incarnation is
	// Placeable only after Lost returns, so that what Lost learns of the
	// jobs on the node cannot include a RAMDISK built on the new one.
	// It must not block. nil: nobody is told.
	Lost func(NodeLoss)
	// Incarnation is told a node's incarnation when it is first seen and
	// each time it changes: Known at the next start. It must not block
	// for long. nil: nobody is told.
	Incarnation func(node, incarnation string)
}

// Watcher is a Nodes engine that watches its nodes by itself (engine
// gluster: agent heartbeats and checks of glusterd's trusted pool).
type Watcher interface {
	// Start says whom to tell, and looks at every node once before it
	// returns, each look bounded: from then on Nodes answers from what
	// it saw. Called once, before Watch.
	Start(ctx context.Context, ev NodeEvents)
	// Watch looks at the nodes again and again until ctx ends, telling
	// Start's NodeEvents what it finds, and returns when it has stopped.
	Watch(ctx context.Context)
}

// Profiler is an Engine that counts and times the file operations its
// RAMDISKs serve, when told to (engine gluster with [cluster] profile:
// every brick's io-stats). The daemon writes a RAMDISK's profile into its
// job's log before it tears the RAMDISK down.
type Profiler interface {
	// Profile is r's file operations since it was built, by operation,
	// summed over its parts, the most called first. ok is false, with no
	// error, when the engine was not told to count them or r has no
	// counts (it is gone, or was built before). It reads, never changes,
	// r; an error says the counts could not be read (a node out of
	// reach), and nothing about r.
	Profile(ctx context.Context, r Ramdisk) (ops []OpStat, ok bool, err error)
}

// OpStat is one file operation's count and mean time where a RAMDISK's
// parts serve it.
type OpStat struct {
	Op    string // the engine's name of it (Gluster's: CREATE, WRITE, FSYNC...)
	Calls int64
	Mean  time.Duration
}

// Stager is an Engine that runs a job's stages itself, on its own nodes
// (engine gluster: through an RSA node's agent, so that the data moves
// between the file servers and the RSA nodes, not through this host).
//
// The daemon runs the stages of an engine that is not a Stager on this
// host, through r.Dir, with stage.Task.Private: such an engine's RAMDISK
// must be one file system on this host, which no one looks into until a
// stage-in ends and whose loss the daemon sees whole.
type Stager interface {
	// Stage runs t, one stage of the job of r, as t.User, with t.Log and
	// t.Progress told what it does, and returns when it has ended.
	// t.Ramdisk is r.Dir as this host sees it; t.Private is the daemon's
	// own and ignored.
	Stage(ctx context.Context, r Ramdisk, t stage.Task) error
}

// ClientAdmitter is an Engine whose RAMDISK admits only the compute nodes
// it is told of (engine gluster: the volume's auth.allow and
// auth.ssl-allow). The daemon admits a job's compute nodes before
// access.Access shows the RAMDISK there; a RAMDISK of an engine that is not
// a ClientAdmitter is reached wherever access.Access shows it.
type ClientAdmitter interface {
	// AdmitClients lets hosts, and no other compute node, mount r
	// besides this host and r's own nodes. Idempotent. WithRetry does
	// not retry it.
	AdmitClients(ctx context.Context, r Ramdisk, hosts []string) error
}

// Placement is what an engine needs of the way a job's capacity is split
// over RSA nodes, beyond what the nodes hold.
type Placement struct {
	// Even splits a capacity that no one node holds into equal parts
	// (engine gluster: files are placed by name, not by free space, so a
	// small part would fill up while the others are empty).
	Even bool
	// Replica is how many nodes keep each file (engine gluster's
	// cluster.replica: 0 or 2); with 2 a job is given its capacity twice,
	// in parts that pair up on different nodes.
	Replica int
}

// Placer is an Engine with needs of placement (engine gluster). An engine
// that is not a Placer takes its parts as the nodes' free RAM falls:
// the zero Placement.
type Placer interface {
	// Placement is the engine's needs; the same at every call.
	Placement() Placement
}

// Periods are how often the daemon looks after an engine's RAMDISKs, and
// how long one look may take.
type Periods struct {
	// Heartbeat is how often the daemon probes the RAMDISKs in use and
	// tries again the teardowns left on silent nodes (at least every
	// 5 s for those), for an engine with nodes of its own (Nodes).
	Heartbeat time.Duration
	// LeftoverSweep is how often the daemon looks for RAMDISKs no job
	// holds, for an engine with nodes of its own.
	LeftoverSweep time.Duration
	// ProbeTimeout bounds one Probe of a RAMDISK in use, which a hung
	// client of a network file system would never answer.
	ProbeTimeout time.Duration
}

// DefaultPeriods are the Periods of an engine that is not Periodic.
func DefaultPeriods() Periods {
	return Periods{Heartbeat: 5 * time.Second, LeftoverSweep: 20 * time.Second, ProbeTimeout: 10 * time.Second}
}

// Periodic is an Engine that sets the daemon's Periods (engine gluster:
// cluster.heartbeat, leftover_sweep and probe_timeout).
type Periodic interface {
	// Periods are the engine's; the same at every call.
	Periods() Periods
}
