package stage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/zeebo/xxh3"
	"golang.org/x/sys/unix"
)

// Mover copies a tree like `cp -a SRC/. DST/`, in parallel: a pool of
// workers walks directories, copies small files whole and large files in
// chunks, with the kernel's copy paths where they apply. Every path below
// SRC and DST is reached from its parent directory's descriptor with
// O_NOFOLLOW: no symbolic link, in SRC or planted in DST, is ever followed.
//
// It keeps contents, directories (empty ones too), symlinks as symlinks,
// hard links within the tree, sparse files sparse, permission bits,
// modification times in nanoseconds (directories after their contents) and
// user.* extended attributes where both sides support them; FIFOs are
// recreated; sockets and devices are skipped with a warning. Running it
// again copies only what is missing or different (size and mtime; content
// with Verify): a file's times are set last, so a partial file never looks
// complete to a resumed copy.
//
// In an empty DST and the directories the copy makes, a file is written
// under its final name at once, as cp and tar do: no temporary name and
// rename (a directory-locked operation, the costliest step of a small
// file). Where DST held something already, and everywhere with Atomic, a
// file is written under a temporary name and renamed into place once
// complete, so that it appears there only whole. Into a DST that can lose
// part of itself while the copy runs (a distribute RAMDISK whose brick came
// back empty after its node rebooted), every write may succeed and still
// files be lost: CheckListing then lists DST at the end.
type Mover struct {
	Workers   int   // 0: chosen from the CPUs
	ChunkSize int64 // large files are copied in chunks of this size (0: 64 MiB)
	BigFile   int64 // files at least this large are chunked (0: 256 MiB)
	// Lanes is how many chunks of one file are copied at once (0: as the
	// destination takes them, see chunkLanes).
	Lanes   int
	Verify  bool  // re-read both sides and compare content (xxh3) at the end; Pack: before the archive gets its name
	BWLimit int64 // bytes per second read from SRC; 0: unlimited
	Sync    bool  // flush DST's file system before returning
	// Durable is Sync, and more: DST's storage holds every file before
	// the copy returns. Where syncfs reaches that storage it is Sync; on
	// a FUSE file system, where syncfs does not (syncOnlyPerFile), each
	// file is fsync'd before it is closed. For output leaving RAM; a copy
	// into a RAMDISK needs only Sync.
	Durable  bool
	Progress func(Progress)
	Warn     func(path, why string)
	// Atomic writes every file under a temporary name renamed into place
	// once complete, in the directories the copy makes too: for a DST
	// that others read while the copy runs. Without it a file the copy
	// is cut off in the middle of has its final name there, and the time
	// of the interruption (times are set last), so a second run copies it
	// again.
	Atomic bool
	// CheckListing lists DST when the copy has ended and fails it unless
	// every entry of SRC is there with its kind and size (CheckListing):
	// the check of a copy into a file system that can lose part of itself
	// mid-way. Verify, which reads contents, makes it redundant.
	CheckListing bool
	// Part makes this copy one of several that together copy SRC into
	// one DST, each from a host of its own (Part.Of > 1), or the one that
	// finishes them (Part.Finish). See Part.
	Part Part

	// fileDone, if set, is called with the count of files done so far
	// each time a file is in place (Copy) or in the archive (Pack): tests
	// act at a known point of a copy with it, where Progress comes by time.
	fileDone func(files int64)
	// readAhead, if set, replaces the archive read-ahead's bound
	// (readAhead), for tests that make its readers wait.
	readAhead int64
	// chunkCopied, if set, is called as each chunk of a chunked file is
	// in place, with the file's path below SRC, how many lanes copy the
	// file, the lane that copied the chunk and the chunk's index: tests
	// see which files are chunked and that Lanes sets the lanes. It may
	// be called from several goroutines at once.
	chunkCopied func(rel string, lanes, lane, chunk int64)
}

// EntryError is one entry that could not be copied.
type EntryError struct {
	Path string
	Err  error
}

func (e EntryError) Error() string { return fmt.Sprintf("%s: %v", printable(e.Path), e.Err) }

// CopyError lists the entries that failed; the rest was copied.
type CopyError struct {
	Failed []EntryError
	Total  int64
}

func (e *CopyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d entries could not be copied:", e.Total)
	for _, f := range e.Failed {
		b.WriteString("\n  " + f.Error())
	}
	if int64(len(e.Failed)) < e.Total {
		fmt.Fprintf(&b, "\n  ... and %d more", e.Total-int64(len(e.Failed)))
	}
	return b.String()
}

// NoSpaceError is returned when DST filled up: the copy stops at once.
type NoSpaceError struct {
	Dst        string
	Need, Room int64
}

