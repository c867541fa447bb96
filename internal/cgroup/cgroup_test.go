package cgroup

import (
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// New writes each limit into the group before it returns, so the first
// process that enters is held to them: in cgroup v2, or where the host
// keeps a controller in a cgroup v1 hierarchy (a hybrid host), there.
func TestNewWritesLimits(t *testing.T) {
	p := testParent(t, "limits")
	type want struct{ ctrl, v2, v1, value string }
	for _, c := range []struct {
		name string
		l    Limits
		want []want
	}{
		{"all", Limits{Memory: 64 << 20, Pids: 100, CPU: 2000}, []want{
			{"memory", "memory.max", "memory.limit_in_bytes", "67108864"},
			{"memory", "memory.swap.max", "memory.memsw.limit_in_bytes", "0|67108864"},
			{"memory", "memory.oom.group", "", "1"},
			{"pids", "pids.max", "pids.max", "100"},
			{"cpu", "cpu.max", "cpu.cfs_quota_us", "200000 100000|200000"},
		}},
		{"half a CPU", Limits{CPU: 500}, []want{{"cpu", "cpu.max", "cpu.cfs_quota_us", "50000 100000|50000"}}},
		{"the smallest CPU share", Limits{CPU: MinCPU}, []want{{"cpu", "cpu.max", "cpu.cfs_quota_us", "1000 100000|1000"}}},
		{"memory alone", Limits{Memory: 1 << 30}, []want{{"memory", "memory.max", "memory.limit_in_bytes", "1073741824"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			requireLimits(t, p, c.l)
			g, err := p.New(context.Background(), "job-1-stage-in", c.l)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			for _, w := range c.want {
				// "V2|V1": the value as each version writes it.
				file, value := filepath.Join(g.Dir, w.v2), w.value
				if v2, v1, ok := strings.Cut(w.value, "|"); ok {
					value = v2
					if _, isV1 := g.v1[w.ctrl]; isV1 {
						value = v1
					}
				}
				if d, ok := g.v1[w.ctrl]; ok {
					if w.v1 == "" {
						continue // cgroup v1 has no such file (watchOOM stands in)
					}
					file = filepath.Join(d, w.v1)
				}
				b, err := os.ReadFile(file)
				if strings.Contains(file, "swap") || strings.Contains(file, "memsw") {
					if os.IsNotExist(err) {
						continue // a kernel without swap accounting
					}
				}
				if got := strings.TrimSpace(string(b)); err != nil || got != value {
					t.Errorf("%s: %q (%v), want %q", file, got, err, value)
				}
			}
		})
	}
}

// Bad limits are refused before anything is made.
func TestNewRefusesBadLimits(t *testing.T) {
	p := testParent(t, "bad")
	for _, l := range []Limits{{Memory: -1}, {Pids: -1}, {CPU: -1}, {CPU: MinCPU - 1}} {
		if g, err := p.New(context.Background(), "job-1-stage-in", l); err == nil {
			g.Close()
			t.Errorf("New with %+v succeeded", l)
		}
	}
}

// A cgroup that holds a process cannot hand a domain controller down
// (cgroup v2's no-internal-processes rule): delegate moves its processes
// into its rsa-leaf, then enables the controller there. This is what
// happens to rsa serve in its systemd unit's cgroup. The controller is
// memory where cgroup v2 has it; on a hybrid host, whose v2 hierarchy has
// no memory, another domain controller the root offers (hugetlb, io): the
// rule, and so what is checked, is the same for every domain controller.
func TestEnableMovesProcessesIntoLeaf(t *testing.T) {
	testutil.RequireRoot(t)
	root, err := v2Mount()
	if err != nil {
		t.Fatal(err)
	}
	own, err := ownCgroup()
	if err != nil {
		t.Fatal(err)
	}
	offered, err := readList(filepath.Join(root, "cgroup.controllers"))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc([]string{"memory", "hugetlb", "io", "rdma", "misc"}, func(c string) bool { return slices.Contains(offered, c) })
	if i < 0 {
		t.Fatalf("the cgroup v2 root offers no domain controller (%q): nothing to delegate", offered)
	}
	ctrl := []string{"memory", "hugetlb", "io", "rdma", "misc"}[i]
	// The scratch cgroup stands for a daemon's own: the test's own cgroup
	// must offer it the controller first.
	outer := &Parent{Dir: filepath.Join(root, own, "rsa-test-outer-"+strconv.Itoa(os.Getpid())), root: root}
	if err := os.Mkdir(outer.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(outer.Dir) })
	if err := outer.delegate(filepath.Join(root, own), []string{ctrl}); err != nil {
		t.Fatal(err)
	}
	if err := writeControl(outer.Dir, []string{ctrl}); err != nil {
		t.Fatal(err)
	}
	daemon := filepath.Join(outer.Dir, "daemon")
	if err := os.Mkdir(daemon, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(daemon) })
	fd, err := unix.Open(daemon, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	sleep := exec.Command("sleep", "300")
	sleep.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sleep.Process.Kill()
		sleep.Wait()
		os.Remove(filepath.Join(daemon, leafName))
	})
	p := &Parent{Dir: filepath.Join(daemon, "rsa-stage-test"), root: root}
	if err := os.Mkdir(p.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(p.Dir) })

	if err := writeControl(daemon, []string{ctrl}); !errors.Is(err, unix.EBUSY) {
		t.Fatalf("enabling %s in a cgroup with a process: %v, want EBUSY (the rule this test is about)", ctrl, err)
	}
	if err := p.delegate(daemon, []string{ctrl}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(sleep.Process.Pid) + "/cgroup")
	if got, _ := parseOwn(string(b)); got != strings.TrimPrefix(daemon, root) || !strings.Contains(string(b), "/"+leafName+"\n") {
		t.Errorf("the process that was in %s is in %q, want its %s", daemon, b, leafName)
	}
	if ctrls, _ := readList(filepath.Join(daemon, "cgroup.subtree_control")); !slices.Contains(ctrls, ctrl) {
		t.Errorf("%s hands down %q, want %s", daemon, ctrls, ctrl)
	}
	// Once enabled, the next delegate has nothing to do.
	if err := p.delegate(daemon, []string{ctrl}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{daemon, outer.Dir} {
		os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte("-"+ctrl), 0)
	}
}

