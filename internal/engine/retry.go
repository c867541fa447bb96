package engine

import (
	"context"
	"errors"
	"time"
)

// WithRetry wraps e so that Construct and Destroy, both idempotent, are tried
// up to attempts times with a doubling pause, for transient failures such as
// a busy mount table. The last error is returned. It adds nothing to e's
// optional interfaces, which As finds through it (Unwrap).
func WithRetry(e Engine, attempts int, pause time.Duration) Engine {
	return &retrying{Engine: e, attempts: attempts, pause: pause}
}

type retrying struct {
	Engine
	attempts int
	pause    time.Duration
}

var (
	_ Engine    = (*retrying)(nil)
	_ Unwrapper = (*retrying)(nil)
)

func (r *retrying) Unwrap() Engine { return r.Engine }

func (r *retrying) try(ctx context.Context, fn func() error) error {
	var err error
	p := r.pause
	for i := 0; i < r.attempts; i++ {
		if err = fn(); err == nil {
			return nil
		}
		if debt := (*DebtError)(nil); errors.As(err, &debt) {
			return err // the nodes are down: waiting here helps no one
		}
		if i == r.attempts-1 {
			break
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(p):
		}
		p *= 2
	}
	return err
}

func (r *retrying) Construct(ctx context.Context, rd Ramdisk) error {
	return r.try(ctx, func() error { return r.Engine.Construct(ctx, rd) })
}

func (r *retrying) Destroy(ctx context.Context, rd Ramdisk) error {
	return r.try(ctx, func() error { return r.Engine.Destroy(ctx, rd) })
}
