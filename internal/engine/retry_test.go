package engine

import (
	"context"
	"errors"
	"testing"
	"time"
)

type flaky struct {
	Engine
	fails, calls int
}

func (f *flaky) Construct(context.Context, Ramdisk) error {
	f.calls++
	if f.calls <= f.fails {
		return errors.New("transient")
	}
	return nil
}

func TestWithRetry(t *testing.T) {
	f := &flaky{fails: 2}
	if err := WithRetry(f, 3, time.Millisecond).Construct(context.Background(), Ramdisk{}); err != nil || f.calls != 3 {
		t.Fatalf("err %v after %d calls", err, f.calls)
	}
	f = &flaky{fails: 5}
	if err := WithRetry(f, 3, time.Millisecond).Construct(context.Background(), Ramdisk{}); err == nil || f.calls != 3 {
		t.Fatalf("err %v after %d calls; want failure after 3", err, f.calls)
	}
}
