package stage

import (
	"archive/tar"
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zeebo/xxh3"
	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/tarfmt"
)

// archiveWorkers sizes the helpers of pack and unpack: the tar stream is
// read or written by one goroutine, so a few helpers keep it busy and more
// only contend (measured on 2 cores: 2-3 helpers beat 8).
func archiveWorkers(n int) int {
	if n > 0 {
		return n
	}
	return runtime.NumCPU() + 1
}

// readAhead bounds the bytes of small files read ahead of the tar writer,
// and of file bodies waiting for the unpack writers.
const (
	readAhead     = 64 << 20
	smallFileSize = 1 << 20
)

// packed reports a file written into the archive to the test hook.
func (m *Mover) packed(files int64) {
	if m.fileDone != nil {
		m.fileDone(files)
	}
}

// Pack writes the tree at src as one POSIX (pax) tar file at dst, streamed:
// no temporary copy of the tree. Small files are read ahead in parallel
// while the archive is written in order (the thesis' aggregation of many
// small result files, §3.2.4). dst appears only when complete.
func (m *Mover) Pack(ctx context.Context, src, dst string) (Stats, error) {
	var st Stats
	tmp := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+tmpSuffix)
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return st, fmt.Errorf("creating %s: %w", dst, err)
	}
	ok := false
	defer func() {
		if !ok {
			out.Close()
			os.Remove(tmp)
		}
	}()
	if err := m.packStream(ctx, src, out, dst, &st); err != nil {
		return st, err
	}
	if m.Sync {
		if err := out.Sync(); err != nil {
			return st, err
		}
	}
	if err := out.Close(); err != nil {
		return st, err
	}
	// Verified under its temporary name: an archive that does not match
	// its source never gets the name a user or a stage-out trusts.
	if m.Verify {
		if err := VerifyArchive(ctx, src, tmp); err != nil {
			return st, err
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		return st, err
	}
	ok = true
	m.packDone(st)
	return st, nil
}

// PackTo writes the tree at src as a POSIX (pax) tar stream to out, as Pack
// writes its file: out may be a pipe (rsa copy --pack-fd, whose reader
// builds the job's input image). It does not close out.
func (m *Mover) PackTo(ctx context.Context, src string, out *os.File) (Stats, error) {
	var st Stats
	if err := m.packStream(ctx, src, out, out.Name(), &st); err != nil {
		return st, err
	}
	m.packDone(st)
	return st, nil
}

func (m *Mover) packDone(st Stats) {
	if m.Progress != nil {
		m.Progress(Progress{Files: st.Files, Bytes: st.Bytes, TotalFiles: st.Files, TotalBytes: st.Bytes})
	}
}

