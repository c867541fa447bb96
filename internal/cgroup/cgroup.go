// Package cgroup puts each staging process tree of a job into a cgroup v2 of
// its own, so that it can be killed whole: a child that calls setsid leaves
// its process group, never its cgroup. It owns the discovery of the cgroup2
// hierarchy and of the daemon's own cgroup, and enables no controllers (it
// is for killing, not limiting, which keeps clear of cgroup v2's rule that a
// cgroup with controllers for its children holds no processes itself).
package cgroup

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/mount"
)

// Parent is the cgroup below which one daemon makes its staging cgroups:
// <the daemon's own cgroup>/rsa-stage-<hash of the owner>. Two daemons on one
// host (tests run several) have different owners and so never touch each
// other's children.
type Parent struct {
	Dir string
}

// Open finds (and creates) the Parent for owner, an identifier of the
// daemon instance such as its state directory.
func Open(owner string) (*Parent, error) {
	root, err := v2Mount()
	if err != nil {
		return nil, err
	}
	own, err := ownCgroup()
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(owner))
	dir := filepath.Join(root, own, fmt.Sprintf("rsa-stage-%x", sum[:6]))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("creating the staging cgroup %s: %w (rsa serve needs a writable cgroup v2 hierarchy; under systemd give its unit Delegate=yes)", dir, err)
	}
	return &Parent{Dir: dir}, nil
}

// v2Mount is where the cgroup2 hierarchy is mounted: /sys/fs/cgroup on a
// unified host, /sys/fs/cgroup/unified on a hybrid one.
func v2Mount() (string, error) {
	ms, err := mount.List()
	if err != nil {
		return "", fmt.Errorf("reading the mount table: %w", err)
	}
	for _, m := range ms {
		if m.FSType == "cgroup2" && m.Point != "" {
			return m.Point, nil
		}
	}
	return "", errors.New("no cgroup2 file system is mounted; RSA kills staging processes by cgroup and needs cgroup v2")
}

// ownCgroup is this process' cgroup v2 path ("0::PATH").
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			return filepath.Clean("/" + p), nil
		}
	}
	return "", errors.New("this process has no cgroup v2 path in /proc/self/cgroup")
}

// Group is one staging process tree's cgroup.
type Group struct {
	Dir string
	fd  int
}

// New makes the cgroup name below p; a leftover of that name is killed and
// replaced. The caller starts a process in it with CLONE_INTO_CGROUP
// (SysProcAttr.UseCgroupFD with FD) and ends with Close.
func (p *Parent) New(ctx context.Context, name string) (*Group, error) {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return nil, fmt.Errorf("bad cgroup name %q", name)
	}
	dir := filepath.Join(p.Dir, name)
	if _, err := os.Stat(dir); err == nil {
		old := &Group{Dir: dir, fd: -1}
		if err := old.remove(ctx); err != nil {
			return nil, err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating cgroup %s: %w", dir, err)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("opening cgroup %s: %w", dir, err)
	}
	return &Group{Dir: dir, fd: fd}, nil
}

// FD is the cgroup's directory descriptor, for CLONE_INTO_CGROUP.
func (g *Group) FD() int { return g.fd }

// Kill kills every process in the group at once (cgroup.kill) and waits
// until none is left.
func (g *Group) Kill(ctx context.Context) error {
	if err := os.WriteFile(filepath.Join(g.Dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("killing cgroup %s: %w", g.Dir, err)
	}
	for {
		populated, err := g.populated()
		if err != nil || !populated {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cgroup %s still has processes after SIGKILL: %w", g.Dir, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (g *Group) populated() (bool, error) {
	b, err := os.ReadFile(filepath.Join(g.Dir, "cgroup.events"))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return strings.Contains(string(b), "populated 1"), nil
}

// Close kills what is left in the group and removes it. It is safe to call
// more than once.
func (g *Group) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if g.fd >= 0 {
		unix.Close(g.fd)
		g.fd = -1
	}
	return g.remove(ctx)
}

func (g *Group) remove(ctx context.Context) error {
	if err := g.Kill(ctx); err != nil {
		return err
	}
	for {
		err := unix.Rmdir(g.Dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("removing cgroup %s: %w", g.Dir, err)
		}
		select { // the last process is being reaped
		case <-ctx.Done():
			return fmt.Errorf("removing cgroup %s: %w", g.Dir, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// KillAll kills and removes every staging cgroup below p: the leftovers of
// a previous run of the same daemon, whose processes no parent-death
// signal reached. It returns how many held processes.
func (p *Parent) KillAll(ctx context.Context) (int, error) {
	ents, err := os.ReadDir(p.Dir)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		g := &Group{Dir: filepath.Join(p.Dir, e.Name()), fd: -1}
		if busy, _ := g.populated(); busy {
			n++
		}
		if err := g.remove(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}
