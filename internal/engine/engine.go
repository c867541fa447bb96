// Package engine builds and destroys RAMDISKs. An Engine turns a job's
// allocation (shares of RSA nodes' RAM) into one file system that the control
// host sees at a directory: engine local (Local) with a tmpfs on this host,
// engine gluster (package engine/gluster) by aggregating several RSA nodes'
// RAM into one parallel file system.
//
// An engine owns the RAMDISK's life and everything its backend needs
// besides: the nodes it watches (Nodes, Watcher), stages run on those
// nodes (Stager), which compute nodes may mount a RAMDISK
// (ClientAdmitter). Those are optional interfaces, found with As through
// the wrappers that add behaviours (WithRetry). An engine must not mount
// anything at a job's own paths (package mount and node access do that),
// and reaches job data only through a stage run as the job's user.
// Package engine/all knows every engine: their keys of the config and
// how each is opened, with the node access that goes with it.
package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rsa-hpc/rsa/internal/job"
)

// Ramdisk describes one job's RAMDISK.
type Ramdisk struct {
	Job   int64
	Dir   string // where the control host sees it; staging reads and writes here
	Parts []job.Part
	// Build counts the job's RAMDISKs (0 or 1: its first): one rebuilt
	// after a lost node, or for output on the same nodes, is a new one,
	// which an engine must not confuse with what is left of the old
	// (engine gluster: a volume of its own, agent.BuildName says why).
	Build int
	UID   uint32 // its root directory belongs to the job's user, mode 0700
	GID   uint32
	// RootOnly: the RAMDISK holds what RSA builds for the job (its input
	// image, stage.ImageName), which no user may write: its root
	// directory is root's, mode 0700, and its gate admits root alone.
	RootOnly bool
	// Inodes bounds the RAMDISK's inode table (0: the engine's default):
	// inode memory is not counted in the size.
	Inodes int64
}

// Size is the RAMDISK's capacity in bytes.
func (r Ramdisk) Size() int64 {
	var n int64
	for _, p := range r.Parts {
		n += p.Bytes
	}
	return n
}

// Found is a RAMDISK an engine finds on its nodes.
type Found struct {
	Job   int64
	Build int // as Ramdisk.Build
	Dir   string
}

// Usage is a RAMDISK's fill.
type Usage struct {
	Used, Size int64
	// Files counts what the RAMDISK holds below its root (files,
	// directories, links); -1 where the engine cannot tell. A RAMDISK
	// with Used 0 and Files 0 holds nothing anyone could miss.
	Files int64
}

// Degraded says which parts of a RAMDISK are out of reach now.
type Degraded struct {
	// Nodes are the RSA nodes whose part does not answer (a brick
	// process gone, a node down or cut off), sorted.
	Nodes []string
	// Missing: some data has no copy in reach, so files are missing from
	// Dir (distribute: any part; replica 2: both parts of a pair).
	Missing bool
	// Epoch counts the times this host's view of the RAMDISK regained a
	// part (always 0 where parts do not come back: engine local). Two
	// Checks with nothing Missing and the same Epoch say every part was in
	// reach between them as well: a part that left and came back between
	// them, its files missing from a listing made meanwhile, shows only
	// here.
	Epoch uint64
}

// Steady: the parts were in reach without a break from d to e, a later
// Check: neither lost any, and a part that came back in between would
// have changed the epoch.
func (d Degraded) Steady(e Degraded) bool {
	return !d.Missing && !e.Missing && d.Epoch == e.Epoch
}

// Merge is what d and e say together: a part out of reach in either. Its
// Epoch is e's, the later view.
func (d Degraded) Merge(e Degraded) Degraded {
	nodes := slices.Clone(d.Nodes)
	for _, n := range e.Nodes {
		if !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
	}
	slices.Sort(nodes)
	return Degraded{Nodes: nodes, Missing: d.Missing || e.Missing, Epoch: e.Epoch}
}

// DebtError is Destroy's answer when some RSA nodes of the RAMDISK could
// not be reached: everything else is gone, the parts on Nodes (their RAM)
// are not. Destroy of the same RAMDISK, once those nodes answer, removes
// them. It is no failure to retry now: the nodes are down.
type DebtError struct {
	Nodes []string
	Err   error // why they were not reached
	// Freed: the parts' RAM is free; only something without RAM is left
	// (engine gluster: the volume's definition, which glusterd deletes
	// only once every RSA node reaches every other).
	Freed bool
}

func (e *DebtError) Error() string {
	if e.Freed {
		return fmt.Sprintf("the RAM on RSA node %s is free, but the RAMDISK is not all gone until those nodes reach each other: %v", strings.Join(e.Nodes, ", "), e.Err)
	}
	// "RSA node N out of reach" as the job's other lines say it: a node
	// that was silent at a teardown may not have been found lost before.
	if len(e.Nodes) == 1 {
		return fmt.Sprintf("RSA node %s out of reach: its part stays until it answers: %v", e.Nodes[0], e.Err)
	}
	return fmt.Sprintf("RSA nodes %s out of reach: their parts stay until they answer: %v", strings.Join(e.Nodes, ", "), e.Err)
}

func (e *DebtError) Unwrap() error { return e.Err }

// ErrBusy is returned by Seal and Destroy while the RAMDISK is in use: a
// process holds it (a file open, for Seal one open for writing), or a
// mount does (a copy of its mount, or of an image mounted from it, in
// another mount namespace).
var ErrBusy = errors.New("RAMDISK still in use")

// ErrPartlySealed is returned by Seal when a part of the RAMDISK may still
// take writes after the engine's bound on waiting for the seal (a part
// cut off from the rest applies it once back): the rest is sealed, and
// the caller may go on, saying so.
var ErrPartlySealed = errors.New("part of the RAMDISK may still take writes")

// Engine is a kind of RAMDISK.
//
// Every method may be called again after a crash with the same arguments:
// Construct, Seal, Revoke and Destroy are idempotent. None is retried by the
// engine itself; wrap an Engine to add retries. Construct either succeeds
// or leaves something Destroy removes.
//
// A RAMDISK is reachable by its owner alone: r.Dir lies below a gate
// directory only root and r.UID may pass, so that its root directory can
// carry the mode and group of the job directory it is mounted over (which
// may admit others there) without admitting anyone through r.Dir.
type Engine interface {
	// Name is the engine's name in the config ("local").
	Name() string
	// Construct builds the RAMDISK and makes it visible at r.Dir, empty,
	// owned by r.UID:r.GID with mode 0700, nosuid and nodev, behind a gate
	// only root and r.UID pass; with r.RootOnly, owned by root with a gate
	// only root passes. If it already exists for r.Job it succeeds without
	// change.
	Construct(ctx context.Context, r Ramdisk) error
	// Seal makes the RAMDISK read-only for everyone, root included, on
	// every mount of it: a later write fails with EROFS instead of landing
	// in RAM that is about to go. An engine whose file system refuses to
	// turn read-only under a writer (local: the remount) fails, wrapping
	// ErrBusy, while a file in it is open for writing; one that can
	// (gluster) seals it, and the writer's next write fails with EROFS.
	// One that cannot confirm every part sealed within its bound fails
	// wrapping ErrPartlySealed.
	Seal(ctx context.Context, r Ramdisk) error
	// Revoke closes the gate: from now on no one but root reaches r.Dir.
	Revoke(ctx context.Context, r Ramdisk) error
	// Device is the RAMDISK's file system device number on this host,
	// by which the processes that still hold it are found; ok is false
	// when it does not exist.
	Device(r Ramdisk) (dev uint64, ok bool, err error)
	// Destroy removes every mount of the RAMDISK in this mount namespace
	// (bind mounts at job paths are detached) and unmounts the RAMDISK
	// itself only if nothing holds it, so that its RAM is really free when
	// Destroy succeeds; otherwise it fails, wrapping ErrBusy, and leaves
	// it. Destroying a RAMDISK that does not exist succeeds. Parts on
	// nodes that cannot be reached are left, and said so with a
	// *DebtError, rather than blocking the rest.
	Destroy(ctx context.Context, r Ramdisk) error
	// Usage reports how full the RAMDISK is.
	Usage(r Ramdisk) (Usage, error)
	// Check reports the parts of the RAMDISK this host cannot reach now,
	// once its view of them is certain (engine gluster waits a few
	// seconds for a client reconnecting to a brick just restarted). A
	// copy out of r.Dir is whole only if Checks before and after it are
	// Steady: a part out of reach drops its files from listings without
	// an error. Read-only; not retried.
	Check(ctx context.Context, r Ramdisk) (Degraded, error)
	// Probe is Check from this host's own view alone: the parts its
	// mount of r cannot reach now, and those of nodes known lost. It asks
	// no node, so it is cheap enough to watch a RAMDISK in use; it may
	// miss what only a node knows, which Check asks. Read-only; not
	// retried.
	Probe(r Ramdisk) (Degraded, error)
	// List reports the RAMDISKs that exist now, known or not, so that the
	// daemon can find leftovers (gc).
	List(ctx context.Context) ([]Found, error)
}

// DirFor is where a job's RAMDISK appears under root: root/ID is the job's
// gate, root/ID/ram the RAMDISK.
func DirFor(root string, id int64) string {
	return fmt.Sprintf("%s/%d/ram", root, id)
}

// ImagePoint is where a host mounts the input image of r (a RootOnly
// RAMDISK's): beside the RAMDISK's own mount point, behind the same gate.
func ImagePoint(r Ramdisk) string { return filepath.Join(filepath.Dir(r.Dir), "image") }

// GateFor is the directory above a job's RAMDISK that only root and the
// job's user may pass.
func GateFor(root string, id int64) string {
	return fmt.Sprintf("%s/%d", root, id)
}

// SourceFor is the name a job's RAMDISK carries in the mount table, so that
// admins and gc can tell RSA's mounts from others.
func SourceFor(id int64) string { return fmt.Sprintf("rsa-%d", id) }
