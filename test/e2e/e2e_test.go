package e2e

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// inRAM is shell that fails unless "$1" shows an RSA RAMDISK. Jobs that
// check their input is in RAM use switchDelay.
const inRAM = `ram() { findmnt -n -o FSTYPE,SOURCE --mountpoint "$1" | grep -q '^tmpfs  *rsa-'; }
image() { findmnt -n -o FSTYPE,OPTIONS --mountpoint "$1" | grep -q '^erofs  *ro,nosuid,nodev'; }
waitram() { n=0; until ram "$1"; do n=$((n+1)); [ $n -lt 400 ] || { echo "$1 never in RAM" >&2; exit 11; }; sleep 0.05; done; }
`

// switchDelay is the --delay of jobs that read their input in RAM: they do
// so first thing (a few small files, hashed or held open), and the switch
// to output must come after that, also when a loaded box starts the job
// late. Nothing waits on it otherwise: the jobs then wait for their output
// RAMDISK (waitram) and go on at once.
const switchDelay = "2s"

// A job's whole life through rsa run, its input as an image (the
// default: mounted read-only) and as files (a read-write tree in RAM).
func TestRunLifecycle(t *testing.T) {
	t.Parallel()
	const readOnly = `
! touch "$1/new" 2>/dev/null || { echo "input image writable" >&2; exit 13; }`
	for _, c := range []struct{ name, mode, config, check string }{
		{"image", "image", `input_mode = "image"`, `image "$1" || { echo "input not an image" >&2; exit 10; }` + readOnly},
		// The path of kernels before 6.12, which have no file-backed erofs.
		{"image by loop", "image", "input_mode = \"image\"\nimage_mount = \"loop\"", `image "$1" && findmnt -n -o SOURCE --mountpoint "$1" | grep -q '^/dev/loop' || { echo "input image not on a loop device" >&2; exit 10; }` + readOnly},
		{"files", "files", "", `ram "$1" || { echo "input not in RAM" >&2; exit 10; }`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runLifecycle(t, c.mode, c.config, c.check)
		})
	}
}

