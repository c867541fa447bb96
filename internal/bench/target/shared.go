package target

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rsa-hpc/rsa/internal/rsatest"
	"golang.org/x/sys/unix"
)

// shared@1g stands for the site's shared parallel file system (GPFS in
// the thesis) reached over one 1 GbE link: a GlusterFS volume on one ext4
// brick, served by a glusterd in a network and mount namespace of its own
// (the "file server"), FUSE-mounted in this namespace (the compute node)
// over a veth pair shaped to 1 Gbit/s with tbf in both directions. There
// is no netem in this kernel, so the link adds bandwidth limits, not
// latency.
//
// Each of Config.Clients mounts is a glusterfs client process of its own,
// with its own caches: several client nodes behind the one link.

const (
	sharedNetns = "rsab-shared" // the server's network namespace (ip netns)
	sharedVeth  = "rsab-shared" // this side of the veth pair
	sharedVol   = "shared"
)

// sharedLayout is where the pieces of shared@1g live.
type sharedLayout struct {
	base   string // on ext4: the brick, glusterd's state and logs, the mount namespace's file
	mounts []string
	host   string // this side's address
	server string // the server's address
}

func (c Config) shared() sharedLayout {
	l := sharedLayout{
		base:   filepath.Join(filepath.Dir(c.DiskDir), "shared-server"),
		host:   c.SharedNet + ".1",
		server: c.SharedNet + ".2",
	}
	for i := range c.Clients {
		name := "shared@1g"
		if i > 0 {
			name += ".client" + strconv.Itoa(i+1)
		}
		l.mounts = append(l.mounts, filepath.Join(c.RunDir, name))
	}
	return l
}

func (l sharedLayout) mntNS() string { return filepath.Join(l.base, "ns", "mnt") }

// inServer runs a command in the server's network and mount namespaces.
func (l sharedLayout) inServer(ctx context.Context, args ...string) (string, error) {
	return rsatest.Run(ctx, "nsenter", append([]string{"--net=/run/netns/" + sharedNetns, "--mount=" + l.mntNS(), "--"}, args...)...)
}

func upShared(ctx context.Context, c Config) (Target, error) {
	l := c.shared()
	t := Target{Name: "shared@1g", Dir: l.mounts[0], Dirs: l.mounts}
	if ok, err := isMountPoint(l.mounts[len(l.mounts)-1]); err == nil && ok {
		return t, nil
	}
	// Whatever a failed or killed earlier Up left goes first.
	if err := downShared(ctx, c); err != nil {
		return Target{}, fmt.Errorf("target shared@1g: clear an earlier one: %w", err)
	}
	if err := startSharedServer(ctx, c, l); err != nil {
		_ = downShared(context.WithoutCancel(ctx), c)
		return Target{}, fmt.Errorf("target shared@1g: %w", err)
	}
	for _, m := range l.mounts {
		if err := os.MkdirAll(m, 0o755); err != nil {
			return Target{}, fmt.Errorf("target shared@1g: %w", err)
		}
		if _, err := rsatest.Run(ctx, "mount", "-t", "glusterfs", l.server+":/"+sharedVol, m); err != nil {
			_ = downShared(context.WithoutCancel(ctx), c)
			return Target{}, fmt.Errorf("target shared@1g: %w", err)
		}
	}
	if err := os.Chmod(l.mounts[0], 0o1777); err != nil {
		return Target{}, fmt.Errorf("target shared@1g: %w", err)
	}
	return t, nil
}

