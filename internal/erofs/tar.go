package erofs

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/rsa-hpc/rsa/internal/tarfmt"
)

const (
	// maxSymlinkLen is the longest target Linux can create or follow
	// (PATH_MAX less the NUL).
	maxSymlinkLen = 4095
	// maxXattrBytes bounds an inode's inline xattr area, so that the inode
	// and its xattrs always share one block.
	maxXattrBytes = 3072
	// chunk is how much file data is copied between checks of ctx.
	chunk = 4 << 20
	// writeBuffer is the buffer of each region writer.
	writeBuffer = 256 << 10
)

// builder holds one FromTar run's state.
type builder struct {
	w     io.WriterAt
	lim   Limits
	t     *tree
	data  *blockWriter
	in    *countingReader
	stats Stats
	// entryEnd is the stream offset where the last entry's data ended,
	// padded to tar's 512-byte records: the end-of-archive marker must
	// follow it.
	entryEnd int64
}

func newBuilder(w io.WriterAt, lim Limits) *builder {
	return &builder{w: w, lim: lim, t: newTree()}
}

// countingReader counts the bytes tar.Reader consumed; archive/tar reads
// no further than it needs.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (b *builder) build(ctx context.Context, r io.Reader) (Stats, error) {
	// Block 0 is zeroed first, so that an old superblock in w cannot
	// survive a failed run; the real one is written last.
	if _, err := b.w.WriteAt(make([]byte, blockSize), 0); err != nil {
		return Stats{}, fmt.Errorf("erofs: writing the image: %w", err)
	}
	b.data = newBlockWriter(b.w, blockSize, writeBuffer)
	if err := b.readStream(ctx, r); err != nil {
		return Stats{}, fmt.Errorf("erofs: %w", err)
	}
	if err := b.data.flush(); err != nil {
		return Stats{}, fmt.Errorf("erofs: %w", err)
	}
	if err := b.finish(ctx); err != nil {
		return Stats{}, fmt.Errorf("erofs: %w", err)
	}
	return b.stats, nil
}

func (b *builder) readStream(ctx context.Context, r io.Reader) error {
	b.in = &countingReader{r: bufio.NewReaderSize(r, 1<<16)}
	tr := tar.NewReader(b.in)
	last := "the start of the stream"
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			// archive/tar also ends cleanly where a stream stops between
			// entries; only the end-of-archive marker (two zero records,
			// which it consumed) says that nothing is missing.
			if b.in.n-b.entryEnd < 2*512 {
				return fmt.Errorf("after %s: %w: no end-of-archive marker", last, ErrTruncated)
			}
			return nil
		}
		if err != nil {
			if err == io.ErrUnexpectedEOF {
				err = fmt.Errorf("%w: %w", ErrTruncated, err)
			}
			return fmt.Errorf("reading the tar header after %s: %w", last, err)
		}
		last = fmt.Sprintf("tar entry %q", hdr.Name)
		if err := b.addEntry(ctx, tr, hdr); err != nil {
			return fmt.Errorf("%s: %w", last, err)
		}
		b.entryEnd = roundUp(b.in.n, 512)
	}
}

// addEntry checks one tar entry and puts it into the tree, its data (if a
// regular file) into the image.
func (b *builder) addEntry(ctx context.Context, tr *tar.Reader, hdr *tar.Header) error {
	if hdr.Typeflag == tar.TypeXGlobalHeader {
		return nil
	}
	parts, err := splitPath(hdr.Name)
	if err != nil {
		return err
	}
	if b.lim.MaxDepth > 0 && len(parts) > b.lim.MaxDepth {
		return fmt.Errorf("%w: the path has %d components, over Limits.MaxDepth %d (%s)", ErrLimit, len(parts), b.lim.MaxDepth, b.lim)
	}
	n, err := inodeFromHeader(hdr)
	if err != nil {
		return err
	}
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeRegA:
		if tarfmt.Sparse(hdr) {
			return fmt.Errorf("%w: a sparse file (GNU tar --sparse)", ErrInvalidEntry)
		}
		n.mode |= modeRegular
		if len(parts) == 0 {
			return fmt.Errorf("%w: the root must be a directory", ErrInvalidEntry)
		}
		if err := b.t.add(parts, n); err != nil {
			return err
		}
		if err := b.checkEntries(); err != nil {
			return err
		}
		if err := b.writeData(ctx, tr, n, hdr.Size); err != nil {
			return err
		}
		b.stats.Files++
	case tar.TypeDir:
		n.mode |= modeDir
		if err := b.t.add(parts, n); err != nil {
			return err
		}
	case tar.TypeSymlink:
		target := hdr.Linkname
		switch {
		case target == "":
			return fmt.Errorf("%w: a symlink with an empty target", ErrInvalidEntry)
		case len(target) > maxSymlinkLen:
			return fmt.Errorf("%w: a symlink target of %d bytes, over Linux's %d", ErrInvalidEntry, len(target), maxSymlinkLen)
		case strings.IndexByte(target, 0) >= 0:
			return fmt.Errorf("%w: a symlink target with a NUL byte", ErrInvalidEntry)
		}
		n.mode |= modeSymlink
		n.target = target
		n.size = uint64(len(target))
		if len(parts) == 0 {
			return fmt.Errorf("%w: the root must be a directory", ErrInvalidEntry)
		}
		if err := b.t.add(parts, n); err != nil {
			return err
		}
		b.stats.Symlinks++
	case tar.TypeLink:
		target, err := splitPath(hdr.Linkname)
		if err != nil {
			return fmt.Errorf("hard link target %q: %w", hdr.Linkname, err)
		}
		if err := b.t.addLink(parts, target); err != nil {
			return err
		}
		b.stats.HardLinks++
	case tar.TypeFifo:
		b.stats.SkippedFIFOs++
		return nil
	case tar.TypeChar, tar.TypeBlock:
		return fmt.Errorf("%w: a device node", ErrInvalidEntry)
	default:
		return fmt.Errorf("%w: unsupported tar type %q", ErrInvalidEntry, hdr.Typeflag)
	}
	return b.checkEntries()
}