func (e *NoSpaceError) Error() string {
	return fmt.Sprintf("no space left in %s: the data is %d bytes, the file system there holds %d bytes; request more RAM (capacity) or stage less",
		e.Dst, e.Need, e.Room)
}

const maxListedErrors = 100

// copyRun is the state of one Copy call.
type copyRun struct {
	m       *Mover
	ctx     context.Context
	cancel  context.CancelFunc
	pool    *pool
	src     string
	dstRoot int
	limit   *limiter
	chunk   int64
	big     int64

	files, dirs, links, hard, bytes, skipped atomic.Int64
	totalFiles, totalBytes                   atomic.Int64

	mu      sync.Mutex
	failed  []EntryError
	nFailed int64
	fatal   error
	hl      map[inode]*hardLink
	tmpSeq  atomic.Int64
	umask   uint32
	noCFR   atomic.Bool // copy_file_range does not work between SRC and DST
	// noSendfile: DST is a FUSE file system (a Gluster RAMDISK), where
	// sendfile's page-sized pipe writes cost more requests than a
	// buffer's worth at a time (measured on Gluster 10.3: 2 GiB of 1 MiB
	// files in 17.5 s by sendfile, 15 s by pread and pwrite).
	noSendfile bool
	// fsyncEach: with Durable, each file is fsync'd before it is closed,
	// where DST's syncfs would not reach its storage (syncOnlyPerFile).
	fsyncEach bool
	lanes     int64 // chunks of one large file in flight at once; 0: large files are not chunked
}

type inode struct{ dev, ino uint64 }

// Part is one share of a copy split over several copies that write into
// the same fresh DST at once, from hosts of their own (a stage-in spread
// over a job's RSA nodes). Every share makes every directory, under its
// final name, and writes under final names at once (no one looks into DST
// meanwhile); share Index of Of copies the files, symlinks and FIFOs whose
// path below SRC hashes to it, except regular files with more than one
// link, and leaves every directory writable, its attributes unset. When
// every share has ended, one copy with Finish walks SRC once more: it
// copies the multiply linked files (so links stay links across shares),
// sets every directory's attributes, deepest first, and, with
// CheckListing, lists DST against SRC.
type Part struct {
	Index  int  `json:"index"`
	Of     int  `json:"of"`
	Finish bool `json:"finish,omitempty"`
}

// split: this copy is one share of several, not the finish.
func (p Part) split() bool { return p.Of > 1 && !p.Finish }

// owns reports whether the share copies the entry at rel (below SRC).
func (p Part) owns(rel string) bool {
	if !p.split() {
		return true
	}
	return xxh3.HashString(rel)%uint64(p.Of) == uint64(p.Index)
}

// Check says what is wrong with p.
func (p Part) Check() error {
	switch {
	case p.Of == 0 && p.Index == 0:
		return nil
	case p.Of < 1 || p.Index < 0 || p.Index >= p.Of:
		return fmt.Errorf("part %d of %d: give K/N with 0 <= K < N", p.Index, p.Of)
	}
	return nil
}

// hardLink tracks the first copy of a multiply linked file; further names
// are linked to it once it is in place.
type hardLink struct {
	rel     string // DST-relative path of the first copy
	done    bool
	ok      bool
	waiters []linkWaiter
}

type linkWaiter struct {
	dir  *dirNode
	name string
}

// dirNode is a directory being copied. pending counts what must end before
// its attributes are set: its own listing, its subdirectories, chunked files
// and hard links still to be made in it.
type dirNode struct {
	parent  *dirNode
	rel     string
	fresh   bool // created empty by this copy: nothing to resume in it
	direct  bool // no one else looks in: files are written under their final names
	srcFd   int
	dstFd   int
	st      unix.Stat_t
	pending atomic.Int64
}

