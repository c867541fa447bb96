// Package erofs builds uncompressed EROFS images from a tar stream.
//
// RSA packs a job's read-only input into one erofs image that compute nodes
// mount at the job's input path. The kernel parses that image as root, so
// the image is built here, by code RSA trusts, from a tar stream that the
// job's user's process produced with the user's rights: FromTar never opens
// a path named in the stream. Every name is checked before it enters the
// tree (no absolute names, no "..", no duplicates, no hard link to anything
// but an earlier regular file), so a hostile stream cannot make the image
// inconsistent; it can only be refused.
//
// What an image holds:
//   - regular files, directories, symlinks and hard links, with the mode
//     (setuid, setgid and sticky bits included), uid, gid and mtime (with
//     nanoseconds) of their tar headers, and user.* extended attributes from
//     PAX "SCHILY.xattr.user.*" records. Other xattr namespaces (security.*,
//     trusted.*, ACLs) are dropped: a user's stream must not set them on files
//     root mounts.
//   - not FIFOs, which are skipped and counted in Stats.SkippedFIFOs, and not
//     device nodes, which are refused (the mover never packs them).
//
// On-disk choices (fs/erofs/erofs_fs.h in Linux): 4 KiB blocks; superblock
// at 1024 with the SB_CHKSUM feature (crc32c of its block), no incompatible
// features, so Linux 5.4+ and erofs-utils 1.5 read it (kernels before 5.5
// ignore the checksum, a compatible feature).
// Layout, front to back: block 0 (superblock), the regular files' data in
// stream order (each file FLAT_PLAIN, in consecutive blocks, its last block
// zero-padded), the metadata area (inodes in breadth-first order from the
// root, root first so that its nid fits the superblock's 16 bits), then the
// blocks of directories and symlinks too large to be inlined. Directories
// and symlinks are FLAT_INLINE (their last partial block right after the
// inode, in the same block) when that fits, FLAT_PLAIN otherwise. Regular
// files are never inlined: their data is written as it streams in, before
// the inode's place is known, and keeping tails in memory would break the
// memory bound. An inode is compact (32 bytes) when its uid and gid fit 16
// bits, its size 32 bits, its link count 16 bits and its mtime is exactly
// the superblock's build time (chosen as the most common mtime, so a tree
// with one timestamp is all compact); otherwise it is extended (64 bytes).
// Directories list their names sorted bytewise across and within blocks,
// "." and ".." included, as the kernel's binary search requires.
//
// Memory: regular files' contents are streamed to the image and never held.
// What is held until the end is the metadata: about 200 bytes per entry plus
// its name, its symlink target (at most 4095 bytes) and its user xattrs (at
// most maxXattrBytes), and three 256 KiB write buffers. Limits.MaxEntries bounds
// the total.
//
// The image is deterministic: the same stream gives the same bytes (no
// UUID, no build clock).
package erofs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Limits bound what a stream may make. A zero field means no limit beyond
// the format's own (16 TiB images, 2^32 blocks).
type Limits struct {
	// MaxImageBytes bounds the image file: the RAMDISK's free space.
	MaxImageBytes int64
	// MaxEntries bounds the names in the image (the root excluded), and
	// so the metadata held in memory.
	MaxEntries int
	// MaxDepth bounds the number of components in a path.
	MaxDepth int
}

func (l Limits) String() string {
	show := func(n int64) string {
		if n == 0 {
			return "none"
		}
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("limits: image %s, entries %s, depth %s",
		showBytes(l.MaxImageBytes), show(int64(l.MaxEntries)), show(int64(l.MaxDepth)))
}

// ErrLimit marks a stream that exceeds one of the Limits.
var ErrLimit = errors.New("over the limit")

// ErrTruncated marks a stream that ends before the tar end-of-archive
// marker: what was read may be only part of the input.
var ErrTruncated = errors.New("tar stream is truncated")

// Stats describe a finished image.
type Stats struct {
	Entries      int           // names in the image, the root excluded, hard links included
	Files        int           // regular files (inodes; hard links counted once)
	Dirs         int           // directories, the root included
	Symlinks     int           // symbolic links
	HardLinks    int           // names that are hard links to an earlier file
	SkippedFIFOs int           // FIFOs in the stream, not in the image
	DataBytes    int64         // bytes of regular files' contents
	ImageBytes   int64         // size of the image file
	Duration     time.Duration // time FromTar took
}

// FromTar reads a tar stream from r and writes an erofs image of its tree
// to w, starting at offset 0. w should be empty; if it has a
// Truncate(int64) error method (an *os.File does), it is truncated to the
// image's size on success and to zero on failure.
//
// The superblock is written last: until FromTar returns nil, w holds no
// mountable image, and on any error, w's contents are garbage. Errors name
// the tar entry and wrap ErrInvalidEntry, ErrLimit, ErrTruncated, the
// reader's or the writer's error, or ctx's.
func FromTar(ctx context.Context, r io.Reader, w io.WriterAt, lim Limits) (Stats, error) {
	start := time.Now()
	b := newBuilder(w, lim)
	st, err := b.build(ctx, r)
	if t, ok := w.(interface{ Truncate(int64) error }); ok {
		size := st.ImageBytes
		if err != nil {
			size = 0
		}
		if terr := t.Truncate(size); terr != nil && err == nil {
			err = fmt.Errorf("erofs: truncating the image to %d bytes: %w", size, terr)
		}
	}
	if err != nil {
		return Stats{}, err
	}
	st.Duration = time.Since(start)
	return st, nil
}

func showBytes(n int64) string {
	if n == 0 {
		return "none"
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.4g %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
