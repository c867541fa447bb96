// Package agent is `rsa agent`, the node agent that runs as root on every
// RSA node and compute node, and its client for the control daemon.
//
// The daemon dials the agents over HTTPS with mutual TLS 1.3 (package
// pki); an agent accepts only the daemon's certificate, and serves only the
// operations its own role allows: storage operations (a job's brick, a
// tmpfs of the job's share of this node's RAM) on RSA nodes, compute
// operations (a job's volume bound at the job's own directory) on compute
// nodes, status on every node.
//
// The agent is stateless. Everything it reports it reads back from the
// kernel (the mount table, statfs, /proc), so an agent killed and started
// again, or a second agent started in its place, knows what the first one
// made. Every operation is idempotent and keyed by the job's volume name
// (VolumeName): the daemon may send it again after a timeout, a crash of
// either side or a lost answer, and gets the same result.
package agent

import (
	"crypto/x509"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rsa-hpc/rsa/internal/pki"
)

// Defaults of `rsa agent`.
const (
	// DefaultPort is the TCP port agents listen on.
	DefaultPort = 9477
	// DefaultBrickRoot holds one tmpfs per brick. Under /run: a brick
	// lives in RAM and dies with the node, as /run's contents do.
	DefaultBrickRoot = "/run/rsa/bricks"
	// DefaultVolumeRoot is where jobs' volumes are mounted on a compute
	// node, at DefaultVolumeRoot/ID/ram behind the job's gate
	// DefaultVolumeRoot/ID, before they are bound at jobs' paths: the
	// layout and default of the control host's ramdisk_root
	// (config.DefaultRamdiskRoot), so that the RAMDISK path a job is given
	// (RSA_RAMDISK) leads to its volume on every node.
	DefaultVolumeRoot = "/run/rsa/ramdisk"
)

// BrickSubdir is the brick directory inside a brick's tmpfs: Gluster wants
// a brick to be a directory below a mount point, never the mount point
// itself (a brick whose file system is gone would otherwise look like an
// empty brick on the root file system).
const BrickSubdir = "brick"

// volumePrefix begins every volume name.
const volumePrefix = "rsa-job-"

// VolumeName is the name of job id's volume, the key of every agent
// operation on the job: "rsa-job-17".
func VolumeName(job int64) string { return volumePrefix + strconv.FormatInt(job, 10) }

// BuildName is the name of the volume of job id's RAMDISK built the
// build-th time: VolumeName for the first (build 0 or 1), then
// "rsa-job-17-2", "rsa-job-17-3"… Every RAMDISK rebuilt needs a name of
// its own. One rebuilt on live nodes after a node was lost: glusterd
// deletes no volume while any peer of the pool is down, so the old one
// may linger under its name until the node is back. One rebuilt for
// output on the same nodes: a brick path used again can be mapped by
// glusterd to the old brick's port, whose process refuses the new
// volume's clients.
func BuildName(job int64, build int) string {
	if build <= 1 {
		return VolumeName(job)
	}
	return VolumeName(job) + "-" + strconv.Itoa(build)
}

// ParseVolume returns the job of a volume name, or an error wrapping
// ErrInvalid. Only the names BuildName makes are valid: the prefix, a
// positive decimal job id without leading zeros, and for a rebuilt
// RAMDISK "-" and its build, 2 or more, without leading zeros. So a name
// is one path component that cannot climb out of a directory ("../x",
// "rsa-job-1/.."), and one build of a job has exactly one name
// ("rsa-job-017" is not "rsa-job-17").
func ParseVolume(name string) (int64, error) {
	id, _, err := ParseBuild(name)
	return id, err
}

