package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rsa-hpc/rsa/internal/gluster"
)

// Volumes: a job's Gluster volume over its bricks, made through the
// glusterd of this storage node, a member of RSA's trusted pool. Any
// storage agent can do it for the whole pool. glusterd is the only
// record: a volume is what `gluster volume info` says.

// VolumeSpec is what PUT /v1/volumes/{volume} asks for.
type VolumeSpec struct {
	// Bricks are "HOST:DIR" each, in order; with Replica 2 each
	// consecutive pair is one replica set (the caller puts the two on
	// different nodes).
	Bricks []string `json:"bricks"`
	// Replica is 0 or 1 to distribute files over the bricks, 2 for two
	// copies of each.
	Replica int `json:"replica,omitempty"`
	// Shard turns features.shard on, for files bigger than a brick.
	Shard bool `json:"shard,omitempty"`
	// AuthAllow are the addresses that may mount the volume (auth.allow):
	// required, non-empty.
	AuthAllow []string `json:"auth_allow"`
	// TLSAllow are the certificate names (the hosts' names, as `rsa ca
	// issue` named them) whose TLS clients the bricks admit
	// (auth.ssl-allow): required, non-empty. Every connection to the
	// volume is mutual TLS keyed by RSA's CA (client.ssl, server.ssl).
	TLSAllow []string `json:"tls_allow"`
	// PingTimeout is how many seconds a client waits for a silent brick
	// before failing its I/O, 1..10; 0 means 10 (Gluster's 42 stalls a
	// job for a minute on a dead node).
	PingTimeout int `json:"ping_timeout,omitempty"`
	// Profile turns the volume's profile on (gluster.ProfileOptions):
	// its bricks count and time every file operation, which
	// VolumeProfile reads. Once on, a spec without it leaves it on.
	Profile bool `json:"profile,omitempty"`
}

// Volume is a job's volume as glusterd describes it.
type Volume struct {
	Name     string   `json:"name"`
	Started  bool     `json:"started"`
	Bricks   []string `json:"bricks"`
	ReadOnly bool     `json:"read_only"`
}

const (
	maxPingTimeout = 10
	optReadOnly    = "features.read-only"
)

