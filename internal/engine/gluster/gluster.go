// Package gluster is the engine that builds a job's RAMDISK across RSA
// nodes: one GlusterFS volume per job, one brick per assigned node (a
// tmpfs of the node's share, made by the node's agent), the volume created
// and started through the glusterd of one of them (the RSA nodes form one
// trusted pool, which is the site's), and mounted on the control host at
// the same place the local engine puts its tmpfs, behind the same gate.
//
// Everything is keyed by the job's volume name (agent.VolumeName), and
// every step is idempotent on the agents' side, so a Construct or Destroy
// cut short by a crash is simply sent again.
//
// Besides engine.Engine the engine is everything the daemon needs of a
// cluster of hosts, through engine's optional interfaces: it watches its
// nodes (engine.Nodes and engine.Watcher: agent heartbeats and glusterd's
// trusted pool, package cluster below this one), runs stages on an RSA
// node's agent (engine.Stager), and lets a job's compute nodes mount its
// volume (engine.ClientAdmitter); it asks for even parts and its replicas
// (engine.Placer) and sets the daemon's periods (engine.Periodic). Keys
// read its part of the config ([cluster], [[compute]], its nodes'
// addresses: Config), and Open builds it from the config, with the node
// access (Agents) that mounts its volumes on compute nodes.
package gluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/agent"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/gate"
	gcli "github.com/rsa-hpc/rsa/internal/gluster"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/mount"
)

// Nodes is the engine's reach into the RSA nodes and compute nodes: their
// agents and addresses, and what the heartbeat and the checks of
// glusterd's trusted pool found of them (package cluster's *Cluster).
type Nodes interface {
	// Client is the agent client of node.
	Client(node string) (*agent.Client, error)
	// Address is where node is reached by Gluster: bricks and auth.allow.
	Address(node string) (string, error)
	// StorageNodes are all configured RSA nodes.
	StorageNodes() []string
	// ComputeNodes are the compute nodes whose agents are known: listed
	// in the config or dialled since the daemon started.
	ComputeNodes() []string
	// Up reports whether node's agent answered the last heartbeat.
	Up(node string) bool
	// Down reports whether node is lost: its agent silent for
	// cluster.down_after.
	Down(node string) bool
	// Name is the control host's name, as its certificate gives it.
	Name() string
	// Unpooled reports whether the last look at glusterd's trusted pool
	// found a rift in it: some RSA node's glusterd does not see another
	// as a connected member.
	Unpooled() bool
	// Placeable reports whether a new volume may have a brick on node:
	// its agent answered the last heartbeat and no rift in glusterd's
	// pool keeps it out.
	Placeable(node string) bool
	// Incarnation is node's incarnation as the last heartbeat that
	// reached it said; "" if none did.
	Incarnation(node string) string
	// Health is every known agent's health, by node name.
	Health() []engine.NodeHealth
	// Certificates are the daemon's certificate and each agent's, as
	// engine.Certificates says.
	Certificates() []engine.Certificate
	// Start and Watch are engine.Watcher's, for the agents and the pool.
	Start(ctx context.Context, ev engine.NodeEvents)
	Watch(ctx context.Context)
	// Close closes the agents' clients' idle connections.
	Close()
}

// Engine is the gluster engine.
type Engine struct {
	Root    string // ramdisk_root: the control host's mount point of each volume, as the local engine's
	Nodes   Nodes
	Control string // the control host's address: always in auth.allow
	// OtherControl and OtherControlName are the other control host of a
	// failover pair, its address and its certificate's name: admitted
	// to every volume as this one is, so that it can take the jobs over.
	// "" outside a pair.
	OtherControl, OtherControlName string
	Replica                        int // 0: distribute; 2: consecutive parts are one replica pair
	Shard                          bool
	// Profiling makes every volume with its profile on
	// (cluster.profile), which Profile reads.
	Profiling bool
	// PingTimeout is Gluster's network.ping-timeout.
	PingTimeout time.Duration
	// CheckTimeout bounds glusterd's answer in Check (0: 15 s): on a cut
	// link it waits for its peer until TCP gives up.
	CheckTimeout time.Duration
	// CheckSettle bounds Check's wait for glusterd and this host's client
	// to agree (0: 15 s); a client reconnects every 3 seconds.
	CheckSettle time.Duration
	// SSLDir is where Gluster reads this host's TLS files; "" means
	// gluster.SSLDir's answer.
	SSLDir string
	// BWLimit caps a stage's built-in copy's reads in bytes per second
	// (0: none): the daemon's limits.stage_bwlimit.
	BWLimit int64
	// StageLimits confine a stage's processes on the RSA node that runs
	// it: the daemon's limits.stage_*.
	StageLimits agent.StageLimits
	// WholeSettle bounds a stage-out's wait for its RSA node's client to
	// reach every part (cluster.whole_settle; 0: the agent's default).
	WholeSettle time.Duration
	// DaemonPeriods are how often the daemon looks after the volumes
	// (cluster.heartbeat, leftover_sweep, probe_timeout): Periods.
	DaemonPeriods engine.Periods
	Log           *slog.Logger
}

