package erofs

import (
	"encoding/binary"
	"hash/crc32"
)

// The on-disk format, as the Linux kernel reads it (fs/erofs/erofs_fs.h).
// All integers are little-endian. Only what this package writes is named
// here: uncompressed images with 4 KiB blocks, no shared xattrs, no extra
// devices.
const (
	superOffset = 1024       // the superblock follows a 1 KiB gap left for boot sectors
	superMagic  = 0xE0F5E1E2 // EROFS_SUPER_MAGIC_V1
	superSize   = 128

	blockBits = 12
	blockSize = 1 << blockBits

	// featureCompatSBChecksum: the superblock carries a crc32c of its
	// block, which the kernel verifies before trusting anything else.
	featureCompatSBChecksum = 0x1

	// An inode's slot is 32 bytes: a nid is the inode's offset from the
	// start of the metadata area in 32-byte units.
	slotBits        = 5
	slotSize        = 1 << slotBits
	compactSize     = 32
	extendedSize    = 64
	xattrHeaderSize = 12

	// i_format: bit 0 is the inode version (0 compact, 1 extended),
	// bits 1-3 the data layout.
	formatExtended   = 1
	layoutShift      = 1
	layoutFlatPlain  = 0 // all data in consecutive blocks at raw_blkaddr
	layoutFlatInline = 2 // full blocks at raw_blkaddr, the tail right after the inode

	direntSize = 12
	maxNameLen = 255

	xattrIndexUser = 1
)

// File types of a directory entry (EROFS_FT_*, the same as the generic FT_*).
const (
	ftUnknown = 0
	ftRegular = 1
	ftDir     = 2
	ftSymlink = 7
)

// Mode type bits, as in i_mode.
const (
	modeTypeMask = 0o170000
	modeDir      = 0o040000
	modeRegular  = 0o100000
	modeSymlink  = 0o120000
	modePermMask = 0o7777 // permissions with the setuid, setgid and sticky bits
)

// superblock is the subset of struct erofs_super_block this package sets
// or checks.
type superblock struct {
	checksum        uint32
	featureCompat   uint32
	blockBits       uint8
	rootNid         uint16
	inodes          uint64
	buildTime       uint64
	buildTimeNsec   uint32
	blocks          uint32
	metaBlock       uint32
	featureIncompat uint32
}

// encodeSuperblockBlock returns block 0 of an image: zeros, the superblock
// at superOffset, and its checksum.
func encodeSuperblockBlock(sb superblock) []byte {
	blk := make([]byte, blockSize)
	b := blk[superOffset:]
	le := binary.LittleEndian
	le.PutUint32(b[0:], superMagic)
	// b[4:8] is the checksum, computed over the rest with it zero.
	le.PutUint32(b[8:], sb.featureCompat)
	b[12] = sb.blockBits
	b[13] = 0 // sb_extslots
	le.PutUint16(b[14:], sb.rootNid)
	le.PutUint64(b[16:], sb.inodes)
	le.PutUint64(b[24:], sb.buildTime)
	le.PutUint32(b[32:], sb.buildTimeNsec)
	le.PutUint32(b[36:], sb.blocks)
	le.PutUint32(b[40:], sb.metaBlock)
	le.PutUint32(b[44:], 0) // xattr_blkaddr: no shared xattrs
	// b[48:64] uuid and b[64:80] volume name stay zero: the image must be
	// the same for the same stream.
	le.PutUint32(b[80:], sb.featureIncompat)
	// available_compr_algs, extra_devices, devt_slotoff, dirblkbits and
	// the rest stay zero.
	if sb.featureCompat&featureCompatSBChecksum != 0 {
		le.PutUint32(b[4:], superblockChecksum(b))
	}
	return blk
}

// superblockChecksum is the kernel's crc32c(~0, sb, blocksize-1024) with
// the checksum field taken as zero. The kernel's crc32c applies neither
// the initial nor the final inversion of the usual CRC-32C, so it is the
// complement of Go's checksum.
func superblockChecksum(b []byte) uint32 {
	castagnoli := crc32.MakeTable(crc32.Castagnoli) // cached by hash/crc32
	var zero [4]byte
	crc := crc32.Update(0, castagnoli, b[:4])
	crc = crc32.Update(crc, castagnoli, zero[:])
	crc = crc32.Update(crc, castagnoli, b[8:blockSize-superOffset])
	return ^crc
}

