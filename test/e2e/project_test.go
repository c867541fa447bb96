package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// TestProjectDirectories: a job reads its input from a PI's group
// directory and writes its output into the group's output directory, and
// another reads from a directory shared with its user by an ACL alone.
// The RAMDISK at each path carries the directory's owner, group, mode and
// ACL, so nobody reaches more through it than the directory gave; the
// output lands on disk as the user's, in the group. Directories the user
// may not use in their role are refused at submission, nothing made.
func TestProjectDirectories(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	pi := testutil.EnsureOtherUser(t)
	gid := testutil.EnsureGroup(t, "rsatest-e2e-project", e.user.Name)
	e.groups = []uint32{gid}
	mk := func(rel string, uid, gid uint32, mode uint32) string {
		t.Helper()
		p := filepath.Join(e.dir, rel)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, int(uid), int(gid)); err != nil {
			t.Fatal(err)
		}
		if err := unix.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	put := func(p, data string, uid, gid uint32, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, int(uid), int(gid)); err != nil {
			t.Fatal(err)
		}
	}
	mk("project", pi.UID, pi.GID, 0o755)
	in := mk("project/in", pi.UID, gid, 0o2750)
	put(filepath.Join(in, "data"), "the group's input\n", pi.UID, gid, 0o640)
	out := mk("project/out", pi.UID, gid, 0o2770)
	shared := mk("project/shared", pi.UID, pi.GID, 0o700)
	if err := unix.Setxattr(shared, "system.posix_acl_access", testutil.AccessACL(e.user.UID), 0); err != nil {
		t.Fatal(err)
	}
	put(filepath.Join(shared, "data"), "shared by ACL\n", pi.UID, pi.GID, 0o644)
	var sharedSt unix.Stat_t // its group bits are the ACL's mask now
	if err := unix.Stat(shared, &sharedSt); err != nil {
		t.Fatal(err)
	}
	closed := mk("project/closed", pi.UID, pi.GID, 0o2750)
	ctl := e.mkdir("ctl")

	for _, c := range []struct {
		args []string
		why  string
	}{
		{[]string{"--in", closed}, "may not be used by the job's user: it needs to read it"},
		{[]string{"--out", in}, "may not be used by the job's user: it needs to read and write it"},
		{[]string{"--out", out, "--output", "private"}, "output=private: output directory"},
	} {
		_, stderr, err := e.rsa(false, append([]string{"submit"}, c.args...)...)
		if err == nil || !strings.Contains(stderr, c.why) {
			t.Errorf("submit %q: %v %q; want a refusal saying %q", c.args, err, stderr, c.why)
		}
	}

	job := e.script("project.sh", inRAM+`
waitram "$1"
stat -c '%u %g %a' "$1" > `+ctl+`/in-root
cat "$1/data" > `+ctl+`/in-data
waitram "$2"
stat -c '%u %g %a' "$2" > `+ctl+`/out-root
echo result > "$2/result"
`)
	b := e.runBG("--in", in, "--out", out, "--delay", switchDelay, "--", job, in, out)
	if code := b.wait(t); code != 0 {
		t.Fatalf("rsa run exit %d\n%s", code, b.errb.String())
	}
	if stdout, stderr, err := e.rsa(false, "wait", "1"); err != nil || !strings.Contains(stdout, "verified") {
		t.Fatalf("rsa wait: %v\n%s%s", err, stdout, stderr)
	}
	ids := func(mode string) string {
		return strconv.FormatUint(uint64(pi.UID), 10) + " " + strconv.FormatUint(uint64(gid), 10) + " " + mode + "\n"
	}
	for _, c := range []struct{ file, want string }{
		{"in-root", ids("2750")},
		{"in-data", "the group's input\n"},
		{"out-root", ids("2770")},
	} {
		if got, err := os.ReadFile(filepath.Join(ctl, c.file)); err != nil || string(got) != c.want {
			t.Errorf("the job's %s: %q, %v; want %q", c.file, got, err, c.want)
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(out, "result"), &st); err != nil || st.Uid != e.user.UID || st.Gid != gid {
		t.Errorf("the output on disk: %+v, %v; want the user's, in the project's group %d", st, err, gid)
	}

	// An ACL alone admits the user: the RAMDISK's root is the PI's, with
	// the directory's mode (its group bits the ACL's mask, others none),
	// and the job reads it through the ACL it carries.
	job = e.script("shared.sh", inRAM+`
waitram "$1"
stat -c '%u %a' "$1" > `+ctl+`/shared-root
cat "$1/data" > `+ctl+`/shared-data
`)
	b = e.runBG("--in", shared, "--", job, shared)
	if code := b.wait(t); code != 0 {
		t.Fatalf("rsa run of the ACL job: exit %d\n%s", code, b.errb.String())
	}
	if stdout, stderr, err := e.rsa(false, "wait", "2"); err != nil {
		t.Fatalf("rsa wait 2: %v\n%s%s", err, stdout, stderr)
	}
	for _, c := range []struct{ file, want string }{
		{"shared-root", fmt.Sprintf("%d %o\n", pi.UID, sharedSt.Mode&0o7777)},
		{"shared-data", "shared by ACL\n"},
	} {
		if got, err := os.ReadFile(filepath.Join(ctl, c.file)); err != nil || string(got) != c.want {
			t.Errorf("the ACL job's %s: %q, %v; want %q", c.file, got, err, c.want)
		}
	}
	e.noLeaks()
}