// ParseBuild is ParseVolume with the build (1 for VolumeName's names).
func ParseBuild(name string) (job int64, build int, err error) {
	rest, ok := strings.CutPrefix(name, volumePrefix)
	digits, bdigits, rebuilt := strings.Cut(rest, "-")
	number := func(s string) (int64, bool) {
		if s == "" || s[0] == '0' || strings.Trim(s, "0123456789") != "" {
			return 0, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	}
	job, okJob := number(digits)
	build = 1
	okBuild := true
	if rebuilt {
		var b int64
		b, okBuild = number(bdigits)
		okBuild = okBuild && b >= 2 && b <= 1<<30
		build = int(b)
	}
	if !ok || !okJob || !okBuild {
		return 0, 0, failf(ErrInvalid, "%q is not a volume name: volumes are named %sID after their job, ID a positive number without leading zeros (e.g. %s), and %sID-N for its N-th RAMDISK, N from 2 (e.g. %s)",
			shorten(name), volumePrefix, VolumeName(17), volumePrefix, BuildName(17, 2))
	}
	return job, build, nil
}

// CheckVolume is ParseVolume without the job id.
func CheckVolume(name string) error {
	_, err := ParseVolume(name)
	return err
}

// shorten bounds a string quoted in a message: names come from the network.
func shorten(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// The kinds of failure an agent reports. The agent's errors wrap one of
// them (errors.Is), on the agent and, through *Error, in the client.
var (
	// ErrInvalid: the request is wrong (a bad volume name, size or path,
	// a job directory that fails the mount checks). Sending it again
	// fails again.
	ErrInvalid = errors.New("invalid request")
	// ErrForbidden: the caller may not do this here (not the control
	// daemon, or an operation this agent's role does not serve).
	ErrForbidden = errors.New("forbidden")
	// ErrNotFound: what the operation needs is not on this node (a
	// volume to bind that is not mounted here).
	ErrNotFound = errors.New("not found")
	// ErrConflict: the node holds something else under the name (a brick
	// of another size, a foreign mount where a brick goes). It stays
	// until someone removes it.
	ErrConflict = errors.New("conflict")
	// ErrBusy: a process still uses what is to be unmounted. Retrying
	// later may succeed once it lets go.
	ErrBusy = errors.New("busy")
)

// opError is an agent error of one kind with a message that names the
// problem and the fix.
type opError struct {
	kind error
	err  error // the message, wrapping any cause
}

func (e *opError) Error() string   { return e.err.Error() }
func (e *opError) Unwrap() []error { return []error{e.kind, e.err} }

// failf returns an error of kind with a formatted message; a %w in format
// wraps a cause as well.
func failf(kind error, format string, a ...any) error {
	return &opError{kind: kind, err: fmt.Errorf(format, a...)}
}

// BrickSpec is what PUT /v1/bricks/{volume} asks for.
type BrickSpec struct {
	// Size is the brick's capacity in bytes (at least 1 MiB, at most the
	// node's RAM); the kernel rounds it up to whole pages.
	Size int64 `json:"size"`
	// Inodes bounds the brick's inode table, whose memory the size does
	// not count: at least 1024. 0 means one inode per 8 KiB of size (and
	// at least 1024), the local engine's default.
	Inodes int64 `json:"inodes,omitempty"`
}

// Brick is a brick as the kernel shows it.
type Brick struct {
	Volume     string `json:"volume"`
	Mount      string `json:"mount"` // the tmpfs' mount point
	Dir        string `json:"dir"`   // the brick directory Gluster is given: Mount/brick
	Size       int64  `json:"size"`  // bytes, as statfs reports them (whole pages)
	Used       int64  `json:"used"`
	Inodes     int64  `json:"inodes"`
	InodesUsed int64  `json:"inodes_used"`
	// Problem, in status only, says why the brick is not as the agent
	// makes it (something mounted over it, a missing flag); empty if fine.
	Problem string `json:"problem,omitempty"`
}

// Binding roles: which of the job's directories a volume is bound at.
const (
	RoleInput  = "input"
	RoleOutput = "output"
)

// MountRequest is what PUT /v1/mounts/{volume} asks for: bind the volume,
// mounted on the node at VolumeRoot/ID/ram (mounted there first from
// Servers if it is not), over Target.
type MountRequest struct {
	// Target is the job's directory: a clean absolute path, reached
	// without symbolic links, a directory UID owns, on a file system the
	// policy allows.
	Target string `json:"target"`
	// UID is the job's user; never root.
	UID uint32 `json:"uid"`
	// Role is RoleInput or RoleOutput, for messages.
	Role string `json:"role"`
	// AllowedPaths and RefuseFSTypes are the site's mount policy
	// (mount.Policy, allowed_paths and refused_fs_types in rsa.toml),
	// sent by the daemon so that one file says it for every node:
	// RefuseFSTypes nil means RSA's default list, empty means none.
	AllowedPaths  []string `json:"allowed_paths"`
	RefuseFSTypes []string `json:"refuse_fs_types"`
	// Servers are the storage nodes (IPv4 addresses or DNS names) the
	// node mounts the Gluster volume from if it is not mounted yet: the
	// first gives the volume's layout, the others stand in if it is down.
	// Empty: the volume must be mounted already.
	Servers []string `json:"servers,omitempty"`
	// Image shows the volume's input image (stage.ImageName in its root,
	// which is root's alone) over Target instead of the volume: mounted
	// read-only, nosuid and nodev at VolumeRoot/ID/image once
	// mount.MountImage has checked it, the gate kept closed to the user.
	// ImageLoop takes a loop device even where the kernel could read the
	// file itself (the daemon's image_mount).
	Image     bool `json:"image,omitempty"`
	ImageLoop bool `json:"image_loop,omitempty"`
	// Private gives this node a file system of its own over Target
	// (output=private): an ext4 image in the volume's root, which is
	// root's alone, made once (access.MountPrivate) and mounted
	// read-write, nosuid and nodev at VolumeRoot/ID/out-NODE, the gate
	// kept closed to the user.
	Private *PrivateSpec `json:"private,omitempty"`
}

// PrivateSpec is one compute node's private output file system.
type PrivateSpec struct {
	Node string `json:"node"` // the compute node's name, which names its image
	Size int64  `json:"size"` // bytes
	// GID and Mode are the output directory's, for the file system's
	// root (its owner is the request's UID).
	GID  uint32 `json:"gid"`
	Mode uint32 `json:"mode"`
}

// Mount is a job's volume on a compute node, as the kernel shows it.
type Mount struct {
	Volume  string   `json:"volume"`
	Source  string   `json:"source"`  // where the volume is mounted: VolumeRoot/ID/ram
	FSType  string   `json:"fs_type"` // "fuse.glusterfs", or "tmpfs"
	Targets []string `json:"targets"` // the job directories it is bound at
}

// Status is what GET /v1/status reports: the node's RAM, what it holds,
// and who is answering.
type Status struct {
	Node    string   `json:"node"` // the name in the agent's certificate
	Role    pki.Role `json:"role"`
	Version string   `json:"version,omitempty"`
	// BootID is the kernel's boot_id: it changes when the node reboots,
	// and with it every brick and mount is gone.
	BootID string `json:"boot_id"`
	// Incarnation changes with the boot id and whenever the node's /run
	// starts empty (everything RSA had there is gone): the daemon's sign
	// of a node that lost its bricks and mounts.
	Incarnation string `json:"incarnation,omitempty"`
	// Started is when this agent process started: it changes when the
	// agent restarts, which loses nothing.
	Started      time.Time `json:"started"`
	MemTotal     int64     `json:"mem_total"`     // bytes
	MemAvailable int64     `json:"mem_available"` // bytes
	Bricks       []Brick   `json:"bricks"`
	Mounts       []Mount   `json:"mounts"`
	// Certificate is the agent's certificate as the daemon verified it
	// in the handshake of the connection that carried the answer: set by
	// Client.Status, never sent (what the agent would say of itself is
	// not what the daemon checked).
	Certificate *x509.Certificate `json:"-"`
}
