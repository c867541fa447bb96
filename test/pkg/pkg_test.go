// Package pkg tests what a site installs: the Debian package that make deb
// builds (installed with dpkg, its daemon run, removed and purged), the
// RPM that make rpm builds (read with rpm, installed, upgraded and erased
// in a scratch root: rpm_test.go), the systemd units, the tmpfiles.d entry,
// the shipped /etc/rsa/rsa.toml and the packages' maintainer scripts. The
// Debian package test installs into the real /usr/bin and /etc, so it
// refuses to run where anything of an rsa package is already there, and
// purges what it installed even when it fails.
package pkg

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/engine/all"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/mounttest"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// Where the package puts what the tests look at.
const (
	installedBin  = "/usr/bin/rsa"
	installedUnit = "/lib/systemd/system/rsa.service"
	confDir       = "/etc/rsa"
	conffile      = "/etc/rsa/rsa.toml"
)

// run runs a command with a deadline and returns its combined output; a
// failure fails the test with that output.
func run(t *testing.T, timeout time.Duration, name string, args ...string) string {
	t.Helper()
	out, err := runErr(timeout, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

func runErr(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 5 * time.Second
	if name == "make" {
		// Under make test this runs inside another make: its flags and
		// jobserver descriptors are not this make's.
		cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
			k, _, _ := strings.Cut(kv, "=")
			return k == "MAKEFLAGS" || k == "MFLAGS" || k == "MAKELEVEL"
		})
	}
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("no end after %v: %w", timeout, ctx.Err())
	}
	return string(out), err
}

// dpkg runs dpkg, waiting out another package manager (make deps' apt-get
// in a test running beside this one): dpkg itself gives up at once on a
// held lock.
func dpkg(args ...string) (string, error) {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		out, err := runErr(5*time.Minute, "dpkg", args...)
		if err == nil || !strings.Contains(out, "lock") || time.Now().After(deadline) {
			return out, err
		}
		time.Sleep(2 * time.Second)
	}
}

// packageState is dpkg's status of the rsa package ("install ok
// installed", "deinstall ok config-files"), or "" when dpkg knows none.
func packageState() string {
	out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", "rsa").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// refuseExisting fails the test when something the package would install
// over or remove is already there: the test must never overwrite or
// delete a site's rsa.
func refuseExisting(t *testing.T, paths ...string) {
	t.Helper()
	if st := packageState(); st != "" {
		t.Fatalf("an rsa package is already known to dpkg (%s): this test installs and purges its own; remove it first (dpkg --purge rsa) or run the test elsewhere", st)
	}
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			t.Fatalf("%s already exists: this test installs the rsa package there and would overwrite it; move it away or run the test elsewhere", p)
		} else if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("checking %s: %v", p, err)
		}
	}
}

// makeVars evaluates the Makefile's variables names (VERSION,
// DEB_VERSION, RPM_VERSION), in that order, so the test expects what make
// deb or make rpm built, by the Makefile's own rules.
func makeVars(t *testing.T, root string, names ...string) []string {
	t.Helper()
	var refs []string
	for _, n := range names {
		refs = append(refs, "'$("+n+")'")
	}
	out := run(t, time.Minute, "make", "-s", "--no-print-directory", "-C", root,
		"--eval", "pkgtest-vars: ; @echo "+strings.Join(refs, " "), "pkgtest-vars")
	f := strings.Fields(out)
	if len(f) != len(names) {
		t.Fatalf("the Makefile's %v: %q", names, out)
	}
	return f
}

