package erofs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ErrCorrupt marks an image that Check refuses.
var ErrCorrupt = errors.New("not a valid image")

// Check validates an image of size bytes before it is mounted, so that a
// truncated, overwritten or foreign file is refused with a clear error
// instead of being handed to the kernel's parser. It accepts the subset of
// the format FromTar writes (4 KiB blocks, no compression, no chunks, no
// shared xattrs, no device or FIFO inodes) and checks:
//   - the superblock: magic, block size, features, checksum, and that its
//     block count is exactly the file's size;
//   - every inode reachable from the root: its form, type and layout, that
//     its data and inline tail lie inside the image (and outside block 0);
//   - every directory: "." and "..", names sorted and unique, dirents and
//     names inside their blocks, file types matching the inodes, no
//     directory reachable twice.
//
// Its work and memory are bounded by the image's size.
func Check(r io.ReaderAt, size int64) error {
	c := &checker{r: r, size: size}
	if err := c.run(); err != nil {
		return fmt.Errorf("erofs: %w: %w", ErrCorrupt, err)
	}
	return nil
}

type checker struct {
	r         io.ReaderAt
	size      int64
	sb        superblock
	metaStart int64
	blk       [blockSize]byte // scratch block
	seen      map[uint64]bool
}

func (c *checker) run() error {
	if c.size < blockSize || c.size%blockSize != 0 {
		return fmt.Errorf("size %d is not a whole number of %d-byte blocks", c.size, blockSize)
	}
	b0 := make([]byte, blockSize)
	if _, err := c.r.ReadAt(b0, 0); err != nil {
		return fmt.Errorf("reading the superblock: %w", err)
	}
	sb, magic, extSlots, dirBits := decodeSuperblock(b0)
	switch {
	case magic != superMagic:
		return fmt.Errorf("bad magic %#x", magic)
	case sb.blockBits != blockBits:
		return fmt.Errorf("block size 2^%d, not %d", sb.blockBits, blockSize)
	case dirBits != 0 || extSlots != 0:
		return fmt.Errorf("unsupported superblock (dirblkbits %d, extslots %d)", dirBits, extSlots)
	case sb.featureIncompat != 0:
		return fmt.Errorf("incompatible features %#x", sb.featureIncompat)
	}
	if sb.featureCompat&featureCompatSBChecksum != 0 {
		if got := superblockChecksum(b0[superOffset:]); got != sb.checksum {
			return fmt.Errorf("superblock checksum %#08x, computed %#08x", sb.checksum, got)
		}
	}
	if int64(sb.blocks)*blockSize != c.size {
		return fmt.Errorf("superblock says %d blocks (%d bytes), the file has %d bytes", sb.blocks, int64(sb.blocks)*blockSize, c.size)
	}
	if sb.metaBlock == 0 || sb.metaBlock >= sb.blocks {
		return fmt.Errorf("metadata block %d outside the image's %d blocks", sb.metaBlock, sb.blocks)
	}
	c.sb = sb
	c.metaStart = int64(sb.metaBlock) * blockSize
	c.seen = map[uint64]bool{}
	root := uint64(sb.rootNid)
	n, err := c.inode(root)
	if err != nil {
		return fmt.Errorf("root (nid %d): %w", root, err)
	}
	if n.mode&modeTypeMask != modeDir {
		return fmt.Errorf("root (nid %d) is not a directory", root)
	}
	type pending struct{ nid, parent uint64 }
	queue := []pending{{root, root}}
	c.seen[root] = true
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		children, err := c.dir(d.nid, d.parent)
		if err != nil {
			return fmt.Errorf("directory nid %d: %w", d.nid, err)
		}
		for _, nid := range children {
			queue = append(queue, pending{nid, d.nid})
		}
	}
	if uint64(len(c.seen)) > c.sb.inodes {
		return fmt.Errorf("%d inodes reachable, the superblock counts %d", len(c.seen), c.sb.inodes)
	}
	return nil
}

