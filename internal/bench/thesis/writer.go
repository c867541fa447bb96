// Package thesis re-runs the experiments of the RSA thesis (Wickberg,
// 2011, ch. 5) on this machine: T52, its headline, through the real RSA
// lifecycle against a shared file system behind a 1 Gbit/s link; T51,
// T53, T54 and T55 (its other tables); and TLC, the lifecycle's timings
// beside its Appendix T.
package thesis

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Output is the thesis' test job's output phase (mpi-matrix, App. U):
// Ranks writers, released together, each write Size bytes in Block-sized
// writes, to a file of their own in Dir (file per process, Table 5.2) or
// to their own segment of one file (Shared, Table 5.3); each commits its
// data (fsync) and closes.
type Output struct {
	Dir    string
	Ranks  int
	Size   int64
	Block  int64
	Shared bool
	// First is the first rank's number: writers on several hosts write
	// ranks First..First+Ranks-1 each, into one directory (or one
	// shared file) together.
	First int
}

// RankFile is the name of rank r's file in file-per-process mode.
func RankFile(r int) string { return fmt.Sprintf("rank-%05d", r) }

// SharedFile is the one file of shared-file mode.
const SharedFile = "shared"

// Write runs the output phase and returns the time from the release of
// the writers to the last one's close: the thesis' "output time".
func (o Output) Write(ctx context.Context) (time.Duration, error) {
	if o.Ranks < 1 || o.Size < 1 || o.Block < 1 {
		return 0, fmt.Errorf("output: %d ranks of %d bytes in %d-byte writes: each must be at least 1", o.Ranks, o.Size, o.Block)
	}
	if o.First < 0 {
		return 0, fmt.Errorf("output: first rank %d: give 0 or more", o.First)
	}
	buf := make([]byte, min(o.Block, o.Size))
	for i := range buf {
		// Not zeros: nothing on the way may compress or skip them.
		buf[i] = byte(i*7 + i>>8)
	}
	start := make(chan struct{})
	errs := make([]error, o.Ranks)
	var wg sync.WaitGroup
	for r := range o.Ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[r] = o.writeRank(ctx, r, buf)
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	took := time.Since(t0)
	// One reason is enough: a full disk fails every rank alike.
	var first error
	failed := 0
	for _, err := range errs {
		if err != nil {
			first = cmp.Or(first, err)
			failed++
		}
	}
	if failed > 0 {
		return took, fmt.Errorf("%d of %d ranks failed, the first: %w", failed, o.Ranks, first)
	}
	return took, nil
}

func (o Output) writeRank(ctx context.Context, r int, buf []byte) error {
	r += o.First
	name, off, flags := RankFile(r), int64(0), os.O_WRONLY|os.O_CREATE|os.O_EXCL
	if o.Shared {
		name, off, flags = SharedFile, int64(r)*o.Size, os.O_WRONLY|os.O_CREATE
	}
	path := filepath.Join(o.Dir, name)
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return fmt.Errorf("rank %d: %w", r, err)
	}
	for done := int64(0); done < o.Size; {
		if err := ctx.Err(); err != nil {
			f.Close()
			return err
		}
		n := min(int64(len(buf)), o.Size-done)
		if _, err := f.WriteAt(buf[:n], off+done); err != nil {
			f.Close()
			return fmt.Errorf("rank %d: %w", r, err)
		}
		done += n
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("rank %d: fsync %s: %w", r, path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("rank %d: %w", r, err)
	}
	return nil
}

// Check verifies that dir holds what Write wrote: every rank's file (or
// the shared file, to the end of the last rank's segment) at its size. It
// returns the bytes found.
func (o Output) Check(dir string) (int64, error) {
	var total int64
	want := map[string]int64{}
	if o.Shared {
		want[SharedFile] = int64(o.First+o.Ranks) * o.Size
	} else {
		for r := range o.Ranks {
			want[RankFile(o.First+r)] = o.Size
		}
	}
	for name, size := range want {
		st, err := os.Lstat(filepath.Join(dir, name))
		if err != nil {
			return total, fmt.Errorf("output check: %w", err)
		}
		if !st.Mode().IsRegular() || st.Size() != size {
			return total, fmt.Errorf("output check: %s is %v of %d bytes, want a file of %d", name, st.Mode().Type(), st.Size(), size)
		}
		total += size
	}
	return total, nil
}