// The package as a site gets it: built by make deb, installed with dpkg,
// its own binary serving and answering, removed leaving only the
// conffile, purged leaving nothing.
func TestPackage(t *testing.T) {
	testutil.RequireRoot(t)
	for _, tool := range []string{"make", "dpkg", "dpkg-deb", "dpkg-query", "gzip"} {
		testutil.RequireTool(t, tool)
	}
	root := testutil.RepoRoot(t)
	refuseExisting(t, installedBin, confDir)
	// The package must not make the daemon's default directories: the
	// daemon makes them when it first runs, systemd-tmpfiles at boot.
	var hostDirs []string
	for _, d := range []string{"/var/lib/rsa", "/run/rsa"} {
		if _, err := os.Lstat(d); errors.Is(err, os.ErrNotExist) {
			hostDirs = append(hostDirs, d)
		}
	}

	// Build. make deb builds the binary and the pages first; the Go
	// build cache and go run's cache of nfpm keep this to seconds after
	// the first time.
	start := time.Now()
	run(t, 5*time.Minute, "make", "-s", "--no-print-directory", "-C", root, "deb")
	t.Logf("make deb: %v", time.Since(start).Round(100*time.Millisecond))
	debs, _ := filepath.Glob(filepath.Join(root, "bin", "rsa_*.deb"))
	if len(debs) != 1 {
		t.Fatalf("make deb left %d packages in bin (%v), want 1", len(debs), debs)
	}
	deb := debs[0]
	vars := makeVars(t, root, "VERSION", "DEB_VERSION")
	version, debVersion := vars[0], vars[1]
	if got := strings.TrimSpace(run(t, time.Minute, "dpkg-deb", "-f", deb, "Version")); got != debVersion {
		t.Errorf("package version %q, want the Makefile's DEB_VERSION %q", got, debVersion)
	}
	if want := "rsa_" + debVersion + "_"; !strings.HasPrefix(filepath.Base(deb), want) {
		t.Errorf("package file %s does not start with %s", filepath.Base(deb), want)
	}
	run(t, time.Minute, "dpkg", "--validate-version", debVersion)
	ctrl := run(t, time.Minute, "dpkg-deb", "-f", deb, "Package", "Depends", "Recommends")
	// libc6: the binary is linked with cgo; make deb writes the version
	// scripts/check-glibc.sh found.
	for _, want := range []string{"Package: rsa", "Depends: util-linux, iproute2, libc6 (>= 2.", "Recommends: e2fsprogs, munge, lua5.1, lua-socket"} {
		if !strings.Contains(ctrl, want) {
			t.Errorf("control fields lack %q:\n%s", want, ctrl)
		}
	}

	// No file the package holds may be there yet (/usr/bin/rsa and
	// /etc/rsa were checked before the build). What of its directories is
	// there (/usr; /lib, a symbolic link on a merged-/usr system) stays
	// after the purge; nothing else may.
	var files []string
	existed := map[string]bool{}
	for _, l := range strings.Split(run(t, time.Minute, "dpkg-deb", "-c", deb), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 {
			continue
		}
		p := filepath.Clean(strings.TrimPrefix(f[5], "."))
		if _, err := os.Lstat(p); err == nil {
			existed[p] = true
		}
		if !strings.HasPrefix(f[0], "d") {
			files = append(files, p)
		}
	}
	for _, want := range []string{installedBin, installedUnit, conffile, "/usr/lib/tmpfiles.d/rsa.conf",
		"/usr/share/rsa/slurm/burst_buffer.lua", "/usr/share/rsa/slurm/prolog", "/usr/share/rsa/slurm/epilog",
		"/usr/share/man/man1/rsa.1.gz", "/usr/share/man/man1/rsa-serve.1.gz",
		"/usr/share/bash-completion/completions/rsa", "/usr/share/zsh/vendor-completions/_rsa",
		"/usr/share/fish/vendor_completions.d/rsa.fish", "/usr/share/doc/rsa/README.md", "/usr/share/doc/rsa/install.md", "/usr/share/doc/rsa/copyright"} {
		if !slices.Contains(files, want) {
			t.Errorf("the package lacks %s; it holds %v", want, files)
		}
	}
	refuseExisting(t, files...)

	// From here on the package is on the host: purge it whatever happens
	// (registered first, so it runs after the daemon's cleanup).
	t.Cleanup(func() {
		if packageState() == "" {
			return
		}
		if out, err := dpkg("--purge", "rsa"); err != nil {
			t.Errorf("cleanup: dpkg --purge rsa: %v\n%s", err, out)
		}
	})
	if out, err := dpkg("-i", deb); err != nil {
		t.Fatalf("dpkg -i %s: %v\n%s", deb, err, out)
	}
	if st := packageState(); st != "install ok installed" {
		t.Fatalf("after dpkg -i the package is %q", st)
	}
	listed := strings.Split(strings.TrimSpace(run(t, time.Minute, "dpkg", "-L", "rsa")), "\n")
	// RSA's license, and the Go modules compiled in with theirs.
	if b, err := os.ReadFile("/usr/share/doc/rsa/copyright"); err != nil {
		t.Error(err)
	} else {
		for _, want := range []string{"Files: *\nCopyright: The RSA authors\nLicense: Apache-2.0\n", "Comment: Go module github.com/spf13/cobra ", "Comment: the Go standard library"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("/usr/share/doc/rsa/copyright lacks %q", want)
			}
		}
	}
	conffiles := run(t, time.Minute, "dpkg-query", "-W", "-f=${Conffiles}", "rsa")
	if !strings.Contains(conffiles, conffile+" ") {
		t.Errorf("%s is not a conffile; conffiles: %q", conffile, conffiles)
	}

	t.Run("client", func(t *testing.T) {
		// With the shipped config, whether or not a daemon answers at its
		// socket, the client prints its own version first.
		out, _ := runErr(time.Minute, installedBin, "version")
		if first, _, _ := strings.Cut(out, "\n"); first != "rsa client "+version {
			t.Errorf("installed rsa version prints %q first, want %q:\n%s", first, "rsa client "+version, out)
		}
	})
	t.Run("slurm scripts", func(t *testing.T) {
		for _, f := range []string{"burst_buffer.lua", "prolog", "epilog"} {
			p := "/usr/share/rsa/slurm/" + f
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "/usr/local") || !strings.Contains(string(b), installedBin) {
				t.Errorf("%s must call %s, not /usr/local/bin/rsa:\n%s", p, installedBin, b)
			}
		}
		run(t, time.Minute, "bash", "-n", "/usr/share/rsa/slurm/prolog")
		run(t, time.Minute, "bash", "-n", "/usr/share/rsa/slurm/epilog")
		for _, p := range []string{"/usr/share/rsa/slurm/prolog", "/usr/share/rsa/slurm/epilog"} {
			if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o755 {
				t.Errorf("%s: %v, want mode 0755 (Slurm executes it)", p, st)
			}
		}
		// Last: without luac5.1 (outside CI) the subtest skips here, after
		// every other check of the scripts.
		run(t, time.Minute, testutil.RequireTool(t, "luac5.1"), "-p", "/usr/share/rsa/slurm/burst_buffer.lua")
	})
	t.Run("unit", func(t *testing.T) {
		// The installed unit, with its binary and man page in place:
		// systemd-analyze checks both exist.
		verifyUnit(t, installedUnit, true)
	})
	t.Run("daemon", func(t *testing.T) {
		// The installed binary serving a config of the test's own (its own
		// state, socket and RAMDISK root), as test/e2e runs it.
		d := startDaemon(t, "", `proportion = 1
tick = "50ms"

[[nodes]]
name = "local"
capacity = "512M"
`)
		out := run(t, time.Minute, installedBin, "--config", d.cfg, "version")
		if !strings.Contains(out, "rsa client "+version+"\n") || !strings.Contains(out, "rsa daemon "+version+" ") {
			t.Errorf("rsa --config %s version: want client and daemon %s:\n%s", d.cfg, version, out)
		}
		// The cleanup removes the daemon's staging cgroup by this name:
		// it must be the one the daemon made.
		ms, err := mount.List()
		if err != nil {
			t.Fatal(err)
		}
		if cg := stagingCgroup(filepath.Join(d.dir, "state"), ms); cg == "" {
			t.Error("no cgroup2 mount found; the daemon needs one")
		} else if _, err := os.Stat(cg); err != nil {
			t.Errorf("the daemon's staging cgroup is not where the test looks for it: %v", err)
		}
		// The unit's readiness check: done while the daemon answers, and
		// at once, failed, when the daemon has exited (not only after
		// TimeoutStartSec).
		script := readinessScript(t, installedUnit, d.cfg, d.cmd.Process.Pid)
		if out, err := runErr(30*time.Second, "bash", "-c", script); err != nil {
			t.Errorf("ExecStartPost with the daemon up: %v\n%s", err, out)
		}
		d.stop(t)
		start := time.Now()
		if out, err := runErr(30*time.Second, "bash", "-c", script); err == nil || time.Since(start) > 5*time.Second {
			t.Errorf("ExecStartPost with the daemon gone: %v after %v, want a failure at once\n%s", err, time.Since(start), out)
		}
	})
	t.Run("shipped config", func(t *testing.T) {
		// /etc/rsa/rsa.toml as installed, served by rsa serve: only the
		// daemon's paths are moved into the test's directory.
		b, err := os.ReadFile(conffile)
		if err != nil {
			t.Fatal(err)
		}
		d := startDaemon(t, string(b), "")
		run(t, time.Minute, installedBin, "--config", d.cfg, "version")
		d.stop(t)
	})
	if t.Failed() {
		return // the cleanup purges; removal is checked on a good install only
	}

	// Remove: everything dpkg -L listed goes, but the conffile (and its
	// directory) and directories other packages use too.
	if out, err := dpkg("-r", "rsa"); err != nil {
		t.Fatalf("dpkg -r rsa: %v\n%s", err, out)
	}
	if st := packageState(); st != "deinstall ok config-files" {
		t.Errorf("after dpkg -r the package is %q, want its conffiles kept", st)
	}
	if _, err := os.Stat(conffile); err != nil {
		t.Errorf("dpkg -r removed the conffile: %v", err)
	}
	left := leftovers(t, listed, existed, conffile, confDir)
	if len(left) > 0 {
		t.Errorf("dpkg -r left the package's %v", left)
	}

	// Purge: the conffile goes too, and dpkg forgets the package.
	if out, err := dpkg("--purge", "rsa"); err != nil {
		t.Fatalf("dpkg --purge rsa: %v\n%s", err, out)
	}
	if st := packageState(); st != "" {
		t.Errorf("after dpkg --purge the package is %q", st)
	}
	for _, p := range []string{conffile, confDir} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("dpkg --purge left %s (%v)", p, err)
		}
	}
	if left := leftovers(t, listed, existed); len(left) > 0 {
		t.Errorf("dpkg --purge left the package's %v", left)
	}
	for _, d := range hostDirs {
		if _, err := os.Lstat(d); err == nil {
			// Not removed here: something else on the host may have
			// made it meanwhile.
			t.Errorf("%s did not exist before the test and does now: the package must not make the daemon's directories", d)
		}
	}
}

