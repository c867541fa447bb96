package sweep

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/rsa-hpc/rsa/internal/bench"
)

// Point is one direction of one (qd, bs) point on one device.
type Point struct {
	Device    string
	Direction Direction
	QD        int
	BlockSize int64

	Bytes   int64         // moved before the size was done or the cap passed
	Elapsed time.Duration // from the first request to the last one's end
	Capped  bool          // the runtime cap ended it before the whole size
	Limit   time.Duration // the cap

	// Fio is fio's rate for the same pass, in MiB/s; nil when fio was
	// not run.
	Fio *float64
	// FioThreads is fio's rate for the pass made the sweep's way (qd
	// threads of synchronous requests), in MiB/s: run only where Fio
	// disagrees, to say why; nil otherwise.
	FioThreads *float64

	// Skip says why the point was not measured; empty when it was.
	Skip string
}

// Rate is the point's rate in MiB/s: bytes over elapsed time.
func (p Point) Rate() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.Bytes) / (1 << 20) / p.Elapsed.Seconds()
}

// Run sweeps c's grid on each device: for every block size and queue
// depth, a write of the device and then a read of it, each followed by
// fio's run of the same when c.Fio is set. It returns the points measured
// so far also when it fails.
func Run(ctx context.Context, c Config, devs []Device) ([]Point, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	// One random pattern for every write: incompressible, so that nothing
	// under the loop device can make light of it, and made once, so
	// that making it is never timed.
	pattern, err := newAlignedBuffer(slices.Max(c.BlockSizes))
	if err != nil {
		return nil, err
	}
	defer pattern.free()
	rng := rand.NewChaCha8([32]byte{'s', 'w', 'e', 'e', 'p'})
	_, _ = rng.Read(pattern) // ChaCha8.Read never fails

	var points []Point
	for _, d := range devs {
		for _, bs := range c.BlockSizes {
			for _, qd := range c.QDs {
				for _, dir := range []Direction{Write, Read} {
					p := pass{path: d.Path, dir: dir, qd: qd, bs: bs, size: min(c.Size, d.Size), limit: c.Runtime, pattern: pattern}
					pt, err := measurePoint(ctx, d, p, c.Fio)
					if err != nil {
						return points, fmt.Errorf("sweep: %s %s qd %d bs %s: %w", d.Name, dir, qd, SizeLabel(bs), err)
					}
					points = append(points, pt)
					if c.OnPoint != nil {
						c.OnPoint(pt)
					}
				}
			}
		}
	}
	return points, nil
}

// measurePoint runs the pass, and fio's run of it when withFio is set,
// or says why the device cannot take it.
func measurePoint(ctx context.Context, d Device, p pass, withFio bool) (Point, error) {
	pt := Point{Device: d.Name, Direction: p.dir, QD: p.qd, BlockSize: p.bs, Limit: p.limit}
	if pt.Skip = skipReason(d, p); pt.Skip != "" {
		return pt, nil
	}
	t, err := p.run(ctx)
	if err != nil {
		return pt, err
	}
	pt.Bytes, pt.Elapsed, pt.Capped = t.bytes, t.elapsed, t.capped
	if !withFio {
		return pt, nil
	}
	r, err := runFio(ctx, p, fioArgs(p))
	if err != nil {
		return pt, err
	}
	rate := r.MiBPerSec()
	pt.Fio = &rate
	if args, ok := fioArgsThreads(p); ok && !bench.Agrees(pt.Rate(), rate) {
		r, err := runFio(ctx, p, args)
		if err != nil {
			return pt, err
		}
		rate := r.MiBPerSec()
		pt.FioThreads = &rate
	}
	return pt, nil
}

// skipReason says why the device cannot take the pass, or "" when it can.
func skipReason(d Device, p pass) string {
	switch lbs := int64(d.LogicalBlockSize); {
	case p.bs < lbs:
		return fmt.Sprintf("skipped: bs %s is below the device's %d-byte logical block, which O_DIRECT cannot go under", SizeLabel(p.bs), lbs)
	case lbs > 0 && p.bs%lbs != 0:
		return fmt.Sprintf("skipped: bs %s is not a multiple of the device's %d-byte logical block, as O_DIRECT needs", SizeLabel(p.bs), lbs)
	case p.bs > p.size:
		return fmt.Sprintf("skipped: bs %s is larger than the %s swept", SizeLabel(p.bs), SizeLabel(p.size))
	}
	return ""
}