// decodeSuperblock reads the fields of block 0 that Check validates. It
// does not check them.
func decodeSuperblock(blk []byte) (sb superblock, magic uint32, extSlots, dirBlockBits uint8) {
	b := blk[superOffset:]
	le := binary.LittleEndian
	magic = le.Uint32(b[0:])
	sb.checksum = le.Uint32(b[4:])
	sb.featureCompat = le.Uint32(b[8:])
	sb.blockBits = b[12]
	extSlots = b[13]
	sb.rootNid = le.Uint16(b[14:])
	sb.inodes = le.Uint64(b[16:])
	sb.buildTime = le.Uint64(b[24:])
	sb.buildTimeNsec = le.Uint32(b[32:])
	sb.blocks = le.Uint32(b[36:])
	sb.metaBlock = le.Uint32(b[40:])
	sb.featureIncompat = le.Uint32(b[80:])
	dirBlockBits = b[90]
	return sb, magic, extSlots, dirBlockBits
}

// diskInode is an inode as written: the union of the compact and extended
// forms. Which form is used is decided by fitsCompact.
type diskInode struct {
	extended   bool
	layout     uint16
	xattrCount uint16 // i_xattr_icount: 0, or 1 + (ibody size - 12) / 4
	mode       uint16
	nlink      uint32
	size       uint64
	blkaddr    uint32
	ino        uint32
	uid, gid   uint32
	mtime      int64
	mtimeNsec  uint32
}

// encode writes the inode into b, which must be at least 32 or 64 bytes.
func (d *diskInode) encode(b []byte) {
	le := binary.LittleEndian
	format := d.layout << layoutShift
	if !d.extended {
		clear(b[:compactSize])
		le.PutUint16(b[0:], format)
		le.PutUint16(b[2:], d.xattrCount)
		le.PutUint16(b[4:], d.mode)
		le.PutUint16(b[6:], uint16(d.nlink))
		le.PutUint32(b[8:], uint32(d.size))
		le.PutUint32(b[16:], d.blkaddr)
		le.PutUint32(b[20:], d.ino)
		le.PutUint16(b[24:], uint16(d.uid))
		le.PutUint16(b[26:], uint16(d.gid))
		return
	}
	clear(b[:extendedSize])
	le.PutUint16(b[0:], format|formatExtended)
	le.PutUint16(b[2:], d.xattrCount)
	le.PutUint16(b[4:], d.mode)
	le.PutUint64(b[8:], d.size)
	le.PutUint32(b[16:], d.blkaddr)
	le.PutUint32(b[20:], d.ino)
	le.PutUint32(b[24:], d.uid)
	le.PutUint32(b[28:], d.gid)
	le.PutUint64(b[32:], uint64(d.mtime))
	le.PutUint32(b[40:], d.mtimeNsec)
	le.PutUint32(b[44:], d.nlink)
}

// decodeInode reads an inode of either form from b, which holds at least
// 64 bytes unless the inode is compact. It reports the form's size.
func decodeInode(b []byte) (d diskInode, size int) {
	le := binary.LittleEndian
	format := le.Uint16(b[0:])
	d.extended = format&formatExtended != 0
	d.layout = format >> layoutShift & 0x7
	d.xattrCount = le.Uint16(b[2:])
	d.mode = le.Uint16(b[4:])
	if !d.extended {
		d.nlink = uint32(le.Uint16(b[6:]))
		d.size = uint64(le.Uint32(b[8:]))
		d.blkaddr = le.Uint32(b[16:])
		d.ino = le.Uint32(b[20:])
		d.uid = uint32(le.Uint16(b[24:]))
		d.gid = uint32(le.Uint16(b[26:]))
		return d, compactSize
	}
	d.size = le.Uint64(b[8:])
	d.blkaddr = le.Uint32(b[16:])
	d.ino = le.Uint32(b[20:])
	d.uid = le.Uint32(b[24:])
	d.gid = le.Uint32(b[28:])
	d.mtime = int64(le.Uint64(b[32:]))
	d.mtimeNsec = le.Uint32(b[40:])
	d.nlink = le.Uint32(b[44:])
	return d, extendedSize
}

// xattrBodySize is the size of an inode's inline xattr area for its
// i_xattr_icount, as the kernel computes it.
func xattrBodySize(count uint16) int {
	if count == 0 {
		return 0
	}
	return xattrHeaderSize + 4*(int(count)-1)
}

// putDirent writes one struct erofs_dirent.
func putDirent(b []byte, nid uint64, nameOff uint16, fileType uint8) {
	le := binary.LittleEndian
	le.PutUint64(b[0:], nid)
	le.PutUint16(b[8:], nameOff)
	b[10] = fileType
	b[11] = 0
}
