package stage

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/cgroup"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// A stage program runs with no_new_privs (docs/security.md, "Staging
// cannot escape"), and with limits.stage_network "none" in a network
// namespace of its own, where it reaches no port of the host (glusterd's,
// the bricks'), neither on loopback nor on the host's other addresses.
//
// Both networks are checked, with the same probe: under "host" the probe
// must reach the test's listeners, which proves that the probe itself
// works (bash's /dev/tcp, the port, the address), so that its failure
// under "none" is the namespace's doing and not a broken probe's.
func TestRunnerConfinesStages(t *testing.T) {
	sd := newStageDirs(t)
	addrs := listenAll(t)
	var probe strings.Builder
	probe.WriteString("#!/bin/bash\ngrep '^NoNewPrivs:' /proc/self/status > \"$1/nnp\"\n")
	for i, a := range addrs {
		host, port, _ := net.SplitHostPort(a.addr)
		// In a subshell: a failed redirection of exec ends the shell.
		probe.WriteString("if timeout 10 bash -c 'exec 3<>/dev/tcp/" + host + "/" + port + "' 2>/dev/null; then echo " + strconv.Itoa(i) + " reached; else echo " + strconv.Itoa(i) + " refused; fi >> \"$1/tcp\"\n")
	}
	prog := filepath.Join(sd.dir, "probe.sh")
	if err := os.WriteFile(prog, []byte(probe.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		network Network
		reach   bool
	}{
		{"default is none", "", false},
		{"none", NetworkNone, false},
		{"host", NetworkHost, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, a := range addrs {
				a.accepted.Store(0)
			}
			os.Remove(filepath.Join(sd.ram, "tcp"))
			r := &Runner{Self: "/nonexistent", Cgroups: testCgroups(t), Network: c.network}
			var log bytes.Buffer
			if err := r.Run(context.Background(), Task{Job: 3, Phase: "stage-in", User: sd.who, Program: prog, Ramdisk: sd.ram, Data: sd.data, Log: &log}); err != nil {
				t.Fatalf("%v\n%s", err, log.String())
			}
			if b, _ := os.ReadFile(filepath.Join(sd.ram, "nnp")); string(b) != "NoNewPrivs:\t1\n" {
				t.Errorf("the stage program's /proc/self/status says %q, want no_new_privs set (NoNewPrivs:\\t1)", b)
			}
			b, _ := os.ReadFile(filepath.Join(sd.ram, "tcp"))
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			if len(lines) != len(addrs) {
				t.Fatalf("the probe wrote %q, want a line for each of %d addresses", b, len(addrs))
			}
			for i, a := range addrs {
				reached := lines[i] == strconv.Itoa(i)+" reached"
				if reached != c.reach {
					t.Errorf("network %q: the stage program connecting to %s (%s): %q, want reached %v", c.network, a.addr, a.what, lines[i], c.reach)
				}
				// The kernel completes a connection before the listener's
				// goroutine accepts it: give it a moment to count.
				for wait := 0; c.reach && a.accepted.Load() == 0 && wait < 500; wait++ {
					time.Sleep(10 * time.Millisecond)
				}
				if got := a.accepted.Load() > 0; got != c.reach {
					t.Errorf("network %q: the test's listener on %s accepted a connection: %v, want %v", c.network, a.addr, got, c.reach)
				}
			}
		})
	}
}

// listener is a TCP port of the test's on one of the host's addresses.
type listener struct {
	addr, what string
	accepted   *atomic.Int64
}

// listenAll listens on 127.0.0.1 and on the host's first global IPv4
// address, if it has one, and counts the connections each accepts. Only
// addresses of this host are used: no traffic leaves it.
func listenAll(t *testing.T) []listener {
	t.Helper()
	hosts := []struct{ ip, what string }{{"127.0.0.1", "loopback"}}
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range ifaddrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			hosts = append(hosts, struct{ ip, what string }{n.IP.String(), "a non-loopback address of the host"})
			break
		}
	}
	var ls []listener
	for _, h := range hosts {
		ln, err := net.Listen("tcp4", net.JoinHostPort(h.ip, "0"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		l := listener{addr: ln.Addr().String(), what: h.what, accepted: new(atomic.Int64)}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				l.accepted.Add(1)
				c.Close()
			}
		}()
		ls = append(ls, l)
	}
	return ls
}

