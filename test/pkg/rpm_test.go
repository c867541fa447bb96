package pkg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// rpmArch is RPM's name of this machine's architecture, as make rpm names
// it.
var rpmArch = map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]

// rpmCmd runs rpm and returns its standard output; a failure fails the
// test with its standard error. Debian's rpm warns on standard error at
// every install and erase that dpkg does not know of them.
func rpmCmd(t *testing.T, args ...string) string {
	t.Helper()
	out, err := rpmErr(args...)
	if err != nil {
		t.Fatalf("rpm %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func rpmErr(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "rpm", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	if ctx.Err() != nil {
		err = fmt.Errorf("no end after a minute: %w", ctx.Err())
	}
	if err != nil {
		err = fmt.Errorf("%w\n%s", err, stderr.String())
	}
	return string(out), err
}

func lines(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == '\n' })
}

func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// builtRPM is the one RPM make rpm left in bin.
func builtRPM(t *testing.T, root string) string {
	t.Helper()
	rpms, _ := filepath.Glob(filepath.Join(root, "bin", "rsa-*.rpm"))
	if len(rpms) != 1 {
		t.Fatalf("make rpm left %d RPMs in bin (%v), want 1", len(rpms), rpms)
	}
	return rpms[0]
}

// scratchRoot makes a directory rpm --root can install into and run the
// package's scriptlets in (chrooted there, with /bin/sh): this host's
// /bin/sh with the libraries it loads, and a systemctl that only writes
// its arguments, one call a line, to /systemctl.log. Without
// /run/systemd/system in it, the root is one where systemd does not run.
func scratchRoot(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "root")
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, sh, filepath.Join(dir, "bin", "sh"), 0o755)
	// ldd: "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" and
	// "/lib64/ld-linux-x86-64.so.2 (0x...)".
	libs := 0
	for _, l := range lines(run(t, time.Minute, testutil.RequireTool(t, "ldd"), sh)) {
		for _, f := range strings.Fields(l) {
			if strings.HasPrefix(f, "/") {
				copyFile(t, f, filepath.Join(dir, f), 0o755)
				libs++
			}
		}
	}
	if libs == 0 {
		t.Fatalf("ldd found no library of %s", sh)
	}
	if err := os.MkdirAll(filepath.Join(dir, "usr", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "usr", "bin", "systemctl"), []byte("#!/bin/sh\necho \"$*\" >>/systemctl.log\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// systemctlCalls is what the scriptlets asked of the scratch root's
// systemctl since the last call, one call a line; it empties the log.
func systemctlCalls(t *testing.T, root string) []string {
	t.Helper()
	p := filepath.Join(root, "systemctl.log")
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	return lines(string(b))
}

// The RPM for RHEL/Rocky 9, as make rpm builds it: its header, files,
// dependencies and scriptlets as rpm reads them, then installed, upgraded
// and erased with rpm --root in a scratch root. The scriptlets run there
// for real (rpm runs them chrooted, with the root's /bin/sh) against a
// systemctl that only logs: once where systemd does not run, where they
// must call nothing and succeed, and once where it does, where they must
// restart on an upgrade and stop and disable on an erase. Nothing is
// installed on the host.
func TestRPM(t *testing.T) {
	testutil.RequireRoot(t) // rpm --root chroots to run the scriptlets
	testutil.RequireTool(t, "make")
	if rpmArch == "" {
		testutil.CannotRun(t, "make rpm names no RPM architecture for GOARCH %s", runtime.GOARCH)
	}
	root := testutil.RepoRoot(t)
	rpmVersion := makeVars(t, root, "RPM_VERSION")[0]
	tmp := t.TempDir()

	// Build. First an upgrade: the same tree numbered RPM_VERSION.1, which
	// RPM orders after RPM_VERSION, copied away; then the package itself,
	// which stays in bin as make rpm leaves it. make rpm checks with rpm
	// itself that the file's name and header agree (make deps installs
	// Debian's rpm).
	start := time.Now()
	upVersion := rpmVersion + ".1"
	run(t, 5*time.Minute, "make", "-s", "--no-print-directory", "-C", root, "rpm", "RPM_VERSION="+upVersion)
	upgrade := filepath.Join(tmp, "upgrade.rpm")
	copyFile(t, builtRPM(t, root), upgrade, 0o644)
	run(t, 5*time.Minute, "make", "-s", "--no-print-directory", "-C", root, "rpm")
	t.Logf("make rpm, twice: %v", time.Since(start).Round(100*time.Millisecond))
	pkg := builtRPM(t, root)
	testutil.RequireTool(t, "rpm")
	if want := "rsa-" + rpmVersion + "-1." + rpmArch + ".rpm"; filepath.Base(pkg) != want {
		t.Errorf("make rpm built %s, want %s", filepath.Base(pkg), want)
	}

	t.Run("header", func(t *testing.T) {
		for _, h := range []struct{ tag, want string }{
			{"NAME", "rsa"},
			{"VERSION", rpmVersion},
			{"RELEASE", "1"},
			{"LICENSE", "Apache-2.0"},
			{"ARCH", rpmArch},
			{"URL", "https://github.com/rsa-hpc/rsa"},
		} {
			if got := rpmCmd(t, "-qp", "--queryformat", "%{"+h.tag+"}", pkg); got != h.want {
				t.Errorf("%s: %q, want %q", h.tag, got, h.want)
			}
		}
		if v := rpmCmd(t, "-qp", "--queryformat", "%{VERSION}", upgrade); v != upVersion {
			t.Errorf("the upgrade's VERSION: %q, want %q", v, upVersion)
		}
	})

	t.Run("files", func(t *testing.T) {
		files := lines(rpmCmd(t, "-qpl", pkg))
		for _, want := range []string{installedBin,
			"/usr/lib/systemd/system/rsa.service", "/usr/lib/systemd/system/rsa-agent.service",
			"/usr/lib/tmpfiles.d/rsa.conf", conffile,
			"/usr/share/rsa/slurm/burst_buffer.lua", "/usr/share/rsa/slurm/prolog", "/usr/share/rsa/slurm/epilog",
			"/usr/share/man/man1/rsa.1.gz", "/usr/share/man/man1/rsa-serve.1.gz", "/usr/share/man/man1/rsa-agent.1.gz",
			"/usr/share/bash-completion/completions/rsa", "/usr/share/zsh/site-functions/_rsa",
			"/usr/share/fish/vendor_completions.d/rsa.fish",
			"/usr/share/doc/rsa/README.md", "/usr/share/doc/rsa/install.md",
			"/usr/share/licenses/rsa/LICENSE", "/usr/share/licenses/rsa/copyright",
			// Directories the package alone makes, so that an erase removes them.
			confDir, "/usr/share/rsa", "/usr/share/rsa/slurm", "/usr/share/doc/rsa", "/usr/share/licenses/rsa"} {
			if !slices.Contains(files, want) {
				t.Errorf("rpm -qpl lacks %s", want)
			}
		}
		// Debian's places: units in /lib, zsh's vendor-completions, the
		// DEP-5 copyright among the docs.
		for _, f := range files {
			if strings.HasPrefix(f, "/lib/") || strings.Contains(f, "vendor-completions") || f == "/usr/share/doc/rsa/copyright" {
				t.Errorf("the RPM holds %s, a Debian path", f)
			}
		}
		if got := lines(rpmCmd(t, "-qpc", pkg)); !slices.Equal(got, []string{conffile}) {
			t.Errorf("rpm -qpc: %v, want %s alone", got, conffile)
		}
		if got := lines(rpmCmd(t, "-qpL", pkg)); !slices.Equal(got, []string{"/usr/share/licenses/rsa/LICENSE", "/usr/share/licenses/rsa/copyright"}) {
			t.Errorf("rpm -qpL (%%license files): %v", got)
		}
		// %config(noreplace): the flags c and n.
		flags := rpmCmd(t, "-qp", "--queryformat", "[%{FILEFLAGS:fflags} %{FILENAMES}\n]", pkg)
		if !slices.Contains(lines(flags), "cn "+conffile) {
			t.Errorf("%s is not %%config(noreplace):\n%s", conffile, flags)
		}
	})

	t.Run("dependencies", func(t *testing.T) {
		// EL9's names, and the glibc the binary needs (make rpm's check).
		requires := lines(rpmCmd(t, "-qpR", pkg))
		if len(requires) != 3 || requires[0] != "util-linux" || requires[1] != "iproute" || !strings.HasPrefix(requires[2], "glibc >= 2.") {
			t.Errorf("rpm -qpR: %q, want util-linux, iproute, glibc >= 2.N", requires)
		}
		if got, want := lines(rpmCmd(t, "-qp", "--recommends", pkg)), []string{"e2fsprogs", "munge", "lua", "lua-socket"}; !slices.Equal(got, want) {
			t.Errorf("rpm -qp --recommends: %q, want %q", got, want)
		}
		// Every Go module compiled in, as bundled(golang(...)), with a
		// version RPM can read (no '-').
		var bundled []string
		for _, p := range lines(rpmCmd(t, "-qp", "--provides", pkg)) {
			if m, ok := strings.CutPrefix(p, "bundled(golang("); ok {
				bundled = append(bundled, m)
				if _, v, _ := strings.Cut(m, ")) = "); v == "" || strings.Contains(v, "-") {
					t.Errorf("Provides: %s: want a version without '-'", p)
				}
			}
		}
		if !slices.ContainsFunc(bundled, func(m string) bool { return strings.HasPrefix(m, "github.com/spf13/cobra)) = ") }) {
			t.Errorf("the RPM provides no bundled(golang(github.com/spf13/cobra)); its bundled: %v", bundled)
		}
	})

	t.Run("scriptlets", func(t *testing.T) {
		// Each scriptlet as packaging/rpm has it, reading RPM's argument
		// (a count, not Debian's configure/remove/upgrade).
		scripts := rpmCmd(t, "-qp", "--scripts", pkg)
		for _, s := range []struct{ file, header string }{
			{"post", "postinstall scriptlet (using /bin/sh):"},
			{"preun", "preuninstall scriptlet (using /bin/sh):"},
			{"postun", "postuninstall scriptlet (using /bin/sh):"},
		} {
			b, err := os.ReadFile(filepath.Join(root, "packaging", "rpm", s.file))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(scripts, s.header+"\n"+string(b)) {
				t.Errorf("rpm -qp --scripts has no %q followed by packaging/rpm/%s:\n%s", s.header, s.file, scripts)
			}
		}
		for _, want := range []string{`[ "${1:-1}" -gt 1 ]`, `[ "${1:-0}" -eq 0 ]`} {
			if !strings.Contains(scripts, want) {
				t.Errorf("no scriptlet tests RPM's count with %s", want)
			}
		}
	})
	if t.Failed() {
		return
	}

	// Install into a root where systemd does not run: the scriptlets
	// succeed and call nothing; every file is in place with its mode and
	// contents (rpm -V), and the daemon's directories are not made.
	sroot := scratchRoot(t)
	rpmCmd(t, "--root", sroot, "--nodeps", "-i", pkg)
	if calls := systemctlCalls(t, sroot); len(calls) > 0 {
		t.Errorf("install without systemd called systemctl: %q", calls)
	}
	if out, err := rpmErr("--root", sroot, "--nodeps", "-V", "rsa"); err != nil || out != "" {
		t.Errorf("rpm -V rsa after the install: %v\n%s", err, out)
	}
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{
		{installedBin, 0o755},
		{"/usr/lib/systemd/system/rsa.service", 0o644},
		{"/usr/lib/systemd/system/rsa-agent.service", 0o644},
		{"/usr/lib/tmpfiles.d/rsa.conf", 0o644},
		{conffile, 0o644},
		{"/usr/share/rsa/slurm/burst_buffer.lua", 0o644},
		{"/usr/share/rsa/slurm/prolog", 0o755},
		{"/usr/share/rsa/slurm/epilog", 0o755},
		{"/usr/share/man/man1/rsa.1.gz", 0o644},
		{"/usr/share/licenses/rsa/LICENSE", 0o644},
		{confDir, 0o755 | os.ModeDir},
	} {
		st, err := os.Stat(filepath.Join(sroot, f.path))
		if err != nil {
			t.Errorf("after rpm -i: %v", err)
		} else if st.Mode() != f.mode {
			t.Errorf("%s: mode %v, want %v", f.path, st.Mode(), f.mode)
		}
	}
	for _, d := range []string{"/run/rsa", "/var/lib/rsa"} {
		if _, err := os.Lstat(filepath.Join(sroot, d)); err == nil {
			t.Errorf("the install made %s: the package must leave the daemon's directories to the daemon", d)
		}
	}
	if b, err := os.ReadFile(filepath.Join(sroot, "usr/share/rsa/slurm/prolog")); err != nil || strings.Contains(string(b), "/usr/local") {
		t.Errorf("the RPM's prolog must call %s (%v)", installedBin, err)
	}

	// Upgrade where systemd runs, with the site's edit in rsa.toml: the new
	// package's %post restarts both units (try-restart: only those
	// running), the old one's %preun does nothing, its %postun reloads;
	// the edit stays and no rsa.toml.rpmnew appears (the shipped file did
	// not change).
	if err := os.MkdirAll(filepath.Join(sroot, "run/systemd/system"), 0o755); err != nil {
		t.Fatal(err)
	}
	const edit = "\n# the site's edit\n"
	f, err := os.OpenFile(filepath.Join(sroot, conffile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(edit)
	f.Close()
	rpmCmd(t, "--root", sroot, "--nodeps", "-U", upgrade)
	if got, want := systemctlCalls(t, sroot), []string{"daemon-reload", "try-restart rsa.service", "try-restart rsa-agent.service", "daemon-reload"}; !slices.Equal(got, want) {
		t.Errorf("the upgrade's scriptlets called systemctl %q, want %q", got, want)
	}
	if got := rpmCmd(t, "--root", sroot, "-q", "--queryformat", "%{VERSION}", "rsa"); got != upVersion {
		t.Errorf("after rpm -U the root has rsa %s, want %s", got, upVersion)
	}
	if b, err := os.ReadFile(filepath.Join(sroot, conffile)); err != nil || !strings.HasSuffix(string(b), edit) {
		t.Errorf("the upgrade did not keep the site's %s (%v)", conffile, err)
	}
	if _, err := os.Lstat(filepath.Join(sroot, conffile+".rpmnew")); err == nil {
		t.Errorf("the upgrade wrote %s.rpmnew, though the shipped file did not change", conffile)
	}

	// Erase where systemd runs: both units stopped and disabled, systemd
	// reloaded; nothing of the package is left but the edited config,
	// kept as rsa.toml.rpmsave.
	rpmCmd(t, "--root", sroot, "--nodeps", "-e", "rsa")
	if got, want := systemctlCalls(t, sroot), []string{"--no-reload disable --now rsa.service", "--no-reload disable --now rsa-agent.service", "daemon-reload"}; !slices.Equal(got, want) {
		t.Errorf("the erase's scriptlets called systemctl %q, want %q", got, want)
	}
	for _, p := range lines(rpmCmd(t, "-qpl", upgrade)) {
		if p == confDir {
			continue
		}
		if _, err := os.Lstat(filepath.Join(sroot, p)); err == nil {
			t.Errorf("rpm -e left %s", p)
		}
	}
	if _, err := os.Stat(filepath.Join(sroot, conffile+".rpmsave")); err != nil {
		t.Errorf("rpm -e did not keep the edited config as rsa.toml.rpmsave: %v", err)
	}

	// Install and erase where systemd is installed but does not run (an
	// image being built): nothing to reload or stop, but the enablement
	// links go, through systemctl offline.
	if err := os.RemoveAll(filepath.Join(sroot, "run/systemd")); err != nil {
		t.Fatal(err)
	}
	rpmCmd(t, "--root", sroot, "--nodeps", "-i", pkg)
	rpmCmd(t, "--root", sroot, "--nodeps", "-e", "rsa")
	if got, want := systemctlCalls(t, sroot), []string{"--no-reload disable rsa.service", "--no-reload disable rsa-agent.service"}; !slices.Equal(got, want) {
		t.Errorf("install and erase without a running systemd called systemctl %q, want %q", got, want)
	}
}
