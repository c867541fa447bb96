// Package cgroup puts each staging process tree of a job into a cgroup v2 of
// its own, so that it can be killed whole (a child that calls setsid leaves
// its process group, never its cgroup) and held to limits of memory,
// processes and CPU time. It owns the discovery of the cgroup2 hierarchy and
// of the daemon's own cgroup, and the layout below it:
//
//	OWN/                     the daemon's cgroup (its systemd unit's, with
//	                         Delegate=yes); hands the controllers down
//	OWN/rsa-leaf/            the processes that were in OWN, the daemon
//	                         among them, once a limit needed a controller
//	OWN/rsa-stage-HASH/      a Parent: one per daemon, no process of its own
//	OWN/rsa-stage-HASH/NAME  a Group: one stage's processes and limits
//
// cgroup v2 lets a cgroup other than the root hand memory or another domain
// controller to its children only while it holds no process itself (the
// "no internal processes" rule). So to limit stages, OWN may hold no
// process, and the daemon moves its own process, and whatever else is in
// OWN, into OWN/rsa-leaf; the systemd documentation asks delegated services
// to do exactly that. That happens only when a limit needs a controller that
// OWN does not already hand down, never on a host whose limits are all 0.
//
// A hybrid host keeps some controllers in cgroup v1 hierarchies, where
// cgroup v2 cannot have them. A limit of such a controller is set in a
// directory of the same names in its v1 hierarchy, below the daemon's
// cgroup there; the thread that starts a stage enters it first, since
// cgroup v1 has no CLONE_INTO_CGROUP, and the stage inherits it. The stage
// is still killed by its cgroup v2 group. A memory limit there kills the
// whole stage as memory.oom.group does in v2 (Group.watchOOM).
package cgroup

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
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
	// root is where the cgroup2 hierarchy is mounted: a controller its
	// root does not offer is one the kernel keeps from cgroup v2.
	root string
	// v1 are, on a hybrid host, the directories that stand for Dir in the
	// cgroup v1 hierarchies of the controllers the kernel binds there
	// (memory, pids, cpu): <hierarchy>/<the daemon's cgroup in
	// it>/rsa-stage-HASH. A limit of such a controller is set there; the
	// processes are still killed by their cgroup v2 group.
	v1 map[string]string
}

// leafName is the cgroup below the daemon's own into which the processes
// of the daemon's own cgroup move when it must hand controllers down (see
// the package comment). A process started there, or moved there by another
// daemon, still counts the cgroup above as its own.
const leafName = "rsa-leaf"

// Open finds (and creates) the Parent for owner, an identifier of the
// daemon instance such as its state directory. It enables no controller:
// New and Enable do, for the limits they are given.
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
	name := fmt.Sprintf("rsa-stage-%x", sum[:6])
	dir := filepath.Join(root, own, name)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("creating the staging cgroup %s: %w (rsa serve needs a writable cgroup v2 hierarchy; under systemd give its unit Delegate=yes)", dir, err)
	}
	v1, err := v1Dirs(name)
	if err != nil {
		return nil, err
	}
	return &Parent{Dir: dir, root: root, v1: v1}, nil
}

// v1Controllers are the controllers a Limits needs that a hybrid host may
// keep in cgroup v1 hierarchies.
var v1Controllers = []string{"cpu", "memory", "pids"}

// v1Dirs finds, for each of v1Controllers that a cgroup v1 hierarchy is
// mounted with, the directory name stands for in it: below this process'
// own cgroup of that hierarchy. None is created here.
func v1Dirs(name string) (map[string]string, error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	return parseV1(string(mi), string(own), name), nil
}