// packStream writes the tar of src to out, named dst in errors, counting
// into st.
func (m *Mover) packStream(ctx context.Context, src string, out *os.File, dst string, st *Stats) error {
	bw := bufio.NewWriterSize(out, 1<<20)
	p := &packer{
		m: m, src: src, dst: dst, st: st,
		batches: make(chan *entryBatch, 64),
		reads:   make(chan *entryBatch, 64),
		budget:  newBudget(cmp.Or(m.readAhead, readAhead)),
		limit:   m.limitFor(ctx),
		bw:      bw,
		tw:      tar.NewWriter(bw),
		links:   map[inode]string{},
	}
	var readers sync.WaitGroup
	for range archiveWorkers(m.Workers) {
		readers.Add(1)
		go func() {
			defer readers.Done()
			p.read()
		}()
	}
	walkErr := make(chan error, 1)
	wctx, stopWalk := context.WithCancel(ctx)
	go func() {
		defer close(p.batches)
		defer close(p.reads)
		walkErr <- p.walk(wctx)
	}()

	defer readers.Wait()
	// Whatever way the writer ends, the walker and readers must not stay
	// blocked on it: the walk stops, and what it sent is drained.
	defer func() {
		for b := range p.batches {
			p.awaitRead(b)
			p.release(b)
		}
	}()
	defer stopWalk()
	p.outFd = int(out.Fd())
	for b := range p.batches {
		if err := p.writeBatch(b); err != nil {
			return err
		}
	}
	if err := <-walkErr; err != nil {
		return fmt.Errorf("reading %s: %w", src, err)
	}
	if err := p.tw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

// packer is one packStream's pipeline. Small files are packed by a pool
// of readers, each of which returns the file's complete tar record
// (header, pax records, body, padding); the writer only appends records
// in walk order. The walk stats only a few sample files of each directory
// (walkSamples): the reader that opens a file reads its status (fstat),
// which spares a path lookup a file. A file that turns out not small
// (large, or hard-linked) goes back to the writer, which formats
// everything else itself and decides hard links in archive order. Entries
// travel in batches, in order: a hand-off per file between goroutines
// costs more than packing 4 KiB.
type packer struct {
	m        *Mover
	src, dst string
	// batches carries every batch to the writer, reads the same batches
	// to the readers; the walk closes both at its end.
	batches, reads chan *entryBatch
	budget         *budget
	limit          func(int64)

	// The writer's alone.
	bw    *bufio.Writer
	tw    *tar.Writer
	outFd int
	recs  [][]byte // small files' records to write at once (writeRecs)
	links map[inode]string
	st    *Stats
}

// packItem is one entry of an entryBatch.
type packItem struct {
	walkEntry
	small bool  // read by a reader into rec (holding dir till then)
	took  int64 // budget the walk took for its record
	rec   []byte
	err   error
}

// entryBatch is a run of entries in archive order.
type entryBatch struct {
	seq   int64 // from 1, in archive order
	items []packItem
	held  int64         // budget the walk took for its records
	extra int64         // budget its reader took on top (takeExtra)
	read  chan struct{} // closed once its small files are read
}

// read is one reader: it packs the small files of each batch it receives
// into their records, hands back to the writer those that turn out not
// small, and closes the batch's read once done.
func (p *packer) read() {
	for b := range p.reads {
		for i := range b.items {
			it := &b.items[i]
			if !it.small {
				continue
			}
			need := func(n int64) {
				if n -= it.took; n > 0 {
					p.budget.takeExtra(n, b.seq)
					b.extra += n
				}
			}
			it.rec, it.info, it.err = packRecord(p.src, it.walkEntry, p.limit, need)
			if it.rec == nil && it.err == nil {
				it.small = false // not a small file after all: the writer packs it
			}
			it.dir.release()
		}
		close(b.read)
	}
}

// walk walks src and sends its entries in batches, each to the readers
// and then to the writer once the budget of its small files' records is
// taken. It stops at ctx's end and returns the walk's error; the caller
// closes the channels.
func (p *packer) walk(ctx context.Context) error {
	cur := &entryBatch{seq: 1, read: make(chan struct{})}
	send := func() {
		if len(cur.items) == 0 {
			return
		}
		p.budget.take(cur.held)
		p.reads <- cur
		p.batches <- cur
		cur = &entryBatch{seq: cur.seq + 1, read: make(chan struct{})}
	}
	err := walkTree(p.src, func(e walkEntry) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		it := packItem{walkEntry: e}
		switch info := e.info; {
		case info == nil:
			// A regular file the walk did not stat: the reader
			// that opens it does, and packs it if it is small.
			// The budget it takes is that of the largest of its
			// directory's samples: a directory's files are mostly
			// alike, so the batches end at about packBatchBytes and
			// readers seldom take more (takeExtra).
			it.small = true
			it.took = pooledSize(recordSize(min(e.sizeHint, smallFileSize)))
			it.dir.hold()
			cur.held += it.took
		case isSmallFile(info):
			it.small = true
			it.took = pooledSize(recordSize(info.Size()))
			it.dir.hold()
			cur.held += it.took
		}
		cur.items = append(cur.items, it)
		if len(cur.items) == packBatch || cur.held >= packBatchBytes {
			send()
		}
		return nil
	})
	send()
	return err
}

// awaitRead waits until b's small files are read.
func (p *packer) awaitRead(b *entryBatch) {
	p.budget.consumingBatch(b.seq)
	<-b.read
}

// release gives back the budget b's records held.
func (p *packer) release(b *entryBatch) {
	p.budget.give(b.held)
	p.budget.giveExtra(b.extra)
}

// writeBatch appends a batch's entries in order; its records' budget is
// given back however it ends.
func (p *packer) writeBatch(b *entryBatch) error {
	p.awaitRead(b)
	defer p.release(b)
	st := p.st
	for i := range b.items {
		it := &b.items[i]
		if it.small {
			if it.err != nil {
				return fmt.Errorf("reading %s: %w", printable(it.rel), it.err)
			}
			p.recs = append(p.recs, it.rec)
			it.rec = nil
			st.Files++
			st.Bytes += it.info.Size()
			p.m.packed(st.Files)
		} else if err := p.writeEntry(it); err != nil {
			return err
		}
		if p.m.Progress != nil && st.Files%256 == 0 {
			p.m.Progress(Progress{Files: st.Files, Bytes: st.Bytes})
		}
	}
	return p.writeRecs()
}

// writeEntry writes an entry that is not a small file after the records
// before it, as a hard link to the first name of its file in the archive
// if it has one.
func (p *packer) writeEntry(it *packItem) error {
	if err := p.writeRecs(); err != nil {
		return err
	}
	// Hard links are decided here, in archive order.
	linkname := ""
	if sys, ok := it.info.Sys().(*syscall.Stat_t); ok && it.info.Mode().IsRegular() && sys.Nlink > 1 {
		k := inode{uint64(sys.Dev), sys.Ino}
		if first, seen := p.links[k]; seen {
			linkname = first
		} else {
			p.links[k] = filepath.ToSlash(it.rel)
		}
	}
	return p.m.packEntry(p.tw, p.src, p.dst, it.rel, it.info, linkname, p.limit, p.st)
}

