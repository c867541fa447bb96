package access

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

var rsaBin string

func TestMain(m *testing.M) { testutil.RunWithRSA(m, &rsaBin) }

// inNode runs a command inside the pinned mount namespace ns.
func inNode(t *testing.T, ns string, args ...string) string {
	t.Helper()
	out, err := exec.Command("nsenter", append([]string{"--mount=" + ns, "--"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("in %s: %s: %v\n%s", ns, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestNamespaces mounts a RAMDISK inside two compute nodes that are mount
// namespaces of this host: each sees it at the job's path, this host does
// not, and Unbind takes it away again on both.
func TestNamespaces(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	dir := testutil.TempDir(t)
	ramdisk := filepath.Join(dir, "ramdisk")
	nsDir := filepath.Join(dir, "ns")
	for _, d := range []string{ramdisk, nsDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount("nodes", nsDir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(nsDir, unix.MNT_DETACH) })
	if err := unix.Mount("", nsDir, "", unix.MS_PRIVATE, ""); err != nil {
		t.Fatal(err)
	}
	target := testutil.MkdirOwned(t, u, filepath.Join(dir, "job", "in"))
	os.Chown(filepath.Dir(target), int(u.UID), int(u.GID))
	nodes := []string{"c1", "c2"}
	for _, n := range nodes {
		ns := filepath.Join(nsDir, n)
		os.WriteFile(ns, nil, 0o600)
		if out, err := exec.Command("unshare", "--mount="+ns, "--propagation=private", "true").CombinedOutput(); err != nil {
			t.Fatalf("pinning a namespace for %s: %v\n%s", n, err, out)
		}
		t.Cleanup(func() { unix.Unmount(ns, unix.MNT_DETACH) })
	}
	// The RAMDISK is made after the nodes' namespaces, as on a cluster:
	// they see it only where RSA mounts it.
	if err := unix.Mount("rsa-990", ramdisk, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(ramdisk, unix.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(ramdisk, "data"), []byte("in RAM"), 0o644); err != nil {
		t.Fatal(err)
	}

	a := Namespaces{Dir: nsDir, Self: rsaBin}
	ctx := context.Background()
	if err := a.Bind(ctx, nodes, "input directory", engine.Ramdisk{Dir: ramdisk, UID: u.UID}, target); err != nil {
		t.Fatal(err)
	}
	if err := a.Bind(ctx, nodes, "input directory", engine.Ramdisk{Dir: ramdisk, UID: u.UID}, target); err != nil {
		t.Fatalf("binding again (a resumed action): %v", err)
	}
	for _, n := range nodes {
		ns := filepath.Join(nsDir, n)
		if got := inNode(t, ns, "cat", filepath.Join(target, "data")); got != "in RAM" {
			t.Errorf("node %s reads %q at the job's path", n, got)
		}
		if got := strings.Count(inNode(t, ns, "cat", "/proc/self/mountinfo"), " rsa-990 "); got != 1 {
			t.Errorf("node %s has %d mounts of the RAMDISK, want 1", n, got)
		}
	}
	if _, err := os.Stat(filepath.Join(target, "data")); err == nil {
		t.Error("the RSA host sees the RAMDISK at the job's path; only the compute nodes should")
	}

	// A busy mount is reported, not torn from under the job.
	// (nsenter's --wd opens the directory before entering: cd inside.)
	hold := exec.Command("nsenter", "--mount="+filepath.Join(nsDir, "c2"), "--", "sh", "-c", `cd "$1" && exec sleep 30`, "sh", target)
	hold.Dir = "/"
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		comm, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(hold.Process.Pid), "comm"))
		if string(comm) == "sleep\n" {
			break
		}
		if i > 1500 {
			t.Fatal("the process holding the mount did not start in 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := a.Unbind(ctx, nodes, engine.Ramdisk{Dir: ramdisk, UID: u.UID}, false); !errors.Is(err, ErrBusy) {
		t.Errorf("unbinding a mount in use gave %v, want ErrBusy", err)
	}
	hold.Process.Kill()
	hold.Wait()
	if err := a.Unbind(ctx, nodes, engine.Ramdisk{Dir: ramdisk, UID: u.UID}, false); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if strings.Contains(inNode(t, filepath.Join(nsDir, n), "cat", "/proc/self/mountinfo"), " rsa-990 ") {
			t.Errorf("node %s still has the RAMDISK after Unbind", n)
		}
	}

	// The same checks as on this host: never root's directories.
	rootDir := filepath.Join(dir, "rootdir")
	os.Mkdir(rootDir, 0o755)
	if err := a.Bind(ctx, nodes, "input directory", engine.Ramdisk{Dir: ramdisk, UID: u.UID}, rootDir); err == nil || !strings.Contains(err.Error(), "owned by uid 0") {
		t.Errorf("binding over root's directory gave %v", err)
	}
	if err := a.Bind(ctx, []string{"c9"}, "input directory", engine.Ramdisk{Dir: ramdisk, UID: u.UID}, target); err == nil || !strings.Contains(err.Error(), "no mount namespace") {
		t.Errorf("binding on an unknown node gave %v", err)
	}
	if err := a.Bind(ctx, []string{"../c1"}, "input directory", engine.Ramdisk{Dir: ramdisk, UID: u.UID}, target); err == nil {
		t.Error("a node name with a slash was accepted")
	}
}