// leftovers is what of paths (dpkg -L's list) is still there but was not
// before the package was installed, except keep.
func leftovers(t *testing.T, paths []string, existed map[string]bool, keep ...string) []string {
	t.Helper()
	var left []string
	for _, p := range paths {
		p = filepath.Clean(p)
		if p == "/" || p == "." || existed[p] || slices.Contains(keep, p) {
			continue
		}
		if _, err := os.Lstat(p); err == nil {
			left = append(left, p)
		} else if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("checking %s: %v", p, err)
		}
	}
	return left
}

// daemon is the installed rsa serve, started by the test.
type daemon struct {
	dir, cfg string
	cmd      *exec.Cmd
	log      *os.File
	done     chan error
}

// startDaemon writes a config of conf with the daemon's paths (state_dir,
// socket, ramdisk_root) in a temporary directory first, then extra, starts
// the installed rsa serve with it and waits until rsa version answers. It
// is stopped (by pid) and its directory unmounted and removed when the
// test ends.
func startDaemon(t *testing.T, conf, extra string) *daemon {
	t.Helper()
	dir := testutil.TempDir(t)
	d := &daemon{dir: dir, cfg: filepath.Join(dir, "rsa.toml"), done: make(chan error, 1)}
	paths := fmt.Sprintf("state_dir = %q\nsocket = %q\nramdisk_root = %q\n",
		filepath.Join(dir, "state"), filepath.Join(dir, "run", "rsa.sock"), filepath.Join(dir, "run", "ramdisk"))
	if err := os.WriteFile(d.cfg, []byte(paths+conf+"\n"+extra), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "daemon.log"))
	if err != nil {
		t.Fatal(err)
	}
	d.log = f
	d.cmd = exec.Command(installedBin, "serve", "--config", d.cfg)
	d.cmd.Stdout, d.cmd.Stderr = f, f
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("starting %s serve: %v", installedBin, err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(func() { d.cleanup(t) })
	for deadline := time.Now().Add(20 * time.Second); ; {
		if _, err := runErr(10*time.Second, installedBin, "--config", d.cfg, "version"); err == nil {
			return d
		}
		select {
		case err := <-d.done:
			d.done <- err
			t.Fatalf("rsa serve exited (%v):\n%s", err, d.logText())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("rsa serve did not answer within 20 s:\n%s", d.logText())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (d *daemon) logText() string {
	b, _ := os.ReadFile(d.log.Name())
	return string(b)
}

// stop ends the daemon by its pid with SIGTERM, as systemctl stop does,
// and checks it exits cleanly and in time.
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	if d.cmd == nil {
		return
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("SIGTERM to rsa serve (pid %d): %v", d.cmd.Process.Pid, err)
	}
	select {
	case err := <-d.done:
		d.cmd = nil
		if err != nil {
			t.Errorf("rsa serve exited with %v after SIGTERM:\n%s", err, d.logText())
		}
	case <-time.After(60 * time.Second): // the unit's TimeoutStopSec
		t.Errorf("rsa serve (pid %d) still runs 60 s after SIGTERM:\n%s", d.cmd.Process.Pid, d.logText())
		d.kill()
	}
}

func (d *daemon) kill() {
	if d.cmd == nil {
		return
	}
	d.cmd.Process.Kill()
	<-d.done
	d.cmd = nil
}

// cleanup stops a daemon a failed test left running, unmounts whatever is
// still mounted below its directory (innermost first), and removes the
// staging cgroup the daemon made below the test's own.
func (d *daemon) cleanup(t *testing.T) {
	if d.cmd != nil {
		d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.done:
			d.cmd = nil
		case <-time.After(30 * time.Second):
			d.kill()
		}
	}
	if t.Failed() {
		t.Logf("daemon log:\n%s", d.logText())
	}
	d.log.Close()
	ms, err := mounttest.UnmountBelow(d.dir)
	if err != nil {
		t.Errorf("cleanup: reading the mount table: %v", err)
	}
	if dir := stagingCgroup(filepath.Join(d.dir, "state"), ms); dir != "" {
		if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cleanup: removing the daemon's staging cgroup: %v", err)
		}
	}
}

