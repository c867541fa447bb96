package board

import (
	"testing"

	"github.com/rsa-hpc/rsa/internal/job"
)

func TestBoard(t *testing.T) {
	var b Board
	if _, ok := b.Progress(1); ok || b.Wait(1) != (Wait{}) || b.Waiting() != 0 {
		t.Fatal("a new board knows something")
	}
	b.SetProgress(1, job.Progress{Files: 3})
	for _, c := range []struct {
		kind    WaitKind
		why     string
		changed bool
		waiting int
	}{
		{WaitCapacity, "no RAM", true, 1},
		{WaitCapacity, "no RAM", false, 1},
		{WaitStart, "later", true, 1},
		{"", "", true, 0},
		{"", "", false, 0},
	} {
		if got := b.SetWait(1, c.kind, c.why); got != c.changed {
			t.Errorf("SetWait(%q, %q) = %v, want %v", c.kind, c.why, got, c.changed)
		}
		if w := b.Wait(1); w.Why != c.why || (c.why != "" && w.Kind != c.kind) || b.Waiting() != c.waiting {
			t.Errorf("after SetWait(%q, %q): %+v, %d waiting", c.kind, c.why, w, b.Waiting())
		}
	}
	b.SetWait(1, WaitStart, "later")
	b.Forget(1)
	if _, ok := b.Progress(1); ok || b.Waiting() != 0 {
		t.Error("Forget left something")
	}
}