// volumeOptions checks spec and returns the options the volume gets, in
// the order they are set.
func volumeOptions(volume string, spec VolumeSpec) ([][2]string, error) {
	if len(spec.Bricks) == 0 {
		return nil, failf(ErrInvalid, "volume %s: no bricks", volume)
	}
	for i, b := range spec.Bricks {
		if err := gluster.CheckBrick(b); err != nil {
			return nil, failf(ErrInvalid, "volume %s: %w", volume, err)
		}
		if slices.Contains(spec.Bricks[:i], b) {
			return nil, failf(ErrInvalid, "volume %s: brick %s is given twice", volume, b)
		}
	}
	switch {
	case spec.Replica == 0 || spec.Replica == 1:
	case spec.Replica == 2 && len(spec.Bricks)%2 == 0:
	default:
		return nil, failf(ErrInvalid, "volume %s: replica %d over %d bricks: give replica 0 or 1 (distribute), or 2 with an even number of bricks", volume, spec.Replica, len(spec.Bricks))
	}
	if len(spec.AuthAllow) == 0 {
		return nil, failf(ErrInvalid, "volume %s: auth_allow is empty: name the addresses of the nodes that mount it (compute nodes, the control host)", volume)
	}
	for _, a := range spec.AuthAllow {
		if err := gluster.CheckHost(a); err != nil {
			return nil, failf(ErrInvalid, "volume %s: auth_allow: %w", volume, err)
		}
	}
	if len(spec.TLSAllow) == 0 {
		return nil, failf(ErrInvalid, "volume %s: tls_allow is empty: name the certificates (hosts) that may reach it (the control host, the RSA nodes, the job's compute nodes)", volume)
	}
	for _, n := range spec.TLSAllow {
		// A DNS name has no character fnmatch(3) reads as a pattern.
		if err := gluster.CheckHost(n); err != nil {
			return nil, failf(ErrInvalid, "volume %s: tls_allow: %w", volume, err)
		}
	}
	ping := spec.PingTimeout
	if ping == 0 {
		ping = maxPingTimeout
	}
	if ping < 1 || ping > maxPingTimeout {
		return nil, failf(ErrInvalid, "volume %s: ping_timeout %d is not 1..%d seconds (0 means %d)", volume, spec.PingTimeout, maxPingTimeout, maxPingTimeout)
	}
	opts := [][2]string{
		{"network.ping-timeout", strconv.Itoa(ping)},
		// A brick behind a cut link answers nothing: without a bound a
		// client's connect to it (a mount, a reconnect) waits for TCP to
		// give up, minutes, and a mount waits for every brick.
		{"client.tcp-user-timeout", strconv.Itoa(ping)},
		// Broken in 10.3: a file created in a directory made just
		// before fails with ENOENT once the kernel's caches dropped.
		{"performance.nl-cache", "off"},
		{"auth.allow", strings.Join(spec.AuthAllow, ",")},
		// Mutual TLS on every connection to a brick, keyed by RSA's CA,
		// and only the certificates named: without it a brick believes
		// whatever uid, gid and pid a client sends, and any process on
		// an admitted host is such a client (libgfapi).
		{"client.ssl", "on"},
		{"server.ssl", "on"},
		{"auth.ssl-allow", strings.Join(spec.TLSAllow, ",")},
		// A brick's health check rewrites a file on the brick every
		// 30 s and takes the brick down when that fails, which on a
		// full tmpfs it does: one job filling its RAMDISK would lose
		// its bricks (ENOTCONN, files gone) instead of getting ENOSPC.
		// A tmpfs has no disk to fail; a lost node is the heartbeat's
		// and network.ping-timeout's to find.
		{"storage.health-check-interval", "0"},
		// In 10.3 a client whose write-behind holds writes when a brick
		// answers ENOSPC hangs the writer for good or aborts (a double
		// free in its error path): seen on this machine in most fills
		// of a volume, and never with it off, which costs a single
		// stream about a third of its write speed (dd, 1 MiB writes:
		// 410 MB/s against 550-630). A full RAMDISK must be an error
		// the job sees, not a dead mount on its node.
		{"performance.write-behind", "off"},
	}
	if spec.Shard {
		opts = append(opts, [2]string{"features.shard", "on"})
	}
	if spec.Profile {
		opts = append(opts, gluster.ProfileOptions()...)
	}
	return opts, nil
}

// volumeOf is the answer describing v.
func volumeOf(v gluster.Volume) Volume {
	return Volume{Name: v.Name, Started: v.Started, Bricks: v.Bricks, ReadOnly: v.Options[optReadOnly] == "on"}
}

// MakeVolume makes volume over spec's bricks, sets its options and starts
// it. Idempotent: a volume with the same bricks and replica count gets any
// option it lacks and is started if it is not; one with other bricks fails
// wrapping ErrConflict and is left as it is. It returns the volume as
// glusterd has it afterwards.
func (s *Server) MakeVolume(ctx context.Context, volume string, spec VolumeSpec) (Volume, error) {
	if err := CheckVolume(volume); err != nil {
		return Volume{}, err
	}
	opts, err := volumeOptions(volume, spec)
	if err != nil {
		return Volume{}, err
	}
	if err := gluster.CheckTLS(s.sslDir); err != nil {
		return Volume{}, fmt.Errorf("making volume %s: %w", volume, err)
	}
	replica := max(spec.Replica, 1)
	// One check-then-create at a time: two PUTs of a volume (the daemon
	// retrying after a timeout) would otherwise both find it absent.
	s.vmu.Lock()
	defer s.vmu.Unlock()
	v, ok, err := s.gl.VolumeInfo(ctx, volume)
	if err != nil {
		return Volume{}, fmt.Errorf("reading volume %s from glusterd: %w", volume, err)
	}
	if ok && (!slices.Equal(v.Bricks, spec.Bricks) || v.Replica != replica) {
		return Volume{}, failf(ErrConflict, "volume %s exists over bricks %s with replica %d, not %s with replica %d; remove it first (DELETE /v1/volumes/%s) or ask for what it has",
			volume, strings.Join(v.Bricks, " "), v.Replica, strings.Join(spec.Bricks, " "), replica, volume)
	}
	if !ok {
		if err := s.gl.Create(ctx, volume, spec.Bricks, spec.Replica); err != nil {
			return Volume{}, fmt.Errorf("creating volume %s: %w (are the bricks made, and their nodes in the trusted pool?)", volume, err)
		}
		s.log.Info("volume created", "volume", volume, "bricks", spec.Bricks, "replica", replica)
		v = gluster.Volume{Name: volume, Bricks: spec.Bricks, Options: map[string]string{}}
	}
	var missing [][2]string
	for _, o := range opts {
		if v.Options[o[0]] != o[1] {
			missing = append(missing, o)
		}
	}
	if err := s.gl.Set(ctx, volume, missing...); err != nil {
		return Volume{}, fmt.Errorf("setting the options of volume %s: %w", volume, err)
	}
	if !v.Started {
		if err := s.gl.Start(ctx, volume); err != nil {
			return Volume{}, fmt.Errorf("starting volume %s: %w (glusterd's log says why a brick did not start)", volume, err)
		}
		s.log.Info("volume started", "volume", volume)
	}
	v, ok, err = s.gl.VolumeInfo(ctx, volume)
	if err == nil && !ok {
		err = errors.New("it is gone (removed meanwhile?)")
	}
	if err != nil {
		return Volume{}, fmt.Errorf("reading volume %s back from glusterd: %w", volume, err)
	}
	return volumeOf(v), nil
}