func runLifecycle(t *testing.T, mode, config, check string) {
	e := setup(t, config)
	in, out := e.mkdir("sim/input"), e.mkdir("sim/results")
	want := e.fill(in, 64, 4096)
	e.writeFile(filepath.Join(e.mkdir("sim/input/sub"), "nested"), []byte("nested"), 0o640)
	want["sub/nested"] = []byte("nested")
	os.Chmod(in, 0o751)
	sums := filepath.Join(e.mkdir("ctl"), "sums")
	job := e.script("job.sh", inRAM+`
`+check+`
[ "$(stat -c %a "$1")" = 751 ] || { echo "RAMDISK root does not keep the input's mode" >&2; exit 12; }
(cd "$1" && find . -type f -printf '%P\n' | sort | xargs sha256sum) > `+sums+`
waitram "$2"
for i in 1 2 3; do echo "result $i" > "$2/r$i"; done
mkdir "$2/deep"; echo deep > "$2/deep/x"
exit 3
`)
	args := []string{"--in", in, "--out", out, "--delay", switchDelay}
	if mode != "image" {
		args = append(args, "--input", mode) // the config's default is image
	}
	b := e.runBG(append(args, "--", job, in, out)...)
	if code := b.wait(t); code != 3 {
		t.Fatalf("rsa run exit %d, want the command's 3\n%s", code, b.errb.String())
	}
	stdout, stderr, err := e.rsa(false, "wait", "1")
	if err != nil || !strings.Contains(stdout, "verified") {
		t.Fatalf("rsa wait: %v\n%s%s", err, stdout, stderr)
	}
	for i := 1; i <= 3; i++ {
		if b, _ := os.ReadFile(filepath.Join(out, "r"+strconv.Itoa(i))); string(b) != "result "+strconv.Itoa(i)+"\n" {
			t.Fatalf("r%d = %q", i, b)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(out, "deep", "x")); string(b) != "deep\n" {
		t.Fatal("nested output missing")
	}
	sameFiles(t, in, want) // the input on disk is untouched
	// What the job read in RAM is the input, file for file.
	got, _ := os.ReadFile(sums)
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	sort.Strings(names)
	var wantSums []string
	for _, name := range names {
		wantSums = append(wantSums, fmt.Sprintf("%x  %s", sha256.Sum256(want[name]), name))
	}
	if strings.TrimSpace(string(got)) != strings.Join(wantSums, "\n") {
		t.Fatalf("the input in RAM differs from the input on disk:\n%s\nwant:\n%s", got, strings.Join(wantSums, "\n"))
	}
	e.noLeaks()
	var states []string
	for _, s := range []lifecycle.RSAState{lifecycle.StagingIn, lifecycle.Ready, lifecycle.InUseIn, lifecycle.Unmounting,
		lifecycle.InUseOut, lifecycle.StagingOut, lifecycle.DoneStagingOut, lifecycle.Released} {
		states = append(states, "-> "+string(s))
	}
	e.logHas(1, states...)
}

func TestBadInputRefused(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	real := e.mkdir("real")
	link := filepath.Join(e.home, "link")
	os.Symlink(real, link)
	os.Lchown(link, int(e.user.UID), int(e.user.GID))
	others := filepath.Join(e.home, "others") // another user's, not readable by this one
	os.Mkdir(others, 0o700)
	os.Chown(others, 4242, 4242)
	rootOwned := filepath.Join(e.home, "rootowned")
	os.Mkdir(rootOwned, 0o777)
	file := filepath.Join(e.home, "file")
	e.writeFile(file, []byte("x"), 0o644)
	marker := filepath.Join(e.home, "ran")
	for _, c := range []struct{ in, why string }{
		{filepath.Join(e.home, "missing"), "does not exist"},
		{link, "symbolic link"},
		{filepath.Join(link, "."), "symbolic link"},
		{others, "may not be used by the job's user: it needs to read it"},
		{rootOwned, "owned by uid 0"},
		{"/etc", "owned by uid 0"},
		{file, "not a directory"},
		{e.root, "overlaps RSA"},
	} {
		_, stderr, err := e.rsa(false, "run", "--in", c.in, "--", "touch", marker)
		if err == nil || !strings.Contains(stderr, c.why) || !strings.Contains(stderr, "input directory") {
			t.Errorf("--in %s: err %v, stderr %q; want a refusal saying %q", c.in, err, stderr, c.why)
		}
		if exists(marker) {
			t.Fatalf("--in %s: the command ran", c.in)
		}
	}
	_, stderr, err := e.rsa(false, "run", "--in", real, "--stage-in", filepath.Join(e.home, "file"), "--", "true")
	if err == nil || !strings.Contains(stderr, "not an executable") {
		t.Errorf("non-executable stage-in: %v %q", err, stderr)
	}
	_, stderr, err = e.rsa(false, "run", "--", "true")
	if err == nil || !strings.Contains(stderr, "nothing to accelerate") {
		t.Errorf("no directories: %v %q", err, stderr)
	}
	out, _, _ := e.rsa(true, "status", "--all")
	if strings.Count(out, "\n") != 1 {
		t.Fatalf("refused submissions created jobs:\n%s", out)
	}
	if _, ok, err := mount.MountedAt("/etc"); err != nil || ok {
		t.Fatalf("mount at /etc: %v %v", ok, err)
	}
	e.noLeaks()
}

// logFile is the stage log of job id (its name carries the job's creation
// time too).
func logFile(t *testing.T, e *env, id int) string {
	t.Helper()
	ms, _ := filepath.Glob(filepath.Join(e.dir, "state", "logs", itoa(id)+"-*.log"))
	if len(ms) != 1 {
		t.Fatalf("log files of job %d: %v", id, ms)
	}
	return ms[0]
}

// pidGone reports whether the pid written to file no longer runs.
func pidGone(t *testing.T, file string) bool {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err != nil || strings.Contains(string(st), ") Z ")
}

// TestKillDaemon kills the daemon with SIGKILL in each phase and restarts
// it: the job completes, its output arrives intact, nothing leaks.
func TestKillDaemon(t *testing.T) {
	t.Parallel()
	for _, phase := range []string{"stage-in", "running", "stage-out", "built-in stage-out"} {
		t.Run(phase, func(t *testing.T) {
			t.Parallel()
			e := setup(t, "")
			in, out, ctl := e.mkdir("in"), e.mkdir("out"), e.mkdir("ctl")
			e.fill(in, 16, 8192)
			started, gate, pidf := filepath.Join(ctl, "started"), filepath.Join(ctl, "go"), filepath.Join(ctl, "pid")
			orphan, sums := filepath.Join(ctl, "orphan"), filepath.Join(ctl, "sums")
			pause := `echo $$ > ` + pidf + `; touch ` + started + `; while [ ! -e ` + gate + ` ]; do sleep 0.05; done
`
			// The job checks its input is in RAM.
			args := []string{"--in", in, "--out", out, "--delay", switchDelay}
			files, size := 20, 5000
			if phase == "built-in stage-out" {
				files, size = 600, 256<<10 // 150M: a copy long enough to be killed in
			}
			// The job hashes the input it reads in RAM.
			jobBody := inRAM + `ram "$1"; (cd "$1" && sha256sum f*) > ` + sums + `; waitram "$2"
for i in $(seq 1 ` + itoa(files) + `); do head -c ` + itoa(size) + ` /dev/urandom > "$2/out$i"; done
`
			switch phase {
			case "stage-in":
				// A grandchild that leaves the stage's session: only the
				// restarted daemon, killing its predecessor's staging
				// cgroups, ends it.
				args = append(args, "--stage-in", e.script("in.sh", `cp -a "$2/." "$1/"
[ -e `+orphan+` ] || { setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $! > `+orphan+`; }
`+pause))
			case "running":
				jobBody += pause
			case "stage-out":
				// Paused before it copies: the output is only in RAM when
				// the daemon dies.
				args = append(args, "--stage-out", e.script("out.sh", pause+`cp -a "$1/." "$2/"
`))
			}
			// The job keeps a copy of its output on disk outside RSA, to
			// compare with what stage-out delivers.
			ref := e.mkdir("ref")
			jobBody += `cp -a "$2/." ` + ref + `/
`
			b := e.runBG(append(args, "--", e.script("job.sh", jobBody), in, out)...)
			// Before its command ends, rsa run waits out the daemon's
			// death: should it end instead, say what it said.
			wait := func(t *testing.T, what string, within time.Duration, cond func() bool) {
				t.Helper()
				testutil.WaitFor(t, what, within, poll, cond)
			}
			if phase == "stage-in" || phase == "running" {
				wait = b.waitFor
			}
			if phase == "built-in stage-out" {
				testutil.WaitFor(t, "the built-in stage-out to copy", step, poll, func() bool {
					j, ok := e.maybeJob(1)
					return ok && j.RSA == lifecycle.StagingOut && j.Progress != nil && j.Progress.Bytes > 0
				})
			} else {
				wait(t, phase+" to pause", step, func() bool { return exists(started) })
			}
			e.kill(syscall.SIGKILL)
			if phase == "stage-in" || phase == "stage-out" {
				wait(t, "the staging process to die with the daemon", step, func() bool { return pidGone(t, pidf) })
			}
			os.Remove(started)
			e.start()
			if phase == "stage-in" || phase == "stage-out" {
				// The interrupted phase runs again from its start.
				wait(t, phase+" to be resumed", step, func() bool { return exists(started) })
			}
			if phase == "stage-in" {
				testutil.WaitFor(t, "the previous daemon's staging grandchild to be killed", step, poll, func() bool { return pidGone(t, orphan) })
			}
			if phase == "built-in stage-out" && !strings.Contains(e.daemonLog(), "rsa=STAGING_OUT") {
				t.Fatalf("the daemon did not die during the stage-out (nothing to resume):\n%s", e.daemonLog())
			}
			e.writeFile(gate, nil, 0o644)
			if code := b.wait(t); code != 0 {
				t.Fatalf("rsa run exit %d\n%s", code, b.errb.String())
			}
			if stdout, stderr, err := e.rsa(false, "wait", "1"); err != nil {
				t.Fatalf("rsa wait: %v %s %s", err, stdout, stderr)
			}
			// What the job read in RAM is the input on disk.
			onDisk, err := exec.Command("sh", "-c", `cd "$1" && sha256sum f*`, "sh", in).Output()
			if got, _ := os.ReadFile(sums); err != nil || len(got) == 0 || string(got) != string(onDisk) {
				t.Fatalf("the job read in RAM:\n%s\nthe input on disk (%v):\n%s", got, err, onDisk)
			}
			refs, _ := os.ReadDir(ref)
			if len(refs) != files {
				t.Fatalf("reference has %d files", len(refs))
			}
			for _, r := range refs {
				a, _ := os.ReadFile(filepath.Join(ref, r.Name()))
				b, err := os.ReadFile(filepath.Join(out, r.Name()))
				if err != nil || string(a) != string(b) {
					t.Fatalf("output %s lost or changed (%v)", r.Name(), err)
				}
			}
			e.noLeaks()
		})
	}
}

func TestStageOutFailureKeepsOutput(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	out := e.mkdir("out")
	allow := filepath.Join(e.mkdir("ctl"), "allow")
	so := e.script("so.sh", `[ -e `+allow+` ] || { echo "archive server unreachable" >&2; exit 4; }
cp -a "$1/." "$2/"
`)
	job := e.script("job.sh", inRAM+`waitram "$1"; echo precious > "$1/result"
`)
	for id := 1; id <= 2; id++ {
		// Each asks for part of the node: job 1 keeps its share while its
		// output waits in RAM.
		b := e.runBG("--out", out, "--stage-out", so, "--capacity", "64M", "--", job, out)
		if code := b.wait(t); code != 0 {
			t.Fatalf("exit %d: %s", code, b.errb.String())
		}
		_, stderr, err := e.rsa(false, "wait", itoa(id))
		if err == nil || !strings.Contains(stderr, "archive server unreachable") || !strings.Contains(stderr, "rsa retry") {
			t.Fatalf("wait should report the failure: %v %q", err, stderr)
		}
		j := e.job(id)
		if j.RSA != lifecycle.StageOutFailed {
			t.Fatalf("job %d is %s", id, j.RSA)
		}
		if b, err := os.ReadFile(filepath.Join(e.root, itoa(id), "ram", "result")); err != nil || string(b) != "precious\n" {
			t.Fatalf("output not kept in RAM: %v", err)
		}
	}
	// The owner may retry: the archive still unreachable, the stage-out
	// fails again and the output stays in RAM.
	if _, stderr, err := e.rsa(false, "retry", "2"); err != nil {
		t.Fatalf("the owner's retry: %v %s", err, stderr)
	}
	if _, stderr, err := e.rsa(false, "wait", "2"); err == nil || !strings.Contains(stderr, "archive server unreachable") {
		t.Fatalf("wait after the owner's retry should report the failure again: %v %q", err, stderr)
	}
	status, _, _ := e.rsa(false, "status")
	if !strings.Contains(status, "STAGE_OUT_FAILED") || !strings.Contains(status, "archive server unreachable") {
		t.Fatalf("status does not show the failure:\n%s", status)
	}
	// The output stays in RAM across a restart of the daemon.
	e.kill(syscall.SIGTERM)
	e.start()
	for id := 1; id <= 2; id++ {
		if b, err := os.ReadFile(filepath.Join(e.root, itoa(id), "ram", "result")); err != nil || string(b) != "precious\n" || e.job(id).RSA != lifecycle.StageOutFailed {
			t.Fatalf("job %d's output not kept in RAM across a restart: %v", id, err)
		}
	}
	// Job 1: fixed, and retried by its owner to another directory of
	// theirs (as when the first one's quota is full); not to one they do
	// not own.
	e.writeFile(allow, nil, 0o644)
	roots := filepath.Join(e.home, "roots")
	if err := os.Mkdir(roots, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := e.rsa(false, "retry", "--to", roots, "1"); err == nil || !strings.Contains(stderr, "owned by") {
		t.Fatalf("the owner retried to a directory of root's: %v %q", err, stderr)
	}
	if e.job(1).RSA != lifecycle.StageOutFailed || e.job(1).Spec.Output != out {
		t.Fatalf("a refused retry changed job 1: %s to %s", e.job(1).RSA, e.job(1).Spec.Output)
	}
	elsewhere := e.mkdir("elsewhere")
	if _, stderr, err := e.rsa(false, "retry", "--to", elsewhere, "1"); err != nil {
		t.Fatalf("the owner's retry to %s: %v %s", elsewhere, err, stderr)
	}
	if _, stderr, err := e.rsa(false, "wait", "1"); err != nil {
		t.Fatalf("wait after retry: %v %s", err, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(elsewhere, "result")); string(b) != "precious\n" {
		t.Fatal("output not staged to the retry's directory")
	}
	if l, stderr, err := e.rsa(false, "log", "1"); err != nil || !strings.Contains(l, "retried by "+e.user.Name+" to \""+elsewhere) {
		t.Errorf("job 1's log does not say who retried it where: %v %s\n%s", err, stderr, l)
	}
	// Job 2: its owner drops output that only RAM holds, but only when
	// they confirm it (no terminal here: --yes).
	os.Remove(allow)
	if _, stderr, err := e.rsa(false, "discard", "2"); err == nil || !strings.Contains(stderr, "--yes") {
		t.Fatalf("the owner discarded without confirming: %v %q", err, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(e.root, "2", "ram", "result")); err != nil || string(b) != "precious\n" || e.job(2).RSA != lifecycle.StageOutFailed {
		t.Fatalf("output of job 2 not kept in RAM after an unconfirmed discard: %v", err)
	}
	if _, stderr, err := e.rsa(false, "discard", "--yes", "2"); err != nil {
		t.Fatalf("discard: %v %s", err, stderr)
	}
	_, stderr, err := e.rsa(false, "wait", "2")
	if err == nil || !strings.Contains(stderr, "discarded") {
		t.Fatalf("wait after discard: %v %q", err, stderr)
	}
	e.noLeaks()
}

func TestGCAtStart(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	e.kill(syscall.SIGTERM)
	stray := filepath.Join(e.root, "999", "ram")
	os.MkdirAll(stray, 0o700)
	if err := unix.Mount("rsa-999", stray, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	target := e.mkdir("victim")
	if err := mount.Bind("input directory", stray, target, e.user.UID); err != nil {
		t.Fatal(err)
	}
	e.start()
	e.noLeaks()
	if !strings.Contains(e.daemonLog(), "gc removed") {
		t.Fatal("gc not logged")
	}
	if out, _, err := e.rsa(true, "gc"); err != nil || !strings.Contains(out, "nothing to remove") {
		t.Fatalf("rsa gc: %v %s", err, out)
	}
}

// TestClientKilled: SIGKILL of `rsa run` ends its command and its job; the
// output written so far is staged out.
func TestClientKilled(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	out := e.mkdir("out")
	ready := filepath.Join(e.mkdir("ctl"), "ready")
	job := e.script("job.sh", inRAM+`waitram "$1"; echo partial > "$1/checkpoint"; touch `+ready+`; exec sleep 300
`)
	b := e.runBG("--out", out, "--", job, out)
	testutil.WaitFor(t, "the checkpoint", step, poll, func() bool { return exists(ready) })
	b.cmd.Process.Kill()
	b.wait(t)
	if _, stderr, err := e.rsa(false, "wait", "1"); err != nil {
		t.Fatalf("wait: %v %s", err, stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(out, "checkpoint")); string(got) != "partial\n" {
		t.Fatal("checkpoint not staged out")
	}
	e.noLeaks()
}

// runFine runs rsa run with args as the user, which must exit 0, waits
// for job 1's stage-out, and checks that out/result says "fine".
func (e *env) runFine(t *testing.T, out string, args ...string) {
	t.Helper()
	b := e.runBG(args...)
	if code := b.wait(t); code != 0 {
		t.Fatalf("exit %d: %s", code, b.errb.String())
	}
	if _, stderr, err := e.rsa(false, "wait", "1"); err != nil {
		t.Fatalf("wait: %v %s", err, stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(out, "result")); string(got) != "fine\n" {
		t.Fatal("output missing")
	}
}

// TestStartBeforeStageIn: with --no-wait the command starts while the input
// is still staging; it reads from disk and the RAM is rebuilt for its
// output (§3.2.1, App. K).
func TestStartBeforeStageIn(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	in, out := e.mkdir("in"), e.mkdir("out")
	want := e.fill(in, 4, 100)
	staging := filepath.Join(e.mkdir("ctl"), "staging")
	slow := e.script("slow.sh", `cp -a "$2/." "$1/"; touch `+staging+`; sleep 300
`)
	job := e.script("job.sh", inRAM+`! ram "$1" || { echo "input unexpectedly in RAM" >&2; exit 10; }
cat "$1"/f* > /dev/null
waitram "$2"; echo fine > "$2/result"
`)
	if _, stderr, err := e.rsa(false, "submit", "--in", in, "--stage-in", slow, "--out", out); err != nil {
		t.Fatalf("submit: %v %s", err, stderr)
	}
	testutil.WaitFor(t, "stage-in to run", step, poll, func() bool { return exists(staging) })
	e.runFine(t, out, "--job", "1", "--no-wait", "--", job, in, out)
	sameFiles(t, in, want)
	e.logHas(1, "job started before stage-in ended")
	e.noLeaks()
}

func TestIneligibleRunsFromDisk(t *testing.T) {
	t.Parallel()
	e := setup(t, `[limits]
max_job_capacity = "1M"
`)
	in := e.mkdir("in")
	e.fill(in, 2, 1<<20)
	// Not "! ram": set -e ignores a command that starts with "!".
	job := e.script("job.sh", inRAM+`if ram "$1"; then echo "input unexpectedly in RAM" >&2; exit 10; fi
cat "$1"/f* > /dev/null
`)
	// Sized by its input (no capacity given, no scheduler), which is
	// more than one job may get.
	b := e.runBG("--in", in, "--", job, in)
	if code := b.wait(t); code != 0 {
		t.Fatalf("exit %d: %s", code, b.errb.String())
	}
	if !strings.Contains(b.errb.String(), "runs without RSA") || !strings.Contains(b.errb.String(), "the input's 2.0M is more than one job may get (1.0M, limits.max_job_capacity)") ||
		!strings.Contains(b.errb.String(), "it ran on disk, there is nothing to stage out") {
		t.Fatalf("stderr: %s", b.errb.String())
	}
	e.noLeaks()
}

func TestCapacityWait(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	in := e.mkdir("in")
	e.fill(in, 2, 10)
	for range 2 {
		if _, stderr, err := e.rsa(false, "submit", "--in", in, "--capacity", "300M"); err != nil {
			t.Fatalf("submit: %v %s", err, stderr)
		}
	}
	testutil.WaitFor(t, "job 1 ready", step, poll, func() bool { return e.job(1).RSA == lifecycle.Ready })
	testutil.WaitFor(t, "job 2 waiting", step, poll, func() bool { return strings.Contains(e.job(2).Waiting, "waiting for 300M") })
	if j := e.job(2); j.RSA != lifecycle.Initial {
		t.Fatalf("job 2 is %s", j.RSA)
	}
	if _, stderr, err := e.rsa(false, "cancel", "1"); err != nil {
		t.Fatalf("cancel: %v %s", err, stderr)
	}
	testutil.WaitFor(t, "job 2 ready after job 1 released", step, poll, func() bool { return e.job(2).RSA == lifecycle.Ready })
	nodes, _, _ := e.rsa(false, "nodes")
	if !strings.Contains(nodes, "300M") {
		t.Fatalf("nodes:\n%s", nodes)
	}
	e.rsa(false, "cancel", "2")
	if _, _, err := e.rsa(false, "wait", "2"); err != nil {
		t.Fatal(err)
	}
	e.noLeaks()
}

func TestAuthorisationAndPermissions(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	in := e.mkdir("in")
	e.fill(in, 2, 10)
	os.Chmod(in, 0o700) // the RAMDISK takes the input's mode: private here
	if _, stderr, err := e.rsa(false, "submit", "--in", in, "--capacity", "16M"); err != nil {
		t.Fatalf("submit: %v %s", err, stderr)
	}
	testutil.WaitFor(t, "job ready", step, poll, func() bool { return e.job(1).RSA == lifecycle.Ready })
	nobody := func(args ...string) (string, error) {
		cmd := e.userCmd(rsaBin, append([]string{"--config", e.cfg}, args...)...)
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 65534, Gid: 65534}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, verb := range []string{"cancel", "log", "retry", "discard"} {
		out, err := nobody(verb, "1")
		if err == nil || (!strings.Contains(out, "belongs to "+e.user.Name) && !strings.Contains(out, "only root")) {
			t.Errorf("nobody %s 1: %v %q", verb, err, out)
		}
	}
	if out, err := nobody("status"); err != nil || !strings.Contains(out, e.user.Name) {
		t.Errorf("status is for everyone: %v %q", err, out)
	}
	if out, err := nobody("gc"); err == nil || !strings.Contains(out, "only root") {
		t.Errorf("nobody gc: %v %q", err, out)
	}
	if _, stderr, err := e.rsa(true, "run", "--in", in, "--", "true"); err == nil || !strings.Contains(stderr, "normal user") {
		t.Errorf("root job: %v %q", err, stderr)
	}
	for path, want := range map[string]os.FileMode{
		filepath.Join(e.dir, "state"):           0o700,
		filepath.Join(e.dir, "run"):             0o755,
		e.root:                                  0o711, // anyone passes, no one lists
		filepath.Join(e.root, "1"):              0o710, // the gate: root, and the user by an ACL (the group bits show its mask)
		filepath.Join(e.root, "1", "ram"):       0o700, // the RAMDISK: as private as the input
		filepath.Join(e.dir, "run", "rsa.sock"): 0o666 | os.ModeSocket,
		filepath.Join(e.dir, "state", "rsa.db"): 0o644,
		filepath.Join(e.dir, "state", "logs"):   0o700,
		logFile(t, e, 1):                        0o600,
	} {
		st, err := os.Stat(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if got := st.Mode() & (os.ModePerm | os.ModeSocket); got != want&(os.ModePerm|os.ModeSocket) {
			t.Errorf("%s: mode %v, want %v", path, got, want)
		}
	}
	e.rsa(false, "cancel", "1")
	e.rsa(false, "wait", "1")
	e.noLeaks()
}

// TestPackAndUnpackModes: the thesis' aggregation (§3.2.4, Table 5.2) as
// built-in modes: the input's tar is unpacked into RAM; thousands of small
// results leave RAM as one verified tar.
func TestPackAndUnpackModes(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	in, out, build := e.mkdir("in"), e.mkdir("out"), e.mkdir("build")
	e.fill(build, 50, 1000)
	tar := e.userCmd("tar", "-C", build, "-cf", filepath.Join(in, "input.tar"), ".")
	if b, err := tar.CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, b)
	}
	// Every *.tar of the input is unpacked, not just the first.
	more := e.mkdir("more")
	e.writeFile(filepath.Join(more, "extra"), []byte("extra\n"), 0o644)
	if b, err := e.userCmd("tar", "-C", more, "-cf", filepath.Join(in, "more.tar"), ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, b)
	}
	job := e.script("job.sh", inRAM+`ram "$1"; [ -f "$1/f0049" ] && [ "$(cat "$1/extra")" = extra ] || { echo "not unpacked" >&2; exit 10; }
waitram "$2"; i=0; while [ $i -lt 2000 ]; do echo "result $i" > "$2/r$i"; i=$((i+1)); done
`)
	b := e.runBG("--in", in, "--stage-in", "unpack", "--out", out, "--stage-out", "pack", "--delay", switchDelay, "--", job, in, out)
	if code := b.wait(t); code != 0 {
		t.Fatalf("exit %d: %s", code, b.errb.String())
	}
	if _, stderr, err := e.rsa(false, "wait", "1"); err != nil {
		t.Fatalf("wait: %v %s", err, stderr)
	}
	ents, _ := os.ReadDir(out)
	if len(ents) != 1 || ents[0].Name() != "rsa-job-1.tar" {
		t.Fatalf("output dir holds %v, want one rsa-job-1.tar", ents)
	}
	check := e.mkdir("check")
	if b, err := e.userCmd("tar", "-C", check, "-xf", filepath.Join(out, "rsa-job-1.tar")).CombinedOutput(); err != nil {
		t.Fatalf("GNU tar cannot read the pack: %v %s", err, b)
	}
	for _, i := range []int{0, 999, 1999} {
		if got, _ := os.ReadFile(filepath.Join(check, "r"+itoa(i))); string(got) != "result "+itoa(i)+"\n" {
			t.Fatalf("r%d = %q", i, got)
		}
	}
	e.logHas(1, "built-in unpack", "built-in pack")
	e.noLeaks()
}

// TestSecondStartRefused: a job runs one command; starting it again is
// refused and does not take the job over from the running rsa run.
func TestSecondStartRefused(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	in := e.mkdir("in")
	e.fill(in, 2, 10)
	gate := filepath.Join(e.mkdir("ctl"), "go")
	if _, stderr, err := e.rsa(false, "submit", "--in", in, "--capacity", "16M"); err != nil {
		t.Fatalf("submit: %v %s", err, stderr)
	}
	job := e.script("job.sh", `while [ ! -e `+gate+` ]; do sleep 0.05; done
`)
	first := e.runBG("--job", "1", "--", job)
	testutil.WaitFor(t, "the first command to run", step, poll, func() bool { return e.job(1).State == lifecycle.Running })
	_, stderr, err := e.rsa(false, "run", "--job", "1", "--", "true")
	if err == nil || !strings.Contains(stderr, "already running") {
		t.Fatalf("second run: %v %q", err, stderr)
	}
	// Straight at the API (bypassing the client's own check), the
	// daemon refuses too.
	_, stderr, err = e.rsa(false, "run", "--job", "1", "--no-wait", "--", "true")
	if err == nil || !strings.Contains(stderr, "does not apply now") {
		t.Fatalf("second start: %v %q", err, stderr)
	}
	before := e.job(1).Owner
	e.writeFile(gate, nil, 0o644)
	if code := first.wait(t); code != 0 {
		t.Fatalf("first run exit %d: %s", code, first.errb.String())
	}
	if before.PID != first.cmd.Process.Pid {
		t.Fatalf("owner is pid %d, want the first rsa run %d", before.PID, first.cmd.Process.Pid)
	}
	if _, _, err := e.rsa(false, "wait", "1"); err != nil {
		t.Fatal(err)
	}
	e.noLeaks()
}

// TestInputImageRefusedWhenCorrupt: the image of a job's input lies in a
// RAMDISK its user cannot reach; one that is damaged between its build
// and its mount (here by root, as a bit flip would) is refused before the
// kernel sees it, and the job reads its input from disk, the reason in its
// log; nothing is left mounted.
func TestInputImageRefusedWhenCorrupt(t *testing.T) {
	t.Parallel()
	e := setup(t, `input_mode = "image"`)
	in, out := e.mkdir("in"), e.mkdir("out")
	want := e.fill(in, 8, 1000)
	if _, stderr, err := e.rsa(false, "submit", "--in", in, "--out", out); err != nil {
		t.Fatalf("submit: %v %s", err, stderr)
	}
	testutil.WaitFor(t, "the image to be built", step, poll, func() bool { return e.job(1).RSA == lifecycle.Ready })
	ram := e.job(1).Ramdisk
	image := filepath.Join(ram, "input.erofs")
	// The user reaches neither the RAMDISK nor the image.
	for _, p := range []string{ram, image} {
		if err := e.userCmd("sh", "-c", `ls "$1" 2>/dev/null || exit 0; exit 1`, "sh", p).Run(); err != nil {
			t.Errorf("the job's user reaches %s", p)
		}
	}
	f, err := os.OpenFile(image, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(make([]byte, 64), 1024) // the superblock
	f.Close()
	job := e.script("job.sh", inRAM+`if image "$1"; then echo "a damaged image was mounted" >&2; exit 10; fi
cat "$1"/f* > /dev/null
waitram "$2"; echo fine > "$2/result"
`)
	e.runFine(t, out, "--job", "1", "--", job, in, out)
	sameFiles(t, in, want)
	e.logHas(1, "before mounting it: erofs: not a valid image")
	e.noLeaks()
}

// TestPrivateOutput: output=private gives the job a file system of its own
// at its output path (ext4, read-write, nosuid, nodev, the directory's
// mode), a fixed share of its capacity: filling it is the job's own
// ENOSPC, and what it wrote before is staged out, verified. Nothing is
// left: no mount, no loop device.
func TestPrivateOutput(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	out := e.mkdir("out")
	os.Chmod(out, 0o751)
	job := e.script("job.sh", `priv() { findmnt -n -o FSTYPE,OPTIONS --mountpoint "$1" | grep -q '^ext4  *rw,nosuid,nodev'; }
n=0; until priv "$1"; do n=$((n+1)); [ $n -lt 400 ] || { echo "output never private" >&2; exit 11; }; sleep 0.05; done
[ "$(stat -c %a "$1")" = 751 ] || { echo "private output root does not keep the directory's mode" >&2; exit 12; }
mkdir "$1/deep"; echo one > "$1/deep/x"; echo two > "$1/y"
if head -c 80M /dev/zero > "$1/big" 2> "$1/../enospc"; then echo "wrote past the private file system" >&2; exit 13; fi
grep -q "No space left" "$1/../enospc" || { echo "not ENOSPC:" >&2; cat "$1/../enospc" >&2; exit 14; }
rm -f "$1/big"
`)
	b := e.runBG("--out", out, "--output", "private", "--capacity", "32M", "--", job, out)
	if code := b.wait(t); code != 0 {
		t.Fatalf("exit %d: %s", code, b.errb.String())
	}
	if _, stderr, err := e.rsa(false, "wait", "1"); err != nil {
		t.Fatalf("wait: %v %s", err, stderr)
	}
	for name, want := range map[string]string{"deep/x": "one\n", "y": "two\n"} {
		if got, _ := os.ReadFile(filepath.Join(out, name)); string(got) != want {
			t.Errorf("%s on disk: %q, want %q", name, got, want)
		}
	}
	e.logHas(1, "a file system of 32.0M of its own at the output directory", "the private output of local", "copied 2 files", "2 dirs", "stage-out done")
	if _, err := os.Lstat(filepath.Join(out, "lost+found")); !os.IsNotExist(err) {
		t.Errorf("the file system's lost+found reached the output directory: %v", err)
	}
	e.noLeaks()
}

// TestRestoredStateKeepsUnknownOutput: the state directory is restored
// from a backup older than a job whose stage-out failed. The restored
// daemon has no record of that job, but its RAMDISK holds the job's only
// copy of its output: it is quarantined, never destroyed by RSA, reported
// (rsa gc, rsa health), and its id is not given to a new job; an
// administrator who saved what it holds discards it.
func TestRestoredStateKeepsUnknownOutput(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	state := filepath.Join(e.dir, "state")
	backup := filepath.Join(e.dir, "backup")
	copyDB := func(from, to string) {
		t.Helper()
		os.MkdirAll(to, 0o700)
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(filepath.Join(to, "rsa.db"+suffix))
			b, err := os.ReadFile(filepath.Join(from, "rsa.db"+suffix))
			if errors.Is(err, os.ErrNotExist) && suffix != "" {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(to, "rsa.db"+suffix), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The backup: taken with the daemon stopped, before any job.
	e.kill(syscall.SIGTERM)
	copyDB(state, backup)
	e.start()

	out := e.mkdir("out")
	so := e.script("so.sh", "echo 'archive server unreachable' >&2; exit 4\n")
	job := e.script("job.sh", inRAM+`waitram "$1"; echo precious > "$1/result"
`)
	if b := e.runBG("--out", out, "--stage-out", so, "--capacity", "64M", "--", job, out); b.wait(t) != 0 {
		t.Fatalf("the job: %s", b.errb.String())
	}
	testutil.WaitFor(t, "the stage-out to fail", step, poll, func() bool { return e.job(1).RSA == lifecycle.StageOutFailed })
	result := filepath.Join(e.root, "1", "ram", "result")

	// The restore.
	e.kill(syscall.SIGTERM)
	copyDB(backup, state)
	e.start()
	if _, ok := e.maybeJob(1); ok {
		t.Fatal("the restored state knows job 1: the test's premise is gone")
	}
	if b, err := os.ReadFile(result); err != nil || string(b) != "precious\n" {
		t.Fatalf("the restored daemon destroyed job 1's output: %v", err)
	}
	if !strings.Contains(e.daemonLog(), "quarantined") {
		t.Error("the daemon's log does not say it quarantined a RAMDISK")
	}
	if o, _, err := e.rsa(true, "gc"); err != nil || !strings.Contains(o, "quarantined "+filepath.Join(e.root, "1", "ram")+" (job 1)") {
		t.Fatalf("rsa gc: %v\n%s", err, o)
	}
	if o, _, err := e.rsa(true, "health"); err == nil || !strings.Contains(o, "WARNING: 1 RAMDISKs hold data no job record knows of") || !strings.Contains(o, "rsa gc --discard 1") {
		t.Fatalf("rsa health: %v\n%s", err, o)
	}
	if b, err := os.ReadFile(result); err != nil || string(b) != "precious\n" {
		t.Fatalf("rsa gc destroyed job 1's output: %v", err)
	}

	// A new job gets an id of its own, not the quarantined one's.
	if _, stderr, err := e.rsa(false, "run", "--out", e.mkdir("out2"), "--", "true"); err != nil {
		t.Fatalf("a new job: %v %s", err, stderr)
	}
	if j, ok := e.maybeJob(2); !ok || j.ID != 2 {
		t.Fatalf("the new job is not job 2: %+v", j)
	}
	testutil.WaitFor(t, "job 2 to be released", step, poll, func() bool { return e.job(2).RSA == lifecycle.Released })

	// Saved by the administrator, then discarded.
	if _, stderr, err := e.rsa(true, "gc", "--discard", "1"); err != nil {
		t.Fatalf("rsa gc --discard 1: %v %s", err, stderr)
	}
	if _, err := os.Stat(result); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after --discard the RAMDISK is still there: %v", err)
	}
	if o, _, err := e.rsa(true, "health"); err != nil || !strings.HasPrefix(o, "OK: ") {
		t.Fatalf("rsa health after the discard: %v\n%s", err, o)
	}
	if _, stderr, err := e.rsa(true, "gc", "--discard", "1"); err == nil || !strings.Contains(stderr, "no RAMDISK of job 1 is quarantined") {
		t.Fatalf("a second --discard: %v %s", err, stderr)
	}
	e.noLeaks()
}