// limitsScript is a stage program that writes into "$1/limits" the limits
// its own cgroups hold it to, read where the kernel keeps them: cgroup v2
// at v2root, or a cgroup v1 hierarchy for a controller a hybrid host binds
// there. "swap=none" says it may not swap (memory.swap.max 0; in cgroup v1
// memory and swap together no more than memory alone).
func limitsScript(v2root string) string {
	return `#!/bin/bash
cg=` + v2root + `$(sed -n 's/^0:://p' /proc/self/cgroup)
v1() { # v1 CONTROLLER FILE: FILE of this process' cgroup in the v1 hierarchy of CONTROLLER
	local path mnt
	path=$(awk -F: -v c="$1" '$1 != 0 && ("," $2 ",") ~ ("," c ",") {print $3}' /proc/self/cgroup)
	mnt=$(awk -v c="$1" '/ - cgroup / && $4 == "/" {n = split($NF, o, ","); for (i = 1; i <= n; i++) if (o[i] == c) print $5}' /proc/self/mountinfo)
	if [ -n "$path" ] && [ -n "$mnt" ] && [ -e "$mnt$path/$2" ]; then cat "$mnt$path/$2"; else echo missing; fi
}
if [ -e "$cg/memory.max" ]; then
	mem=$(cat "$cg/memory.max")
	swap=$(cat "$cg/memory.swap.max" 2>/dev/null || echo missing)
	[ "$swap" = 0 ] && swap=none
else
	mem=$(v1 memory memory.limit_in_bytes)
	swap=$(v1 memory memory.memsw.limit_in_bytes)
	[ "$swap" = "$mem" ] && swap=none
fi
if [ -e "$cg/pids.max" ]; then pids=$(cat "$cg/pids.max"); else pids=$(v1 pids pids.max); fi
if [ -e "$cg/cpu.max" ]; then cpu=$(cat "$cg/cpu.max"); else cpu="$(v1 cpu cpu.cfs_quota_us) $(v1 cpu cpu.cfs_period_us)"; fi
printf 'memory=%s\nswap=%s\npids=%s\ncpu=%s\n' "$mem" "$swap" "$pids" "$cpu" > "$1/limits"
`
}

// Each stage's cgroup is held to limits.stage_memory (without swap),
// stage_pids and stage_cpu, as the stage program itself finds them from
// its /proc/self/cgroup.
func TestRunnerLimitsStages(t *testing.T) {
	sd := newStageDirs(t)
	lim := cgroup.Limits{Memory: 96 << 20, Pids: 64, CPU: 500}
	r := &Runner{Self: "/nonexistent", Cgroups: testCgroups(t), Limits: lim}
	requireLimits(t, r.Cgroups, lim)
	prog := filepath.Join(sd.dir, "limits.sh")
	if err := os.WriteFile(prog, []byte(limitsScript(cgroupRoot(t))), 0o755); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if err := r.Run(context.Background(), Task{Job: 4, Phase: "stage-in", User: sd.who, Program: prog, Ramdisk: sd.ram, Data: sd.data, Log: &log}); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	got := map[string]string{}
	f, err := os.Open(filepath.Join(sd.ram, "limits"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); {
		k, v, _ := strings.Cut(sc.Text(), "=")
		got[k] = v
	}
	// A tmpfs RAMDISK's size is allowed beside the limit (ramdiskCharge);
	// where the test's directory is on one, that is its size.
	memMax := strconv.FormatInt(96<<20+ramdiskCharge(sd.ram), 10)
	want := map[string]string{"memory": memMax, "pids": "64", "cpu": "50000 100000", "swap": "none"}
	if got["swap"] == "missing" {
		want["swap"] = "missing" // no swap accounting in this kernel: nothing to forbid
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("the stage's %s is %q, want %q", k, got[k], v)
		}
	}
}