// parseV1 is v1Dirs from the text of /proc/self/mountinfo and
// /proc/self/cgroup. Only root mounts of a hierarchy (mountinfo's root
// "/") count: a bind of a part of one says nothing of the rest.
func parseV1(mountinfo, cgroups, name string) map[string]string {
	points := map[string]string{} // controller -> mount point
	for _, l := range strings.Split(mountinfo, "\n") {
		pre, post, ok := strings.Cut(l, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 || g[0] != "cgroup" || f[3] != "/" {
			continue
		}
		for _, o := range strings.Split(g[2], ",") {
			if slices.Contains(v1Controllers, o) {
				if _, dup := points[o]; !dup {
					points[o] = unescapeMountinfo(f[4])
				}
			}
		}
	}
	dirs := map[string]string{}
	for _, l := range strings.Split(cgroups, "\n") {
		f := strings.SplitN(l, ":", 3)
		if len(f) != 3 || f[0] == "0" {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if pt, ok := points[c]; ok {
				dirs[c] = filepath.Join(pt, filepath.Clean("/"+f[2]), name)
			}
		}
	}
	return dirs
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a blank).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// split parts l into the limits set through cgroup v2 and those set
// through the cgroup v1 hierarchies of p.v1: a controller the cgroup v2
// root does not offer, but a v1 hierarchy has, goes to v1.
func (p *Parent) split(l Limits) (v2, v1 Limits, err error) {
	v2 = l
	if len(p.v1) == 0 {
		return v2, Limits{}, nil
	}
	offered, err := readList(filepath.Join(p.root, "cgroup.controllers"))
	if err != nil {
		return Limits{}, Limits{}, err
	}
	for _, c := range l.controllers() {
		if _, ok := p.v1[c]; !ok || slices.Contains(offered, c) {
			continue
		}
		switch c {
		case "cpu":
			v2.CPU, v1.CPU = 0, l.CPU
		case "memory":
			v2.Memory, v1.Memory = 0, l.Memory
		case "pids":
			v2.Pids, v1.Pids = 0, l.Pids
		}
	}
	return v2, v1, nil
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

// ownCgroup is this process' cgroup v2 path.
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	return parseOwn(string(b))
}

// parseOwn finds the cgroup v2 path ("0::PATH") in the text of a
// /proc/PID/cgroup: the cgroup above it if it is a leafName, where this
// process or another daemon moved the processes of the cgroup above.
func parseOwn(s string) (string, error) {
	for _, l := range strings.Split(s, "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			p = filepath.Clean("/" + p)
			if filepath.Base(p) == leafName {
				p = filepath.Dir(p)
			}
			return p, nil
		}
	}
	return "", errors.New("this process has no cgroup v2 path in /proc/self/cgroup")
}

// Limits bound what the processes of one Group may take together. A field
// of 0 sets no limit of its kind and needs no controller.
type Limits struct {
	// Memory is memory.max in bytes: past it the group's own pages are
	// reclaimed, and what cannot be is met by the OOM killer inside the
	// group, never outside it. The group may not swap (memory.swap.max 0):
	// it would push other jobs' pages out instead.
	Memory int64
	// Pids is pids.max: processes and threads at once.
	Pids int64
	// CPU is CPU time in thousandths of a CPU (1000: one CPU's worth),
	// cpu.max's quota over a period of CPUPeriod microseconds.
	CPU int64
}

// CPUPeriod is the period of cpu.max in microseconds; a Limits.CPU of 1000
// is a quota of CPUPeriod. The kernel's smallest quota, 1000 µs, is
// MinCPU.
const (
	CPUPeriod = 100000
	MinCPU    = 1000 * 1000 / CPUPeriod
)

// controllers are those l needs, in the order cgroup.controllers lists them.
func (l Limits) controllers() []string {
	var c []string
	if l.CPU > 0 {
		c = append(c, "cpu")
	}
	if l.Memory > 0 {
		c = append(c, "memory")
	}
	if l.Pids > 0 {
		c = append(c, "pids")
	}
	return c
}

// Enable makes the controllers that l needs available to p's groups: it
// enables them in p's cgroup.subtree_control and, where the daemon's own
// cgroup does not yet hand them down to p, there too, after moving that
// cgroup's processes into its leafName. New calls it; a daemon calls it at
// its start as well, so that a host that cannot hold stages to the
// configured limits stops it there and then rather than failing every
// stage. A controller that the kernel or the cgroups above do not offer is
// an error naming it, never a stage without its limit.
func (p *Parent) Enable(l Limits) error {
	l, lv1, err := p.split(l)
	if err != nil {
		return err
	}
	for _, c := range lv1.controllers() {
		if err := os.Mkdir(p.v1[c], 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("creating the staging cgroup %s (cgroup v1, for the %s limit): %w", p.v1[c], c, err)
		}
	}
	need := l.controllers()
	if len(need) == 0 {
		return nil
	}
	have, err := readList(filepath.Join(p.Dir, "cgroup.subtree_control"))
	if err != nil {
		return err
	}
	missing := without(need, have)
	if len(missing) == 0 {
		return nil
	}
	offered, err := readList(filepath.Join(p.Dir, "cgroup.controllers"))
	if err != nil {
		return err
	}
	if lack := without(missing, offered); len(lack) > 0 {
		if err := p.delegate(filepath.Dir(p.Dir), lack); err != nil {
			return err
		}
	}
	// p holds no process of its own (only its groups do), so the rule
	// that kept the daemon's cgroup from this write does not apply.
	if err := writeControl(p.Dir, missing); err != nil {
		return fmt.Errorf("enabling the %s controller(s) for the staging cgroups below %s: %w", strings.Join(missing, ", "), p.Dir, err)
	}
	return nil
}

