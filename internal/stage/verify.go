package stage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/zeebo/xxh3"
	"golang.org/x/sys/unix"
)

// VerifyTree re-reads every file under src and its copy under dst and
// compares their xxh3 hashes, and checks that every directory and symlink
// (with the same target) is there. Extra entries in dst are allowed: an
// output directory may hold earlier results. Like the copy, it follows no
// symlink.
func VerifyTree(ctx context.Context, src, dst string, workers int) error {
	return compareTrees(ctx, src, dst, workers, true)
}

// CheckListing lists dst and compares it with src: every directory,
// symlink (with its target) and regular file of src must be in dst, of
// the same kind and, for a file, the same size. Contents are not read. It
// is the check of a copy that wrote its files under their final names
// into a file system that can lose part of itself while the copy runs (a
// distribute RAMDISK whose brick came back empty): what was lost is
// missing from the listing, though every write succeeded. Extra entries
// in dst are allowed, and no symlink is followed.
func CheckListing(ctx context.Context, src, dst string, workers int) error {
	return compareTrees(ctx, src, dst, workers, false)
}

// compareTrees is VerifyTree, or with contents false CheckListing.
func compareTrees(ctx context.Context, src, dst string, workers int, contents bool) error {
	what := "verify"
	if !contents {
		what = "listing check"
	}
	srcFd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	dstFd, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(srcFd)
		return fmt.Errorf("%s: %w", what, err)
	}
	v := &verifier{ctx: ctx, pool: newPool(Workers(workers)), contents: contents}
	root := &vdir{rel: ".", src: srcFd, dst: dstFd}
	root.refs.Store(1)
	v.pool.submit(func() { v.dir(root) })
	v.pool.wait()
	if len(v.bad) > 0 {
		ce := &CopyError{Failed: v.bad, Total: v.n}
		return fmt.Errorf("%s failed: %w", what, ce)
	}
	return ctx.Err()
}

type verifier struct {
	ctx  context.Context
	pool *pool
	// contents: compare files' contents too (VerifyTree), not only the
	// listing (CheckListing).
	contents bool
	mu       sync.Mutex
	bad      []EntryError
	n        int64
}

// vdir is a directory pair under comparison; its descriptors are closed
// when its listing and every task it started have ended.
type vdir struct {
	rel      string
	src, dst int
	refs     atomic.Int64
}

func (d *vdir) release() {
	if d.refs.Add(-1) == 0 {
		unix.Close(d.src)
		unix.Close(d.dst)
	}
}

func (v *verifier) fail(rel string, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.n++
	if len(v.bad) < maxListedErrors {
		v.bad = append(v.bad, EntryError{Path: rel, Err: err})
	}
}

func (v *verifier) dir(d *vdir) {
	defer d.release()
	var listed map[string]bool
	if !v.contents {
		// One listing of the copy's directory (READDIRPLUS on FUSE,
		// which brings the entries' attributes along) instead of a
		// lookup of each name on its server.
		var err error
		if listed, err = listNames(d.dst, d.rel); err != nil {
			v.fail(d.rel, fmt.Errorf("listing the copy: %w", err))
			return
		}
	}
	f, err := openLister(d.src, d.rel)
	if err != nil {
		v.fail(d.rel, err)
		return
	}
	defer f.Close()
	for v.ctx.Err() == nil {
		names, err := f.Readdirnames(1024)
		for _, name := range names {
			if listed != nil && !listed[name] {
				v.missing(d, name)
				continue
			}
			v.entry(d, name)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				v.fail(d.rel, err)
			}
			return
		}
	}
}

// listNames reads the names in the directory fd.
func listNames(fd int, rel string) (map[string]bool, error) {
	f, err := openLister(fd, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set, nil
}

// missing reports name, which the copy's listing lacks, if it is of a
// kind the copy keeps.
func (v *verifier) missing(d *vdir, name string) {
	var a unix.Stat_t
	if err := unix.Fstatat(d.src, name, &a, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		v.fail(join(d.rel, name), err)
		return
	}
	switch a.Mode & unix.S_IFMT {
	case unix.S_IFDIR, unix.S_IFREG, unix.S_IFLNK:
		v.fail(join(d.rel, name), errors.New("missing in the copy's listing"))
	}
}

func (v *verifier) entry(d *vdir, name string) {
	rel := join(d.rel, name)
	var a, b unix.Stat_t
	if err := unix.Fstatat(d.src, name, &a, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		v.fail(rel, err)
		return
	}
	if a.Mode&unix.S_IFMT != unix.S_IFDIR && a.Mode&unix.S_IFMT != unix.S_IFREG && a.Mode&unix.S_IFMT != unix.S_IFLNK {
		return
	}
	if err := unix.Fstatat(d.dst, name, &b, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		v.fail(rel, fmt.Errorf("missing in the copy: %w", err))
		return
	}
	if a.Mode&unix.S_IFMT != b.Mode&unix.S_IFMT {
		v.fail(rel, errors.New("a different kind of file in the copy"))
		return
	}
	switch a.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		s, err1 := unix.Openat(d.src, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		t, err2 := unix.Openat(d.dst, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err1 != nil || err2 != nil {
			closeIf(s, err1)
			closeIf(t, err2)
			v.fail(rel, errors.Join(err1, err2))
			return
		}
		c := &vdir{rel: rel, src: s, dst: t}
		c.refs.Store(1)
		v.pool.submit(func() { v.dir(c) })
	case unix.S_IFLNK:
		x, y := make([]byte, 4097), make([]byte, 4097)
		n1, err1 := unix.Readlinkat(d.src, name, x)
		n2, err2 := unix.Readlinkat(d.dst, name, y)
		if err1 != nil || err2 != nil || string(x[:n1]) != string(y[:n2]) {
			v.fail(rel, errors.New("symlink target differs"))
		}
	case unix.S_IFREG:
		if a.Size != b.Size {
			v.fail(rel, fmt.Errorf("size %d in the copy, %d in the source", b.Size, a.Size))
			return
		}
		if !v.contents {
			return
		}
		d.refs.Add(1)
		v.pool.submit(func() {
			defer d.release()
			if !sameHashAt(d.src, d.dst, name) {
				v.fail(rel, errors.New("content differs"))
			}
		})
	}
}

func closeIf(fd int, err error) {
	if err == nil {
		unix.Close(fd)
	}
}

// sameHashAt compares the content of name in two directories by xxh3.
func sameHashAt(srcDir, dstDir int, name string) bool {
	a, err1 := hashAt(srcDir, name)
	b, err2 := hashAt(dstDir, name)
	return err1 == nil && err2 == nil && a == b
}

func hashAt(dirFd int, name string) (xxh3.Uint128, error) {
	fd, err := unix.Openat(dirFd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return xxh3.Uint128{}, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	h := xxh3.New()
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	if _, err := io.CopyBuffer(h, f, *bp); err != nil {
		return xxh3.Uint128{}, err
	}
	return h.Sum128(), nil
}
