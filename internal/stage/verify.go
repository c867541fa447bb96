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
	srcFd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	dstFd, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(srcFd)
		return fmt.Errorf("verify: %w", err)
	}
	v := &verifier{ctx: ctx, pool: newPool(Workers(workers))}
	root := &vdir{rel: ".", src: srcFd, dst: dstFd}
	root.refs.Store(1)
	v.pool.submit(func() { v.dir(root) })
	v.pool.wait()
	if len(v.bad) > 0 {
		ce := &CopyError{Failed: v.bad, Total: v.n}
		return fmt.Errorf("verify failed: %w", ce)
	}
	return ctx.Err()
}

type verifier struct {
	ctx  context.Context
	pool *pool
	mu   sync.Mutex
	bad  []EntryError
	n    int64
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
	f, err := openLister(d.src, d.rel)
	if err != nil {
		v.fail(d.rel, err)
		return
	}
	defer f.Close()
	for v.ctx.Err() == nil {
		names, err := f.Readdirnames(1024)
		for _, name := range names {
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