// stagingCgroup is the cgroup a daemon with this state directory made
// below its own cgroup, which is this test's: internal/cgroup names it
// rsa-stage-<first 6 bytes of sha256(state_dir)>. "" if there is no
// cgroup2 mount.
func stagingCgroup(stateDir string, ms []mount.Info) string {
	var root string
	for _, m := range ms {
		if m.FSType == "cgroup2" && m.Point != "" {
			root = m.Point
			break
		}
	}
	f, err := os.Open("/proc/self/cgroup")
	if root == "" || err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if own, ok := strings.CutPrefix(sc.Text(), "0::"); ok {
			sum := sha256.Sum256([]byte(stateDir))
			return filepath.Join(root, filepath.Clean("/"+own), fmt.Sprintf("rsa-stage-%x", sum[:6]))
		}
	}
	return ""
}

// readinessScript is the unit's ExecStartPost bash script, with cfg for
// the config and pid for ${MAINPID}, as systemd would run it.
func readinessScript(t *testing.T, unit, cfg string, pid int) string {
	t.Helper()
	b, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if s, ok := strings.CutPrefix(l, "ExecStartPost=/bin/bash -c '"); ok && strings.HasSuffix(s, "'") {
			s = strings.ReplaceAll(strings.TrimSuffix(s, "'"), conffile, cfg)
			return strings.ReplaceAll(s, "${MAINPID}", strconv.Itoa(pid))
		}
	}
	t.Fatalf("%s has no ExecStartPost=/bin/bash -c '...' line", unit)
	return ""
}