// Release, for a daemon that stops while its cgroup lives on, leaves no
// staging process or cgroup behind, and no controller that would keep
// systemd from putting the next daemon's process into its own cgroup.
func TestRelease(t *testing.T) {
	testutil.RequireRoot(t)
	p, err := Open(t.Name() + strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(p.Dir) })
	g, err := p.New(context.Background(), "job-1-stage-in", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	sleep := exec.Command("sleep", "300")
	sleep.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.FD()}
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleep.Process.Kill()
	exited := make(chan struct{})
	go func() { sleep.Wait(); close(exited) }()
	if err := p.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-exited // killed, or this test times out
	if _, err := os.Stat(p.Dir); !os.IsNotExist(err) {
		t.Errorf("the staging cgroup %s is still there: %v", p.Dir, err)
	}
	if err := p.Release(context.Background()); err != nil {
		t.Errorf("a second Release: %v", err)
	}
	own := filepath.Dir(p.Dir)
	if own == p.root {
		return // the root's controllers are the system's, and stay
	}
	if ctrls, _ := readList(filepath.Join(own, "cgroup.subtree_control")); slices.ContainsFunc(ctrls, func(c string) bool { return c == "memory" || c == "pids" || c == "cpu" }) {
		// Another test's Parent may still use them.
		t.Logf("%s still hands down %q", own, ctrls)
	}
}