// writeRecs writes the small files' records gathered so far, after what
// the tar writer holds, and gives their buffers back to the pool. Runs of
// records go out in one writev, not through bw: copying each record into
// bw was 5% of a pack of 100,000 small files, on its one serial path.
func (p *packer) writeRecs() error {
	if len(p.recs) == 0 {
		return nil
	}
	if err := p.tw.Flush(); err != nil { // pad the writer's own last entry
		return err
	}
	if err := p.bw.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", p.dst, err)
	}
	err := writevAll(p.outFd, p.recs)
	for i, r := range p.recs {
		smallBufs.put(r)
		p.recs[i] = nil
	}
	p.recs = p.recs[:0]
	if err != nil {
		return fmt.Errorf("writing %s: %w", p.dst, err)
	}
	return nil
}

// writevAll writes bufs in order at fd's position, as many writev calls as
// it takes.
func writevAll(fd int, bufs [][]byte) error {
	for len(bufs) > 0 {
		n, err := unix.Writev(fd, bufs[:min(len(bufs), 1024)]) // IOV_MAX
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrShortWrite
		}
		for n > 0 {
			if n < len(bufs[0]) {
				// Part of a record: go on from a copy of the list, so
				// the caller's slices keep their capacity for the pool.
				bufs = append([][]byte{bufs[0][n:]}, bufs[1:]...)
				break
			}
			n -= len(bufs[0])
			bufs = bufs[1:]
		}
	}
	return nil
}

// A batch of Pack's entries ends at packBatch entries or once its small
// files' records reach packBatchBytes, whichever comes first.
const (
	packBatch      = 64
	packBatchBytes = 4 << 20
)

// packEntry writes an entry that is not a small file (a directory, a
// symlink, a hard link or a large file) into tw, counting it in st.
func (m *Mover) packEntry(tw *tar.Writer, src, dst, rel string, info fs.FileInfo, linkname string, limit func(int64), st *Stats) error {
	hdr, err := tarHeader(src, rel, info, true)
	if err != nil {
		return err
	}
	if linkname != "" {
		hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, linkname, 0
		st.HardLinks++
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("writing %s: %w", dst, err)
	}
	switch {
	case linkname != "":
	case info.Mode().IsRegular():
		n, err := copyFileInto(tw, filepath.Join(src, rel), limit)
		if err != nil {
			return fmt.Errorf("reading %s: %w", printable(rel), err)
		}
		st.Files++
		st.Bytes += n
		m.packed(st.Files)
	case info.IsDir():
		st.Dirs++
	case info.Mode()&fs.ModeSymlink != 0:
		st.Links++
	}
	return nil
}

func (m *Mover) limitFor(ctx context.Context) func(int64) {
	if m.BWLimit <= 0 {
		return nil
	}
	l := newLimiter(m.BWLimit)
	return func(n int64) { l.wait(ctx, n) }
}

// isSmallFile says whether Pack's readers pack the file: a regular file
// of at most smallFileSize with one name (a hard-linked one is the
// writer's, which decides in archive order which name gets the content).
func isSmallFile(info fs.FileInfo) bool {
	sys, ok := info.Sys().(*syscall.Stat_t)
	return ok && info.Mode().IsRegular() && sys.Nlink == 1 && info.Size() <= smallFileSize
}

// smallBufs holds the buffers small files pass through on their way into
// or out of an archive: unpack's bodies and pack's records.
var smallBufs sizedPool

func getBody(n int64) []byte { return smallBufs.get(int(n))[:n] }

// recordSize bounds the bytes of one small file's tar record: its body
// padded to 512 bytes plus room for its headers.
func recordSize(size int64) int64 { return (size+511)/512*512 + 4096 }

// sliceWriter appends to a byte slice.
type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

