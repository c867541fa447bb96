package holders

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

func TestAwaitExit(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start, err := StartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	if how := AwaitExit(t.Context(), pid, start+1); how != "is gone" {
		t.Errorf("another process under the same pid: %q, want %q", how, "is gone")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if how := AwaitExit(ctx, pid, start); how != "" {
		t.Errorf("a process still running, the wait ended: %q, want \"\"", how)
	}
	// Reaped only after the wait: a zombie keeps its pid and start time,
	// and its pidfd is readable, so the wait sees it exit; reaped first,
	// it could be gone before the wait begins.
	cmd.Process.Kill()
	if how := AwaitExit(t.Context(), pid, start); how != "exited" {
		t.Errorf("a process that exits: %q, want %q", how, "exited")
	}
	cmd.Wait()
}