func startSharedServer(ctx context.Context, c Config, l sharedLayout) error {
	for _, d := range []string{"ns", "lib", "log", "brick"} {
		if err := os.MkdirAll(filepath.Join(l.base, d), 0o755); err != nil {
			return err
		}
	}
	// glusterd wants the packaged groups/ and hooks/ in its working dir.
	for _, d := range []string{"groups", "hooks"} {
		if _, err := os.Stat(filepath.Join("/var/lib/glusterd", d)); err == nil {
			if _, err := rsatest.Run(ctx, "cp", "-a", filepath.Join("/var/lib/glusterd", d), filepath.Join(l.base, "lib")); err != nil {
				return err
			}
		}
	}
	// The namespace's file must sit on a private mount to be bound.
	nsDir := filepath.Join(l.base, "ns")
	if err := unix.Mount(nsDir, nsDir, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s: %w", nsDir, err)
	}
	if err := unix.Mount("", nsDir, "", unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make %s private: %w", nsDir, err)
	}
	if err := os.WriteFile(l.mntNS(), nil, 0o600); err != nil {
		return err
	}
	steps := [][]string{
		{"ip", "netns", "add", sharedNetns},
		{"ip", "link", "add", sharedVeth, "type", "veth", "peer", "name", "eth0", "netns", sharedNetns},
		{"ip", "addr", "add", l.host + "/30", "dev", sharedVeth},
		{"ip", "link", "set", sharedVeth, "up"},
		{"ip", "-n", sharedNetns, "addr", "add", l.server + "/30", "dev", "eth0"},
		{"ip", "-n", sharedNetns, "link", "set", "lo", "up"},
		{"ip", "-n", sharedNetns, "link", "set", "eth0", "up"},
	}
	// 1 Gbit/s each way: tbf on the egress of both ends.
	tbf := []string{"root", "tbf", "rate", c.SharedRate, "burst", "128kb", "latency", "50ms"}
	steps = append(steps,
		append([]string{"tc", "qdisc", "replace", "dev", sharedVeth}, tbf...),
		append([]string{"ip", "netns", "exec", sharedNetns, "tc", "qdisc", "replace", "dev", "eth0"}, tbf...),
		// The server's own /run (glusterd's socket is /run/glusterd.socket
		// whatever the network namespace), state and logs.
		[]string{"nsenter", "--net=/run/netns/" + sharedNetns, "unshare", "--mount=" + l.mntNS(), "--propagation", "private",
			"sh", "-ec", `mount -t tmpfs -o size=64m,mode=0755 rsab-shared-run /run
mkdir -p /var/lib/glusterd /var/log/glusterfs
mount --bind "$1/lib" /var/lib/glusterd
mount --bind "$1/log" /var/log/glusterfs`, "sh", l.base},
	)
	for _, s := range steps {
		if _, err := rsatest.Run(ctx, s[0], s[1:]...); err != nil {
			return err
		}
	}
	if err := l.startGlusterd(ctx); err != nil {
		return err
	}
	brick := l.server + ":" + filepath.Join(l.base, "brick", "b")
	for _, s := range [][]string{
		// An ext4 brick on the root file system needs force.
		{"gluster", "--mode=script", "volume", "create", sharedVol, brick, "force"},
		{"gluster", "--mode=script", "volume", "start", sharedVol},
	} {
		if _, err := l.inServer(ctx, s...); err != nil {
			return err
		}
	}
	return nil
}

// startGlusterd starts the server's glusterd, with env (NAME=VALUE)
// added to its environment, and waits until it answers.
func (l sharedLayout) startGlusterd(ctx context.Context, env ...string) error {
	args := append(append([]string{"env"}, env...), "glusterd", "-p", "/run/glusterd.pid", "-l", "/var/log/glusterfs/glusterd.log")
	if _, err := l.inServer(ctx, args...); err != nil {
		return err
	}
	if err := poll(ctx, 20*time.Second, func() bool {
		_, err := l.inServer(ctx, "gluster", "--mode=script", "pool", "list")
		return err == nil
	}); err != nil {
		return fmt.Errorf("glusterd did not answer: %w", err)
	}
	return nil
}