// packRecord reads a small file (content and user.* extended attributes
// through one descriptor, opened in its directory's) and returns its
// complete tar record, the body read straight into it, and its status.
// A file that changed size meanwhile is an error. For an entry the walk
// did not stat (e.info nil), it reads the status from the descriptor:
// a file that is not small gets no record (nil, and a nil error), and
// a small one is announced to need with its record's pooled size before
// that is allocated.
func packRecord(root string, e walkEntry, limit func(int64), need func(int64)) ([]byte, fs.FileInfo, error) {
	rel, info := e.rel, e.info
	// O_NONBLOCK: an entry listed as a regular file and replaced by a
	// FIFO since must not hang the reader.
	fd, err := unix.Openat(e.dir.fd, e.name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, info, err
	}
	defer unix.Close(fd)
	if info == nil {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return nil, nil, err
		}
		if info = newStatInfo(e.name, &st); !isSmallFile(info) {
			return nil, info, nil
		}
		need(pooledSize(recordSize(info.Size())))
	}
	if limit != nil {
		limit(info.Size())
	}
	size := info.Size()
	xattrs := fxattrs(fd)
	rec := smallBufs.get(int(recordSize(size)))
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		if rec, ok := appendFileHeader(rec, filepath.ToSlash(rel), st, xattrs); ok {
			n := len(rec)
			rec = slices.Grow(rec, int(size))[:n+int(size)]
			if err := readSize(fd, rec[n:]); err != nil {
				smallBufs.put(rec)
				return nil, info, err
			}
			return padBlock(rec, 0), info, nil
		}
	}
	body := getBody(size)
	defer smallBufs.put(body)
	if err := readSize(fd, body); err != nil {
		smallBufs.put(rec)
		return nil, info, err
	}
	hdr, err := tarHeader(root, rel, info, false)
	if err != nil {
		return nil, info, err
	}
	for k, v := range xattrs {
		if hdr.PAXRecords == nil {
			hdr.PAXRecords = map[string]string{}
		}
		hdr.PAXRecords["SCHILY.xattr."+k] = v
	}
	w := &sliceWriter{b: rec}
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, info, err
	}
	if _, err := tw.Write(body); err != nil {
		return nil, info, err
	}
	if err := tw.Flush(); err != nil {
		return nil, info, err
	}
	return w.b, info, nil
}

// readSize fills b from fd: a file of another size than its stat said
// changed while being packed.
func readSize(fd int, b []byte) error {
	n, err := readFull(fd, b)
	if err != nil || n != len(b) {
		return fmt.Errorf("changed while being packed (%d of %d bytes): %v", n, len(b), err)
	}
	return nil
}

func readFull(fd int, b []byte) (int, error) {
	done := 0
	for done < len(b) {
		n, err := unix.Read(fd, b[done:])
		if err != nil {
			return done, err
		}
		if n == 0 {
			break
		}
		done += n
	}
	return done, nil
}

// xattrSource is where extended attributes are read: an open file (fd),
// or a path whose symlink itself is meant (path, when not "").
type xattrSource struct {
	fd   int
	path string
}

func (s xattrSource) list(b []byte) (int, error) {
	if s.path != "" {
		return unix.Llistxattr(s.path, b)
	}
	return unix.Flistxattr(s.fd, b)
}

func (s xattrSource) get(name string, b []byte) (int, error) {
	if s.path != "" {
		return unix.Lgetxattr(s.path, name, b)
	}
	return unix.Fgetxattr(s.fd, name, b)
}

// userXattrs reads the user.* extended attributes of s, nil if it has
// none. Most files have none: asking costs one list call into a buffer on
// the stack; a longer list than it holds is asked for at its size.
func userXattrs(s xattrSource) map[string]string {
	var small [256]byte
	buf := small[:]
	n, err := s.list(buf)
	if err == unix.ERANGE {
		if n, err = s.list(nil); err == nil && n > 0 {
			buf = make([]byte, n)
			n, err = s.list(buf)
		}
	}
	if err != nil || n == 0 {
		return nil
	}
	var out map[string]string
	var val []byte
	for _, name := range strings.Split(string(buf[:n]), "\x00") {
		if !strings.HasPrefix(name, "user.") {
			continue
		}
		if val == nil {
			val = make([]byte, 64<<10)
		}
		if k, err := s.get(name, val); err == nil {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = string(val[:k])
		}
	}
	return out
}

// fxattrs reads the user.* extended attributes of an open file.
func fxattrs(fd int) map[string]string { return userXattrs(xattrSource{fd: fd}) }