// checkedInode is an inode and where its inline data starts.
type checkedInode struct {
	diskInode
	tailOff int64 // image offset of the inline tail, if FLAT_INLINE
}

// inode reads and checks the inode at nid.
func (c *checker) inode(nid uint64) (checkedInode, error) {
	var ci checkedInode
	if nid > uint64(c.size/slotSize) {
		return ci, fmt.Errorf("nid %d outside the image", nid)
	}
	pos := c.metaStart + int64(nid)*slotSize
	inBlock := pos % blockSize
	if pos+compactSize > c.size {
		return ci, fmt.Errorf("nid %d outside the image", nid)
	}
	var b [extendedSize]byte
	n := min(int64(extendedSize), blockSize-inBlock)
	if _, err := c.r.ReadAt(b[:n], pos); err != nil {
		return ci, fmt.Errorf("reading inode nid %d: %w", nid, err)
	}
	format := le16(b[:])
	if format&^0xf != 0 {
		return ci, fmt.Errorf("inode nid %d: unsupported format %#x", nid, format)
	}
	if format&formatExtended != 0 && n < extendedSize {
		return ci, fmt.Errorf("inode nid %d crosses a block boundary", nid)
	}
	d, isize := decodeInode(b[:])
	ci.diskInode = d
	switch d.layout {
	case layoutFlatPlain, layoutFlatInline:
	default:
		return ci, fmt.Errorf("inode nid %d: unsupported data layout %d", nid, d.layout)
	}
	switch d.mode & modeTypeMask {
	case modeDir, modeRegular:
	case modeSymlink:
		if d.size == 0 || d.size > maxSymlinkLen {
			return ci, fmt.Errorf("symlink nid %d: target of %d bytes", nid, d.size)
		}
	default:
		return ci, fmt.Errorf("inode nid %d: unsupported mode %#o", nid, d.mode)
	}
	body := int64(isize + xattrBodySize(d.xattrCount))
	if inBlock+body > blockSize {
		return ci, fmt.Errorf("inode nid %d: xattrs cross a block boundary", nid)
	}
	if d.xattrCount > 0 {
		if err := c.xattrs(pos+int64(isize), int64(xattrBodySize(d.xattrCount))); err != nil {
			return ci, fmt.Errorf("inode nid %d: %w", nid, err)
		}
	}
	ci.tailOff = pos + body
	blocks := (int64(d.size) + blockSize - 1) / blockSize
	if d.layout == layoutFlatInline {
		if blocks == 0 {
			return ci, fmt.Errorf("inode nid %d: inline layout without data", nid)
		}
		blocks--
		tail := int64(d.size) - blocks*blockSize
		if inBlock+body+tail > blockSize {
			return ci, fmt.Errorf("inode nid %d: inline data crosses a block boundary", nid)
		}
	}
	if blocks > 0 && (d.blkaddr == 0 || int64(d.blkaddr)+blocks > int64(c.sb.blocks)) {
		return ci, fmt.Errorf("inode nid %d: data blocks %d+%d outside the image's %d", nid, d.blkaddr, blocks, c.sb.blocks)
	}
	return ci, nil
}

// xattrs checks an inline xattr area of n bytes at off.
func (c *checker) xattrs(off, n int64) error {
	b := make([]byte, n)
	if _, err := c.r.ReadAt(b, off); err != nil {
		return fmt.Errorf("reading xattrs: %w", err)
	}
	if n < xattrHeaderSize || b[4] != 0 {
		return errors.New("shared xattrs are not supported")
	}
	for p := int64(xattrHeaderSize); p < n; {
		if p+4 > n {
			return errors.New("xattr entry runs past its area")
		}
		nameLen, valueLen := int64(b[p]), int64(le16(b[p+2:]))
		if b[p+1] != xattrIndexUser || nameLen == 0 {
			return fmt.Errorf("unsupported xattr (index %d)", b[p+1])
		}
		p += roundUp(4+nameLen+valueLen, 4)
		if p > n {
			return errors.New("xattr entry runs past its area")
		}
	}
	return nil
}