// verifyUnit runs systemd-analyze verify on a unit file and fails on any
// word it says: it reports unknown keys and bad values as warnings with
// exit status 0. withMan: check its Documentation=man: pages too (only
// once the package installed them).
func verifyUnit(t *testing.T, unit string, withMan bool) {
	t.Helper()
	sa := testutil.RequireTool(t, "systemd-analyze")
	args := []string{"verify"}
	if !withMan {
		args = append(args, "--man=no")
	}
	out, err := runErr(time.Minute, sa, append(args, unit)...)
	if err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("systemd-analyze verify %s: %v\n%s", unit, err, out)
	}
}

// The unit as written in contrib/systemd, checked by systemd itself and
// against what RSA needs of it. Its ExecStart binary is pointed at an
// executable that exists (this test's own: systemd-analyze only checks
// that it is there), so the check needs no installed package.
func TestSystemdUnit(t *testing.T) {
	text, settings := checkUnit(t, "rsa.service")
	want := map[string]string{
		"ExecStart": installedBin + " serve --config " + conffile,
		"Type":      "exec", // rsa does not call sd_notify
		"Restart":   "on-failure",
		"KillMode":  "mixed",
		"Delegate":  "yes",
		"Before":    "slurmctld.service",
		"WantedBy":  "multi-user.target",
	}
	for k, v := range want {
		if got := settings[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s=%v, want %s", k, got, v)
		}
	}
	if post := strings.Join(settings["ExecStartPost"], " "); !regexp.MustCompile(`/usr/bin/rsa --config /etc/rsa/rsa\.toml version\b`).MatchString(post) {
		t.Errorf("ExecStartPost=%q does not wait for rsa version", post)
	}
	// Each of these gives the service a mount namespace of its own (or
	// hides host paths), where RSA's mounts would be invisible to jobs.
	for _, k := range []string{"PrivateTmp", "ProtectSystem", "ProtectHome", "PrivateMounts", "ReadOnlyPaths",
		"InaccessiblePaths", "TemporaryFileSystem", "BindPaths", "ProtectKernelTunables", "ProtectKernelModules",
		"ProtectControlGroups", "PrivateDevices", "MountFlags", "RootDirectory", "NoNewPrivileges"} {
		if _, ok := settings[k]; ok {
			t.Errorf("%s= must not be set: RSA mounts in the host's namespace", k)
		}
	}
	caps := strings.Fields(strings.Join(settings["CapabilityBoundingSet"], " "))
	for _, c := range []string{"CAP_SYS_ADMIN", "CAP_SYS_CHROOT", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH",
		"CAP_FOWNER", "CAP_KILL", "CAP_SETUID", "CAP_SETGID", "CAP_SYS_PTRACE"} {
		if !slices.Contains(caps, c) {
			t.Errorf("CapabilityBoundingSet lacks %s: %v", c, caps)
		}
	}
	// systemd-analyze verify drops a misspelt capability silently; each
	// must be one systemd knows, and have its comment.
	sa := testutil.RequireTool(t, "systemd-analyze")
	for _, c := range caps {
		if out, err := runErr(time.Minute, sa, "capability", c); err != nil {
			t.Errorf("%s: %v\n%s", c, err, out)
		}
		if !regexp.MustCompile(`(?m)^#\s+` + c + `\b`).MatchString(text) {
			t.Errorf("%s has no comment saying why the daemon needs it", c)
		}
	}
}