func copyFileInto(w io.Writer, p string, limit func(int64)) (int64, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	var n int64
	for {
		k, err := f.Read(*bp)
		if k > 0 {
			if limit != nil {
				limit(int64(k))
			}
			if _, werr := w.Write((*bp)[:k]); werr != nil {
				return n, werr
			}
			n += int64(k)
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// tarHeader describes one entry: pax format, nanosecond times, and (with
// withXattrs; small files bring theirs from their reader) user.* extended
// attributes as SCHILY.xattr records.
func tarHeader(root, rel string, info fs.FileInfo, withXattrs bool) (*tar.Header, error) {
	link := ""
	if info.Mode()&fs.ModeSymlink != 0 {
		var err error
		if link, err = os.Readlink(filepath.Join(root, rel)); err != nil {
			return nil, err
		}
	}
	hdr, err := tar.FileInfoHeader(info, link)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", printable(rel), err)
	}
	hdr.Format = tar.FormatPAX
	hdr.Name = filepath.ToSlash(rel)
	if rel == "." {
		hdr.Name = "./"
	} else if info.IsDir() {
		hdr.Name += "/"
	}
	hdr.Uname, hdr.Gname = "", ""
	hdr.AccessTime, hdr.ChangeTime = time.Time{}, time.Time{}
	if withXattrs && info.Mode()&fs.ModeSymlink == 0 {
		for name, v := range userXattrs(xattrSource{path: filepath.Join(root, rel)}) {
			if hdr.PAXRecords == nil {
				hdr.PAXRecords = map[string]string{}
			}
			hdr.PAXRecords["SCHILY.xattr."+name] = v
		}
	}
	return hdr, nil
}

// budget bounds the bytes held in memory between a producer and consumer.
type budget struct {
	mu    sync.Mutex
	cond  *sync.Cond
	avail int64
	max   int64
	// consuming is the batch the consumer waits for (consumingBatch),
	// which takeExtra never holds up.
	consuming int64
}

func newBudget(n int64) *budget {
	b := &budget{avail: n, max: n}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *budget) take(n int64) {
	n = min(n, b.max)
	b.mu.Lock()
	for b.avail < n {
		b.cond.Wait()
	}
	b.avail -= n
	b.mu.Unlock()
}

func (b *budget) give(n int64) {
	b.giveExtra(min(n, b.max))
}

// takeExtra takes n more for batch seq than the producer took for it
// (take), waiting while there is not enough, unless the consumer waits
// for that very batch: then it overdraws. So a worker that fills a batch
// and finds it needs more never waits for the consumer while the
// consumer waits for it; the overdraft is at most that one batch's
// extras. What takeExtra took goes back by giveExtra.
func (b *budget) takeExtra(n, seq int64) {
	b.mu.Lock()
	for b.avail < n && b.consuming != seq {
		b.cond.Wait()
	}
	b.avail -= n
	b.mu.Unlock()
}

func (b *budget) giveExtra(n int64) {
	b.mu.Lock()
	b.avail += n
	b.mu.Unlock()
	b.cond.Broadcast()
}

// consumingBatch says the consumer now waits for batch seq.
func (b *budget) consumingBatch(seq int64) {
	b.mu.Lock()
	b.consuming = seq
	b.mu.Unlock()
	b.cond.Broadcast()
}

// Unpack extracts the tar file at src into the directory dst. Every path is
// resolved beneath dst without following symlinks, so an archive cannot
// write outside dst through its own links or through links already there.
// Small files are written by parallel workers; directory attributes are set
// last.
func (m *Mover) Unpack(ctx context.Context, src, dst string) (Stats, error) {
	var st Stats
	in, err := os.OpenFile(src, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return st, fmt.Errorf("opening archive: %w", err)
	}
	defer in.Close()
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return st, err
	}
	root, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return st, err
	}
	defer unix.Close(root)
	u := &unpacker{m: m, root: root, dirs: map[string]int{}, cached: map[int]bool{}, direct: !m.Atomic && emptyDir(root)}
	u.umask = currentUmask()
	defer u.closeDirs()
	x := u.newExtraction(src, in, &st)
	if err := x.run(ctx); err != nil {
		return st, err
	}
	x.finish()
	if u.fatal != nil {
		return st, u.fatal
	}
	if m.Sync {
		if err := unix.Syncfs(root); err != nil {
			return st, err
		}
	}
	if len(u.failed) > 0 {
		st.Failed = u.n
		return st, &CopyError{Failed: u.failed, Total: u.n}
	}
	return st, nil
}

// extraction is one Unpack's pass over its archive: members are taken in
// archive order, small files handed in batches to a pool of writers (a
// hand-off per member would cost more than writing a small file), and
// directories and hard links kept for the end.
type extraction struct {
	u      *unpacker
	src    string // the archive, named in errors
	tr     *tar.Reader
	pool   *pool
	budget *budget // bounds the small files' bodies read ahead of the writers
	small  *batcher[smallMember]
	dirs   []*tar.Header
	links  []*tar.Header
	st     *Stats
}

// smallMember is a small file's header and body, read from the archive.
type smallMember struct {
	hdr  *tar.Header
	body []byte
}

// newExtraction starts the writers of the archive in, named src in errors,
// counting into st.
func (u *unpacker) newExtraction(src string, in io.Reader, st *Stats) *extraction {
	x := &extraction{u: u, src: src, st: st, pool: newPool(archiveWorkers(u.m.Workers)), budget: newBudget(readAhead)}
	x.tr = tar.NewReader(bufio.NewReaderSize(in, 1<<20))
	x.small = &batcher[smallMember]{n: fileBatch, run: x.writeSmall}
	return x
}

// writeSmall hands a batch of small files to the writers, each body's
// buffer and budget given back once it is written.
func (x *extraction) writeSmall(ms []smallMember) {
	x.pool.submit(func() {
		for _, m := range ms {
			x.u.writeFile(m.hdr, m.body, nil)
			smallBufs.put(m.body)
			x.budget.give(pooledSize(m.hdr.Size))
		}
	})
}

