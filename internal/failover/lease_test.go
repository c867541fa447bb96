package failover

import (
	"context"
	"testing"
	"time"
)

// TestLease: at most one holder at a time; the standby takes the lease
// the moment the holder gives it up, and reads what the holder announced.
func TestLease(t *testing.T) {
	dir := t.TempDir()
	if _, err := Active(dir); err == nil {
		t.Fatal("an announcement read before any holder")
	}
	first, ok, err := TryAcquire(dir)
	if err != nil || !ok {
		t.Fatalf("first: %v %v", ok, err)
	}
	if _, ok, err := TryAcquire(dir); err != nil || ok {
		t.Fatalf("a second holder while the first holds: %v %v", ok, err)
	}
	since := time.Now().Round(0)
	if err := first.Announce(Info{Host: "ctl1", Addr: "10.0.0.1:7711", PID: 42, Epoch: 3, Since: since}); err != nil {
		t.Fatal(err)
	}
	if err := first.Check(); err != nil {
		t.Fatalf("check of a held lease: %v", err)
	}
	if i, err := Active(dir); err != nil || i.Host != "ctl1" || i.Addr != "10.0.0.1:7711" || i.Epoch != 3 || !i.Since.Equal(since) {
		t.Fatalf("announcement: %+v %v", i, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	waited := make(chan struct{})
	got := make(chan *Lease, 1)
	go func() {
		l, err := Acquire(ctx, dir, 10*time.Millisecond, func() { close(waited) })
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	<-waited
	select {
	case <-got:
		t.Fatal("the standby took a held lease")
	case <-time.After(100 * time.Millisecond):
	}
	first.Release()
	second := <-got
	if second == nil {
		t.Fatal("the standby did not take the freed lease")
	}
	defer second.Release()
	if _, ok, _ := TryAcquire(dir); ok {
		t.Fatal("a third holder beside the second")
	}

	// A standby told to stop stops waiting.
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err := Acquire(cctx, dir, time.Millisecond, nil); err == nil {
		t.Fatal("Acquire went on after its context ended")
	}
}