// The tmpfiles.d entry makes the daemon's directories root's, with the
// modes the daemon itself gives them (docs/config.md). Made below a
// temporary root, not on the host.
func TestTmpfiles(t *testing.T) {
	testutil.RequireRoot(t) // the entries chown to root
	tf := testutil.RequireTool(t, "systemd-tmpfiles")
	dir := t.TempDir()
	run(t, time.Minute, tf, "--create", "--root="+dir, filepath.Join(testutil.RepoRoot(t), "contrib", "tmpfiles.d", "rsa.conf"))
	for p, mode := range map[string]os.FileMode{"/run/rsa": 0o755, "/var/lib/rsa": 0o700} {
		st, err := os.Stat(filepath.Join(dir, p))
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if !st.IsDir() || st.Mode().Perm() != mode || st.Sys().(*syscall.Stat_t).Uid != 0 {
			t.Errorf("%s: %v uid %d, want a directory %v of root's", p, st.Mode(), st.Sys().(*syscall.Stat_t).Uid, mode)
		}
	}
}

// The shipped /etc/rsa/rsa.toml is a valid config (the daemon's own
// check; TestPackage also serves it) with the settings the package
// promises: no scheduler, one modest node.
func TestShippedConfig(t *testing.T) {
	p := filepath.Join(testutil.RepoRoot(t), "packaging", "rsa.toml")
	c, err := config.Load(p, true, all.Engines())
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	if c.Scheduler != "none" || len(c.Nodes) != 1 || c.Nodes[0].Capacity > 1<<30 {
		t.Errorf("%s: scheduler %q, nodes %+v; want none and one node of at most 1G", p, c.Scheduler, c.Nodes)
	}
	if c.StateDir != config.DefaultStateDir || c.Socket != config.DefaultSocket || c.RamdiskRoot != config.DefaultRamdiskRoot {
		t.Errorf("%s moves the daemon's directories (%s, %s, %s) away from the unit's and tmpfiles.d's", p, c.StateDir, c.Socket, c.RamdiskRoot)
	}
}