// downShared unmounts the clients, stops every process of the server's
// namespace (glusterd and its bricks: only they run there) and removes
// the namespace, the link and the brick.
func downShared(ctx context.Context, c Config) error {
	l := c.shared()
	var errs []error
	// Every client there is, not just the ones this Config counts: an Up
	// with more clients than this Down's leaves the rest otherwise.
	mounts, err := sharedMounts(filepath.Join(c.RunDir, "shared@1g"))
	if err != nil {
		errs = append(errs, err)
	}
	for _, m := range append(mounts, l.mounts...) {
		// By the mount table, not a stat: a client whose server is gone
		// answers stat with ENOTCONN.
		if _, ok, err := mountedDevice(m); err == nil && ok {
			if err := unix.Unmount(m, 0); err != nil {
				// A client still busy: detach it; its process exits with the last user.
				if err := unix.Unmount(m, unix.MNT_DETACH); err != nil {
					errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
				}
			}
		}
		if err := os.Remove(m); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if _, err := os.Stat("/run/netns/" + sharedNetns); err == nil {
		if err := killNetns(ctx); err != nil {
			errs = append(errs, err)
		}
		if _, err := rsatest.Run(ctx, "ip", "netns", "del", sharedNetns); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := rsatest.Run(ctx, "ip", "link", "show", sharedVeth); err == nil {
		if _, err := rsatest.Run(ctx, "ip", "link", "del", sharedVeth); err != nil {
			// The namespace's end, going with the namespace, takes this
			// end along, and the kernel does that after ip netns del
			// returns: gone in between is done.
			if _, serr := rsatest.Run(ctx, "ip", "link", "show", sharedVeth); serr == nil {
				errs = append(errs, err)
			}
		}
	}
	nsDir := filepath.Join(l.base, "ns")
	_ = unix.Unmount(l.mntNS(), unix.MNT_DETACH)
	_ = unix.Unmount(nsDir, unix.MNT_DETACH)
	if err := os.RemoveAll(l.base); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// sharedMounts lists the mount points that are base or base.clientN,
// from the mount table.
func sharedMounts(base string) ([]string, error) {
	mounts, err := mountTable()
	if err != nil {
		return nil, err
	}
	var ms []string
	for m := range mounts {
		if m == base || strings.HasPrefix(m, base+".client") {
			ms = append(ms, m)
		}
	}
	slices.Sort(ms)
	return ms, nil
}

// killNetns stops every process in the server's network namespace: TERM,
// then KILL what is left after a few seconds.
func killNetns(ctx context.Context) error {
	pids := func() []int {
		out, err := rsatest.Run(ctx, "ip", "netns", "pids", sharedNetns)
		if err != nil {
			return nil
		}
		var ps []int
		for _, f := range strings.Fields(out) {
			if p, err := strconv.Atoi(f); err == nil {
				ps = append(ps, p)
			}
		}
		return ps
	}
	for _, p := range pids() {
		_ = unix.Kill(p, unix.SIGTERM)
	}
	if poll(ctx, 5*time.Second, func() bool { return len(pids()) == 0 }) == nil {
		return nil
	}
	for _, p := range pids() {
		_ = unix.Kill(p, unix.SIGKILL)
	}
	if err := poll(ctx, 5*time.Second, func() bool { return len(pids()) == 0 }); err != nil {
		return fmt.Errorf("processes left in netns %s: %v", sharedNetns, pids())
	}
	return nil
}

// Baseline is a shaped link's throughput as iperf3 measures it.
type Baseline struct {
	ToServer   float64 // bits/s, this side to the server
	FromServer float64 // bits/s, the server to this side
}

// SharedBaseline measures the shared@1g link with iperf3, each way, for
// seconds each: the number every shared@1g result is read against (the
// thesis' iperf gave 943 Mbit/s).
func SharedBaseline(ctx context.Context, c Config, seconds int) (Baseline, error) {
	here := func(args ...string) (string, error) { return rsatest.Run(ctx, args[0], args[1:]...) }
	var b Baseline
	var err error
	if b.ToServer, err = sharedIperf(ctx, c, seconds, false, here); err != nil {
		return b, err
	}
	b.FromServer, err = sharedIperf(ctx, c, seconds, true, here)
	return b, err
}

// SharedLinkFrom is iperf3's rate (bits/s) to shared@1g's server over
// seconds, its client started by run (given iperf3's command line) where
// the caller chooses: another host's namespace, say.
func SharedLinkFrom(ctx context.Context, c Config, seconds int, run func(args ...string) (string, error)) (float64, error) {
	return sharedIperf(ctx, c, seconds, false, run)
}

// sharedIperf runs one iperf3 measurement against a one-off server in
// shared@1g's namespace, its client by run (reverse: the server sends).
func sharedIperf(ctx context.Context, c Config, seconds int, reverse bool, run func(args ...string) (string, error)) (float64, error) {
	c = c.withDefaults()
	l := c.shared()
	srv := exec.CommandContext(ctx, "ip", "netns", "exec", sharedNetns, "iperf3", "--server", "--one-off", "--bind", l.server)
	if err := srv.Start(); err != nil {
		return 0, fmt.Errorf("iperf3 server: %w", err)
	}
	// One client run against a one-off server, once it listens: a
	// retried client could use the server up and leave none.
	listening := func() bool {
		out, err := rsatest.Run(ctx, "ip", "netns", "exec", sharedNetns, "ss", "-Hltn", "sport", "= :5201")
		return err == nil && strings.TrimSpace(out) != ""
	}
	var out string
	err := poll(ctx, 5*time.Second, listening)
	if err == nil {
		args := []string{"iperf3", "--client", l.server, "--time", strconv.Itoa(seconds), "--json"}
		if reverse {
			args = append(args, "--reverse")
		}
		out, err = run(args...)
	}
	if err != nil {
		_ = srv.Process.Kill()
	}
	_ = srv.Wait()
	if err != nil {
		return 0, fmt.Errorf("iperf3 to %s: %w", l.server, err)
	}
	var r struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	// What ran the client may have said something before iperf3's report.
	if i := strings.IndexByte(out, '{'); i > 0 {
		out = out[i:]
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		return 0, fmt.Errorf("iperf3's report: %w", err)
	}
	return r.End.SumReceived.BitsPerSecond, nil
}

// poll calls cond every 100 ms until it holds, ctx ends or timeout passes.
func poll(ctx context.Context, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// SetSharedLatency makes every create and open on shared@1g's brick take
// d longer (Gluster's delay-gen translator), or no longer with d = 0: the
// per-operation cost of a shared file system under contention, which the
// kernel cannot add here (no netem). The brick takes the translator only
// when it starts, so the volume is restarted; the clients reconnect.
func SetSharedLatency(ctx context.Context, c Config, d time.Duration) error {
	c = c.withDefaults()
	l := c.shared()
	gl := func(args ...string) error {
		_, err := l.inServer(ctx, append([]string{"gluster", "--mode=script", "volume"}, args...)...)
		return err
	}
	steps := [][]string{{"stop", sharedVol}}
	if d > 0 {
		steps = append(steps,
			[]string{"set", sharedVol, "delay-gen", "posix"},
			[]string{"set", sharedVol, "delay-gen.enable", "create,open"},
			[]string{"set", sharedVol, "delay-gen.delay-percentage", "100"},
			[]string{"set", sharedVol, "delay-gen.delay-duration", strconv.FormatInt(d.Microseconds(), 10)})
	} else {
		steps = append(steps, []string{"reset", sharedVol, "delay-gen"})
	}
	steps = append(steps, []string{"start", sharedVol})
	for _, s := range steps {
		if err := gl(s...); err != nil {
			return fmt.Errorf("shared@1g latency %s: %w", d, err)
		}
	}
	// The clients are back once a file can be made through each.
	for _, m := range l.mounts {
		probe := filepath.Join(m, ".rsa-bench-probe")
		if err := poll(ctx, 30*time.Second, func() bool {
			f, err := os.Create(probe)
			if err != nil {
				return false
			}
			f.Close()
			return os.Remove(probe) == nil
		}); err != nil {
			return fmt.Errorf("shared@1g latency %s: client %s did not come back: %w", d, m, err)
		}
	}
	return nil
}
