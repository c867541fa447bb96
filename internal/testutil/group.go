package testutil

import (
	"encoding/binary"
	"os/user"
	"strconv"
	"testing"

	"github.com/rsa-hpc/rsa/internal/rsatest"
)

// EnsureGroup creates the group name with the accounts members in it (their
// supplementary group), and removes it when the test ends. It returns the
// group's id. A group left by an earlier run is removed first: its members
// would be that run's.
func EnsureGroup(t testing.TB, name string, members ...string) uint32 {
	t.Helper()
	RequireRoot(t)
	if _, err := user.LookupGroup(name); err == nil {
		if err := rsatest.RunAccountTool("groupdel", name); err != nil {
			t.Fatal(err)
		}
	}
	if err := rsatest.RunAccountTool("groupadd", name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rsatest.RunAccountTool("groupdel", name); err != nil {
			t.Errorf("removing test group %s: %v", name, err)
		}
	})
	for _, m := range members {
		if err := rsatest.RunAccountTool("usermod", "--append", "--groups", name, m); err != nil {
			t.Fatal(err)
		}
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		t.Fatal(err)
	}
	gid, err := strconv.ParseUint(g.Gid, 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(gid)
}

// AccessACL is a POSIX access ACL as the kernel keeps it in the extended
// attribute system.posix_acl_access: the owner rwx, the user uid rwx, the
// owning group and others nothing (mask rwx). Set it with setxattr to
// share a directory with one user by ACL alone.
func AccessACL(uid uint32) []byte {
	const undefined = 0xffffffff
	entries := []struct {
		tag, perm uint16
		id        uint32
	}{{0x01, 7, undefined}, {0x02, 7, uid}, {0x04, 0, undefined}, {0x10, 7, undefined}, {0x20, 0, undefined}}
	b := binary.LittleEndian.AppendUint32(nil, 2) // POSIX_ACL_XATTR_VERSION
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	return b
}