// delegate enables ctrls in own's cgroup.subtree_control, so that its
// children (p among them) are offered them. For a domain controller
// (memory; pids and cpu are threaded ones, which the rule spares) a process
// in own makes the kernel refuse (EBUSY) unless own is the root: every
// process of own then moves into own/leafName and the write is tried again,
// a few times, as a process still in own may fork meanwhile.
func (p *Parent) delegate(own string, ctrls []string) error {
	offered, err := readList(filepath.Join(own, "cgroup.controllers"))
	if err != nil {
		return err
	}
	if lack := without(ctrls, offered); len(lack) > 0 {
		return p.notOffered(own, lack, offered)
	}
	leaf := filepath.Join(own, leafName)
	for try := 0; ; try++ {
		err := writeControl(own, ctrls)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, unix.EBUSY):
			return fmt.Errorf("enabling the %s controller(s) in %s, for the staging cgroups below it: %w", strings.Join(ctrls, ", "), own, err)
		case try == 10:
			return fmt.Errorf("enabling the %s controller(s) in %s, for the staging cgroups below it: %w: processes keep appearing in it although they were moved into %s ten times; run rsa in a cgroup of its own (a systemd unit with Delegate=yes)",
				strings.Join(ctrls, ", "), own, err, leaf)
		}
		if err := evacuate(own, leaf); err != nil {
			return err
		}
		time.Sleep(time.Duration(try) * 10 * time.Millisecond)
	}
}

// ControllerError is the error for controllers that a Parent's groups
// cannot be given, saying why and what to do.
type ControllerError struct {
	// Controllers are the missing ones: "cpu", "memory", "pids".
	Controllers []string
	msg         string
}

func (e *ControllerError) Error() string { return e.msg }

// notOffered is the error for controllers that own is not offered.
func (p *Parent) notOffered(own string, lack, offered []string) error {
	what := strings.Join(lack, ", ")
	has := "none"
	if len(offered) > 0 {
		has = strings.Join(offered, " ")
	}
	if _, err := os.Stat(filepath.Join(own, "cgroup.type")); err == nil {
		// Not the root cgroup, which alone has no type: a unit's, a
		// session's, or a container's (its cgroup namespace's root).
		return &ControllerError{Controllers: lack, msg: fmt.Sprintf("the cgroup %s that rsa runs in is not given the %s controller(s), which the staging limits need (its cgroup.controllers: %s): under systemd give the unit Delegate=yes (contrib/systemd has it); elsewhere enable them in the cgroup.subtree_control of every cgroup above it",
			own, what, has)}
	}
	var v1 []string
	for _, c := range lack {
		if boundToV1(c) {
			v1 = append(v1, c)
		}
	}
	if len(v1) > 0 {
		return &ControllerError{Controllers: lack, msg: fmt.Sprintf("the kernel does not offer the %s controller(s) on its cgroup v2 hierarchy (%s, whose cgroup.controllers: %s), which the staging limits need: this host binds %s to cgroup v1 hierarchies (a hybrid host, see /proc/cgroups); boot it with cgroup v2 alone (systemd.unified_cgroup_hierarchy=1 on the kernel command line)",
			what, p.root, has, strings.Join(v1, ", "))}
	}
	return &ControllerError{Controllers: lack, msg: fmt.Sprintf("the kernel does not offer the %s controller(s) on its cgroup v2 hierarchy (%s, whose cgroup.controllers: %s), which the staging limits need: use a kernel built with them, not booted with cgroup_disable=",
		what, p.root, has)}
}

// boundToV1 reports whether /proc/cgroups shows controller c in a cgroup
// v1 hierarchy (a hierarchy id other than 0), where cgroup v2 cannot have it.
func boundToV1(c string) bool {
	b, err := os.ReadFile("/proc/cgroups")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == c {
			return f[1] != "0"
		}
	}
	return false
}

// evacuate moves every process of own into leaf, created if missing. A
// process that exits meanwhile is no matter.
func evacuate(own, leaf string) error {
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating %s for the processes of %s: %w", leaf, own, err)
	}
	procs, err := readList(filepath.Join(own, "cgroup.procs"))
	if err != nil {
		return err
	}
	for _, pid := range procs {
		err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(pid), 0)
		if err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("moving process %s from %s into %s, so that %s may hand controllers down: %w", pid, own, leaf, own, err)
		}
	}
	return nil
}

