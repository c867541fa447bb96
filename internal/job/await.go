package job

import (
	"context"
	"time"
)

// Await calls check now and after every change of the jobs (changed
// returns a channel closed at the next change) until check reports done
// or an error, or wait passes, which is not an error: the caller answers
// with what it last saw. It returns check's error, or ctx's.
func Await(ctx context.Context, wait time.Duration, changed func() <-chan struct{}, check func() (bool, error)) error {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		ch := changed()
		if ok, err := check(); ok || err != nil {
			return err
		}
		select {
		case <-ch:
		case <-deadline.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