// The packages' maintainer scripts are shellcheck-clean like the rest of
// the shell in the repository: the .deb's bash with set -euo pipefail, the
// RPM's scriptlets sh with set -eu (RPM runs them with /bin/sh, whatever
// their first line says).
func TestMaintainerScripts(t *testing.T) {
	sc := testutil.RequireTool(t, "shellcheck")
	root := testutil.RepoRoot(t)
	var scripts []string
	for _, s := range []struct{ path, shebang, set string }{
		{"packaging/postinst", "#!/bin/bash", "set -euo pipefail"},
		{"packaging/prerm", "#!/bin/bash", "set -euo pipefail"},
		{"packaging/postrm", "#!/bin/bash", "set -euo pipefail"},
		{"packaging/rpm/post", "#!/bin/sh", "set -eu"},
		{"packaging/rpm/preun", "#!/bin/sh", "set -eu"},
		{"packaging/rpm/postun", "#!/bin/sh", "set -eu"},
	} {
		p := filepath.Join(root, s.path)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte(s.shebang+"\n")) || !bytes.Contains(b, []byte("\n"+s.set+"\n")) {
			t.Errorf("%s: want %s and %s", p, s.shebang, s.set)
		}
		scripts = append(scripts, p)
	}
	run(t, time.Minute, sc, scripts...)
}

// The agent's unit: checked by systemd, and it stops the agent alone, so
// that the Gluster clients it mounted keep serving running jobs.
func TestAgentUnit(t *testing.T) {
	text, settings := checkUnit(t, "rsa-agent.service")
	for k, v := range map[string]string{
		"ExecStart": installedBin + ` agent --pki /etc/rsa/pki --control "${RSA_AGENT_CONTROL}" $RSA_AGENT_ARGS`,
		"KillMode":  "process",
		"Delegate":  "yes",
		"Restart":   "always",
	} {
		if got := settings[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s=%q, want %q", k, got, v)
		}
	}
	sa := testutil.RequireTool(t, "systemd-analyze")
	for _, c := range strings.Fields(strings.Join(settings["CapabilityBoundingSet"], " ")) {
		if out, err := runErr(time.Minute, sa, "capability", c); err != nil {
			t.Errorf("%s: %v\n%s", c, err, out)
		}
		if !regexp.MustCompile(`(?m)^#\s+` + c + `\b`).MatchString(text) {
			t.Errorf("%s has no comment saying why the agent needs it", c)
		}
	}
}

// checkUnit reads contrib/systemd/NAME, has systemd verify it (its
// ExecStart pointed at an executable that exists: this test's own, since
// systemd-analyze only checks that it is there, so no package need be
// installed), and returns its text and its settings, key by key.
func checkUnit(t *testing.T, name string) (string, map[string][]string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "contrib", "systemd", name))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(unit, []byte(strings.ReplaceAll(text, installedBin, self)), 0o644); err != nil {
		t.Fatal(err)
	}
	verifyUnit(t, unit, false)
	settings := map[string][]string{}
	for _, l := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok && !strings.HasPrefix(l, "#") {
			settings[strings.TrimSpace(k)] = append(settings[strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	return text, settings
}