func (b *builder) checkEntries() error {
	if b.lim.MaxEntries > 0 && b.t.entries > b.lim.MaxEntries {
		return fmt.Errorf("%w: more than Limits.MaxEntries %d names (%s)", ErrLimit, b.lim.MaxEntries, b.lim)
	}
	return nil
}

// writeData streams a regular file's contents to the next free blocks.
func (b *builder) writeData(ctx context.Context, r io.Reader, n *inode, size int64) error {
	if size < 0 {
		return fmt.Errorf("%w: negative size %d", ErrInvalidEntry, size)
	}
	n.size = uint64(size)
	if size == 0 {
		return nil
	}
	if err := b.checkImageSize(size); err != nil { // before sums that could overflow
		return err
	}
	start := b.data.pos()
	end := start + roundUp(size, blockSize)
	// The metadata will need at least a slot per name and a block.
	if err := b.checkImageSize(end + int64(b.t.entries+1)*slotSize + blockSize); err != nil {
		return err
	}
	n.blkaddr = uint32(start / blockSize)
	for left := size; left > 0; {
		if err := ctx.Err(); err != nil {
			return err
		}
		c := min(left, chunk)
		if err := b.data.readFrom(r, c); err != nil {
			if err == io.ErrUnexpectedEOF {
				err = fmt.Errorf("%w: %w", ErrTruncated, err)
			}
			return fmt.Errorf("reading its data: %w", err)
		}
		left -= c
	}
	b.data.alignBlock()
	b.stats.DataBytes += size
	return nil
}

// checkImageSize refuses an image of size bytes: over Limits.MaxImageBytes
// or beyond what 32-bit block numbers address.
func (b *builder) checkImageSize(size int64) error {
	if b.lim.MaxImageBytes > 0 && size > b.lim.MaxImageBytes {
		return fmt.Errorf("%w: the image needs at least %s (%d bytes), over Limits.MaxImageBytes %s (%s)",
			ErrLimit, showBytes(size), size, showBytes(b.lim.MaxImageBytes), b.lim)
	}
	if size < 0 || size/blockSize >= 1<<32 {
		return fmt.Errorf("%w: the image needs %s, over the format's 16 TiB", ErrLimit, showBytes(size))
	}
	return nil
}

// inodeFromHeader takes the attributes every type shares from hdr.
func inodeFromHeader(hdr *tar.Header) (*inode, error) {
	const maxID = 1<<32 - 2 // (uid_t)-1 means "no change" to chown and is no one
	if hdr.Uid < 0 || hdr.Uid > maxID || hdr.Gid < 0 || hdr.Gid > maxID {
		return nil, fmt.Errorf("%w: uid %d or gid %d out of range", ErrInvalidEntry, hdr.Uid, hdr.Gid)
	}
	n := &inode{
		mode:      uint16(hdr.Mode & modePermMask),
		uid:       uint32(hdr.Uid),
		gid:       uint32(hdr.Gid),
		mtime:     hdr.ModTime.Unix(),
		mtimeNsec: uint32(hdr.ModTime.Nanosecond()),
		nlink:     1,
	}
	x, err := userXattrs(hdr.PAXRecords)
	if err != nil {
		return nil, err
	}
	n.xattrs = x
	return n, nil
}

// userXattrs encodes the user.* xattrs of PAX records as erofs inline
// xattr entries, sorted by name so the image is deterministic.
func userXattrs(pax map[string]string) ([]byte, error) {
	const prefix = "SCHILY.xattr.user."
	var names []string
	for k := range pax {
		if strings.HasPrefix(k, prefix) {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	sort.Strings(names)
	var out []byte
	for _, k := range names {
		name, value := k[len(prefix):], pax[k]
		switch {
		case name == "":
			return nil, fmt.Errorf("%w: an xattr named \"user.\"", ErrInvalidEntry)
		case len(name) > 255, len(value) > 65535:
			return nil, fmt.Errorf("%w: xattr user.%.40s is too long", ErrInvalidEntry, name)
		}
		var h [4]byte
		h[0] = byte(len(name))
		h[1] = xattrIndexUser
		binary.LittleEndian.PutUint16(h[2:], uint16(len(value)))
		out = append(out, h[:]...)
		out = append(out, name...)
		out = append(out, value...)
		for len(out)%4 != 0 {
			out = append(out, 0)
		}
		if len(out) > maxXattrBytes-xattrHeaderSize {
			return nil, fmt.Errorf("%w: user xattrs over the %d bytes an image keeps per file", ErrInvalidEntry, maxXattrBytes)
		}
	}
	return out, nil
}