// VolumeProfile is volume's file operations since it was made, summed
// over its bricks (gluster.CLI.Profile): a volume made without
// VolumeSpec.Profile fails wrapping ErrInvalid, an absent one ErrNotFound.
// Read-only.
func (s *Server) VolumeProfile(ctx context.Context, volume string) ([]gluster.FopStat, error) {
	if err := CheckVolume(volume); err != nil {
		return nil, err
	}
	fs, err := s.gl.Profile(ctx, volume)
	switch {
	case errors.Is(err, gluster.ErrProfileOff):
		return nil, failf(ErrInvalid, "volume %s was made without its profile: set [cluster] profile = true for the next jobs' volumes", volume)
	case errors.Is(err, gluster.ErrNotFound):
		return nil, failf(ErrNotFound, "reading the profile of volume %s: it does not exist in this node's trusted pool", volume)
	case err != nil:
		return nil, fmt.Errorf("reading the profile of volume %s from glusterd: %w", volume, err)
	}
	return fs, nil
}

// BrickStatus is glusterd's view of volume's brick processes: a brick
// of a peer glusterd lost touch with is absent. Read-only; a cut link
// can hold it until glusterd notices, so callers bound it.
func (s *Server) BrickStatus(ctx context.Context, volume string) ([]gluster.BrickState, error) {
	if err := CheckVolume(volume); err != nil {
		return nil, err
	}
	bs, err := s.gl.BrickStatus(ctx, volume)
	if err != nil {
		return nil, fmt.Errorf("reading the bricks of volume %s from glusterd: %w", volume, err)
	}
	return bs, nil
}

// Peers is this node's glusterd's view of the other members of the
// trusted pool (GET /v1/peers). Read-only; glusterd answers it alone,
// but after any transaction this agent is running.
func (s *Server) Peers(ctx context.Context) ([]gluster.Peer, error) {
	ps, err := s.gl.Peers(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the trusted pool's peers from glusterd: %w", err)
	}
	return ps, nil
}

// RemoveVolume stops volume (force: its clients' I/O fails from then on)
// and deletes it. The bricks keep its data until they are removed. An
// absent volume is no error.
func (s *Server) RemoveVolume(ctx context.Context, volume string) error {
	if err := CheckVolume(volume); err != nil {
		return err
	}
	s.vmu.Lock()
	defer s.vmu.Unlock()
	if err := s.gl.Stop(ctx, volume); err != nil {
		return fmt.Errorf("stopping volume %s: %w", volume, err)
	}
	if err := s.gl.Delete(ctx, volume); err != nil {
		return fmt.Errorf("deleting volume %s: %w", volume, err)
	}
	s.log.Info("volume removed", "volume", volume)
	return nil
}

// Reconnected is what POST /v1/peers/reconnect answers.
type Reconnected struct {
	// Closed is how many connections between this node's glusterd and
	// its peers' were closed.
	Closed int `json:"closed"`
}