// A stage that takes more memory than limits.stage_memory is killed by the
// OOM killer inside its own cgroup, whole, and fails saying so; nothing
// outside it (this test's process) is touched.
func TestRunnerOOMKillsOnlyTheStage(t *testing.T) {
	sd := newStageDirs(t)
	lim := cgroup.Limits{Memory: 64 << 20}
	r := &Runner{Self: "/nonexistent", Cgroups: testCgroups(t), Limits: lim}
	requireLimits(t, r.Cgroups, lim)
	// A RAMDISK of its own, so that what is allowed for it beside the
	// limit is known: 32M.
	ram := mountTmpfs(t, sd, "ram32", "32M")
	prog := filepath.Join(sd.dir, "hog.sh")
	// tail holds a line until its end, and /dev/zero has no newline: it
	// grows to 400M, past the 64M and the RAMDISK's 32M.
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho hogging >&2\nhead -c 400M /dev/zero | tail\necho survived > \"$1/survived\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A bystander outside the stage's cgroup, as a brick or glusterd
	// would be.
	bystander := exec.Command("sleep", "300")
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { bystander.Process.Kill(); bystander.Wait() }()
	var log bytes.Buffer
	err := r.Run(context.Background(), Task{Job: 5, Phase: "stage-in", User: sd.who, Program: prog, Ramdisk: ram, Data: sd.data, Log: &log})
	if err == nil || !strings.Contains(err.Error(), "limits.stage_memory") || !strings.Contains(err.Error(), "64.0M") {
		_, survived := os.Stat(filepath.Join(ram, "survived"))
		t.Fatalf("a stage past its memory limit: %v, want a failure naming limits.stage_memory and its 64.0M (the program went on: %v; its output:\n%s)", err, survived == nil, log.String())
	}
	t.Log(err)
	if gone(bystander.Process.Pid, 100*time.Millisecond) {
		t.Error("a process outside the stage died with it")
	}
	if _, err := os.Stat(filepath.Join(ram, "survived")); err == nil {
		t.Error("the stage program went on after the OOM kill of its pipeline: the whole cgroup should go")
	}
	ents, _ := os.ReadDir(r.Cgroups.Dir)
	for _, e := range ents {
		if e.IsDir() {
			t.Errorf("staging cgroup %s left", e.Name())
		}
	}
}

// A stage-in that fills the job's tmpfs RAMDISK (engine local) far past
// limits.stage_memory is not killed: the tmpfs pages it writes are charged
// to its cgroup and cannot be reclaimed without swap, so the RAMDISK's size
// is allowed beside the limit (which the tmpfs' own size bounds).
func TestRunnerStageInFillsTmpfsRamdisk(t *testing.T) {
	sd := newStageDirs(t)
	lim := cgroup.Limits{Memory: 64 << 20}
	r := &Runner{Self: "/nonexistent", Cgroups: testCgroups(t), Limits: lim}
	requireLimits(t, r.Cgroups, lim)
	ram := mountTmpfs(t, sd, "ram256", "256M")
	prog := filepath.Join(sd.dir, "fill.sh")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\nset -e\nhead -c 160M /dev/zero > \"$1/input\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if err := r.Run(context.Background(), Task{Job: 6, Phase: "stage-in", User: sd.who, Program: prog, Ramdisk: ram, Data: sd.data, Log: &log}); err != nil {
		t.Fatalf("a stage-in of 160M into a 256M tmpfs RAMDISK with a limit of 64M: %v\n%s", err, log.String())
	}
	if st, err := os.Stat(filepath.Join(ram, "input")); err != nil || st.Size() != 160<<20 {
		t.Fatalf("the stage-in's file: %v, %v", st, err)
	}
}

// mountTmpfs mounts a tmpfs of size, owned by the test user, at name in
// the test's directory, unmounted after.
func mountTmpfs(t *testing.T, sd stageDirs, name, size string) string {
	t.Helper()
	dir := filepath.Join(sd.dir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := fmt.Sprintf("size=%s,mode=0755,uid=%d,gid=%d", size, sd.who.UID, sd.who.GID)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// requireLimits stops a test that checks limits l on a host whose cgroups
// cannot enforce them (testutil.CannotRun: it fails under CI=true).
func requireLimits(t *testing.T, p *cgroup.Parent, l cgroup.Limits) {
	t.Helper()
	if err := p.Enable(l); err != nil {
		testutil.CannotRun(t, "this host cannot limit stages, which this test checks: %v", err)
	}
}

// cgroupRoot is where the cgroup2 hierarchy is mounted.
func cgroupRoot(t *testing.T) string {
	t.Helper()
	ms, err := mount.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.FSType == "cgroup2" && m.Point != "" {
			return m.Point
		}
	}
	t.Fatal("no cgroup2 mount")
	return ""
}