// Copy copies the tree at src into the existing directory dst.
func (m *Mover) Copy(ctx context.Context, src, dst string) (Stats, error) {
	r := &copyRun{m: m, src: src, hl: map[inode]*hardLink{}, chunk: m.ChunkSize, big: m.BigFile}
	if r.chunk <= 0 {
		r.chunk = 64 << 20
	}
	if r.big <= 0 {
		r.big = 256 << 20
	}
	r.ctx, r.cancel = context.WithCancel(ctx)
	defer r.cancel()
	r.umask = currentUmask()
	if m.BWLimit > 0 {
		r.limit = newLimiter(m.BWLimit)
	}
	srcFd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return Stats{}, fmt.Errorf("source %s: %w", src, err)
	}
	dstFd, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(srcFd)
		return Stats{}, fmt.Errorf("destination %s: %w", dst, err)
	}
	r.dstRoot, _ = unix.FcntlInt(uintptr(dstFd), unix.F_DUPFD_CLOEXEC, 0)
	defer unix.Close(r.dstRoot)
	if err := m.Part.Check(); err != nil {
		unix.Close(srcFd)
		unix.Close(dstFd)
		return Stats{}, err
	}
	root := &dirNode{rel: ".", srcFd: srcFd, dstFd: dstFd, fresh: emptyDir(dstFd) || m.Part.split()}
	root.direct = (root.fresh || m.Part.Finish) && !m.Atomic
	if err := unix.Fstat(srcFd, &root.st); err != nil {
		return Stats{}, err
	}
	r.copyXattrs(".", srcFd, dstFd)
	root.pending.Store(1)
	// What DST's file system takes: a failed statfs leaves the defaults
	// (no chunks, sendfile allowed).
	var dstFS unix.Statfs_t
	if unix.Fstatfs(dstFd, &dstFS) == nil {
		r.lanes = chunkLanes(int64(dstFS.Type))
		r.noSendfile = dstFS.Type == unix.FUSE_SUPER_MAGIC
		r.fsyncEach = m.Durable && syncOnlyPerFile(int64(dstFS.Type))
	}
	if r.lanes > 0 && m.Lanes > 0 {
		r.lanes = int64(m.Lanes)
	}

	stopProgress := r.startProgress()
	r.pool = newPool(Workers(m.Workers))
	r.pool.submit(func() { r.listDir(root) })
	r.pool.wait()
	stopProgress()

	st := r.stats()
	if r.fatal != nil {
		if errors.Is(r.fatal, unix.ENOSPC) || errors.Is(r.fatal, unix.EDQUOT) {
			_, need, _ := Measure(src)
			var fs unix.Statfs_t
			unix.Statfs(dst, &fs)
			return st, &NoSpaceError{Dst: dst, Need: need, Room: int64(fs.Blocks) * int64(fs.Bsize)}
		}
		return st, r.fatal
	}
	if err := ctx.Err(); err != nil {
		return st, err
	}
	if m.Sync || m.Durable {
		if err := unix.Syncfs(r.dstRoot); err != nil {
			return st, fmt.Errorf("flushing %s: %w", dst, err)
		}
	}
	switch {
	case m.Verify:
		if err := VerifyTree(ctx, src, dst, Workers(m.Workers)); err != nil {
			return st, err
		}
	case m.CheckListing:
		if err := CheckListing(ctx, src, dst, Workers(m.Workers)); err != nil {
			return st, err
		}
	}
	if r.nFailed > 0 {
		return st, &CopyError{Failed: r.failed, Total: r.nFailed}
	}
	return st, nil
}

// syncOnlyPerFile reports whether a file system of magic fsType is made
// durable only file by file: syncfs(2) on a FUSE mount writes back the
// kernel's dirty pages to the FUSE daemon but asks the daemon for nothing
// (the kernel sends FUSE_SYNCFS to virtiofs alone), so a Gluster or other
// FUSE client's server keeps the data in its page cache; an fsync of each
// file reaches it (Gluster sends FSYNC to the brick).
func syncOnlyPerFile(fsType int64) bool { return fsType == unix.FUSE_SUPER_MAGIC }

// File system magic numbers of destinations that take parallel writes into
// one file well: parallel file systems striping a file over servers (the
// multi-stream transfers of the SCinet report). A local disk file system is
// written fastest in one stream per file.
var parallelFS = map[int64]bool{
	0x0BD00BD0: true, // Lustre
	0x47504653: true, // GPFS / Spectrum Scale
	0x19830326: true, // BeeGFS
	0x00C36400: true, // CephFS
	0x20030528: true, // PVFS2 / OrangeFS, the thesis' RAMDISK file system
}

// chunkLanes is how many chunks of one large file go at once to a file
// system of type fsType (statfs' f_type): all of them on a parallel file
// system; one after another into RAM (tmpfs, ramfs), whose write holds the
// file's inode lock throughout, so that parallel chunks of one file queue
// on it while the files themselves still go in parallel; 0, not chunked,
// elsewhere. Chunks rather than a plain whole-file copy into RAM:
// sendfile, which whole files take there, copied 1 GiB files a third
// slower than pread and pwrite. The numbers behind both choices:
// docs/performance.md, "Where the time goes: (c), again" (Chunk lanes).
func chunkLanes(fsType int64) int64 {
	switch {
	case parallelFS[fsType]:
		return math.MaxInt64
	case fsType == unix.TMPFS_MAGIC || fsType == unix.RAMFS_MAGIC:
		return 1
	}
	return 0
}

// currentUmask reads the process umask without changing it (setting and
// restoring it would race with other goroutines creating files).
func currentUmask() uint32 {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Umask:"); ok {
				if n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return uint32(n)
				}
			}
		}
	}
	return 0o777 // unknown: always set the mode explicitly
}

