package stage

import (
	"context"
	"sync"
	"time"
)

// limiter is a token bucket shared by all workers: it caps the bytes read
// from the source per second (--bwlimit), so staging can be kept from
// crowding a shared file system that has no QoS of its own.
type limiter struct {
	mu    sync.Mutex
	rate  float64 // bytes per second
	burst float64
	avail float64
	last  time.Time
	total int64 // bytes charged so far
}

func newLimiter(bytesPerSec int64) *limiter {
	r := float64(bytesPerSec)
	return &limiter{rate: r, burst: max(r/4, 1<<20), avail: 0, last: time.Now()}
}

// wait blocks until n bytes may be read.
func (l *limiter) wait(ctx context.Context, n int64) {
	l.mu.Lock()
	now := time.Now()
	l.avail = min(l.burst, l.avail+now.Sub(l.last).Seconds()*l.rate)
	l.last = now
	l.avail -= float64(n)
	l.total += n
	var d time.Duration
	if l.avail < 0 {
		d = time.Duration(-l.avail / l.rate * float64(time.Second))
	}
	l.mu.Unlock()
	if d > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
}