// run takes every member of the archive until its end or ctx's, and
// returns once the writers are done. Its error is ctx's or the archive's
// that could not be read on; a member that cannot be extracted is failed
// in u and skipped.
func (x *extraction) run(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			x.pool.wait()
			return err
		}
		hdr, err := x.tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			x.small.flush()
			x.pool.wait()
			return fmt.Errorf("reading archive %s: %w", x.src, err)
		}
		if err := x.member(hdr); err != nil {
			return err
		}
	}
	x.small.flush()
	x.pool.wait()
	return nil
}

// member takes one member: its name made clean, it is made or handed to
// the writers, or kept for the end (directories' attributes, hard links),
// and progress is reported. An error (the writers waited for) is the
// archive's that could not be read on.
func (x *extraction) member(hdr *tar.Header) error {
	u, st := x.u, x.st
	name, err := cleanMember(hdr.Name)
	if err != nil {
		u.fail(hdr.Name, err)
		return nil
	}
	hdr.Name = name
	switch hdr.Typeflag {
	case tar.TypeDir:
		if name != "." {
			if err := u.mkdirAll(name); err != nil {
				u.fail(name, err)
			}
		}
		x.dirs = append(x.dirs, hdr)
		st.Dirs++
	case tar.TypeReg, tar.TypeRegA, tar.TypeGNUSparse:
		if tarfmt.Sparse(hdr) {
			u.fail(name, errSparse)
			return nil
		}
		if err := x.file(hdr); err != nil {
			return err
		}
	case tar.TypeSymlink:
		u.symlink(hdr)
		st.Links++
	case tar.TypeLink:
		x.links = append(x.links, hdr)
	case tar.TypeFifo:
		u.mkfifo(hdr)
	default:
		if u.m.Warn != nil {
			u.m.Warn(name, "skipped: not a file, directory, link or FIFO")
		}
	}
	if u.m.Progress != nil && st.Files%256 == 0 {
		u.m.Progress(Progress{Files: st.Files, Bytes: st.Bytes})
	}
	return nil
}

// file counts a regular file's member and writes it: a small one's body
// is read (within the budget) and batched for the writers, a larger one is
// written here from the archive. An error (the writers waited for) is the
// archive's that could not be read.
func (x *extraction) file(hdr *tar.Header) error {
	x.st.Files++
	x.st.Bytes += hdr.Size
	if hdr.Size > smallFileSize {
		x.u.writeFile(hdr, nil, x.tr)
		return nil
	}
	x.budget.take(pooledSize(hdr.Size))
	b := getBody(hdr.Size)
	if _, err := io.ReadFull(x.tr, b); err != nil {
		x.pool.wait()
		return fmt.Errorf("reading archive %s: %w", x.src, err)
	}
	x.small.add(smallMember{hdr, b})
	return nil
}

// finish makes the hard links, now that the files they name are written,
// and then sets the directories' attributes, the last listed first, now
// that nothing more is written into them.
func (x *extraction) finish() {
	for _, hdr := range x.links {
		if err := x.u.hardlink(hdr); err != nil {
			x.u.fail(hdr.Name, err)
		} else {
			x.st.HardLinks++
		}
	}
	for i := len(x.dirs) - 1; i >= 0; i-- {
		x.u.setDirAttrs(x.dirs[i])
	}
}

// errSparse refuses a sparse member (GNU tar --sparse). archive/tar reads
// a sparse file's holes as zeros and does not say where they are, so its
// whole size would be written out: a few bytes of archive can claim a
// terabyte.
var errSparse = errors.New("refused: a sparse file (GNU tar --sparse); create the archive without --sparse")

// cleanMember makes an archive member's name relative and clean, refusing
// names that climb out of the target.
func cleanMember(name string) (string, error) {
	c := path.Clean("/" + name)
	if c == "/" {
		return ".", nil
	}
	c = strings.TrimPrefix(c, "/")
	if strings.HasPrefix(name, "/") || strings.Contains("/"+name+"/", "/../") {
		return "", errors.New("refused: member name is absolute or climbs out with '..'")
	}
	return c, nil
}

type unpacker struct {
	m      *Mover
	root   int
	mu     sync.Mutex
	failed []EntryError
	n      int64
	fatal  error
	// dirs caches open descriptors of directories made beneath root, so
	// that members need no path walk of their own. Bounded; closed at the
	// end.
	dirMu  sync.Mutex
	dirs   map[string]int
	cached map[int]bool // the descriptors in dirs
	umask  uint32
	// direct: the target was empty and the unpack is not Atomic: files
	// are written under their final names.
	direct bool
}

const maxCachedDirs = 4096

func (u *unpacker) closeDirs() {
	for _, fd := range u.dirs {
		unix.Close(fd)
	}
}

func (u *unpacker) fail(name string, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
		if u.fatal == nil {
			u.fatal = fmt.Errorf("no space left while unpacking %s: %w", printable(name), err)
		}
		return
	}
	u.n++
	if len(u.failed) < maxListedErrors {
		u.failed = append(u.failed, EntryError{Path: name, Err: err})
	}
}

