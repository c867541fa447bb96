// Package access performs RSA's privileged work on a job's compute nodes:
// making its RAMDISK appear at the job's own paths and taking it away again.
// Local does it on this host (the single-host case, where the thesis' I/O
// nodes and the control host are one), Namespaces in mount namespaces
// standing in for compute nodes; an engine whose compute nodes are hosts
// of their own brings its own Access (engine gluster's gluster.Agents).
// Each engine's opener picks the access that goes with it. It must not
// create or destroy RAMDISKs.
package access

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/mount"
)

// ErrBusy is returned by Unbind when a mount is in use on some node.
var ErrBusy = mount.ErrBusy

// UnreachableError is Unbind's answer when nothing failed but that some
// nodes could not be reached: their mounts of the RAMDISK are still there,
// and whatever runs there may still write into it.
type UnreachableError struct {
	Nodes []string
	Err   error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("compute node %s not reachable: %v", strings.Join(e.Nodes, ", "), e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Access reaches the compute nodes.
//
// Bind for the input directory is all or nothing: on failure it removes
// what it made before returning. Bind for the output directory leaves the
// nodes it already mounted as they are: the job may be writing output into
// RAM there, which must be staged out, not dropped. Both methods are
// idempotent and may be called again after a crash. Neither retries.
type Access interface {
	// Bind shows the RAMDISK rd over target on every node, after
	// checking race-free that target is a real directory rd.UID owns.
	Bind(ctx context.Context, nodes []string, role Role, rd engine.Ramdisk, target string) error
	// Unbind removes the RAMDISK's bind mounts on every node; with detach,
	// busy mounts are detached instead of reported. If the only failures
	// are nodes it could not reach, the error is an *UnreachableError.
	Unbind(ctx context.Context, nodes []string, rd engine.Ramdisk, detach bool) error
}

// Local is Access for jobs that run on this host. Policy says which
// directories may be mounted over.
type Local struct {
	Policy mount.Policy
}

var _ Access = Local{}

// Role is which of a job's directories a RAMDISK is shown at; its text
// names it in messages (package mount's role).
type Role string

// OutputRole is the role of the output directory: its mounts are never
// rolled back (see Access).
const OutputRole Role = "output directory"

func (l Local) Bind(_ context.Context, _ []string, role Role, rd engine.Ramdisk, target string) error {
	ramdisk := rd.Dir
	if err := l.Policy.Bind(string(role), ramdisk, target, rd.UID); err != nil {
		var te *mount.TargetError
		if !errors.As(err, &te) && role != OutputRole {
			_ = mount.Unbind(ramdisk, true)
		}
		return err
	}
	return nil
}

func (Local) Unbind(_ context.Context, _ []string, rd engine.Ramdisk, detach bool) error {
	unbind := func(point string) error { return mount.Unbind(point, detach) }
	err := unbindImage(rd, unbind)
	if err == nil {
		err = UnbindPrivate(rd, detach, unbind, nil)
	}
	if err == nil {
		err = mount.Unbind(rd.Dir, detach)
	}
	if err != nil {
		return fmt.Errorf("on this host: %w", err)
	}
	return nil
}

// Namespaces is Access for compute nodes that are mount namespaces of this
// host, each pinned (bind-mounted, as `unshare --mount=FILE` does) at
// Dir/<node>: several slurmd on one machine, each with its own view of the
// file system. The RAMDISK's mount is cloned here and handed as a file
// descriptor to `rsa node attach`, which nsenter starts inside the node's
// namespace, so every check and mount happens where the job will look.
type Namespaces struct {
	Dir    string // one pinned mount namespace per compute node name
	Self   string // the rsa binary
	Policy mount.Policy
}

var _ Access = Namespaces{}

// PolicyArgs passes p to `rsa node attach`.
func PolicyArgs(p mount.Policy) []string {
	var args []string
	for _, a := range p.AllowedPaths {
		args = append(args, "--allowed-path", a)
	}
	if p.RefuseFSTypes != nil {
		args = append(args, "--refuse-fs-types", strings.Join(p.RefuseFSTypes, ","))
	}
	return args
}

// ExitBusy is the exit status of `rsa node detach` when a mount is in use.
const ExitBusy = 3

func (n Namespaces) nsFile(node string) (string, error) {
	if node == "" || strings.ContainsAny(node, "/\x00") || node == "." || node == ".." {
		return "", fmt.Errorf("bad compute node name %q", node)
	}
	p := filepath.Join(n.Dir, node)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("compute node %s has no mount namespace at %s: %w", node, p, err)
	}
	return p, nil
}

func (n Namespaces) run(ctx context.Context, node string, extra *os.File, args ...string) error {
	ns, err := n.nsFile(node)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--mount=" + ns, "--", n.Self, "node"}, args...)...)
	if extra != nil {
		cmd.ExtraFiles = []*os.File{extra}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == ExitBusy {
			return fmt.Errorf("on %s: %w", node, ErrBusy)
		}
		return fmt.Errorf("on %s: %s", node, strings.TrimSpace(string(out)))
	}
	return nil
}

func (n Namespaces) Bind(ctx context.Context, nodes []string, role Role, rd engine.Ramdisk, target string) error {
	ramdisk, uid := rd.Dir, rd.UID
	if len(nodes) == 0 {
		return errors.New("the job runs on no compute node yet")
	}
	for i, node := range nodes {
		tree, err := mount.CloneTree(ramdisk)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(tree), "ramdisk-tree")
		args := append([]string{"attach", "--role", string(role), "--uid", strconv.FormatUint(uint64(uid), 10), "--target", target}, PolicyArgs(n.Policy)...)
		err = n.run(ctx, node, f, args...)
		f.Close()
		if err != nil {
			if role != OutputRole {
				// All or nothing: take back what the earlier nodes mounted.
				_ = n.Unbind(context.WithoutCancel(ctx), nodes[:i+1], rd, true)
			}
			return err
		}
	}
	return nil
}

func (n Namespaces) Unbind(ctx context.Context, nodes []string, rd engine.Ramdisk, detach bool) error {
	unbind := func(point string) error { return n.unbindFrom(ctx, nodes, point, detach) }
	if err := unbindImage(rd, unbind); err != nil {
		return err
	}
	if err := UnbindPrivate(rd, detach, unbind, nil); err != nil {
		return err
	}
	return n.unbindFrom(ctx, nodes, rd.Dir, detach)
}

// unbindFrom removes, on every node, the mounts of the file system
// mounted at src on this host.
func (n Namespaces) unbindFrom(ctx context.Context, nodes []string, src string, detach bool) error {
	dev, err := mount.DevOf(src)
	if err != nil {
		return err
	}
	if dev == "" {
		return nil // nothing there, so nothing of it is mounted anywhere
	}
	var errs []error
	for _, node := range nodes {
		args := []string{"detach", "--dev", dev}
		if detach {
			args = append(args, "--force")
		}
		if err := n.run(ctx, node, nil, args...); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
