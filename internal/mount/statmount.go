package mount

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Raw listmount(2) and statmount(2) (Linux 6.8; the sb_source and
// fs_subtype strings came later): golang.org/x/sys has their syscall
// numbers but no wrappers. Unlike /proc/self/mountinfo they name every
// mount by a 64-bit ID that is never reused, and they return one mount at
// a time with only the strings asked for, so a mount point a user made
// enormous costs only the callers that ask for that mount's point.

// statmount(2) request mask bits (linux/mount.h).
const (
	statmountSBBasic   = 0x001 // sb_dev_major, sb_dev_minor, sb_magic, sb_flags
	statmountMntBasic  = 0x002 // mnt_id, mnt_parent_id, mnt_id_old, ...
	statmountMntRoot   = 0x008 // mnt_root string
	statmountMntPoint  = 0x010 // mnt_point string
	statmountFSType    = 0x020 // fs_type string
	statmountFSSubtype = 0x100 // fs_subtype string (FUSE's "sshfs" in "fuse.sshfs")
	statmountSBSource  = 0x200 // sb_source string

	// statmountIdentity is what Info holds besides the two path strings.
	statmountIdentity = statmountSBBasic | statmountMntBasic | statmountFSType | statmountFSSubtype | statmountSBSource
)

// lsmtRoot asks listmount(2) for every mount of the mount namespace.
const lsmtRoot = 0xffffffffffffffff

// sizeofStatmount is the fixed part of struct statmount, which the kernel
// keeps at 512 bytes (new fields take spare room); its strings follow it.
const sizeofStatmount = 512

// Byte offsets of the fields read from struct statmount.
const (
	offMask        = 8
	offDevMajor    = 16
	offDevMinor    = 20
	offFSType      = 36
	offMntID       = 40
	offMntParentID = 48
	offMntIDOld    = 56
	offMntAttr     = 64
	offMntRoot     = 104
	offMntPoint    = 108
	offFSSubtype   = 120
	offSBSource    = 124
)

const (
	// statmountStart is the buffer first tried: room for any ordinary
	// mount's strings.
	statmountStart = 4 << 10
	// maxPointLen bounds the memory one mount point may cost RSA (a user
	// can make a path deeper than any fixed limit); a longer point is
	// reported as such rather than read.
	maxPointLen = 16 << 20
	// maxListPointLen bounds it for List, which reads every mount's point:
	// longer points are left empty there.
	maxListPointLen = 1 << 20
	// maxStringsLen bounds the other strings (type, source, root).
	maxStringsLen = 1 << 20
)

// errTooLong is returned by statmounter.stat when the strings asked for do
// not fit in the largest buffer allowed.
var errTooLong = errors.New("longer than RSA reads")

// mntIDReq is struct mnt_id_req; the kernel reads Size bytes of it.
type mntIDReq struct {
	Size    uint32
	MntNsFd uint32
	MntID   uint64
	Param   uint64
	MntNsID uint64
}

// ids lists the IDs of every mount in this thread's mount namespace. With
// the mountinfo table it keeps what it read (mount points up to pointLen
// bytes), and stat answers from that until the next ids: a listing and the
// reads that follow it then cost one read of the table, not one per mount.
func (s *statmounter) ids(pointLen int) ([]uint64, error) {
	if Table() == Mountinfo {
		return s.readTable(mountinfoLimits{point: pointLen, strings: maxStringsLen})
	}
	return listMounts()
}

// snapshot makes stat answer from one read of the mountinfo table, which
// keeps the point of mount only alone (up to pointLen bytes), until snap
// is cleared. With statmount it does nothing: each stat asks the kernel.
func (s *statmounter) snapshot(only uint64, pointLen int) error {
	if Table() != Mountinfo {
		return nil
	}
	_, err := s.readTable(mountinfoLimits{point: pointLen, strings: maxStringsLen, only: only})
	return err
}

// readTable reads the mountinfo table into snap and lists its IDs.
func (s *statmounter) readTable(lim mountinfoLimits) ([]uint64, error) {
	snap, ids, err := readMountinfo(lim)
	if err != nil {
		return nil, err
	}
	s.snap = snap
	return ids, nil
}

// listMounts lists the unique IDs of every mount in this thread's mount
// namespace with listmount(2), in ascending order.
func listMounts() ([]uint64, error) {
	var ids []uint64
	buf := make([]uint64, 512)
	req := mntIDReq{Size: unix.MNT_ID_REQ_SIZE_VER0, MntID: lsmtRoot}
	for {
		n, _, errno := unix.Syscall6(unix.SYS_LISTMOUNT, uintptr(unsafe.Pointer(&req)),
			uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return nil, fmt.Errorf("listing mounts (listmount): %w", errno)
		}
		ids = append(ids, buf[:n]...)
		if int(n) < len(buf) {
			return ids, nil
		}
		req.Param = buf[n-1] // continue after the last one listed
	}
}

// statmount is the part of struct statmount RSA reads. A string not asked
// for, or that the mount lacks, is empty.
type statmount struct {
	mask            uint64
	devMajor        uint32
	devMinor        uint32
	id, parent      uint64
	oldID           uint32
	attr            uint64 // MOUNT_ATTR_* of the mount (statmountMntBasic)
	fsType, subtype string
	source          string
	root, point     string
	hasPoint        bool
	pointCut        bool   // mountinfo only: point is longer than was kept
	superOptions    string // mountinfo only: the super block's options
}

// statmounter reads mounts with statmount(2), reusing its buffer, or from
// /proc/self/mountinfo where the kernel lacks it (Table).
type statmounter struct {
	buf []byte
	// snap is the mountinfo table the last ids read; nil before, and
	// always with statmount. Without it each stat reads the table anew.
	snap map[uint64]statmount
}

// stat reads mount id's fields in mask, growing the buffer (on EOVERFLOW)
// up to limit bytes of strings; beyond that it returns errTooLong.
// ENOENT means the mount is gone.
func (s *statmounter) stat(id, mask uint64, limit int) (statmount, error) {
	if Table() == Mountinfo {
		return s.statMountinfo(id, mask, limit)
	}
	return s.statRaw(id, mask, limit)
}

// statRaw is stat with statmount(2).
func (s *statmounter) statRaw(id, mask uint64, limit int) (statmount, error) {
	size := statmountStart
	if len(s.buf) > size {
		size = len(s.buf)
	}
	for {
		if len(s.buf) < size {
			s.buf = make([]byte, size)
		}
		buf := s.buf[:min(size, sizeofStatmount+limit)]
		err := statmountRaw(id, mask, buf)
		if err == nil {
			return parseStatmount(buf, id)
		}
		if !errors.Is(err, unix.EOVERFLOW) {
			return statmount{}, err
		}
		if len(buf) >= sizeofStatmount+limit {
			return statmount{}, errTooLong
		}
		size *= 4 // each try makes the kernel build all strings again
	}
}

// statFits reads mount id's fields in mask into a buffer with room for
// exactly n bytes of strings, and reports false (no error) if they are
// longer. It finds a mount at a known path without reading longer points.
func (s *statmounter) statFits(id, mask uint64, n int) (statmount, bool, error) {
	if Table() == Mountinfo {
		sm, err := s.statMountinfo(id, mask, n)
		if errors.Is(err, errTooLong) {
			return statmount{}, false, nil
		}
		return sm, err == nil, err
	}
	// The kernel wants room for the string's NUL and one byte more.
	size := sizeofStatmount + n + 2
	if len(s.buf) < size {
		s.buf = make([]byte, size)
	}
	buf := s.buf[:size]
	err := statmountRaw(id, mask, buf)
	if errors.Is(err, unix.EOVERFLOW) {
		return statmount{}, false, nil
	}
	if err != nil {
		return statmount{}, false, err
	}
	sm, err := parseStatmount(buf, id)
	return sm, err == nil, err
}

// statMountinfo is stat from the mountinfo table: the one ids kept, or a
// fresh read. With the mount point in mask, a point longer than limit is
// errTooLong, as with statmount (which counts all strings in limit).
func (s *statmounter) statMountinfo(id, mask uint64, limit int) (statmount, error) {
	table := s.snap
	if table == nil {
		pointLen := 0
		if mask&statmountMntPoint != 0 {
			pointLen = limit
		}
		var err error
		if table, _, err = readMountinfo(mountinfoLimits{point: pointLen, strings: maxStringsLen, only: id}); err != nil {
			return statmount{}, err
		}
	}
	sm, ok := table[id]
	if !ok {
		return statmount{}, unix.ENOENT
	}
	if mask&statmountMntPoint != 0 && (sm.pointCut || len(sm.point) > limit) {
		return statmount{}, errTooLong
	}
	return sm.masked(mask), nil
}

// masked leaves the strings of sm that mask asks for, as statmount would.
func (sm statmount) masked(mask uint64) statmount {
	sm.mask &= mask | statmountSBBasic | statmountMntBasic
	if mask&statmountFSType == 0 {
		sm.fsType = ""
	}
	if mask&statmountFSSubtype == 0 {
		sm.subtype = ""
	}
	if mask&statmountSBSource == 0 {
		sm.source = ""
	}
	if mask&statmountMntRoot == 0 {
		sm.root = ""
	}
	if mask&statmountMntPoint == 0 {
		sm.point, sm.hasPoint = "", false
	}
	return sm
}

func statmountRaw(id, mask uint64, buf []byte) error {
	req := mntIDReq{Size: unix.MNT_ID_REQ_SIZE_VER0, MntID: id, Param: mask}
	for {
		_, _, errno := unix.Syscall6(unix.SYS_STATMOUNT, uintptr(unsafe.Pointer(&req)),
			uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0, 0)
		switch errno {
		case 0:
			return nil
		case unix.EINTR:
			continue
		default:
			return errno
		}
	}
}

func parseStatmount(buf []byte, id uint64) (statmount, error) {
	le := binary.NativeEndian
	size := int(le.Uint32(buf))
	if size < sizeofStatmount || size > len(buf) {
		return statmount{}, fmt.Errorf("statmount of mount %d returned size %d for a %d-byte buffer", id, size, len(buf))
	}
	strs := buf[sizeofStatmount:size]
	sm := statmount{
		mask:     le.Uint64(buf[offMask:]),
		devMajor: le.Uint32(buf[offDevMajor:]),
		devMinor: le.Uint32(buf[offDevMinor:]),
		id:       le.Uint64(buf[offMntID:]),
		parent:   le.Uint64(buf[offMntParentID:]),
		oldID:    le.Uint32(buf[offMntIDOld:]),
		attr:     le.Uint64(buf[offMntAttr:]),
	}
	str := func(bit uint64, off int) (string, bool) {
		if sm.mask&bit == 0 {
			return "", false
		}
		o := int(le.Uint32(buf[off:]))
		if o >= len(strs) {
			return "", false
		}
		s := strs[o:]
		for i, c := range s {
			if c == 0 {
				return string(s[:i]), true
			}
		}
		return string(s), true
	}
	sm.fsType, _ = str(statmountFSType, offFSType)
	sm.subtype, _ = str(statmountFSSubtype, offFSSubtype)
	sm.source, _ = str(statmountSBSource, offSBSource)
	sm.root, _ = str(statmountMntRoot, offMntRoot)
	sm.point, sm.hasPoint = str(statmountMntPoint, offMntPoint)
	return sm, nil
}

// dev is the file system's device number as mountinfo writes it.
func (sm statmount) dev() string { return fmt.Sprintf("%d:%d", sm.devMajor, sm.devMinor) }

// fullType is the type as mountinfo writes it: "fuse.sshfs", "tmpfs".
func (sm statmount) fullType() string {
	if sm.subtype != "" {
		return sm.fsType + "." + sm.subtype
	}
	return sm.fsType
}

func (sm statmount) info() Info {
	return Info{ID: sm.id, Parent: sm.parent, Dev: sm.dev(), Root: sm.root, Point: sm.point,
		FSType: sm.fullType(), Source: sm.source, Attr: sm.attr}
}

// mountIDOf returns the unique ID of the mount fd is on. AT_STATX_DONT_SYNC
// keeps a user's FUSE server from being asked anything (and so from
// stalling root).
//
// With the mountinfo table it is the kernel's 32-bit mount ID, the one
// mountinfo lists.
func mountIDOf(fd int) (uint64, error) {
	if Table() == Mountinfo {
		return oldMountIDOf(fd)
	}
	var stx unix.Statx_t
	err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, unix.STATX_MNT_ID_UNIQUE, &stx)
	if err == nil && stx.Mask&unix.STATX_MNT_ID_UNIQUE != 0 {
		return stx.Mnt_id, nil
	}
	// FUSE answers any request mask from someone not allowed in (root,
	// without allow_other) with EACCES, and a FUSE file system its server
	// broke answers with EIO; the old 32-bit mount ID is still to be had
	// (oldMountIDOf). Map that to the unique one.
	old, err := oldMountIDOf(fd)
	if err != nil {
		return 0, err
	}
	var s statmounter
	ids, err := s.ids(0)
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		sm, err := s.stat(id, statmountMntBasic, 0)
		if err == nil && uint64(sm.oldID) == old {
			return id, nil
		}
	}
	return 0, fmt.Errorf("mount %d is not in this mount namespace", old)
}

// oldMountIDOf returns the kernel's 32-bit ID of the mount fd is on: from
// statx with the empty request mask, which FUSE answers without asking
// its server, or, where even that fails (a FUSE file system its server
// marked bad answers EIO), from the descriptor's fdinfo, which asks no
// file system anything.
func oldMountIDOf(fd int) (uint64, error) {
	var stx unix.Statx_t
	err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, 0, &stx)
	if err == nil && stx.Mask&unix.STATX_MNT_ID != 0 {
		return stx.Mnt_id, nil
	}
	id, ferr := fdinfoMountID(fd)
	if ferr != nil {
		return 0, fmt.Errorf("reading the mount ID (statx: %v): %w", err, ferr)
	}
	return id, nil
}

// fdinfoMountID reads the "mnt_id:" line of fd's fdinfo.
func fdinfoMountID(fd int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/thread-self/fdinfo/%d", fd))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "mnt_id:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 32)
		}
	}
	return 0, errors.New("no mnt_id in its fdinfo")
}