// writeControl enables ctrls in dir's cgroup.subtree_control.
func writeControl(dir string, ctrls []string) error {
	return os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+strings.Join(ctrls, " +")), 0)
}

// readList reads a cgroup file of words separated by blanks or lines.
func readList(file string) ([]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(b)), nil
}

// without is a less the words in b.
func without(a, b []string) []string {
	var out []string
	for _, w := range a {
		if !slices.Contains(b, w) {
			out = append(out, w)
		}
	}
	return out
}

// Group is one staging process tree's cgroup.
type Group struct {
	Dir string
	fd  int
	// v1 are its directories in cgroup v1 hierarchies, by controller
	// (Parent.v1): the thread that starts its process enters them
	// (EnterThread), and the process inherits them.
	v1 map[string]string
	// oom, for a memory limit in cgroup v1, is the eventfd the kernel
	// signals when the group meets its limit (watchOOM); ooms counts
	// those times.
	oom  *os.File
	ooms atomic.Int64
}

// New makes the cgroup name below p, held to l; a leftover of that name is
// killed and replaced. The limits are written before New returns, and so
// before any process can enter. The caller starts a process in it with
// CLONE_INTO_CGROUP (SysProcAttr.UseCgroupFD with FD) and ends with Close.
func (p *Parent) New(ctx context.Context, name string, l Limits) (*Group, error) {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return nil, fmt.Errorf("bad cgroup name %q", name)
	}
	if l.Memory < 0 || l.Pids < 0 || l.CPU < 0 || (l.CPU > 0 && l.CPU < MinCPU) {
		return nil, fmt.Errorf("bad limits %+v: none may be negative, and CPU is 0 or at least %d thousandths", l, MinCPU)
	}
	if err := p.Enable(l); err != nil {
		return nil, err
	}
	lv2, lv1, err := p.split(l)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(p.Dir, name)
	g := &Group{Dir: dir, fd: -1, v1: map[string]string{}}
	for _, c := range lv1.controllers() {
		g.v1[c] = filepath.Join(p.v1[c], name)
	}
	if _, err := os.Stat(dir); err == nil || g.hasV1() {
		if err := g.remove(ctx); err != nil {
			return nil, err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating cgroup %s: %w", dir, err)
	}
	if err := setLimits(dir, lv2); err != nil {
		g.remove(ctx)
		return nil, err
	}
	for c, d := range g.v1 {
		if err := os.Mkdir(d, 0o755); err != nil {
			g.remove(ctx)
			return nil, fmt.Errorf("creating cgroup %s (cgroup v1, for the %s limit): %w", d, c, err)
		}
	}
	if err := setV1Limits(g.v1, lv1); err != nil {
		g.remove(ctx)
		return nil, err
	}
	if lv1.Memory > 0 {
		if err := g.watchOOM(); err != nil {
			g.remove(ctx)
			return nil, err
		}
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		g.remove(ctx)
		return nil, fmt.Errorf("opening cgroup %s: %w", dir, err)
	}
	g.fd = fd
	return g, nil
}

// hasV1 reports whether any of g's cgroup v1 directories exists (a
// leftover of a stage of the same name).
func (g *Group) hasV1() bool {
	for _, d := range g.v1 {
		if _, err := os.Stat(d); err == nil {
			return true
		}
	}
	return false
}

// setV1Limits writes l into the fresh cgroup v1 directories dirs.
func setV1Limits(dirs map[string]string, l Limits) error {
	type setting struct{ dir, file, value string }
	var set []setting
	if l.Memory > 0 {
		v := strconv.FormatInt(l.Memory, 10)
		set = append(set, setting{dirs["memory"], "memory.limit_in_bytes", v})
		// Memory and swap together no more than memory alone: no swap,
		// as with memory.swap.max 0 (missing without swap accounting).
		if _, err := os.Stat(filepath.Join(dirs["memory"], "memory.memsw.limit_in_bytes")); err == nil {
			set = append(set, setting{dirs["memory"], "memory.memsw.limit_in_bytes", v})
		}
	}
	if l.Pids > 0 {
		set = append(set, setting{dirs["pids"], "pids.max", strconv.FormatInt(l.Pids, 10)})
	}
	if l.CPU > 0 {
		set = append(set, setting{dirs["cpu"], "cpu.cfs_period_us", strconv.Itoa(CPUPeriod)},
			setting{dirs["cpu"], "cpu.cfs_quota_us", strconv.FormatInt(l.CPU*CPUPeriod/1000, 10)})
	}
	for _, s := range set {
		if err := os.WriteFile(filepath.Join(s.dir, s.file), []byte(s.value), 0); err != nil {
			return fmt.Errorf("limiting cgroup %s: writing %q to %s: %w", s.dir, s.value, s.file, err)
		}
	}
	return nil
}

