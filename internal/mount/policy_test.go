package mount

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// userProcess starts a process as u and returns its /proc directory, a
// directory u owns on a proc file system.
func userProcess(t *testing.T, u testutil.User) string {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.UID, Gid: u.GID}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return fmt.Sprintf("/proc/%d", cmd.Process.Pid)
}

// delegatedCgroup makes a cgroup directory owned by u on the cgroup2 file
// system, as a delegation to u would.
func delegatedCgroup(t *testing.T, u testutil.User) string {
	t.Helper()
	ms, err := List()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ms, func(m Info) bool { return m.FSType == "cgroup2" && m.Point != "" })
	if i < 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("no cgroup2 file system is mounted")
		}
		t.Skip("no cgroup2 file system is mounted")
	}
	dir := filepath.Join(ms[i].Point, fmt.Sprintf("rsa-mounttest-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	if err := os.Chown(dir, int(u.UID), int(u.GID)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// otherRAMDISK mounts a tmpfs at dir/rsa-123 as the engine mounts job 123's
// RAMDISK, owned by u, and returns it.
func otherRAMDISK(t *testing.T, u testutil.User, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "rsa-123")
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	opts := fmt.Sprintf("size=1m,mode=0700,uid=%d,gid=%d", u.UID, u.GID)
	if err := unix.Mount("rsa-123", p, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(p, unix.MNT_DETACH) })
	return p
}

// TestDefaultPolicyRefusals: directories a user owns on kernel interfaces
// (their process's /proc directory, a delegated cgroup) or on another job's
// RAMDISK pass the owner check, but the callers that know no policy (the
// zero Policy) refuse them all the same, naming the file system.
func TestDefaultPolicyRefusals(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	dir := testDir(t)
	src := ramdisk(t, dir)
	ram := otherRAMDISK(t, u, dir)
	for _, c := range []struct {
		name string
		path func() string
		want string
	}{
		{"a process's /proc directory", func() string { return userProcess(t, u) }, "is on a proc file system"},
		{"a delegated cgroup", func() string { return delegatedCgroup(t, u) }, "is on a cgroup2 file system"},
		{"another job's RAMDISK", func() string { return ram }, "RAMDISK rsa-123"},
		{"a directory in another job's RAMDISK", func() string {
			return testutil.MkdirOwned(t, u, filepath.Join(ram, "sub"))
		}, "RAMDISK rsa-123"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := c.path()
			var st unix.Stat_t
			if err := unix.Stat(path, &st); err != nil || st.Uid != u.UID {
				t.Fatalf("%s: owner %d, %v; the test wants it owned by uid %d", path, st.Uid, err, u.UID)
			}
			for what, err := range map[string]error{
				"CheckTarget": CheckTarget("input directory", path, u.UID),
				"CheckDir":    CheckDir("input directory", path),
				"Bind":        Bind("input directory", src, path, u.UID),
			} {
				var te *TargetError
				if !errors.As(err, &te) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s(%s): %v, want a TargetError saying %q", what, path, err, c.want)
				}
			}
			if binds, err := Binds(src); err != nil || len(binds) != 0 {
				t.Fatalf("a mount was made: %v %v", binds, err)
			}
		})
	}
}

// TestPolicy: AllowedPaths confines targets to directories and what is
// below them; RefuseFSTypes replaces the default list, but never lets RSA
// mount over its own RAMDISKs.
func TestPolicy(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	dir := testDir(t) // a tmpfs
	src := ramdisk(t, dir)
	allowed := testutil.MkdirOwned(t, u, filepath.Join(dir, "allowed"))
	own := testutil.MkdirOwned(t, u, filepath.Join(allowed, "own"))
	beside := testutil.MkdirOwned(t, u, filepath.Join(dir, "allowed-not", "own"))
	proc := userProcess(t, u)
	ram := otherRAMDISK(t, u, dir)
	in := Policy{AllowedPaths: []string{"/nowhere", allowed}}
	none := Policy{RefuseFSTypes: []string{}}

	for _, c := range []struct {
		name string
		pol  Policy
		path string
		want string // in the error; "" for none
	}{
		{"below an allowed path", in, own, ""},
		{"an allowed path itself", in, allowed, ""},
		{"beside an allowed path", in, beside, "allowed_paths in rsa.toml"},
		{"outside every allowed path", in, proc, "allowed_paths in rsa.toml"},
		{"an allowed path with a trailing slash", Policy{AllowedPaths: []string{allowed + "/"}}, own, ""},
		{"/ allows all", Policy{AllowedPaths: []string{"/"}}, own, ""},
		{"a relative allowed path allows nothing", Policy{AllowedPaths: []string{"allowed"}}, own, "allowed_paths"},
		{"the default list refuses proc", Policy{}, proc, "is on a proc file system"},
		{"an empty list refuses no type", none, proc, ""},
		{"an empty list still refuses RAMDISKs", none, ram, "RAMDISK rsa-123"},
		{"a list of the admin's", Policy{RefuseFSTypes: []string{"ext4", "tmpfs"}}, own, "is on a tmpfs file system; RSA mounts only over directories on real file systems (refused_fs_types in rsa.toml)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			role := "output directory"
			if c.path == proc && c.want == "" {
				// As input: a process's directory takes no writes,
				// which an output directory's access check says.
				role = InputRole
			}
			err := c.pol.CheckTarget(role, c.path, u.UID)
			if c.want == "" {
				if err != nil {
					t.Fatalf("%s: %v", c.path, err)
				}
				return
			}
			var te *TargetError
			if !errors.As(err, &te) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "output directory") {
				t.Fatalf("CheckTarget(%s): %v, want a TargetError saying %q", c.path, err, c.want)
			}
			if err := c.pol.Bind("output directory", src, c.path, u.UID); !errors.As(err, &te) {
				t.Fatalf("Bind(%s): %v, want the TargetError", c.path, err)
			}
			if binds, err := Binds(src); err != nil || len(binds) != 0 {
				t.Fatalf("a mount was made: %v %v", binds, err)
			}
		})
	}
}