var (
	_ engine.Engine         = (*Engine)(nil)
	_ engine.Reattacher     = (*Engine)(nil)
	_ engine.Nodes          = (*Engine)(nil)
	_ engine.Certificates   = (*Engine)(nil)
	_ engine.Watcher        = (*Engine)(nil)
	_ engine.Stager         = (*Engine)(nil)
	_ engine.ClientAdmitter = (*Engine)(nil)
	_ engine.Placer         = (*Engine)(nil)
	_ engine.Periodic       = (*Engine)(nil)
	_ engine.Profiler       = (*Engine)(nil)
	_ io.Closer             = (*Engine)(nil)
)

// fuseMagic is statfs' f_type of a FUSE file system.
const fuseMagic = 0x65735546

func (e *Engine) Name() string { return Name }

// Placement: Gluster places files by name, not by free space, so a job's
// parts are even; with replicas, each file is on e.Replica nodes.
func (e *Engine) Placement() engine.Placement {
	return engine.Placement{Even: true, Replica: e.Replica}
}

// Periods are e.DaemonPeriods.
func (e *Engine) Periods() engine.Periods { return e.DaemonPeriods }

func (e *Engine) volume(r engine.Ramdisk) string { return agent.BuildName(r.Job, r.Build) }

// mounted finds the job's own Gluster client mount at r.Dir.
func (e *Engine) mounted(r engine.Ramdisk) (mount.Info, bool, error) {
	m, ok, err := mount.MountedAt(r.Dir)
	if err != nil || !ok {
		return mount.Info{}, false, err
	}
	if m.FSType != "fuse.glusterfs" || !strings.HasSuffix(m.Source, ":/"+e.volume(r)) && !strings.HasSuffix(m.Source, ":"+e.volume(r)) {
		return mount.Info{}, false, fmt.Errorf("%s is a mount point of %s (%s), not of volume %s; leaving it for an administrator", r.Dir, m.FSType, m.Source, e.volume(r))
	}
	return m, true, nil
}

