package mptio

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// checkSegments is -C: it reads back every segment the last test worked
// on and checks that each record carries the stamps of its place (see
// record.go). It runs outside the timed part of the test, in parallel, with
// the test's O_DIRECT choice so that it does not fill a cache -I avoids.
func checkSegments(ctx context.Context, p *Plan, rotations int) error {
	c := &p.Config
	var segs []Segment
	seen := map[Segment]bool{}
	for rank := range c.Procs {
		for thread := range c.Threads {
			// Overlapping segments (-O) are checked once.
			if s := p.Segment(rank, thread, rotations); !seen[s] {
				seen[s] = true
				segs = append(segs, s)
			}
		}
	}
	want := make([]byte, c.RecordSize)
	fill(want, c.Seed)

	errs := make([]error, len(segs))
	var wg sync.WaitGroup
	for i, s := range segs {
		wg.Go(func() { errs[i] = checkSegment(ctx, s, c.RecordSize, c.Direct, want) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// checkSegment checks the records of one segment, stopping at the first
// that is wrong.
func checkSegment(ctx context.Context, s Segment, recsz int64, direct bool, want []byte) (err error) {
	buf, err := newAlignedBuffer(recsz)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, buf.free()) }()

	flags := unix.O_RDONLY | unix.O_CLOEXEC
	if direct {
		flags |= unix.O_DIRECT
	}
	fd, err := unix.Open(s.Path, flags, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", s.Path, err)
	}
	defer unix.Close(fd)
	f := &recordFile{fd: fd, path: s.Path, rec: buf.rec, direct: direct}
	key := fileKey(s.Path)
	if err := f.seek(s.Offset); err != nil {
		return err
	}
	for i := range s.Records {
		if err := ctx.Err(); err != nil {
			return err
		}
		off := s.Offset + i*recsz
		if err := f.read(off); err != nil {
			return err
		}
		if err := checkRecord(buf.rec, want, off, key); err != nil {
			return fmt.Errorf("%s: %w", s.Path, err)
		}
	}
	return nil
}