// emptyDir reports whether the directory at fd has no entries.
func emptyDir(fd int) bool {
	f, err := openLister(fd, "")
	if err != nil {
		return false
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	return len(names) == 0 && errors.Is(err, io.EOF)
}

// Workers is the pool size of a copy asked for n workers (0: chosen):
// staging is bound by I/O latency more than by CPU, so more workers than
// cores pay off, within reason.
func Workers(n int) int {
	if n > 0 {
		return n
	}
	return min(max(4*runtime.NumCPU(), 8), 64)
}

func (r *copyRun) stats() Stats {
	return Stats{Files: r.files.Load(), Dirs: r.dirs.Load(), Links: r.links.Load(), HardLinks: r.hard.Load(),
		Bytes: r.bytes.Load(), Skipped: r.skipped.Load(), Failed: r.nFailed}
}

// fail records an entry that could not be copied. Out of space ends the
// whole copy: every further entry would fail the same way.
func (r *copyRun) fail(rel string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
		if r.fatal == nil {
			r.fatal = err
			r.cancel()
		}
		return
	}
	r.nFailed++
	if len(r.failed) < maxListedErrors {
		r.failed = append(r.failed, EntryError{Path: rel, Err: err})
	}
}

func (r *copyRun) warn(rel, why string) {
	if r.m.Warn != nil {
		r.m.Warn(rel, why)
	}
}

func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// listDir copies the entries of one directory. Reading the listing uses a
// duplicate descriptor; the directory's own descriptors stay open until its
// last task is done (release).
func (r *copyRun) listDir(d *dirNode) {
	defer r.release(d)
	srcFd := d.srcFd
	f, err := openLister(srcFd, d.rel)
	if err != nil {
		r.fail(d.rel, err)
		return
	}
	defer f.Close()
	// Files go to the workers in batches, by name: the workers stat them
	// (in parallel, which matters when inodes come from disk).
	files := &batcher[string]{n: fileBatch, run: func(names []string) {
		d.pending.Add(1)
		r.pool.submit(func() {
			for _, name := range names {
				if r.ctx.Err() != nil {
					break
				}
				r.regular(d, srcFd, name)
			}
			r.release(d)
		})
	}}
	for r.ctx.Err() == nil {
		ents, err := f.ReadDir(1024)
		for _, e := range ents {
			if r.ctx.Err() != nil {
				return
			}
			switch {
			case r.m.Part.Finish && !e.IsDir():
				// Only multiply linked files are left: the listing
				// does not say which.
				r.entry(d, srcFd, e.Name())
			case !e.IsDir() && r.m.Part.split() && !r.m.Part.owns(join(d.rel, e.Name())):
				// Another share's (no path is built for an unsplit copy).
			case e.Type().IsRegular():
				files.add(e.Name())
			default:
				r.entry(d, srcFd, e.Name())
			}
		}
		files.flush()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				r.fail(d.rel, fmt.Errorf("reading directory: %w", err))
			}
			return
		}
	}
}

// fileBatch is how many regular files one task copies.
const fileBatch = 64

// regular copies an entry the listing said is a regular file: opened
// first, then examined through the descriptor, which saves a second name
// lookup. O_NONBLOCK keeps a FIFO swapped in meanwhile from blocking.
func (r *copyRun) regular(d *dirNode, srcFd int, name string) {
	in, err := unix.Openat(srcFd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENXIO) {
			r.entry(d, srcFd, name) // no longer a regular file
			return
		}
		r.fail(join(d.rel, name), err)
		return
	}
	var st unix.Stat_t
	if err := unix.Fstat(in, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(in)
		r.entry(d, srcFd, name)
		return
	}
	if st.Nlink > 1 && r.m.Part.split() {
		unix.Close(in) // the finish copies it, with its other names
		return
	}
	r.copyOpen(d, srcFd, name, join(d.rel, name), &st, in)
}

// entry copies one directory entry of any kind.
func (r *copyRun) entry(d *dirNode, srcFd int, name string) {
	rel := join(d.rel, name)
	var st unix.Stat_t
	if err := unix.Fstatat(srcFd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		r.fail(rel, err)
		return
	}
	if linked := st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink > 1; st.Mode&unix.S_IFMT != unix.S_IFDIR &&
		(r.m.Part.Finish && !linked || r.m.Part.split() && linked) {
		return // the shares copy the rest, the finish multiply linked files
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		r.subdir(d, srcFd, name, rel, &st)
	case unix.S_IFREG:
		r.file(d, srcFd, name, rel, &st)
	case unix.S_IFLNK:
		r.symlink(d, srcFd, name, rel, &st)
	case unix.S_IFIFO:
		if err := r.replaceNonDir(d.dstFd, name); err != nil {
			r.fail(rel, err)
			break
		}
		if err := unix.Mknodat(d.dstFd, name, unix.S_IFIFO|(st.Mode&0o7777), 0); err != nil && !errors.Is(err, unix.EEXIST) {
			r.fail(rel, err)
			break
		}
		setTimesAt(d.dstFd, name, &st)
	default:
		r.warn(rel, "skipped: sockets and device files are not copied")
	}
}