// dir checks the directory at nid, whose parent is parent, and returns
// its subdirectories not seen before.
func (c *checker) dir(nid, parent uint64) ([]uint64, error) {
	d, err := c.inode(nid)
	if err != nil {
		return nil, err
	}
	if d.size == 0 {
		return nil, errors.New("empty directory data")
	}
	var subdirs []uint64
	nsub := 0
	prev, firstName := "", true
	sawDot, sawDotDot := false, false
	blocks := (int64(d.size) + blockSize - 1) / blockSize
	for i := int64(0); i < blocks; i++ {
		maxsize := min(int64(d.size)-i*blockSize, blockSize)
		blk := c.blk[:maxsize]
		off := int64(d.blkaddr+uint32(i)) * blockSize
		if d.layout == layoutFlatInline && i == blocks-1 {
			off = d.tailOff
		}
		if _, err := c.r.ReadAt(blk, off); err != nil {
			return nil, fmt.Errorf("reading block %d: %w", i, err)
		}
		first := int64(le16(blk[8:]))
		if maxsize < direntSize || first < direntSize || first%direntSize != 0 || first >= maxsize {
			return nil, fmt.Errorf("block %d: bad first name offset %d", i, first)
		}
		count := first / direntSize
		for j := int64(0); j < count; j++ {
			de := blk[j*direntSize:]
			off := int64(le16(de[8:]))
			if off < first || off >= maxsize {
				return nil, fmt.Errorf("block %d: bad name offset %d", i, off)
			}
			end := maxsize
			if j+1 < count {
				end = int64(le16(de[direntSize+8:]))
			} else if k := bytes.IndexByte(blk[off:], 0); k >= 0 {
				end = off + int64(k)
			}
			if end <= off || end > maxsize || end-off > maxNameLen {
				return nil, fmt.Errorf("block %d: bad name bounds %d..%d", i, off, end)
			}
			name := string(blk[off:end])
			if !firstName && name <= prev {
				return nil, fmt.Errorf("names out of order: %q after %q", name, prev)
			}
			firstName = false
			if bytes.ContainsAny([]byte(name), "/\x00") {
				return nil, fmt.Errorf("bad name %q", name)
			}
			prev = name
			child := le64(de)
			ftype := de[10]
			switch name {
			case ".":
				sawDot = true
				if child != nid || ftype != ftDir {
					return nil, fmt.Errorf("\".\" is nid %d, not %d", child, nid)
				}
				continue
			case "..":
				sawDotDot = true
				if child != parent || ftype != ftDir {
					return nil, fmt.Errorf("\"..\" is nid %d, not %d", child, parent)
				}
				continue
			}
			ci, err := c.inode(child)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", name, err)
			}
			want := map[uint16]uint8{modeDir: ftDir, modeRegular: ftRegular, modeSymlink: ftSymlink}[ci.mode&modeTypeMask]
			if ftype != want {
				return nil, fmt.Errorf("%q: dirent type %d, inode type %d", name, ftype, want)
			}
			if ci.mode&modeTypeMask == modeDir {
				nsub++
				if c.seen[child] {
					return nil, fmt.Errorf("%q: directory nid %d reachable twice", name, child)
				}
				subdirs = append(subdirs, child)
			}
			c.seen[child] = true
			if uint64(len(c.seen)) > c.sb.inodes {
				return nil, fmt.Errorf("more inodes reachable than the superblock's %d", c.sb.inodes)
			}
		}
	}
	if !sawDot || !sawDotDot {
		return nil, errors.New(`"." or ".." missing`)
	}
	if d.nlink != uint32(2+nsub) {
		return nil, fmt.Errorf("link count %d, but %d subdirectories", d.nlink, nsub)
	}
	return subdirs, nil
}

func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }
func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }
