package erofs

import (
	"context"
	"fmt"
)

// finish lays out and writes the metadata, then the superblock: the
// image is valid only once that last write is done.
func (b *builder) finish(ctx context.Context) error {
	dataEnd := b.data.pos()
	l, err := b.plan(ctx, dataEnd)
	if err != nil {
		return err
	}
	metaStart := int64(l.metaBlock) * blockSize
	meta := newBlockWriter(b.w, metaStart, writeBuffer)
	plain := newBlockWriter(b.w, int64(l.plainBlock)*blockSize, writeBuffer)
	var ibuf [extendedSize]byte
	var data []byte
	for i, n := range l.order {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		switch {
		case n.isDir():
			data = dirData(n, data[:0])
			b.stats.Dirs++
		case n.isSymlink():
			data = append(data[:0], n.target...)
		default:
			data = data[:0]
		}
		d := diskInode{
			extended:  n.extended,
			layout:    layoutFlatPlain,
			mode:      n.mode,
			nlink:     n.nlink,
			size:      n.size,
			blkaddr:   n.blkaddr,
			ino:       uint32(i + 1),
			uid:       n.uid,
			gid:       n.gid,
			mtime:     n.mtime,
			mtimeNsec: n.mtimeNsec,
		}
		if n.inline {
			d.layout = layoutFlatInline
		}
		if len(n.xattrs) > 0 {
			d.xattrCount = uint16(1 + len(n.xattrs)/4)
		}
		meta.padTo(metaStart + int64(n.nid)*slotSize)
		isize := compactSize
		if n.extended {
			isize = extendedSize
		}
		d.encode(ibuf[:])
		meta.Write(ibuf[:isize])
		if len(n.xattrs) > 0 {
			var h [xattrHeaderSize]byte // no name filter, no shared xattrs
			meta.Write(h[:])
			meta.Write(n.xattrs)
		}
		full := plainBlocks(n) * blockSize
		if full > 0 {
			if plain.pos() != int64(n.blkaddr)*blockSize {
				return fmt.Errorf("internal error: the blocks of inode %d are at %d, not %d", i+1, plain.pos(), int64(n.blkaddr)*blockSize)
			}
			plain.Write(data[:min(full, int64(len(data)))])
			plain.alignBlock()
		}
		if n.inline {
			meta.Write(data[full:])
		}
	}
	meta.padTo(metaStart + roundUp(l.metaBytes, blockSize))
	plain.padTo(l.blocks * blockSize)
	if err := meta.flush(); err != nil {
		return err
	}
	if err := plain.flush(); err != nil {
		return err
	}
	b.stats.Entries = b.t.entries
	b.stats.ImageBytes = l.blocks * blockSize
	sb := superblock{
		featureCompat: featureCompatSBChecksum,
		blockBits:     blockBits,
		rootNid:       uint16(b.t.root.nid),
		inodes:        uint64(len(l.order)),
		buildTime:     uint64(l.epoch),
		buildTimeNsec: l.epochNsec,
		blocks:        uint32(l.blocks),
		metaBlock:     l.metaBlock,
	}
	if _, err := b.w.WriteAt(encodeSuperblockBlock(sb), 0); err != nil {
		return fmt.Errorf("writing the superblock: %w", err)
	}
	return nil
}
