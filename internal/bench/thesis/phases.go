package thesis

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// FilePerProcess is IOR's file-per-process layout (-F): Ranks files in
// Dir, Block bytes each, moved in Transfer-sized calls. Its phases run as
// IOR's do: every rank opens its file, then all write (or read), then all
// close, with a barrier between, so that the open phase is timed apart:
// the thesis' "File Open Delay" (Table 5.4) is that phase, and on a shared
// file system under contention it is where the time goes.
type FilePerProcess struct {
	Dir      string
	Ranks    int
	Block    int64
	Transfer int64
}

// PhaseTimes are the parts of one phase, each from the release of all
// ranks to the last one's end.
type PhaseTimes struct {
	Open  time.Duration // every rank's open (create, for a write)
	Move  time.Duration // every rank's writes and fsync, or reads
	Close time.Duration
}

// Total is the phase without its open: moving and closing.
func (p PhaseTimes) Total() time.Duration { return p.Move + p.Close }

// IORFile is rank r's file, numbered as IOR numbers its -F files.
func IORFile(r int) string { return fmt.Sprintf("t54.%08d", r) }

// Write runs the write phase: each rank creates its file, writes Block
// bytes and fsyncs it (IOR's -e), then closes it.
func (p FilePerProcess) Write(ctx context.Context) (PhaseTimes, error) {
	buf := make([]byte, min(p.transfer(), p.Block))
	for i := range buf {
		buf[i] = byte(i*7 + i>>8)
	}
	return p.run(ctx,
		func(r int) (*os.File, error) {
			return os.OpenFile(filepath.Join(p.Dir, IORFile(r)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		},
		func(f *os.File, _ []byte) error {
			for done := int64(0); done < p.Block; {
				if err := ctx.Err(); err != nil {
					return err
				}
				n := min(int64(len(buf)), p.Block-done)
				if _, err := f.WriteAt(buf[:n], done); err != nil {
					return err
				}
				done += n
			}
			return f.Sync()
		})
}

// Read runs the read phase on the files Write left in dir (Dir, or the
// same directory through another mount): each rank opens its file,
// reads it whole and checks its length, then closes it.
func (p FilePerProcess) Read(ctx context.Context, dir string) (PhaseTimes, error) {
	dir = cmp.Or(dir, p.Dir)
	return p.run(ctx,
		func(r int) (*os.File, error) { return os.Open(filepath.Join(dir, IORFile(r))) },
		func(f *os.File, buf []byte) error {
			var got int64
			for {
				if err := ctx.Err(); err != nil {
					return err
				}
				n, err := f.ReadAt(buf, got)
				got += int64(n)
				if err == io.EOF {
					break
				}
				if err != nil {
					return err
				}
			}
			if got != p.Block {
				return fmt.Errorf("%s: read %d bytes, want %d", f.Name(), got, p.Block)
			}
			return nil
		})
}

func (p FilePerProcess) transfer() int64 { return cmp.Or(p.Transfer, 1<<20) }

// run releases the ranks through open, move and close, a barrier after
// each, and times each part. A rank that fails goes on through the
// barriers without work, so that the others are not left waiting.
func (p FilePerProcess) run(ctx context.Context, open func(int) (*os.File, error), move func(*os.File, []byte) error) (PhaseTimes, error) {
	var t PhaseTimes
	if p.Ranks < 1 || p.Block < 1 {
		return t, fmt.Errorf("file per process: %d ranks of %d bytes: each must be at least 1", p.Ranks, p.Block)
	}
	release := [3]chan struct{}{make(chan struct{}), make(chan struct{}), make(chan struct{})}
	var done [3]sync.WaitGroup
	errs := make([]error, p.Ranks)
	for i := range done {
		done[i].Add(p.Ranks)
	}
	for r := range p.Ranks {
		go func() {
			var f *os.File
			<-release[0]
			f, errs[r] = open(r)
			done[0].Done()
			<-release[1]
			if errs[r] == nil {
				// A buffer a rank, as each IOR task has its own.
				errs[r] = move(f, make([]byte, min(p.transfer(), p.Block)))
			}
			done[1].Done()
			<-release[2]
			if f != nil {
				if err := f.Close(); err != nil && errs[r] == nil {
					errs[r] = err
				}
			}
			done[2].Done()
		}()
	}
	parts := [3]*time.Duration{&t.Open, &t.Move, &t.Close}
	for i := range release {
		start := time.Now()
		close(release[i])
		done[i].Wait()
		*parts[i] = time.Since(start)
	}
	failed := 0
	var first error
	for r, err := range errs {
		if err != nil {
			if first == nil {
				first = fmt.Errorf("rank %d: %w", r, err)
			}
			failed++
		}
	}
	if failed > 0 {
		return t, fmt.Errorf("%d of %d ranks failed, the first: %w", failed, p.Ranks, first)
	}
	return t, nil
}