// ReconnectPeers closes the connections between this node's glusterd and
// those of the other members of its pool, so that each pair connects
// again and shakes hands anew (gluster.Reconnect): bricks and clients run
// on. It is the cure for a volume this node lists but its peers lost
// (a delete that reached them but not this node, whose glusterd had just
// come back): no one can stop or delete it, since each member checks a
// transaction against its own list, and glusterd copies a volume to a
// member that lacks it only in a handshake. Transactions under way
// through this node fail. Harmless to repeat.
func (s *Server) ReconnectPeers(ctx context.Context) (Reconnected, error) {
	s.vmu.Lock()
	defer s.vmu.Unlock()
	ps, err := s.gl.Peers(ctx)
	if err != nil {
		return Reconnected{}, fmt.Errorf("reading the trusted pool's peers from glusterd: %w", err)
	}
	n, err := gluster.Reconnect(ctx, ps)
	if err != nil {
		return Reconnected{Closed: n}, err
	}
	if n == 0 && slices.ContainsFunc(ps, func(p gluster.Peer) bool { return p.Connected }) {
		// ss -K answers success on a kernel that cannot destroy sockets.
		return Reconnected{}, errors.New("glusterd is connected to peers, but ss -K closed none of its connections: the kernel needs CONFIG_INET_DIAG_DESTROY (Debian's has it)")
	}
	s.log.Warn("glusterd's connections to its peers closed, for a new handshake", "peers", len(ps), "closed", n)
	return Reconnected{Closed: n}, nil
}

// SealSpec is what POST /v1/volumes/{volume}/seal asks for: who may still
// reach the volume once its job has ended.
type SealSpec struct {
	// AuthAllow and TLSAllow replace the volume's auth.allow and
	// auth.ssl-allow, as in VolumeSpec: the control host and the RSA
	// nodes, no compute node. Both required, non-empty.
	AuthAllow []string `json:"auth_allow"`
	TLSAllow  []string `json:"tls_allow"`
}

// SealVolume fences volume and makes it read-only, in one glusterd
// transaction. The fence: auth.allow and auth.ssl-allow become spec's, and
// the bricks close the connection of every client they no longer admit
// (Gluster checks its clients again when the lists change). Read-only
// (features.read-only): a write fails with EROFS, on clients mounted
// before as well, once each brick has applied it. SealVolume returns when
// glusterd has committed both; the brick processes reconfigure a moment
// later, so a caller that must know that writes fail waits for that
// through a client (gluster.AwaitReadOnly), as the gluster engine's Seal
// does. A file a process holds open for writing takes writes into the
// client's write-behind cache, but its fsync and close fail with EROFS
// and the data never reaches the bricks. A volume not there fails
// wrapping ErrNotFound.
func (s *Server) SealVolume(ctx context.Context, volume string, spec SealSpec) error {
	if err := CheckVolume(volume); err != nil {
		return err
	}
	if len(spec.AuthAllow) == 0 || len(spec.TLSAllow) == 0 {
		return failf(ErrInvalid, "sealing volume %s: auth_allow and tls_allow are required: the control host and the RSA nodes, who may still reach it", volume)
	}
	for _, h := range append(slices.Clone(spec.AuthAllow), spec.TLSAllow...) {
		if err := gluster.CheckHost(h); err != nil {
			return failf(ErrInvalid, "sealing volume %s: %w", volume, err)
		}
	}
	s.vmu.Lock()
	defer s.vmu.Unlock()
	err := s.gl.Set(ctx, volume, [2]string{"auth.allow", strings.Join(spec.AuthAllow, ",")},
		[2]string{"auth.ssl-allow", strings.Join(spec.TLSAllow, ",")}, [2]string{optReadOnly, "on"})
	if errors.Is(err, gluster.ErrNotFound) {
		return failf(ErrNotFound, "sealing volume %s: it does not exist in this node's trusted pool", volume)
	}
	if err != nil {
		return fmt.Errorf("sealing volume %s: %w", volume, err)
	}
	s.log.Info("volume sealed", "volume", volume, "auth_allow", spec.AuthAllow, "tls_allow", spec.TLSAllow)
	return nil
}

// Volumes lists the pool's jobs' volumes (those named as VolumeName
// names them), by job.
func (s *Server) Volumes(ctx context.Context) ([]Volume, error) {
	vs, err := s.gl.Volumes(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing volumes from glusterd: %w", err)
	}
	out := []Volume{}
	for _, v := range vs {
		if CheckVolume(v.Name) == nil {
			out = append(out, volumeOf(v))
		}
	}
	slices.SortFunc(out, func(a, b Volume) int { return byJob(a.Name, b.Name) })
	return out, nil
}