// replaceNonDir removes whatever non-directory sits at name in a DST
// directory (a stale copy, or a symlink planted there), so that nothing is
// written through it.
func (r *copyRun) replaceNonDir(dirFd int, name string) error {
	err := unix.Unlinkat(dirFd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

func (r *copyRun) subdir(d *dirNode, srcFd int, name, rel string, st *unix.Stat_t) {
	err := unix.Mkdirat(d.dstFd, name, 0o700)
	// The shares of a split copy make the same directories at once: one
	// another share made is as fresh as one of its own.
	fresh := err == nil || r.m.Part.split()
	if err != nil && !errors.Is(err, unix.EEXIST) {
		r.fail(rel, err)
		return
	}
	dstFd, err := unix.Openat(d.dstFd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		fresh = true
		// A symlink or file stands where the directory goes: replace it.
		if err = r.replaceNonDir(d.dstFd, name); err == nil {
			if err = unix.Mkdirat(d.dstFd, name, 0o700); err == nil {
				dstFd, err = unix.Openat(d.dstFd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
	}
	if err != nil {
		r.fail(rel, err)
		return
	}
	// The copy must be writable while it is filled; its mode comes last.
	unix.Fchmod(dstFd, 0o700)
	childSrc, err := unix.Openat(srcFd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(dstFd)
		r.fail(rel, err)
		return
	}
	r.copyXattrs(rel, childSrc, dstFd)
	c := &dirNode{parent: d, rel: rel, srcFd: childSrc, dstFd: dstFd, st: *st, fresh: fresh, direct: (fresh || r.m.Part.Finish) && !r.m.Atomic}
	c.pending.Store(1)
	d.pending.Add(1)
	r.pool.submit(func() { r.listDir(c) })
}

// release drops one pending count of d; the last one sets the directory's
// attributes (after all its contents changed) and releases the parent.
func (r *copyRun) release(d *dirNode) {
	if d.pending.Add(-1) > 0 {
		return
	}
	// A share leaves its directories writable for the others; the
	// finish sets them. The destination's root keeps its own attributes
	// when it belongs to someone else (a project directory the copy may
	// write into): they are its owner's to set, not the copy's.
	if r.ctx.Err() == nil && !r.m.Part.split() && (d.parent != nil || ownDir(d.dstFd)) {
		if err := unix.Fchmod(d.dstFd, d.st.Mode&0o7777); err != nil {
			r.fail(d.rel, err)
		}
		if err := futimens(d.dstFd, []unix.Timespec{d.st.Atim, d.st.Mtim}); err != nil {
			r.fail(d.rel, err)
		}
	}
	unix.Close(d.dstFd)
	unix.Close(d.srcFd)
	r.dirs.Add(1)
	if d.parent != nil {
		r.release(d.parent)
	}
}

// ownDir reports whether the directory open as fd belongs to this
// process's user (root counts as owning everything).
func ownDir(fd int) bool {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return true // set it, and report why that fails
	}
	uid := unix.Geteuid()
	return uid == 0 || st.Uid == uint32(uid)
}

// futimens sets a descriptor's times: utimensat(fd, NULL, ...), which
// needs no path lookup.
func futimens(fd int, ts []unix.Timespec) error {
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

func setTimesAt(dirFd int, name string, st *unix.Stat_t) {
	unix.UtimesNanoAt(dirFd, name, []unix.Timespec{st.Atim, st.Mtim}, unix.AT_SYMLINK_NOFOLLOW)
}

func (r *copyRun) symlink(d *dirNode, srcFd int, name, rel string, st *unix.Stat_t) {
	buf := make([]byte, st.Size+1)
	n, err := unix.Readlinkat(srcFd, name, buf)
	if err != nil {
		r.fail(rel, err)
		return
	}
	target := string(buf[:n])
	old := make([]byte, len(buf)+1)
	if m, err := unix.Readlinkat(d.dstFd, name, old); err == nil && string(old[:m]) == target {
		r.links.Add(1)
		return
	}
	if err := r.replaceNonDir(d.dstFd, name); err != nil {
		r.fail(rel, err)
		return
	}
	if err := unix.Symlinkat(target, d.dstFd, name); err != nil {
		r.fail(rel, err)
		return
	}
	setTimesAt(d.dstFd, name, st)
	r.links.Add(1)
}

func (r *copyRun) file(d *dirNode, srcFd int, name, rel string, st *unix.Stat_t) {
	in, err := unix.Openat(srcFd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		r.fail(rel, err)
		r.firstDone(st, rel, false)
		return
	}
	r.copyOpen(d, srcFd, name, rel, st, in)
}

// copyOpen copies the regular file open as in (whose status is st), unless
// it is a further name of a hard-linked file or already in place.
func (r *copyRun) copyOpen(d *dirNode, srcFd int, name, rel string, st *unix.Stat_t, in int) {
	if st.Nlink > 1 || !d.fresh {
		if r.done(d, srcFd, name, rel, st) {
			unix.Close(in)
			return
		}
	}
	tmp := name
	if !d.direct {
		tmp = r.tempName(name)
	}
	// Created with its final permission bits: no fchmod is needed unless
	// the umask takes some away or the mode has special bits.
	perm := st.Mode & 0o777
	out, err := unix.Openat(d.dstFd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if errors.Is(err, unix.EEXIST) { // left by an interrupted run
		unix.Unlinkat(d.dstFd, tmp, 0)
		out, err = unix.Openat(d.dstFd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	}
	if err != nil {
		unix.Close(in)
		r.fail(rel, err)
		r.firstDone(st, rel, false)
		return
	}
	f := &fileCopy{r: r, d: d, name: name, tmp: tmp, rel: rel, st: *st, in: in, out: out}
	sparse := st.Blocks*512 < st.Size
	if st.Size < r.big || sparse || r.lanes == 0 {
		if !sparse && st.Size >= sendfileMin && r.noCFR.Load() && r.limit == nil && !r.noSendfile {
			f.finish(f.sendWhole())
			return
		}
		f.finish(f.copyRange(0, st.Size, sparse))
		return
	}
	// A large file: chunks copied in lanes, each taking every lanes-th
	// chunk in turn; the file is finished by the last lane.
	if err := unix.Ftruncate(out, st.Size); err != nil {
		f.finish(err)
		return
	}
	d.pending.Add(1)
	n := (st.Size + r.chunk - 1) / r.chunk
	lanes := min(n, r.lanes)
	f.left.Store(lanes)
	for lane := range lanes {
		r.pool.submit(func() {
			var err error
			for i := lane; i < n && err == nil; i += lanes {
				off := i * r.chunk
				err = f.copyRange(off, min(r.chunk, st.Size-off), false)
				if err == nil && r.m.chunkCopied != nil {
					r.m.chunkCopied(f.rel, lanes, lane, i)
				}
			}
			f.chunkDone(err)
		})
	}
}

// done reports whether the file needs no copy: a further name of a
// hard-linked file (linked instead), or a resumed copy already in place.
func (r *copyRun) done(d *dirNode, srcFd int, name, rel string, st *unix.Stat_t) bool {
	if st.Nlink > 1 && r.linkToFirst(d, name, rel, st) {
		return true
	}
	var have unix.Stat_t
	if !d.fresh && unix.Fstatat(d.dstFd, name, &have, unix.AT_SYMLINK_NOFOLLOW) == nil && have.Mode&unix.S_IFMT == unix.S_IFREG &&
		have.Size == st.Size && have.Mtim == st.Mtim && have.Mode&0o7777 == st.Mode&0o7777 &&
		(!r.m.Verify || sameHashAt(srcFd, d.dstFd, name)) {
		r.skipped.Add(1)
		r.fileInPlace()
		r.bytes.Add(st.Size)
		r.firstDone(st, rel, true)
		return true
	}
	return false
}

// tempName is a hidden name in the same directory, rsync's ".NAME.SUFFIX":
// Gluster's DHT places a file so named by NAME alone (its default
// rsync-hash-regex), so the data lands on the brick the final name hashes
// to. With any other shape every file of a stage would hash alike, land
// on one brick and leave a link file behind on rename. Long names would
// not fit 255 bytes with the suffix.
func (r *copyRun) tempName(name string) string {
	if len(name) <= 200 {
		return "." + name + tmpSuffix
	}
	return fmt.Sprintf(".rsa-tmp.%d.%d", os.Getpid(), r.tmpSeq.Add(1))
}

// tmpSuffix ends the names of files still being written.
const tmpSuffix = ".rsa-tmp"

// fileCopy is one regular file on its way.
type fileCopy struct {
	r        *copyRun
	d        *dirNode
	name     string
	tmp, rel string
	st       unix.Stat_t
	in, out  int
	left     atomic.Int64
	errOnce  sync.Once
	err      error
}

func (f *fileCopy) chunkDone(err error) {
	if err != nil {
		f.errOnce.Do(func() { f.err = err })
	}
	if f.left.Add(-1) == 0 {
		f.finish(f.err)
		f.r.release(f.d)
	}
}

// copyRange copies [off, off+size) from in to out: copy_file_range where
// the kernel allows it, otherwise positioned reads and writes; sparse
// files copy only their data extents. (Splice through a pipe, which copies
// each page once where pread and pwrite copy it twice, was tried for the
// chunks of large files and taken out: 4 x 1 GiB disk to tmpfs, 7
// interleaved runs twice, was 12% faster warm and 16% slower cold, see
// docs/performance.md.)
func (f *fileCopy) copyRange(off, size int64, sparse bool) error {
	if sparse {
		return f.copySparse()
	}
	end := off + size
	useCFR := !f.r.noCFR.Load()
	buf := []byte(nil)
	for off < end {
		if err := f.r.ctx.Err(); err != nil {
			return err
		}
		n := min(end-off, 8<<20)
		if useCFR {
			roff, woff := off, off
			m, err := unix.CopyFileRange(f.in, &roff, f.out, &woff, int(n), 0)
			if err == nil && m > 0 {
				off += int64(m)
				f.r.bytes.Add(int64(m))
				f.charge(int64(m))
				continue
			}
			if err == nil && m == 0 {
				return fmt.Errorf("file shrank while being copied")
			}
			if !errors.Is(err, unix.EXDEV) && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) &&
				!errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EBADF) {
				return err
			}
			if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
				f.r.noCFR.Store(true) // the same for every file of this copy
			}
			useCFR = false
		}
		if buf == nil {
			bp := bufPool.Get().(*[]byte)
			defer bufPool.Put(bp)
			buf = *bp
		}
		m, err := unix.Pread(f.in, buf[:min(n, int64(len(buf)))], off)
		if err != nil {
			return err
		}
		if m == 0 {
			return fmt.Errorf("file shrank while being copied")
		}
		if _, err := pwriteAll(f.out, buf[:m], off); err != nil {
			return err
		}
		off += int64(m)
		f.r.bytes.Add(int64(m))
		f.charge(int64(m))
	}
	return nil
}

// charge holds the copy back for the n bytes it has just read, under
// --bwlimit. Charged after the read, for what was read: charging the 8 MiB
// asked for before a read that returns one buffer's worth holds a copy to
// an eighth of its limit (8 MB/s at a 64 MiB/s cap in
// TestStagingUnderPressure).
func (f *fileCopy) charge(n int64) {
	if f.r.limit != nil {
		f.r.limit.wait(f.r.ctx, n)
	}
}

// sendfileMin is the size from which a whole file goes through sendfile(2)
// (page cache to page cache, no copy through user space) rather than
// positioned reads and writes; below it the pipe sendfile sets up costs more
// than the copy saves.
const sendfileMin = 64 << 10

// sendWhole copies a whole file with sendfile(2). The output's file
// position advances, so it serves whole files, never parallel chunks.
func (f *fileCopy) sendWhole() error {
	var off int64
	for off < f.st.Size {
		if err := f.r.ctx.Err(); err != nil {
			return err
		}
		n, err := unix.Sendfile(f.out, f.in, &off, int(min(f.st.Size-off, 1<<30)))
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("file shrank while being copied")
		}
		f.r.bytes.Add(int64(n))
	}
	return nil
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

func pwriteAll(fd int, b []byte, off int64) (int, error) {
	done := 0
	for done < len(b) {
		n, err := unix.Pwrite(fd, b[done:], off+int64(done))
		if err != nil {
			return done, err
		}
		done += n
	}
	return done, nil
}

// copySparse copies only the data extents and sets the length, so holes
// stay holes.
func (f *fileCopy) copySparse() error {
	size := f.st.Size
	var off int64
	for off < size {
		data, err := unix.Seek(f.in, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole remains
		}
		if err != nil {
			return err
		}
		hole, err := unix.Seek(f.in, data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		if err := f.copyRange(data, hole-data, false); err != nil {
			return err
		}
		off = hole
	}
	return unix.Ftruncate(f.out, size)
}

// finish sets the copy's attributes and renames it into place, or removes
// it if anything failed.
func (f *fileCopy) finish(err error) {
	r := f.r
	if err == nil {
		r.copyXattrs(f.rel, f.in, f.out)
		if f.st.Mode&0o7000 != 0 || f.st.Mode&r.umask != 0 {
			err = unix.Fchmod(f.out, f.st.Mode&0o7777)
		}
	}
	unix.Close(f.in)
	if err == nil {
		err = futimens(f.out, []unix.Timespec{f.st.Atim, f.st.Mtim})
	}
	if err == nil && r.fsyncEach {
		err = unix.Fsync(f.out)
	}
	if cerr := unix.Close(f.out); err == nil {
		err = cerr
	}
	if err == nil && f.tmp != f.name {
		err = unix.Renameat(f.d.dstFd, f.tmp, f.d.dstFd, f.name)
	}
	if err != nil {
		unix.Unlinkat(f.d.dstFd, f.tmp, 0)
		r.fail(f.rel, err)
		r.firstDone(&f.st, f.rel, false)
		return
	}
	r.fileInPlace()
	r.firstDone(&f.st, f.rel, true)
}

// fileInPlace counts a file copied (or found in place already).
func (r *copyRun) fileInPlace() {
	n := r.files.Add(1)
	if r.m.fileDone != nil {
		r.m.fileDone(n)
	}
}

// linkToFirst handles a further name of a multiply linked file: it links to
// the first copy (now or once that is in place) and reports true; for the
// first name it records the file and reports false.
func (r *copyRun) linkToFirst(d *dirNode, name, rel string, st *unix.Stat_t) bool {
	k := inode{uint64(st.Dev), st.Ino}
	r.mu.Lock()
	h, seen := r.hl[k]
	if !seen {
		r.hl[k] = &hardLink{rel: rel}
		r.mu.Unlock()
		return false
	}
	if !h.done {
		d.pending.Add(1)
		h.waiters = append(h.waiters, linkWaiter{d, name})
		r.mu.Unlock()
		return true
	}
	r.mu.Unlock()
	r.makeLink(h, d, name)
	return true
}

// firstDone completes the first copy of a hard-linked file and makes the
// links that waited for it.
func (r *copyRun) firstDone(st *unix.Stat_t, rel string, ok bool) {
	if st.Nlink < 2 {
		return
	}
	r.mu.Lock()
	h := r.hl[inode{uint64(st.Dev), st.Ino}]
	if h == nil || h.rel != rel || h.done {
		r.mu.Unlock()
		return
	}
	h.done, h.ok = true, ok
	waiters := h.waiters
	h.waiters = nil
	r.mu.Unlock()
	for _, w := range waiters {
		r.makeLink(h, w.dir, w.name)
		r.release(w.dir)
	}
}

func (r *copyRun) makeLink(h *hardLink, d *dirNode, name string) {
	rel := join(d.rel, name)
	if !h.ok {
		r.fail(rel, fmt.Errorf("not linked: its first name %s was not copied", printable(h.rel)))
		return
	}
	fd, err := unix.Openat2(r.dstRoot, h.rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS})
	if err != nil {
		r.fail(rel, fmt.Errorf("linking to %s: %w", printable(h.rel), err))
		return
	}
	defer unix.Close(fd)
	var a, b unix.Stat_t
	if unix.Fstat(fd, &a) == nil && unix.Fstatat(d.dstFd, name, &b, unix.AT_SYMLINK_NOFOLLOW) == nil && a.Ino == b.Ino && a.Dev == b.Dev {
		r.hard.Add(1) // already linked (a resumed copy)
		return
	}
	if err := r.replaceNonDir(d.dstFd, name); err != nil {
		r.fail(rel, err)
		return
	}
	if err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), d.dstFd, name, unix.AT_SYMLINK_FOLLOW); err != nil {
		r.fail(rel, fmt.Errorf("linking to %s: %w", printable(h.rel), err))
		return
	}
	r.hard.Add(1)
}

// copyXattrs copies the user.* attributes of srcFd onto dstFd. File
// systems without extended attributes are not an error.
func (r *copyRun) copyXattrs(rel string, srcFd, dstFd int) {
	for name, v := range fxattrs(srcFd) {
		if err := unix.Fsetxattr(dstFd, name, []byte(v), 0); err != nil && !errors.Is(err, unix.EOPNOTSUPP) {
			r.warn(rel, "extended attribute "+name+" not copied: "+err.Error())
		}
	}
}

func (r *copyRun) startProgress() (stop func()) {
	if r.m.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				r.m.Progress(r.progress())
			}
		}
	}()
	// Count the source once, beside the copy, for totals and an ETA;
	// until that count is in, there are no totals (a count that grew as
	// the copy found files would promise less than is left).
	go func() {
		files, bytes, err := Measure(r.src)
		if err == nil {
			r.totalFiles.Store(files)
			r.totalBytes.Store(bytes)
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		p := r.progress()
		if p.TotalFiles == 0 { // the copy ended before the count
			p.TotalFiles, p.TotalBytes = p.Files, p.Bytes
		}
		r.m.Progress(p)
	}
}

func (r *copyRun) progress() Progress {
	return Progress{Files: r.files.Load(), Bytes: r.bytes.Load(), TotalFiles: r.totalFiles.Load(), TotalBytes: r.totalBytes.Load()}
}

// printable quotes a path that holds bytes a terminal would mangle.
func printable(p string) string {
	for _, c := range []byte(p) {
		if c < 0x20 || c == 0x7f || c >= 0x80 {
			return strconv.Quote(p)
		}
	}
	return p
}
