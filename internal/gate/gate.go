// Package gate opens and closes a RAMDISK's gate: the root-owned 0700
// directory above a job's file system (root/ID above root/ID/ram) with one
// POSIX ACL entry that lets the job's user alone pass. The file system's
// own root can then take whatever mode and group the job wants while no
// other user reaches it through the gate, and the job's processes still
// reach it by path.
//
// The local engine gates its tmpfs this way on the control host, and the
// agent gates a job's Gluster volume the same way on compute nodes, so
// that one path names a job's RAMDISK on every node.
package gate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// POSIX ACL xattr encoding (linux/posix_acl_xattr.h): a version word, then
// entries of tag, permission and id, sorted by tag.
const (
	aclVersion  = 2
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclMask     = 0x10
	aclOther    = 0x20
	aclNoID     = 0xffffffff
	aclXattr    = "system.posix_acl_access"
)

// Open makes dir, an existing directory, root-owned 0700 with one ACL
// entry letting uid pass (search only: it cannot list, create or rename
// anything in the gate).
func Open(dir string, uid uint32) error {
	if err := os.Chown(dir, 0, 0); err != nil {
		return fmt.Errorf("securing the RAMDISK's gate: %w", err)
	}
	b := binary.LittleEndian.AppendUint32(nil, aclVersion)
	for _, e := range []struct {
		tag, perm uint16
		id        uint32
	}{{aclUserObj, 7, aclNoID}, {aclUser, 1, uid}, {aclGroupObj, 0, aclNoID}, {aclMask, 1, aclNoID}, {aclOther, 0, aclNoID}} {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	if err := unix.Setxattr(dir, aclXattr, b, 0); err != nil {
		return fmt.Errorf("letting uid %d through the RAMDISK's gate %s: %w (the RAMDISK root must be on a file system with POSIX ACLs, such as ext4, xfs or tmpfs)", uid, dir, err)
	}
	return nil
}

// Close takes the ACL away from dir and makes it 0700 again: no one but
// root passes. A gate that is not there is closed already.
func Close(dir string) error {
	if err := unix.Removexattr(dir, aclXattr); err != nil && !errors.Is(err, unix.ENODATA) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("closing the RAMDISK's gate %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("closing the RAMDISK's gate %s: %w", dir, err)
	}
	return nil
}