func (u *unpacker) open(rel string, flags uint64) (int, error) {
	return unix.Openat2(u.root, rel, &unix.OpenHow{Flags: flags | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS})
}

// mkdirAll creates rel and its parents beneath the root, one component at a
// time, never through a symlink.
func (u *unpacker) mkdirAll(rel string) error {
	dir, err := unix.Dup(u.root)
	if err != nil {
		return err
	}
	for _, c := range strings.Split(rel, "/") {
		if err := unix.Mkdirat(dir, c, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			unix.Close(dir)
			return err
		}
		next, err := unix.Openat(dir, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(dir)
		if err != nil {
			return fmt.Errorf("%s: %w (a symlink or file is in the way)", c, err)
		}
		dir = next
	}
	return unix.Close(dir)
}

// parent opens the directory that will hold rel (creating it) and returns
// a descriptor of it (the caller closes it) with rel's last component.
func (u *unpacker) parent(rel string) (int, string, error) {
	d, base := path.Split(rel)
	d = strings.TrimSuffix(d, "/")
	if d == "" {
		return u.root, base, nil
	}
	u.dirMu.Lock()
	cached, ok := u.dirs[d]
	u.dirMu.Unlock()
	if ok {
		return cached, base, nil
	}
	if err := u.mkdirAll(d); err != nil {
		return -1, "", err
	}
	fd, err := u.open(d, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return -1, "", err
	}
	u.dirMu.Lock()
	defer u.dirMu.Unlock()
	if have, ok := u.dirs[d]; ok {
		unix.Close(fd)
		return have, base, nil
	}
	if len(u.dirs) < maxCachedDirs {
		u.dirs[d] = fd
		u.cached[fd] = true
		return fd, base, nil
	}
	return fd, base, nil // uncached: the caller's done() closes it
}

// done releases a descriptor parent returned.
func (u *unpacker) done(fd int) {
	u.dirMu.Lock()
	defer u.dirMu.Unlock()
	if fd != u.root && !u.cached[fd] {
		unix.Close(fd)
	}
}

// writeFile writes the member hdr, whose content is body (a small one, read
// ahead) or what r reads (a large one, streamed). Unless the unpack is
// direct, under a temporary name renamed into place once complete.
func (u *unpacker) writeFile(hdr *tar.Header, body []byte, r io.Reader) {
	dir, base, err := u.parent(hdr.Name)
	if err != nil {
		u.fail(hdr.Name, err)
		return
	}
	defer u.done(dir)
	tmp := base
	if !u.direct {
		if tmp = "." + base + tmpSuffix; len(tmp) > 255 {
			tmp = fmt.Sprintf(".rsa-tmp.%d", time.Now().UnixNano())
		}
	}
	const flags = unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC
	perm := uint32(hdr.Mode & 0o777)
	fd, err := unix.Openat(dir, tmp, flags, perm)
	if errors.Is(err, unix.EEXIST) { // left by an interrupted run
		unix.Unlinkat(dir, tmp, 0)
		fd, err = unix.Openat(dir, tmp, flags, perm)
	}
	if err != nil {
		u.fail(hdr.Name, err)
		return
	}
	var f *os.File
	if r == nil {
		// Straight to the descriptor: an *os.File costs a poller
		// registration per file, more than writing 4 KiB.
		_, err = pwriteAll(fd, body, 0)
	} else {
		f = os.NewFile(uintptr(fd), hdr.Name)
		_, err = io.Copy(f, r)
	}
	for k, v := range hdr.PAXRecords {
		if name, ok := strings.CutPrefix(k, "SCHILY.xattr."); ok && strings.HasPrefix(name, "user.") && err == nil {
			if xerr := unix.Fsetxattr(fd, name, []byte(v), 0); xerr != nil && !errors.Is(xerr, unix.EOPNOTSUPP) && u.m.Warn != nil {
				u.m.Warn(hdr.Name, "extended attribute "+name+" not set: "+xerr.Error())
			}
		}
	}
	if err == nil && (hdr.Mode&0o7000 != 0 || uint32(hdr.Mode)&u.umask != 0) {
		err = unix.Fchmod(fd, uint32(hdr.Mode&0o7777))
	}
	if err == nil {
		err = futimens(fd, []unix.Timespec{unix.NsecToTimespec(hdr.ModTime.UnixNano()), unix.NsecToTimespec(hdr.ModTime.UnixNano())})
	}
	var cerr error
	if f != nil {
		cerr = f.Close()
	} else {
		cerr = unix.Close(fd)
	}
	if err == nil {
		err = cerr
	}
	if err == nil && tmp != base {
		err = unix.Renameat(dir, tmp, dir, base)
	}
	if err != nil {
		unix.Unlinkat(dir, tmp, 0)
		u.fail(hdr.Name, err)
	}
}

// mkfifo makes the FIFO hdr names, in place of whatever has its name
// there; a failure is the member's.
func (u *unpacker) mkfifo(hdr *tar.Header) {
	name := hdr.Name
	if dir, base, err := u.parent(name); err == nil {
		unix.Unlinkat(dir, base, 0)
		if err := unix.Mknodat(dir, base, unix.S_IFIFO|uint32(hdr.Mode&0o7777), 0); err != nil {
			u.fail(name, err)
		}
		u.done(dir)
	} else {
		u.fail(name, err)
	}
}

func (u *unpacker) symlink(hdr *tar.Header) {
	dir, base, err := u.parent(hdr.Name)
	if err != nil {
		u.fail(hdr.Name, err)
		return
	}
	defer u.done(dir)
	unix.Unlinkat(dir, base, 0)
	if err := unix.Symlinkat(hdr.Linkname, dir, base); err != nil {
		u.fail(hdr.Name, err)
		return
	}
	ts := unix.NsecToTimespec(hdr.ModTime.UnixNano())
	unix.UtimesNanoAt(dir, base, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW)
}

func (u *unpacker) hardlink(hdr *tar.Header) error {
	target, err := cleanMember(hdr.Linkname)
	if err != nil {
		return err
	}
	src, err := u.open(target, unix.O_PATH|unix.O_NOFOLLOW)
	if err != nil {
		return fmt.Errorf("link target %s: %w", printable(target), err)
	}
	defer unix.Close(src)
	dir, base, err := u.parent(hdr.Name)
	if err != nil {
		return err
	}
	defer u.done(dir)
	unix.Unlinkat(dir, base, 0)
	return unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", src), dir, base, unix.AT_SYMLINK_FOLLOW)
}

func (u *unpacker) setDirAttrs(hdr *tar.Header) {
	var fd int
	var err error
	if hdr.Name == "." {
		fd, err = unix.Dup(u.root)
	} else {
		fd, err = u.open(hdr.Name, unix.O_RDONLY|unix.O_DIRECTORY)
	}
	if err != nil {
		u.fail(hdr.Name, err)
		return
	}
	defer unix.Close(fd)
	unix.Fchmod(fd, uint32(hdr.Mode&0o7777))
	ts := unix.NsecToTimespec(hdr.ModTime.UnixNano())
	futimens(fd, []unix.Timespec{ts, ts})
}

// UnpackAll extracts src into dst: the archive itself, or every *.tar file
// of the directory src, in name order (a built-in stage-in).
func (m *Mover) UnpackAll(ctx context.Context, src, dst string) (Stats, error) {
	info, err := os.Stat(src)
	if err != nil {
		return Stats{}, err
	}
	if !info.IsDir() {
		return m.Unpack(ctx, src, dst)
	}
	archives, err := filepath.Glob(filepath.Join(src, "*.tar"))
	if err != nil {
		return Stats{}, err
	}
	if len(archives) == 0 {
		return Stats{}, fmt.Errorf("no *.tar file in %s to unpack", src)
	}
	var total Stats
	for _, a := range archives {
		st, err := m.Unpack(ctx, a, dst)
		total.Files += st.Files
		total.Dirs += st.Dirs
		total.Links += st.Links
		total.HardLinks += st.HardLinks
		total.Bytes += st.Bytes
		if err != nil {
			return total, fmt.Errorf("%s: %w", a, err)
		}
	}
	return total, nil
}

// VerifyArchive re-reads the tar file at archive and checks every regular
// member against the file it was packed from under src (xxh3), and that
// every regular file of src is in it.
func VerifyArchive(ctx context.Context, src, archive string) error {
	f, err := os.Open(archive)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	defer f.Close()
	root, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	defer unix.Close(root)
	tr := tar.NewReader(f)
	var seen int64
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("verify: reading %s: %w", archive, err)
		}
		switch hdr.Typeflag {
		case tar.TypeLink:
			seen++
			continue
		case tar.TypeReg, tar.TypeRegA:
		default:
			continue
		}
		seen++
		h := xxh3.New()
		if _, err := io.CopyBuffer(h, tr, *bp); err != nil {
			return fmt.Errorf("verify: reading %s: %w", archive, err)
		}
		fd, err := unix.Openat2(root, hdr.Name, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS})
		if err != nil {
			return fmt.Errorf("verify: %s: %w", printable(hdr.Name), err)
		}
		g := xxh3.New()
		file := os.NewFile(uintptr(fd), hdr.Name)
		_, err = io.CopyBuffer(g, file, *bp)
		file.Close()
		if err != nil || g.Sum128() != h.Sum128() {
			return fmt.Errorf("verify: %s differs in the archive", printable(hdr.Name))
		}
	}
	files, _, err := Measure(src)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	if files != seen {
		return fmt.Errorf("verify: the archive holds %d files, %s has %d", seen, src, files)
	}
	return nil
}