// watchOOM gives a memory limit in cgroup v1 what memory.oom.group gives
// one in cgroup v2: a stage that meets it is killed whole, never only the
// process the OOM killer would pick (a pipeline's stage would go on
// without it, as if nothing had been lost). The kernel's OOM killer is
// off for the group (oom_kill_disable): a process that needs memory past
// the limit waits instead, and the kernel signals an eventfd, on which
// the whole group is killed. The kernel signals the eventfd too when the
// group's directory is removed, which ends the watch.
func (g *Group) watchOOM() error {
	d := g.v1["memory"]
	ctl := filepath.Join(d, "memory.oom_control")
	if err := os.WriteFile(ctl, []byte("1"), 0); err != nil {
		return fmt.Errorf("limiting cgroup %s: turning its OOM killer off for a kill of the whole group: %w", d, err)
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return fmt.Errorf("watching cgroup %s for its memory limit: %w", d, err)
	}
	ofd, err := unix.Open(ctl, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(efd)
		return fmt.Errorf("watching cgroup %s for its memory limit: %w", d, err)
	}
	err = os.WriteFile(filepath.Join(d, "cgroup.event_control"), []byte(fmt.Sprintf("%d %d", efd, ofd)), 0)
	unix.Close(ofd) // the registration holds what it needs
	if err != nil {
		unix.Close(efd)
		return fmt.Errorf("watching cgroup %s for its memory limit (cgroup.event_control): %w", d, err)
	}
	f := os.NewFile(uintptr(efd), "oom eventfd of "+d)
	g.oom = f
	go func() {
		buf := make([]byte, 8)
		for {
			if _, err := f.Read(buf); err != nil {
				return // closed
			}
			b, err := os.ReadFile(ctl)
			if err != nil {
				return // the group was removed
			}
			if strings.Contains(string(b), "under_oom 1") {
				g.ooms.Add(1)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				g.Kill(ctx)
				cancel()
			}
		}
	}()
	return nil
}

// EnterThread moves the calling thread into g's cgroup v1 directories, so
// that a process it forks starts there (cgroup v1 has no
// CLONE_INTO_CGROUP; a v1 hierarchy places threads one by one). The caller
// locks its goroutine to the thread (runtime.LockOSThread) and lets the
// thread end with it, never running another goroutine there. Nothing to
// do where g has no cgroup v1 directory.
func (g *Group) EnterThread() error {
	tid := strconv.Itoa(unix.Gettid())
	for c, d := range g.v1 {
		if err := os.WriteFile(filepath.Join(d, "tasks"), []byte(tid), 0); err != nil {
			return fmt.Errorf("entering cgroup %s (cgroup v1, for the %s limit): %w", d, c, err)
		}
	}
	return nil
}

// setLimits writes l into the fresh cgroup dir.
func setLimits(dir string, l Limits) error {
	type setting struct{ file, value string }
	var set []setting
	if l.Memory > 0 {
		set = append(set, setting{"memory.max", strconv.FormatInt(l.Memory, 10)})
		// An OOM kill takes the whole group, not one of its processes:
		// a stage program whose cp was killed must not go on as if
		// nothing had been lost.
		set = append(set, setting{"memory.oom.group", "1"})
		// memory.swap.max is missing where the kernel has no swap
		// accounting; such a kernel swaps no cgroup's pages apart.
		if _, err := os.Stat(filepath.Join(dir, "memory.swap.max")); err == nil {
			set = append(set, setting{"memory.swap.max", "0"})
		}
	}
	if l.Pids > 0 {
		set = append(set, setting{"pids.max", strconv.FormatInt(l.Pids, 10)})
	}
	if l.CPU > 0 {
		set = append(set, setting{"cpu.max", fmt.Sprintf("%d %d", l.CPU*CPUPeriod/1000, CPUPeriod)})
	}
	for _, s := range set {
		if err := os.WriteFile(filepath.Join(dir, s.file), []byte(s.value), 0); err != nil {
			return fmt.Errorf("limiting cgroup %s: writing %q to %s: %w", dir, s.value, s.file, err)
		}
	}
	return nil
}