// each runs fn for every part's node at once and joins the errors.
func each[T any](items []T, fn func(int, T) error) error {
	errs := make([]error, len(items))
	var wg sync.WaitGroup
	for i, it := range items {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = fn(i, it) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// servers are the addresses of the job's RSA nodes, in part order without
// repeats: the client fetches the volume's layout from the first that
// answers.
func (e *Engine) servers(r engine.Ramdisk) ([]string, error) {
	var out []string
	for _, p := range r.Parts {
		a, err := e.Nodes.Address(p.Node)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out, nil
}

// coordinator is the agent through which the volume is managed: the first
// of the job's nodes whose agent is up, else any RSA node's that is (they
// share one trusted pool).
func (e *Engine) coordinator(r engine.Ramdisk) (*agent.Client, error) {
	cands := e.candidates(r)
	for _, n := range cands {
		if e.Nodes.Up(n) {
			return e.Nodes.Client(n)
		}
	}
	if len(cands) > 0 {
		return e.Nodes.Client(cands[0]) // none known up: try, and report why not
	}
	return nil, errors.New("no RSA node configured")
}

// candidates are the RSA nodes whose glusterd may manage the volume: the
// job's own first, then every other.
func (e *Engine) candidates(r engine.Ramdisk) []string {
	var cands []string
	for _, p := range r.Parts {
		if !slices.Contains(cands, p.Node) {
			cands = append(cands, p.Node)
		}
	}
	for _, n := range e.Nodes.StorageNodes() {
		if !slices.Contains(cands, n) {
			cands = append(cands, n)
		}
	}
	return cands
}

// coordinators are the candidates whose agents answer: whose glusterd to
// ask, in turn.
func (e *Engine) coordinators(r engine.Ramdisk) []string {
	var live []string
	for _, n := range e.candidates(r) {
		if e.Nodes.Up(n) {
			live = append(live, n)
		}
	}
	return live
}

// spec is the volume's Gluster layout and options, allowing the control
// host, the RSA nodes and the given compute hosts to reach it: by address
// (auth.allow) and by certificate name (auth.ssl-allow; every RSA node,
// since any of their glusterds may manage the volume, and their
// self-heal daemons serve a replica).
func (e *Engine) spec(r engine.Ramdisk, bricks []string, hosts []string) (agent.VolumeSpec, error) {
	allow := []string{e.Control}
	if e.OtherControl != "" {
		allow = append(allow, e.OtherControl)
	}
	srv, err := e.servers(r)
	if err != nil {
		return agent.VolumeSpec{}, err
	}
	for _, h := range hosts {
		a, err := e.Nodes.Address(h)
		if err != nil {
			return agent.VolumeSpec{}, err
		}
		srv = append(srv, a)
	}
	for _, a := range srv {
		if !slices.Contains(allow, a) {
			allow = append(allow, a)
		}
	}
	names := []string{e.Nodes.Name()}
	if e.OtherControlName != "" {
		names = append(names, e.OtherControlName)
	}
	for _, n := range append(e.Nodes.StorageNodes(), hosts...) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	// A volume that holds an input image holds one big file, which
	// distribute alone would put on one brick: every compute node would
	// read it from one RSA node. Sharded, its 64 MiB pieces spread over
	// all of the job's bricks.
	return agent.VolumeSpec{Bricks: bricks, Replica: e.Replica, Shard: e.Shard || r.RootOnly, AuthAllow: allow, TLSAllow: names,
		PingTimeout: int(e.PingTimeout / time.Second), Profile: e.Profiling}, nil
}

// Profile reads r's volume's profile through a coordinator's glusterd:
// every brick's file operations since the volume was made. ok is false
// when e.Profiling is off, when the volume is not there, and when it was
// made without its profile (before profile was set).
func (e *Engine) Profile(ctx context.Context, r engine.Ramdisk) ([]engine.OpStat, bool, error) {
	if !e.Profiling {
		return nil, false, nil
	}
	co, err := e.coordinator(r)
	if err != nil {
		return nil, true, err
	}
	fs, err := co.VolumeProfile(ctx, e.volume(r))
	if errors.Is(err, agent.ErrNotFound) || errors.Is(err, agent.ErrInvalid) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, fmt.Errorf("reading the profile of volume %s: %w", e.volume(r), err)
	}
	ops := make([]engine.OpStat, len(fs))
	for i, f := range fs {
		ops[i] = engine.OpStat{Op: f.Op, Calls: f.Calls, Mean: f.Mean}
	}
	return ops, true, nil
}

// bricks makes every part's brick and returns them as Gluster names them,
// HOST:DIR, in part order.
func (e *Engine) bricks(ctx context.Context, r engine.Ramdisk) ([]string, error) {
	if e.Replica == 2 {
		if len(r.Parts)%2 != 0 {
			return nil, fmt.Errorf("RAMDISK of job %d: replica 2 needs parts in pairs, the allocation has %d", r.Job, len(r.Parts))
		}
		for i := 0; i < len(r.Parts); i += 2 {
			if r.Parts[i].Node == r.Parts[i+1].Node {
				return nil, fmt.Errorf("RAMDISK of job %d: both copies of replica set %d are on %s", r.Job, i/2, r.Parts[i].Node)
			}
		}
	}
	out := make([]string, len(r.Parts))
	err := each(r.Parts, func(i int, p job.Part) error {
		if p.Bytes < 1<<20 {
			return fmt.Errorf("RAMDISK of job %d: the part on %s, %d bytes, is below 1M", r.Job, p.Node, p.Bytes)
		}
		cl, err := e.Nodes.Client(p.Node)
		if err != nil {
			return err
		}
		addr, err := e.Nodes.Address(p.Node)
		if err != nil {
			return err
		}
		var inodes int64
		if r.Inodes > 0 && r.Size() > 0 {
			inodes = max(r.Inodes*p.Bytes/r.Size(), 1024)
		}
		b, err := cl.MakeBrick(ctx, e.volume(r), agent.BrickSpec{Size: p.Bytes, Inodes: inodes})
		if err != nil {
			return fmt.Errorf("making the brick of job %d on %s: %w", r.Job, p.Node, err)
		}
		out[i] = addr + ":" + b.Dir
		return nil
	})
	return out, err
}

func (e *Engine) Construct(ctx context.Context, r engine.Ramdisk) error {
	if r.Dir != engine.DirFor(e.Root, r.Job) {
		return fmt.Errorf("RAMDISK of job %d must be at %s, not %s", r.Job, engine.DirFor(e.Root, r.Job), r.Dir)
	}
	if r.UID == 0 {
		return fmt.Errorf("RAMDISK of job %d: refusing a RAMDISK for root", r.Job)
	}
	if len(r.Parts) == 0 {
		return fmt.Errorf("RAMDISK of job %d: no RSA node assigned", r.Job)
	}
	g := engine.GateFor(e.Root, r.Job)
	err := os.Mkdir(g, 0o700)
	if err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating the RAMDISK's gate: %w", err)
	}
	if r.RootOnly {
		err = gate.Close(g)
	} else {
		err = gate.Open(g, r.UID)
	}
	if err != nil {
		return err
	}
	start := time.Now()
	bricks, err := e.bricks(ctx, r)
	if err != nil {
		return err
	}
	tBricks := time.Since(start)
	if err := e.makeVolume(ctx, r, bricks, nil); err != nil {
		return fmt.Errorf("creating volume %s: %w", e.volume(r), err)
	}
	tVolume := time.Since(start) - tBricks
	if err := e.mountHere(ctx, r); err != nil {
		return err
	}
	if err := e.own(r); err != nil {
		return err
	}
	e.Log.Info("RAMDISK constructed", "job", r.Job, "volume", e.volume(r), "bricks", len(bricks),
		"bricks_s", tBricks.Seconds(), "volume_s", tVolume.Seconds(), "total_s", time.Since(start).Seconds())
	return nil
}

// mountHere mounts r's volume at r.Dir on this (the control) host, unless
// it is mounted there already.
func (e *Engine) mountHere(ctx context.Context, r engine.Ramdisk) error {
	if _, ok, err := e.mounted(r); err != nil || ok {
		return err
	}
	if err := os.Mkdir(r.Dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating mount point: %w", err)
	}
	srv, err := e.servers(r)
	if err != nil {
		return err
	}
	if err := gcli.Mount(ctx, srv, e.volume(r), r.Dir); err != nil {
		return fmt.Errorf("mounting volume %s on the control host: %w", e.volume(r), err)
	}
	return nil
}

// own gives the volume's root to the job's user (root, for a RootOnly
// RAMDISK), mode 0700, through a descriptor opened without following
// symlinks.
func (e *Engine) own(r engine.Ramdisk) error {
	if r.RootOnly {
		r.UID, r.GID = 0, 0
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, r.Dir, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return fmt.Errorf("opening the root of volume %s: %w", e.volume(r), err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Uid == r.UID && (!r.RootOnly || st.Mode&0o077 == 0) {
		return nil // owned already: the daemon may have given it a job directory's mode since
	}
	if err := unix.Fchown(fd, int(r.UID), int(r.GID)); err != nil {
		return fmt.Errorf("giving volume %s to uid %d: %w", e.volume(r), r.UID, err)
	}
	if err := unix.Fchmod(fd, 0o700); err != nil {
		return fmt.Errorf("setting the mode of volume %s: %w", e.volume(r), err)
	}
	return nil
}

// AdmitClients lets hosts (the job's compute nodes), and no other compute
// node, mount the volume besides the control host and the RSA nodes:
// Gluster's auth.allow and auth.ssl-allow, set before their agents mount
// it. Idempotent.
func (e *Engine) AdmitClients(ctx context.Context, r engine.Ramdisk, hosts []string) error {
	// The bricks as glusterd has them: making them again here would give
	// a node that lost its brick (a reboot) an empty one, unnoticed.
	co, err := e.coordinator(r)
	if err != nil {
		return err
	}
	vs, err := co.Volumes(ctx)
	if err != nil {
		return fmt.Errorf("allowing %s to mount volume %s: %w", strings.Join(hosts, ","), e.volume(r), err)
	}
	i := slices.IndexFunc(vs, func(v agent.Volume) bool { return v.Name == e.volume(r) })
	if i < 0 {
		return fmt.Errorf("allowing %s to mount volume %s: glusterd has no such volume", strings.Join(hosts, ","), e.volume(r))
	}
	if err := e.makeVolume(ctx, r, vs[i].Bricks, hosts); err != nil {
		return fmt.Errorf("allowing %s to mount volume %s: %w", strings.Join(hosts, ","), e.volume(r), err)
	}
	return nil
}

func (e *Engine) makeVolume(ctx context.Context, r engine.Ramdisk, bricks, hosts []string) error {
	spec, err := e.spec(r, bricks, hosts)
	if err != nil {
		return err
	}
	co, err := e.coordinator(r)
	if err != nil {
		return err
	}
	_, err = co.MakeVolume(ctx, e.volume(r), spec)
	return err
}

// Seal fences the job's compute nodes out of the volume and makes it
// read-only, in one glusterd transaction. The fence: the volume admits the
// control host and the RSA nodes alone from now on, by address and by
// certificate, and the bricks close the connections of every client no
// longer admitted, so a compute node that kept its mount (out of reach, a
// process inside) reaches nothing, and the next job on it cannot reach
// this one's RAMDISK.
func (e *Engine) Seal(ctx context.Context, r engine.Ramdisk) error {
	spec, err := e.spec(r, nil, nil)
	if err != nil {
		return err
	}
	co, err := e.coordinator(r)
	if err != nil {
		return err
	}
	if err := co.SealVolume(ctx, e.volume(r), agent.SealSpec{AuthAllow: spec.AuthAllow, TLSAllow: spec.TLSAllow}); err != nil {
		return fmt.Errorf("fencing the compute nodes out of volume %s and making it read-only: %w", e.volume(r), err)
	}
	// glusterd has committed the seal; the bricks apply it a moment
	// later. Seal's contract is that the next write fails.
	m, ok, err := e.mounted(r)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("volume %s is sealed, but it is not mounted at %s to check that its bricks refuse writes", e.volume(r), r.Dir)
	}
	err = gcli.AwaitReadOnly(ctx, m.Point, sealTimeout)
	if errors.Is(err, gcli.ErrStillWritable) {
		return fmt.Errorf("volume %s: %w: %w", e.volume(r), engine.ErrPartlySealed, err)
	}
	return err
}

// sealTimeout bounds the wait for a volume's bricks to apply a seal that
// glusterd has committed: they do in milliseconds, a second or two on a
// host short of CPU; one cut off from the pool does not until it is back.
const sealTimeout = 10 * time.Second

func (e *Engine) Revoke(ctx context.Context, r engine.Ramdisk) error {
	return gate.Close(engine.GateFor(e.Root, r.Job))
}

// Reattach mounts r's volume at r.Dir again, behind a closed gate, if
// glusterd still has it (engine.Reattacher).
func (e *Engine) Reattach(ctx context.Context, r engine.Ramdisk) (bool, error) {
	if _, ok, err := e.mounted(r); err != nil || ok {
		return ok, err
	}
	if r.Dir != engine.DirFor(e.Root, r.Job) {
		return false, fmt.Errorf("RAMDISK of job %d must be at %s, not %s", r.Job, engine.DirFor(e.Root, r.Job), r.Dir)
	}
	g := engine.GateFor(e.Root, r.Job)
	if err := os.MkdirAll(g, 0o700); err != nil {
		return false, fmt.Errorf("creating the RAMDISK's gate: %w", err)
	}
	if err := gate.Close(g); err != nil {
		return false, err
	}
	merr := e.mountHere(ctx, r)
	if merr == nil {
		e.Log.Info("RAMDISK reattached on this host", "job", r.Job, "volume", e.volume(r))
		return true, nil
	}
	// A client whose mount failed can stay in the mount table for a
	// moment after mount.glusterfs gives up (the FUSE mount comes before
	// the volume's file): this host's own failed try is no sign that the
	// volume exists, and is not left behind.
	if m, ok, err := e.mounted(r); err == nil && ok {
		if err := mount.Unmount(m, true); err != nil {
			e.Log.Warn("detaching a failed client mount", "job", r.Job, "err", err)
		}
	}
	found, err := e.List(ctx)
	if err != nil {
		return false, errors.Join(merr, err)
	}
	for _, f := range found {
		if f.Job == r.Job && f.Build == r.Build {
			return false, merr
		}
	}
	// Gone: the mount point and the gate made for it go too.
	if err := errors.Join(os.Remove(r.Dir), os.Remove(g)); err != nil {
		e.Log.Warn("removing the mount point of a RAMDISK that is gone", "job", r.Job, "err", err)
	}
	return false, nil
}

func (e *Engine) Device(r engine.Ramdisk) (uint64, bool, error) {
	m, ok, err := e.mounted(r)
	if err != nil || !ok {
		return 0, false, err
	}
	dev, err := engine.DeviceOf(m)
	return dev, err == nil, err
}

// Destroy unmounts the control host's client (not while something holds
// it: ErrBusy), stops and deletes the volume, then removes the bricks,
// which frees the RAM. With no parts (a leftover gc found), the bricks of
// the volume are looked for on every RSA node.
func (e *Engine) Destroy(ctx context.Context, r engine.Ramdisk) error {
	start := time.Now()
	if err := e.Revoke(ctx, r); err != nil {
		return err
	}
	if len(r.Parts) == 0 {
		// A leftover gc found: its compute nodes are not known, so every
		// compute node whose agent answers lets go of it (the daemon
		// releases a known job's compute nodes itself, before Destroy).
		if err := e.releaseOnComputeNodes(ctx, r); err != nil {
			return err
		}
	}
	// A private output's file systems mounted here for its stage-out
	// hold their files in the volume open.
	if err := engine.ClearBeside(r); err != nil {
		return err
	}
	if err := e.unmountHere(r); err != nil {
		return err
	}
	nodes := e.brickNodes(r)
	// A node that does not answer keeps its brick (and RAM) until it
	// does; glusterd meanwhile deletes no volume at all (a volume delete
	// wants every peer of the pool up), but stops it, which frees the
	// bricks on the nodes that answer.
	owed := e.silentStorageNodes()
	volErr := e.deleteVolume(ctx, r)
	// Every node answers, yet no glusterd would delete: the pool is
	// split (RSA nodes cut off from each other). The stops, asked of
	// every side in turn, stopped every brick, so the RAM can go; the
	// volume's definition stays until the pool is whole.
	split := volErr != nil && len(owed) == 0 && errors.Is(volErr, gcli.ErrPeersDown)
	if volErr != nil && len(owed) == 0 && !split {
		return volErr
	}
	if err := e.removeBricks(ctx, r, nodes, owed); err != nil {
		return err
	}
	if err := engine.RemoveGate(engine.GateFor(e.Root, r.Job), r); err != nil {
		return err
	}
	return e.destroyOutcome(r, nodes, owed, volErr, split, start)
}

// releaseOnComputeNodes has every compute node whose agent answers let go
// of r's volume.
func (e *Engine) releaseOnComputeNodes(ctx context.Context, r engine.Ramdisk) error {
	if err := each(e.Nodes.ComputeNodes(), func(_ int, n string) error {
		if !e.Nodes.Up(n) {
			return nil
		}
		cl, err := e.Nodes.Client(n)
		if err != nil {
			return err
		}
		return cl.Release(ctx, e.volume(r), true)
	}); err != nil {
		return fmt.Errorf("releasing volume %s on the compute nodes: %w", e.volume(r), err)
	}
	return nil
}

// unmountHere unmounts the control host's client of r's volume, if it is
// mounted, and every bind mount of it first; a client something holds
// is engine.ErrBusy.
func (e *Engine) unmountHere(r engine.Ramdisk) error {
	m, ok, err := e.mounted(r)
	if err != nil || !ok {
		return err
	}
	if err := mount.UnbindDev(m.Dev, r.Dir, true); err != nil {
		return fmt.Errorf("removing bind mounts of job %d: %w", r.Job, err)
	}
	if err := mount.Unmount(m, false); err != nil {
		if errors.Is(err, mount.ErrBusy) {
			return fmt.Errorf("unmounting volume %s on the control host: %w", e.volume(r), engine.ErrBusy)
		}
		return fmt.Errorf("unmounting volume %s on the control host: %w", e.volume(r), err)
	}
	return nil
}

// brickNodes are the nodes that hold r's bricks: its parts' nodes, each
// once, or with no parts every RSA node.
func (e *Engine) brickNodes(r engine.Ramdisk) []string {
	nodes := e.Nodes.StorageNodes()
	if len(r.Parts) > 0 {
		nodes = nodes[:0:0]
		for _, p := range r.Parts {
			if !slices.Contains(nodes, p.Node) {
				nodes = append(nodes, p.Node)
			}
		}
	}
	return nodes
}

// silentStorageNodes are the RSA nodes whose agent does not answer now.
func (e *Engine) silentStorageNodes() []string {
	var owed []string
	for _, n := range e.Nodes.StorageNodes() {
		if !e.Nodes.Up(n) {
			owed = append(owed, n)
		}
	}
	return owed
}

// deleteVolume stops and deletes r's volume through the first of its
// coordinators whose glusterd does, and then through any other that
// still lists it (deleteStragglers). glusterd deletes a volume only if it
// reaches every peer: inside a split pool another node's glusterd may, so
// each is asked in turn. The error is the last refusal, or the
// stragglers'.
func (e *Engine) deleteVolume(ctx context.Context, r engine.Ramdisk) error {
	volErr := errors.New("no RSA node answers")
	for _, n := range e.coordinators(r) {
		cl, err := e.Nodes.Client(n)
		if err == nil {
			err = cl.RemoveVolume(ctx, e.volume(r))
		}
		if err == nil {
			return e.deleteStragglers(ctx, r, n)
		}
		volErr = fmt.Errorf("deleting volume %s: %w", e.volume(r), err)
		if ctx.Err() != nil {
			break
		}
	}
	return volErr
}

// removeBricks removes r's bricks on nodes, but for those owed (silent):
// the RAM they hold is freed.
func (e *Engine) removeBricks(ctx context.Context, r engine.Ramdisk, nodes, owed []string) error {
	return each(nodes, func(_ int, n string) error {
		if slices.Contains(owed, n) {
			return nil
		}
		cl, err := e.Nodes.Client(n)
		if err != nil {
			return err
		}
		if err := cl.RemoveBrick(ctx, e.volume(r)); err != nil {
			return fmt.Errorf("removing the brick of job %d on %s: %w", r.Job, n, err)
		}
		return nil
	})
}

// destroyOutcome is how Destroy ends once the bricks of r on nodes were
// removed but for those on the silent nodes owed, with volErr the
// volume's delete's error and split whether only a split pool kept it: nil
// (logged with the time since start), or an engine.DebtError naming the
// nodes that still owe something (logged too).
func (e *Engine) destroyOutcome(r engine.Ramdisk, nodes, owed []string, volErr error, split bool, start time.Time) error {
	if split {
		e.Log.Warn("RAMDISK's RAM freed; its volume stays in glusterd until every RSA node reaches every other", "job", r.Job, "volume", e.volume(r), "err", volErr)
		return &engine.DebtError{Nodes: nodes, Err: volErr, Freed: true}
	}
	if volErr != nil || slices.ContainsFunc(nodes, func(n string) bool { return slices.Contains(owed, n) }) {
		// Owed by the job's own silent nodes (their RAM), or, when the
		// volume could not be deleted, by every silent node.
		var debtors []string
		for _, n := range owed {
			if volErr != nil || slices.Contains(nodes, n) {
				debtors = append(debtors, n)
			}
		}
		why := cmp.Or(volErr, errors.New("agent not answering"))
		e.Log.Warn("RAMDISK destroyed but for the parts on silent nodes", "job", r.Job, "volume", e.volume(r), "nodes", debtors, "err", why)
		return &engine.DebtError{Nodes: debtors, Err: why}
	}
	e.Log.Info("RAMDISK destroyed", "job", r.Job, "volume", e.volume(r), "total_s", time.Since(start).Seconds())
	return nil
}

// deleteStragglers deletes r's volume through each node that answers, but
// done, whose glusterd still lists it after its delete through done. A
// pool can disagree once it healed from a split: a peer glusterd rejected
// (each side changed the volume apart) takes no part in the others'
// transactions, so their delete never reaches it, and a node asked to
// delete a volume it does not have answers that it is gone. Only a
// delete through the node that lists it takes it away; without one, the
// daemon's sweep found it and "removed" it every 20 s, for ever. A node
// whose glusterd cannot say is passed over: should it bring the volume
// back, the sweep finds it there.
func (e *Engine) deleteStragglers(ctx context.Context, r engine.Ramdisk, done string) error {
	vol := e.volume(r)
	var errs []error
	for _, n := range e.coordinators(r) {
		if n == done {
			continue
		}
		cl, err := e.Nodes.Client(n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		has, err := lists(ctx, cl, vol)
		if err != nil {
			e.Log.Warn("could not ask whether a deleted volume is gone", "volume", vol, "node", n, "err", err)
			continue
		}
		if !has {
			continue
		}
		// One at a time: a pool's glusterd runs one transaction on a
		// volume at once.
		if err := cl.RemoveVolume(ctx, vol); err != nil {
			err = fmt.Errorf("deleting volume %s through %s, whose glusterd still lists it after its delete through %s: %w", vol, n, done, err)
			if err := e.restoreAndDelete(ctx, r, n, cl, err); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		e.Log.Warn("volume deleted through a node that missed its delete", "volume", vol, "node", n, "deleted_through", done)
	}
	return errors.Join(errs...)
}

// lists reports whether the glusterd behind cl lists vol.
func lists(ctx context.Context, cl *agent.Client, vol string) (bool, error) {
	vs, err := cl.Volumes(ctx)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(vs, func(v agent.Volume) bool { return v.Name == vol }), nil
}

// restoreAndDelete deletes r's volume through holder (whose agent is hc)
// when other members of the pool lost it, so that every stop fails on
// them ("Volume ... does not exist") through any node; failed is why
// holder's delete failed, returned when this cannot help. glusterd hands a
// volume to a member that lacks it only in a handshake, so holder's agent
// closes its glusterd's connections to the peers; once every member lists
// the volume again (within handshakeWait), it is deleted through holder.
// Only in a whole pool: a rejected peer takes no part in a handshake's
// exchange of volumes. How the state arises, and why gluster volume sync
// is no cure: docs/failures.md, "Found on the way".
func (e *Engine) restoreAndDelete(ctx context.Context, r engine.Ramdisk, holder string, hc *agent.Client, failed error) error {
	vol := e.volume(r)
	if e.Nodes.Unpooled() {
		return failed
	}
	lacking, err := e.lacking(ctx, r, holder)
	if err != nil {
		return errors.Join(failed, err)
	}
	if len(lacking) == 0 {
		return failed
	}
	closed, err := hc.ReconnectPeers(ctx)
	if err != nil {
		return errors.Join(failed, fmt.Errorf("making %s's glusterd shake hands with its peers again: %w", holder, err))
	}
	// glusterd reconnects every 3 s; the handshake takes a second more,
	// several under load.
	deadline := time.Now().Add(handshakeWait)
	for len(lacking) > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("volume %s is still missing on %s %s after %s's glusterd shook hands with its peers again (%d connections closed): %w",
				vol, strings.Join(lacking, ", "), handshakeWait, holder, closed, failed)
		}
		select {
		case <-ctx.Done():
			return errors.Join(failed, ctx.Err())
		case <-time.After(time.Second):
		}
		if lacking, err = e.lacking(ctx, r, holder); err != nil {
			return errors.Join(failed, err)
		}
	}
	if err := hc.RemoveVolume(ctx, vol); err != nil {
		return fmt.Errorf("deleting volume %s through %s once its peers shook hands with it again: %w (before: %w)", vol, holder, err, failed)
	}
	e.Log.Warn("volume deleted once the RSA nodes whose glusterd had lost it took it back in a handshake", "volume", vol, "through", holder, "connections_closed", closed)
	return nil
}

// handshakeWait bounds how long restoreAndDelete waits for a handshake
// to hand the volume back to the members that lost it.
const handshakeWait = 30 * time.Second

// lacking lists the live RSA nodes of r other than holder whose glusterd
// does not list r's volume.
func (e *Engine) lacking(ctx context.Context, r engine.Ramdisk, holder string) ([]string, error) {
	vol := e.volume(r)
	var out []string
	for _, n := range e.coordinators(r) {
		if n == holder {
			continue
		}
		cl, err := e.Nodes.Client(n)
		if err != nil {
			return nil, err
		}
		has, err := lists(ctx, cl, vol)
		if err != nil {
			return nil, fmt.Errorf("asking %s whether it lists volume %s: %w", n, vol, err)
		}
		if !has {
			out = append(out, n)
		}
	}
	return out, nil
}

func (e *Engine) Usage(r engine.Ramdisk) (engine.Usage, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(r.Dir, &st); err != nil {
		return engine.Usage{}, err
	}
	if st.Type != fuseMagic {
		return engine.Usage{}, fmt.Errorf("%s is not a Gluster volume", r.Dir)
	}
	bs := int64(st.Bsize)
	// A volume's inode counts are its bricks', Gluster's own files
	// among them: how many are the job's it cannot tell.
	return engine.Usage{Used: (int64(st.Blocks) - int64(st.Bfree)) * bs, Size: int64(st.Blocks) * bs, Files: -1}, nil
}

// List finds every job's volume RSA made, known or not: the control host's
// client mounts, the pool's volumes, the bricks on every RSA node and the
// mounts on every compute node that answers. A volume can be found long
// after Destroy: glusterd deletes a volume on the peers it reaches, and a
// peer that was down (a rebooted RSA node, whose glusterd keeps its store
// on disk) brings it back to all of them when it returns. One is also
// found while Construct makes it: the pool lists a volume between its
// create and its start.
func (e *Engine) List(ctx context.Context) ([]engine.Found, error) {
	type build struct {
		job   int64
		build int
	}
	found := map[build]bool{}
	ms, err := mount.List()
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		if m.FSType != "fuse.glusterfs" {
			continue
		}
		if id, ok := jobOfRamdisk(e.Root, m.Point); ok {
			b := 1
			if of, n, err := agent.ParseBuild(agent.SourceVolume(m)); err == nil && of == id {
				b = n
			}
			found[build{id, b}] = true
		}
	}
	add := func(volume string) {
		if id, b, err := agent.ParseBuild(volume); err == nil {
			found[build{id, b}] = true
		}
	}
	var errs []error
	// read asks every node of nodes whose agent is up what it holds.
	read := func(nodes []string, fn func(*agent.Client, *agent.Status) error) {
		for _, n := range nodes {
			if !e.Nodes.Up(n) {
				continue
			}
			cl, err := e.Nodes.Client(n)
			if err == nil {
				var st *agent.Status
				if st, err = cl.Status(ctx); err == nil {
					err = fn(cl, st)
				}
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	read(e.Nodes.ComputeNodes(), func(_ *agent.Client, st *agent.Status) error {
		for _, m := range st.Mounts {
			add(m.Volume)
		}
		return nil
	})
	read(e.Nodes.StorageNodes(), func(cl *agent.Client, st *agent.Status) error {
		for _, b := range st.Bricks {
			add(b.Volume)
		}
		vs, err := cl.Volumes(ctx)
		for _, v := range vs {
			add(v.Name)
		}
		return err
	})
	out := make([]engine.Found, 0, len(found))
	for b := range found {
		out = append(out, engine.Found{Job: b.job, Build: b.build, Dir: engine.DirFor(e.Root, b.job)})
	}
	slices.SortFunc(out, func(a, b engine.Found) int { return cmp.Or(cmp.Compare(a.Job, b.Job), cmp.Compare(a.Build, b.Build)) })
	return out, errors.Join(errs...)
}

// jobOfRamdisk parses ROOT/ID/ram.
func jobOfRamdisk(root, p string) (int64, bool) {
	rest, ok := strings.CutPrefix(p, root+"/")
	if !ok {
		return 0, false
	}
	idStr, tail, ok := strings.Cut(rest, "/")
	if !ok || tail != "ram" {
		return 0, false
	}
	id, err := strconv.ParseInt(idStr, 10, 64)
	return id, err == nil && id > 0 && p == engine.DirFor(root, id)
}

// Prepare makes Root as the local engine does: root-owned 0711, so that
// anyone may pass to their own gate and no one but root may list it.
func (e *Engine) Prepare() error {
	if _, err := engine.NewLocal(e.Root); err != nil {
		return err
	}
	// The control host mounts every volume (staging checks, usage): its
	// client talks TLS, or it cannot mount at all.
	dir := e.SSLDir
	if dir == "" {
		dir = gcli.SSLDir(context.Background())
	}
	if err := gcli.CheckTLS(dir); err != nil {
		return fmt.Errorf("engine gluster: %w", err)
	}
	return nil
}
