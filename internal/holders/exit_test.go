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
	cmd.Process.Kill()
	go cmd.Wait()
	if how := AwaitExit(t.Context(), pid, start); how != "exited" {
		t.Errorf("a process that exits: %q, want %q", how, "exited")
	}
}