// A process in a leafName counts the cgroup above as its own, so that a
// daemon started there (or moved there by another) makes its staging
// cgroups where the others do.
func TestParseOwn(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"0::/system.slice/rsa.service\n", "/system.slice/rsa.service"},
		{"0::/system.slice/rsa.service/rsa-leaf\n", "/system.slice/rsa.service"},
		{"12:memory:/x\n0::/user.slice/session-1.scope\n", "/user.slice/session-1.scope"},
		{"0::/\n", "/"},
		{"0::/rsa-leaf\n", "/"},
	} {
		if got, err := parseOwn(c.in); err != nil || got != c.want {
			t.Errorf("parseOwn(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	if _, err := parseOwn("4:memory:/x\n"); err == nil {
		t.Error("no 0:: line: want an error")
	}
}

// A missing controller is an error that names it, says where it is
// missing and how to get it: from systemd (Delegate=yes) for a cgroup
// below the root, from the kernel for the root.
func TestControllerErrorSaysHow(t *testing.T) {
	p := testParent(t, "errors")
	unit := filepath.Join(filepath.Dir(p.Dir), "rsa-test-unit-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(unit, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(unit) })
	for _, c := range []struct {
		own  string
		want []string
	}{
		{unit, []string{"memory", unit, "Delegate=yes"}},
		{p.root, []string{"memory", "cgroup v2", p.root}},
	} {
		err := p.notOffered(c.own, []string{"memory"}, []string{"cpu", "pids"})
		var ce *ControllerError
		if !errors.As(err, &ce) || !slices.Equal(ce.Controllers, []string{"memory"}) {
			t.Errorf("%s: %v is not a ControllerError for memory", c.own, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", c.own, err, w)
			}
		}
	}
}

// testParent is a Parent of the test's own, removed after.
func testParent(t *testing.T, owner string) *Parent {
	t.Helper()
	testutil.RequireRoot(t)
	p, err := Open(t.Name() + owner + strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	// Release removes its directories in cgroup v1 hierarchies too.
	t.Cleanup(func() {
		if err := p.Release(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return p
}

// requireLimits stops a test of limits l on a host whose cgroups cannot
// enforce them: it fails under CI=true, where a skip would hide the gap,
// and is skipped elsewhere.
func requireLimits(t *testing.T, p *Parent, l Limits) {
	t.Helper()
	err := p.Enable(l)
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("this host cannot limit cgroups, which this test checks: %v", err)
	}
	t.Skipf("this host cannot limit cgroups: %v", err)
}

// On a hybrid host, the controllers each cgroup v1 hierarchy has, and
// this process' cgroup in it, name the directories a Parent's limits go
// to there; a hierarchy mounted twice, or a bind of a part of one, does
// not mislead it.
func TestParseV1(t *testing.T) {
	mountinfo := `25 1 0:23 / /sys/fs/cgroup rw - tmpfs tmpfs rw
26 25 0:24 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
27 25 0:25 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
28 25 0:26 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids
29 25 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw
30 1 0:25 /some/part /mnt/part rw - cgroup cgroup rw,memory
31 1 0:28 / /mnt/with\040blank rw - cgroup cgroup rw,name=systemd
`
	cgroups := "4:memory:/process_api/x\n3:pids:/\n2:cpu,cpuacct:/a\n1:name=systemd:/\n0::/\n"
	got := parseV1(mountinfo, cgroups, "rsa-stage-1")
	want := map[string]string{
		"memory": "/sys/fs/cgroup/memory/process_api/x/rsa-stage-1",
		"pids":   "/sys/fs/cgroup/pids/rsa-stage-1",
		"cpu":    "/sys/fs/cgroup/cpu,cpuacct/a/rsa-stage-1",
	}
	if !maps.Equal(got, want) {
		t.Errorf("parseV1 = %q, want %q", got, want)
	}
	if got := parseV1("29 25 0:27 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", "0::/\n", "x"); len(got) != 0 {
		t.Errorf("a pure cgroup v2 host: %q, want none", got)
	}
	if got := unescapeMountinfo(`/mnt/with\040blank`); got != "/mnt/with blank" {
		t.Errorf("unescapeMountinfo: %q", got)
	}
}