// FD is the cgroup's directory descriptor, for CLONE_INTO_CGROUP.
func (g *Group) FD() int { return g.fd }

// Events counts what the kernel did to a group's processes at its limits.
type Events struct {
	// OOMKills is how many processes the OOM killer took for passing
	// Limits.Memory (memory.events oom_kill).
	OOMKills int64
	// PidsMax is how many forks failed at Limits.Pids (pids.events max).
	PidsMax int64
}

// Events reads the group's Events; a count whose file is missing (its
// controller is not enabled) is 0.
func (g *Group) Events() Events {
	e := Events{
		OOMKills: keyed(filepath.Join(g.Dir, "memory.events"), "oom_kill"),
		PidsMax:  keyed(filepath.Join(g.Dir, "pids.events"), "max"),
	}
	if _, ok := g.v1["memory"]; ok {
		e.OOMKills = g.ooms.Load()
	}
	if d, ok := g.v1["pids"]; ok {
		e.PidsMax = keyed(filepath.Join(d, "pids.events"), "max")
	}
	return e
}

// keyed is the value of key in a flat keyed cgroup file ("key value"
// lines), 0 if there is none.
func keyed(file, key string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+" "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

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
	err := g.remove(ctx)
	if g.oom != nil {
		g.oom.Close()
		g.oom = nil
	}
	return err
}

func (g *Group) remove(ctx context.Context) error {
	if err := g.Kill(ctx); err != nil {
		return err
	}
	var errs []error
	for _, d := range append([]string{g.Dir}, slices.Sorted(maps.Values(g.v1))...) {
		errs = append(errs, rmdirWhenEmpty(ctx, d))
	}
	return errors.Join(errs...)
}

// rmdirWhenEmpty removes the cgroup directory dir, waiting while it is busy:
// its last process being reaped or, in a v1 hierarchy, the thread that
// started the stage ending.
func rmdirWhenEmpty(ctx context.Context, dir string) error {
	for {
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("removing cgroup %s: %w", dir, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("removing cgroup %s: %w", dir, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Release kills and removes p's groups and p, and disables in the daemon's
// own cgroup the controllers Enable enabled there, unless another Parent
// there still has them (the kernel refuses then, and they stay). It is for a
// daemon that stops while its cgroup lives on, as rsa agent's does under
// systemd (KillMode=process keeps the Gluster clients it mounted): systemd
// puts the next start's process into that cgroup, which cgroup v2 refuses
// while the cgroup hands domain controllers down, and the unit would fail
// to start (status 219/CGROUP). The root cgroup is left as it is.
func (p *Parent) Release(ctx context.Context) error {
	if _, err := p.KillAll(ctx); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, d := range append([]string{p.Dir}, slices.Sorted(maps.Values(p.v1))...) {
		if err := unix.Rmdir(d); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("removing the staging cgroup %s: %w", d, err)
		}
	}
	own := filepath.Dir(p.Dir)
	if own == p.root {
		return nil
	}
	have, err := readList(filepath.Join(own, "cgroup.subtree_control"))
	if err != nil {
		return err
	}
	var off []string
	for _, c := range have {
		if c == "cpu" || c == "memory" || c == "pids" {
			off = append(off, "-"+c)
		}
	}
	if len(off) == 0 {
		return nil
	}
	err = os.WriteFile(filepath.Join(own, "cgroup.subtree_control"), []byte(strings.Join(off, " ")), 0)
	if err != nil && !errors.Is(err, unix.EBUSY) {
		return fmt.Errorf("disabling the staging controllers in %s: %w", own, err)
	}
	return nil
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
		g := &Group{Dir: filepath.Join(p.Dir, e.Name()), fd: -1, v1: map[string]string{}}
		for c, d := range p.v1 {
			g.v1[c] = filepath.Join(d, e.Name())
		}
		if busy, _ := g.populated(); busy {
			n++
		}
		if err := g.remove(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	// A stage's cgroup v1 directories whose cgroup v2 group is gone
	// already hold no process: the kill went by cgroup v2.
	for _, d := range p.v1 {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue // not made yet: no stage had a limit there
		}
		for _, e := range ents {
			if e.IsDir() {
				errs = append(errs, rmdirWhenEmpty(ctx, filepath.Join(d, e.Name())))
			}
		}
	}
	return n, errors.Join(errs...)
}
