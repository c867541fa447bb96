// Package node performs RSA's privileged work on a job's compute nodes:
// making its RAMDISK appear at the job's own paths and taking it away again.
// Local does it on this host (the single-host case, where the thesis' I/O
// nodes and the control host are one); agents on remote nodes come later
// behind the same interface. It must not create or destroy RAMDISKs.
package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/rsa-hpc/rsa/internal/mount"
)

// ErrBusy is returned by Unbind when a mount is in use on some node.
var ErrBusy = mount.ErrBusy

// Access reaches the compute nodes.
//
// Bind is all or nothing: on failure it removes what it made before
// returning. Both methods are idempotent and may be called again after a
// crash. Neither retries.
type Access interface {
	// Bind shows the RAMDISK at ramdisk over target on every node, after
	// checking race-free that target is a real directory uid owns.
	Bind(ctx context.Context, nodes []string, role, ramdisk, target string, uid uint32) error
	// Unbind removes the RAMDISK's bind mounts on every node; with detach,
	// busy mounts are detached instead of reported.
	Unbind(ctx context.Context, nodes []string, ramdisk string, detach bool) error
}

// Local is Access for jobs that run on this host.
type Local struct{}

func (Local) Bind(_ context.Context, _ []string, role, ramdisk, target string, uid uint32) error {
	if err := mount.Bind(role, ramdisk, target, uid); err != nil {
		var te *mount.TargetError
		if !errors.As(err, &te) {
			_ = mount.Unbind(ramdisk, true)
		}
		return err
	}
	return nil
}

func (Local) Unbind(_ context.Context, _ []string, ramdisk string, detach bool) error {
	if err := mount.Unbind(ramdisk, detach); err != nil {
		return fmt.Errorf("on this host: %w", err)
	}
	return nil
}
