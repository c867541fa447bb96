package erofs

import (
	"context"
	"fmt"
	"sort"
)

// layout is where the metadata goes, decided after the stream is read.
type layout struct {
	order       []*inode // metadata order: breadth-first from the root
	epoch       int64    // the superblock's build time, which compact inodes take as mtime
	epochNsec   uint32
	metaBlock   uint32 // first block of the metadata area
	metaBytes   int64  // bytes of the metadata area in use
	plainBlock  uint32 // first block of the directories' and long symlinks' blocks
	plainBlocks int64
	blocks      int64 // the image's size in blocks
}

// plan sorts every directory, orders the inodes, and gives each its form,
// its nid and its blocks. dataEnd is the (block-aligned) end of the
// regular files' data.
func (b *builder) plan(ctx context.Context, dataEnd int64) (*layout, error) {
	l := &layout{}
	root := b.t.root
	root.placed = true
	l.order = append(l.order, root)
	for i := 0; i < len(l.order); i++ {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		n := l.order[i]
		if !n.isDir() {
			continue
		}
		sortEntries(n)
		for _, e := range n.entries {
			if !e.inode.placed {
				e.inode.placed = true
				l.order = append(l.order, e.inode)
			}
		}
	}
	l.epoch, l.epochNsec = commonMtime(l.order)

	var pos int64 // offset in the metadata area
	for _, n := range l.order {
		if n.isDir() {
			n.size = uint64(dirSize(n.entries))
		}
		n.extended = n.uid > 0xffff || n.gid > 0xffff || n.size > 0xffffffff || n.nlink > 0xffff ||
			n.mtime != l.epoch || n.mtimeNsec != l.epochNsec
		isize := inodeSize(n)
		need := isize
		tail := int64(n.size % blockSize)
		n.inline = false
		if !n.isRegular() && tail > 0 {
			// A directory's last name runs to a NUL or the block's end
			// in the kernel's lookup, so an inlined tail keeps one zero
			// byte after it, inside the block.
			slack := int64(0)
			if n.isDir() {
				slack = 1
			}
			if isize+tail+slack <= blockSize {
				n.inline = true
				need += tail + slack
			}
		}
		if pos%blockSize+need > blockSize {
			pos = roundUp(pos, blockSize)
		}
		n.nid = uint64(pos / slotSize)
		pos = roundUp(pos+need, slotSize)
		if full := plainBlocks(n); full > 0 {
			n.blkaddr = uint32(l.plainBlocks) // relative until the area's start is known
			l.plainBlocks += full
		}
	}
	l.metaBytes = pos
	l.metaBlock = uint32(dataEnd / blockSize)
	metaBlocks := roundUp(pos, blockSize) / blockSize
	l.blocks = int64(l.metaBlock) + metaBlocks + l.plainBlocks
	if err := b.checkImageSize(l.blocks * blockSize); err != nil {
		return nil, err
	}
	l.plainBlock = l.metaBlock + uint32(metaBlocks)
	for _, n := range l.order {
		if plainBlocks(n) > 0 {
			n.blkaddr += l.plainBlock
		}
	}
	if root.nid > 0xffff {
		return nil, fmt.Errorf("the root's nid %d does not fit the superblock", root.nid)
	}
	return l, nil
}

// sortEntries turns a directory's children into its sorted dirents, "."
// and ".." included, and drops the map. The order is bytewise, as the
// kernel's lookup compares names.
func sortEntries(d *inode) {
	d.entries = make([]dirent, 0, len(d.children)+2)
	d.entries = append(d.entries, dirent{".", d}, dirent{"..", d.parent})
	for name, c := range d.children {
		d.entries = append(d.entries, dirent{name, c})
	}
	d.children = nil
	// "." and ".." sort with the rest: names such as "-x" come before them.
	sort.Slice(d.entries, func(i, j int) bool { return d.entries[i].name < d.entries[j].name })
}

// dirBlocks calls fn with the half-open range of entries of each
// directory block: as many as fit, in order.
func dirBlocks(entries []dirent, fn func(from, to, used int)) {
	from, used := 0, 0
	for i, e := range entries {
		need := direntSize + len(e.name)
		if used+need > blockSize {
			fn(from, i, used)
			from, used = i, 0
		}
		used += need
	}
	fn(from, len(entries), used)
}

// dirSize is a directory's i_size: its full blocks and the used part of
// the last one.
func dirSize(entries []dirent) int64 {
	var size int64
	dirBlocks(entries, func(from, to, used int) {
		if to == len(entries) {
			size += int64(used)
		} else {
			size += blockSize
		}
	})
	return size
}

// dirData appends a directory's data, i_size bytes, to buf: each block its
// dirents, then its names; blocks but the last zero-padded.
func dirData(d *inode, buf []byte) []byte {
	dirBlocks(d.entries, func(from, to, used int) {
		start := len(buf)
		nameOff := direntSize * (to - from)
		for i := from; i < to; i++ {
			buf = append(buf, make([]byte, direntSize)...)
		}
		for i := from; i < to; i++ {
			e := d.entries[i]
			putDirent(buf[start+direntSize*(i-from):], e.inode.nid, uint16(nameOff), e.inode.fileType())
			buf = append(buf, e.name...)
			nameOff += len(e.name)
		}
		if to < len(d.entries) {
			buf = append(buf, make([]byte, blockSize-used)...)
		}
	})
	return buf
}

// inodeSize is the bytes of an inode and its inline xattrs.
func inodeSize(n *inode) int64 {
	size := int64(compactSize)
	if n.extended {
		size = extendedSize
	}
	if len(n.xattrs) > 0 {
		size += xattrHeaderSize + int64(len(n.xattrs))
	}
	return size
}

// commonMtime picks the most common mtime, the earliest of equals, so
// that as many inodes as can be are compact.
func commonMtime(order []*inode) (int64, uint32) {
	type stamp struct {
		sec  int64
		nsec uint32
	}
	count := make(map[stamp]int)
	for _, n := range order {
		count[stamp{n.mtime, n.mtimeNsec}]++
	}
	var best stamp
	bestN := 0
	for s, c := range count {
		if c > bestN || c == bestN && (s.sec < best.sec || s.sec == best.sec && s.nsec < best.nsec) {
			best, bestN = s, c
		}
	}
	return best.sec, best.nsec
}

// plainBlocks is the number of whole blocks a directory or symlink has
// in the area after the metadata: all its blocks, less the inlined tail.
// Regular files have theirs among the data.
func plainBlocks(n *inode) int64 {
	if n.isRegular() {
		return 0
	}
	full := (int64(n.size) + blockSize - 1) / blockSize
	if n.inline {
		full--
	}
	return full
}
