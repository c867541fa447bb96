// Package engine builds and destroys RAMDISKs. An Engine turns a job's
// allocation (shares of RSA nodes' RAM) into one file system that the control
// host sees at a directory; the local engine does it with a tmpfs on this
// host, a multi-node engine will aggregate several nodes into one parallel
// file system. Engines own the RAMDISK's life only: they must not mount
// anything at a job's own paths (package mount and node access do that) nor
// read or write job data.
package engine

import (
	"context"
	"fmt"

	"github.com/rsa-hpc/rsa/internal/job"
)

// Ramdisk describes one job's RAMDISK.
type Ramdisk struct {
	Job   int64
	Dir   string // where the control host sees it; staging reads and writes here
	Parts []job.Part
	UID   uint32 // its root directory belongs to the job's user, mode 0700
	GID   uint32
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
	Job int64
	Dir string
}

// Usage is a RAMDISK's fill.
type Usage struct {
	Used, Size int64
}

// Engine is a kind of RAMDISK.
//
// Every method may be called again after a crash with the same arguments:
// Construct and Destroy are idempotent. Neither is retried by the engine
// itself; wrap an Engine to add retries. Construct either succeeds or leaves
// something Destroy removes.
type Engine interface {
	// Name is the engine's name in the config ("local").
	Name() string
	// Construct builds the RAMDISK and makes it visible at r.Dir, empty,
	// owned by r.UID:r.GID with mode 0700, nosuid and nodev. If it already
	// exists for r.Job it succeeds without change.
	Construct(ctx context.Context, r Ramdisk) error
	// Destroy removes every mount of the RAMDISK (including bind mounts at
	// job paths, detached if busy) and frees its RAM. Destroying a RAMDISK
	// that does not exist succeeds.
	Destroy(ctx context.Context, r Ramdisk) error
	// Usage reports how full the RAMDISK is.
	Usage(r Ramdisk) (Usage, error)
	// List reports the RAMDISKs that exist now, known or not, so that the
	// daemon can find leftovers (gc).
	List(ctx context.Context) ([]Found, error)
}

// DirFor is where a job's RAMDISK appears under root.
func DirFor(root string, id int64) string {
	return fmt.Sprintf("%s/%d", root, id)
}

// SourceFor is the name a job's RAMDISK carries in the mount table, so that
// admins and gc can tell RSA's mounts from others.
func SourceFor(id int64) string { return fmt.Sprintf("rsa-%d", id) }
