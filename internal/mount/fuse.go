package mount

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// FUSEOwner returns the user a FUSE mount m serves: its super block's
// user_id= option, which the kernel requires at every FUSE mount and which
// fusermount, the only way a user mounts FUSE, sets to that user's uid,
// whatever the user asks for. A FUSE mount of uid 0 was made by root.
//
// Type and source do not say who made a FUSE mount: a user may call theirs
// fuse.glusterfs with the source of another job's volume. Code that finds
// mounts by type and source and acts on them as root's (the Gluster
// clients RSA mounted) checks the owner first.
//
// ok is false when m is gone, or is no longer the mount found (its ID now
// names another file system).
func FUSEOwner(m Info) (uid uint32, ok bool, err error) {
	if !strings.HasPrefix(m.FSType, "fuse") {
		return 0, false, fmt.Errorf("mount %d is %s, not FUSE", m.ID, m.FSType)
	}
	// Only mountinfo shows a super block's options on every kernel
	// (statmount from 6.11), by the 32-bit mount ID.
	old := m.ID
	if Table() == Statmount {
		var s statmounter
		sm, err := s.statRaw(m.ID, statmountSBBasic|statmountMntBasic, 0)
		if errors.Is(err, unix.ENOENT) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, fmt.Errorf("reading mount %d: %w", m.ID, err)
		}
		if sm.dev() != m.Dev {
			return 0, false, nil
		}
		old = uint64(sm.oldID)
	}
	table, _, err := readMountinfo(mountinfoLimits{strings: maxStringsLen, only: old})
	if err != nil {
		return 0, false, err
	}
	sm, found := table[old]
	if !found || sm.dev() != m.Dev {
		return 0, false, nil
	}
	for _, o := range strings.Split(sm.superOptions, ",") {
		if v, isUID := strings.CutPrefix(o, "user_id="); isUID {
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return 0, false, fmt.Errorf("mount %d: user_id %q: %w", m.ID, v, err)
			}
			return uint32(n), true, nil
		}
	}
	return 0, false, fmt.Errorf("mount %d (%s) has no user_id option", m.ID, m.FSType)
}