func TestFSTypeIn(t *testing.T) {
	def := DefaultRefusedFSTypes()
	for _, c := range []struct {
		fsType string
		types  []string
		want   bool
	}{
		{"proc", def, true},
		{"cgroup2", def, true},
		{"fuse", def, true},
		{"fuse.sshfs", def, true},
		{"fuseblk", def, true},
		{"tmpfs", def, false},
		{"ext4", def, false},
		{"nfs4", def, false},
		{"cgroup2", []string{"cgroup"}, false},
		{"fuseblk", []string{"fuse"}, false},
		{"fuse.sshfs", []string{"fuse.sshfs"}, true},
		{"fuse.sshfs", []string{"fuse.gcsfuse"}, false},
		{"tmpfs", nil, false},
	} {
		if got := fsTypeIn(c.fsType, c.types); got != c.want {
			t.Errorf("fsTypeIn(%q, %q) = %v, want %v", c.fsType, c.types, got, c.want)
		}
	}
	// Each caller gets its own list.
	def[0] = "changed"
	if DefaultRefusedFSTypes()[0] == "changed" {
		t.Error("DefaultRefusedFSTypes returns a shared slice")
	}
}

// TestFindBySource: a RAMDISK and its binds are found by what they are,
// and each one's mount point read by its ID.
func TestFindBySource(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	dir := testDir(t)
	src := ramdisk(t, dir)
	target := bindAt(t, u, src, dir, "work/in")

	ms, err := FindBySource("rsa-mounttest", "tmpfs")
	if err != nil {
		t.Fatal(err)
	}
	var points []string
	for _, m := range ms {
		p, err := MountPoint(m.ID)
		if err != nil {
			t.Fatal(err)
		}
		points = append(points, p)
	}
	slices.Sort(points)
	if want := []string{src, target}; !slices.Equal(points, want) {
		t.Fatalf("FindBySource found the mounts at %q, want %q", points, want)
	}
	if ms, _ := FindBySource("rsa-mounttest", "ext4"); len(ms) != 0 {
		t.Fatalf("FindBySource ignored the type: %v", ms)
	}
	if err := Unbind(src, false); err != nil {
		t.Fatal(err)
	}
	if ms, _ := FindBySource("rsa-mounttest", "tmpfs"); len(ms) != 1 {
		t.Fatalf("after Unbind: %v, want the RAMDISK alone", ms)
	}
	if _, err := MountPoint(ms[len(ms)-1].ID + 1<<40); err == nil {
		t.Fatal("MountPoint of a mount that never was: no error")
	}
}

// TestBindIsUnprivileged: a bind over a job's directory is nosuid and
// nodev even when the RAMDISK it shows was mounted without them (a Gluster
// client's mount, whose server may hold a set-user-ID file a client
// planted as root), and a set-user-ID root program on it runs with the
// caller's rights only.
func TestBindIsUnprivileged(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	dir := testDir(t)
	src := filepath.Join(dir, "suid-ramdisk")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	// Neither nosuid nor nodev, on purpose.
	if err := unix.Mount("rsa-mounttest", src, "tmpfs", 0, "size=16m,mode=0755"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = Unbind(src, true)
		_ = unix.Unmount(src, unix.MNT_DETACH)
	})
	// A copy of id(1), set-user-ID root, as a client trusted with uid 0
	// could write it.
	id, err := exec.LookPath("id")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(id)
	if err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(src, "suid-id")
	if err := os.WriteFile(prog, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(prog, 0o4755); err != nil {
		t.Fatal(err)
	}
	target := testutil.MkdirOwned(t, u, filepath.Join(dir, "job-input"))
	if err := (Policy{}).Bind("input directory", src, target, u.UID); err != nil {
		t.Fatal(err)
	}
	m, ok, err := MountedAt(target)
	if err != nil || !ok {
		t.Fatalf("MountedAt(%s): %v %v", target, ok, err)
	}
	if !m.Unprivileged() {
		t.Fatalf("the bind at %s has attributes %#x: not nosuid and nodev", target, m.Attr)
	}
	cmd := exec.Command(filepath.Join(target, "suid-id"), "-u")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.UID, Gid: u.GID}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("running the set-user-ID program as uid %d: %v", u.UID, err)
	}
	if got := strings.TrimSpace(string(out)); got != fmt.Sprint(u.UID) {
		t.Fatalf("a set-user-ID root program on the bind ran with effective uid %s, want the caller's %d", got, u.UID)
	}
}
