package gluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// SealProbe is the extended attribute AwaitReadOnly sets on a volume's
// root. Nothing reads it; where a probe lands (on a brick not yet
// read-only) it stays, harmless, until the volume is deleted.
const SealProbe = "trusted.rsa.seal-probe"

// ErrStillWritable: a brick of a volume made read-only still takes writes.
var ErrStillWritable = errors.New("a brick still takes writes")

// AwaitReadOnly waits until every brick of the volume mounted at point
// refuses writes, after features.read-only was set: glusterd commits the
// option and returns, and each brick process reconfigures its graph a
// moment later, so a write landing in between still succeeds.
//
// The probe is a setxattr of SealProbe on the volume's root, through the
// client mounted at point (root's, on the control host). Gluster's
// distribute layer sends a directory's setxattr to every brick and
// answers success when any one of them took it, so the probe fails with
// EROFS only once each brick it reaches refuses writes. Another failure
// (a brick out of reach answers ENOTCONN, and which brick's answer comes
// last is chance) is tried again, and accepted at the deadline: no brick
// this client reaches took the write. A probe still taken at the deadline
// fails wrapping ErrStillWritable: a brick whose glusterd was cut off
// from the pool when the option was set (glusterd commits an option on
// the peers it reaches) applies it only once the pool is whole again.
func AwaitReadOnly(ctx context.Context, point string, timeout time.Duration) error {
	fd, err := unix.Open(point, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening the volume's root %s to check that its bricks refuse writes: %w", point, err)
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(timeout)
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		err := unix.Fsetxattr(fd, SealProbe, []byte("1"), 0)
		switch {
		case errors.Is(err, unix.EROFS):
			return nil
		case time.Now().Before(deadline):
		case err != nil:
			return nil
		default:
			return fmt.Errorf("a brick of the volume mounted at %s still took writes %v after it was made read-only (is the pool split? gluster peer status; else the brick's log): %w", point, timeout, ErrStillWritable)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the bricks of the volume mounted at %s to refuse writes: %w", point, ctx.Err())
		case <-time.After(wait):
		}
	}
}
