package e2e

// Tests of claims the README and docs make that no other test checked.

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// A stage-in that runs past limits.stage_timeout is stopped and counts as
// failed, and rsa run then refuses to run its command on partial input.
func TestStageTimeoutAndRunRefuses(t *testing.T) {
	t.Parallel()
	e := setup(t, `[limits]
stage_timeout = "1s"
`)
	in := e.mkdir("in")
	e.fill(in, 2, 10)
	slow := e.script("slow.sh", "sleep 60\n")
	marker := filepath.Join(e.mkdir("ctl"), "ran")
	start := time.Now()
	_, stderr, err := e.rsa(false, "run", "--in", in, "--stage-in", slow, "--", "touch", marker)
	if err == nil || !strings.Contains(stderr, "stage-in") {
		t.Fatalf("rsa run after a timed-out stage-in: %v %q", err, stderr)
	}
	if exists(marker) {
		t.Fatal("the command ran on partial input")
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("the stage-in was not stopped at its timeout (%s)", d)
	}
	if j := e.job(1); !strings.Contains(j.Error, "deadline") && !strings.Contains(j.Error, "stopped") {
		t.Fatalf("job error %q does not say the stage-in was stopped", j.Error)
	}
	e.rsa(false, "wait", "1")
	e.noLeaks()
}

// --out is checked like --in, and input and output must not overlap.
func TestOutputRefusalsAndOverlap(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	in := e.mkdir("in")
	others := filepath.Join(e.home, "others") // another user's, readable, not writable
	os.Mkdir(others, 0o755)
	os.Chown(others, 4242, 4242)
	for _, c := range []struct {
		args []string
		why  string
	}{
		{[]string{"--out", filepath.Join(e.home, "missing")}, "does not exist"},
		{[]string{"--out", others}, "it needs to read and write it"},
		{[]string{"--out", "/etc"}, "owned by uid 0"},
		{[]string{"--in", in, "--out", in}, "separate directories"},
		{[]string{"--in", in, "--out", e.mkdir("in/sub")}, "separate directories"},
		{[]string{"--in", e.home, "--out", in}, "separate directories"},
		{[]string{"--in", in, "--stage-out", "pack"}, "needs an output directory"},
		{[]string{"--out", in, "--stage-out", "unpack"}, "stage-out mode"},
	} {
		_, stderr, err := e.rsa(false, append([]string{"submit"}, c.args...)...)
		if err == nil || !strings.Contains(stderr, c.why) {
			t.Errorf("submit %q: %v %q; want a refusal saying %q", c.args, err, stderr, c.why)
		}
	}
	if out, _, _ := e.rsa(true, "status", "--all"); strings.Count(out, "\n") != 1 {
		t.Fatalf("refused submissions created jobs:\n%s", out)
	}
}

// rsa run returns with its command's status as soon as the command ends,
// while the stage-out still runs; rsa wait then waits for it.
func TestRunReturnsBeforeStageOut(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	out, ctl := e.mkdir("out"), e.mkdir("ctl")
	gate := filepath.Join(ctl, "go")
	so := e.script("so.sh", `while [ ! -e `+gate+` ]; do sleep 0.05; done
cp -a "$1/." "$2/"
`)
	job := e.script("job.sh", inRAM+`waitram "$1"; echo done > "$1/result"; exit 7
`)
	b := e.runBG("--out", out, "--stage-out", so, "--", job, out)
	if code := b.wait(t); code != 7 {
		t.Fatalf("rsa run exit %d, want 7: %s", code, b.errb.String())
	}
	if j := e.job(1); j.RSA != lifecycle.StagingOut {
		t.Fatalf("after rsa run returned the job is %s, want %s", j.RSA, lifecycle.StagingOut)
	}
	if exists(filepath.Join(out, "result")) {
		t.Fatal("the output was on disk before the stage-out ran")
	}
	e.writeFile(gate, nil, 0o644)
	// A stage-out program of the user's is not called verified.
	if stdout, stderr, err := e.rsa(false, "wait", "1"); err != nil || strings.Contains(stdout, "verified") || !strings.Contains(stdout, "staged out by") {
		t.Fatalf("wait: %v %s %s", err, stdout, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "result")); string(b) != "done\n" {
		t.Fatal("output not staged out")
	}
	e.noLeaks()
}

// Input files still open at the switch keep the RAMDISK on the input
// path (UNMOUNT_BUSY); the output then goes to disk, and all is released.
func TestUnmountBusy(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	in, out := e.mkdir("in"), e.mkdir("out")
	e.fill(in, 1, 10)
	ctl := e.mkdir("ctl")
	job := e.script("job.sh", inRAM+`ram "$1"
exec 3< "$1/f0000"
while [ ! -e `+ctl+`/go ]; do sleep 0.05; done
if ram "$2"; then echo "output in RAM while the input is busy" >&2; exit 10; fi
echo on-disk > "$2/result"
`)
	b := e.runBG("--in", in, "--out", out, "--delay", switchDelay, "--", job, in, out)
	testutil.WaitFor(t, "UNMOUNT_BUSY", step, poll, func() bool { j, ok := e.maybeJob(1); return ok && j.RSA == lifecycle.UnmountBusy })
	e.writeFile(filepath.Join(ctl, "go"), nil, 0o644)
	if code := b.wait(t); code != 0 {
		t.Fatalf("exit %d: %s", code, b.errb.String())
	}
	if _, stderr, err := e.rsa(false, "wait", "1"); err != nil {
		t.Fatalf("wait: %v %s", err, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "result")); string(b) != "on-disk\n" {
		t.Fatal("output missing")
	}
	e.logHas(1, "input still in use")
	e.noLeaks()
}

// rsa status --watch redraws until interrupted: after the first table a
// second comes (every 2 s; on a loaded box later, so the wait is a step).
func TestStatusWatch(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	if _, stderr, err := e.rsa(false, "submit", "--out", e.mkdir("out")); err != nil {
		t.Fatal(err, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), step)
	defer cancel()
	cmd := exec.CommandContext(ctx, rsaBin, "--config", e.cfg, "status", "--watch")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var seen strings.Builder
	tables := 0
	sc := bufio.NewScanner(stdout)
	for tables < 2 && sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		tables += strings.Count(sc.Text(), "RSA-STATE")
	}
	timedOut := ctx.Err() != nil
	cancel()
	cmd.Wait()
	if tables < 2 {
		t.Fatalf("status --watch drew %d tables before it ended (killed at the %v deadline: %v), want at least 2:\n%s", tables, step, timedOut, seen.String())
	}
	e.rsa(false, "cancel", "1")
	e.rsa(false, "wait", "1")
}
