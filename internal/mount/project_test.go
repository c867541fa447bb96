package mount

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/asuser"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// TestProjectDirectories: a directory another user owns (a PI's project
// directory) is a target when the job's user may use it in its role by
// the ordinary permission rules, through a group or an ACL, checked with
// the user's rights; never one open to everyone, or root's.
func TestProjectDirectories(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.EnsureUser(t)
	dir := testutil.TempDir(t)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const owner, project = 4242, 54321
	mk := func(name string, uid, gid int, mode uint32) string {
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
		if err := unix.Chmod(p, mode); err != nil { // os.Chmod drops 0o7000
			t.Fatal(err)
		}
		return p
	}
	group := mk("group", owner, project, 0o2770)
	readOnly := mk("readonly", owner, project, 0o2750)
	byACL := mk("acl", owner, owner, 0o700)
	if err := unix.Setxattr(byACL, "system.posix_acl_access", testutil.AccessACL(u.UID), 0); err != nil {
		t.Fatalf("setting an ACL (tmpfs and ext4 keep them): %v", err)
	}
	open := mk("open", owner, project, 0o777)
	sticky := mk("sticky", owner, project, 0o1770)
	rootGroup := mk("rootgroup", 0, project, 0o2770)

	member := asuser.Identity{UID: u.UID, GID: u.GID, Groups: []uint32{project}}
	stranger := asuser.Identity{UID: u.UID, GID: u.GID}
	for _, c := range []struct {
		name string
		who  asuser.Identity
		role string
		path string
		want string // "" accepted, else part of the refusal
	}{
		{"group member reads", member, InputRole, group, ""},
		{"group member writes", member, "output directory", group, ""},
		{"group member, read-only directory, input", member, InputRole, readOnly, ""},
		{"group member, read-only directory, output", member, "output directory", readOnly, "may not be used by the job's user: it needs to read and write it"},
		{"not a member", stranger, InputRole, group, "may not be used by the job's user: it needs to read it"},
		{"granted by an ACL, input", stranger, InputRole, byACL, ""},
		{"granted by an ACL, output", stranger, "output directory", byACL, ""},
		{"open to everyone", member, "output directory", open, "open to everyone (mode 0777)"},
		{"sticky", member, "output directory", sticky, "open to everyone (mode 1770)"},
		{"root's, even with the group", member, InputRole, rootGroup, "owned by uid 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := asuser.Do(c.who, func() error { return CheckTarget(c.role, c.path, u.UID) })
			if c.want == "" {
				if err != nil {
					t.Errorf("CheckTarget: %v; want it accepted", err)
				}
				return
			}
			var te *TargetError
			if !errors.As(err, &te) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("CheckTarget: %v; want a TargetError saying %q", err, c.want)
			}
		})
	}

	// The bind side (root, no user's rights): the same directories, by
	// owner and mode alone.
	for _, c := range []struct {
		path string
		ok   bool
	}{{group, true}, {byACL, true}, {open, false}, {sticky, false}, {rootGroup, false}} {
		fd, err := OpenTarget("output directory", c.path, u.UID)
		if err == nil {
			unix.Close(fd)
		}
		if (err == nil) != c.ok {
			t.Errorf("OpenTarget(%s) as root: %v; want accepted %v", c.path, err, c.ok)
		}
	}

	// Mounting over one (root, told the uid alone) checks the user's
	// access again with the groups this host's user database gives the
	// user, which do not include the project's group here.
	rd := ramdisk(t, dir)
	if err := Bind(InputRole, rd, byACL, u.UID); err != nil {
		t.Errorf("Bind over a directory whose ACL admits the user: %v", err)
	}
	if err := Bind(InputRole, rd, group, u.UID); err == nil || !strings.Contains(err.Error(), "may not be used by the job's user") {
		t.Errorf("Bind over a group directory of a group the user is not in: %v; want a refusal", err)
	}
	if err := Unbind(rd, true); err != nil {
		t.Fatal(err)
	}

	// A RAMDISK's root takes the directory's ACL, and loses one it has
	// not.
	from, err := openNoSymlinks(unix.AT_FDCWD, byACL)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(from)
	to, err := openNoSymlinks(unix.AT_FDCWD, rd)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(to)
	if has, err := HasACL(to); err != nil || has {
		t.Fatalf("HasACL of a fresh tmpfs: %v, %v", has, err)
	}
	if err := CopyACLs(from, to); err != nil {
		t.Fatal(err)
	}
	if has, err := HasACL(to); err != nil || !has {
		t.Errorf("HasACL after CopyACLs from a directory with an ACL: %v, %v", has, err)
	}
	plain, err := openNoSymlinks(unix.AT_FDCWD, group)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(plain)
	if err := CopyACLs(plain, to); err != nil {
		t.Fatal(err)
	}
	if has, err := HasACL(to); err != nil || has {
		t.Errorf("HasACL after CopyACLs from a directory without one: %v, %v", has, err)
	}
}
