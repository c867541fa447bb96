package e2e

// Tests of RSA's security guarantees (docs/security.md lists which test
// covers which guarantee).

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// as runs name as user u with a plain environment.
func (e *env) as(u testutil.User, name string, args ...string) *exec.Cmd {
	cmd := e.command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.UID, Gid: u.GID}}
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/"}
	cmd.Dir = "/"
	return cmd
}

// api posts body to the daemon's socket as the test user, the way any
// program of theirs could (not through the rsa client), and returns the
// HTTP status and body.
func (e *env) apiPost(path, body string) (int, string) {
	e.t.Helper()
	cmd := e.userCmd("curl", "-s", "-m", "60", "-o", "-", "-w", "\n%{http_code}", "--unix-socket", filepath.Join(e.dir, "run", "rsa.sock"),
		"-H", "Content-Type: application/json", "-d", body, "http://rsa"+path)
	out, err := cmd.Output()
	if err != nil {
		e.t.Fatalf("curl: %v", err)
	}
	s := strings.TrimSpace(string(out))
	i := strings.LastIndexByte(s, '\n')
	code, _ := strconv.Atoi(s[i+1:])
	return code, s[:max(i, 0)]
}

// A user cannot create a job that answers to a scheduler id, and no
// control character reaches a job's record.
func TestUserCannotClaimSchedulerID(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	out := e.mkdir("out")
	for _, c := range []struct{ body, want string }{
		{fmt.Sprintf(`{"spec":{"name":"4242","output":%q,"compute_nodes":1,"delay":-1}}`, out), "spec.name"},
		{fmt.Sprintf(`{"spec":{"pool":"rsa","output":%q,"compute_nodes":1,"delay":-1}}`, out), "spec.pool"},
	} {
		code, body := e.apiPost("/v1/jobs", c.body)
		if code != 400 || !strings.Contains(body, c.want) {
			t.Errorf("POST %s: %d %s; want 400 naming %s", c.body, code, body, c.want)
		}
	}
	// A directory whose name carries a newline and an environment
	// assignment: refused, naming the control character.
	evil := e.mkdir("x\nBASH_ENV=/tmp/evil.sh")
	e.writeFile(filepath.Join(evil, "so"), []byte("#!/bin/sh\n"), 0o755)
	for _, args := range [][]string{{"--out", evil}, {"--in", evil}, {"--out", out, "--stage-out", filepath.Join(evil, "so")}} {
		_, stderr, err := e.rsa(false, append([]string{"submit"}, args...)...)
		if err == nil || !strings.Contains(stderr, "control character") {
			t.Errorf("submit %q: %v %q; want a refusal naming the control character", args, err, stderr)
		}
	}
	if status, _, _ := e.rsa(true, "status", "--all"); strings.Count(status, "\n") != 1 {
		t.Fatalf("refused submissions created jobs:\n%s", status)
	}
}

// While a job runs, its RAMDISK is reachable by its user (and by whom the
// job directory admits, at the job's path) and by no one else; the
// RAMDISK's root has the job directory's group and mode.
func TestRamdiskPrivateToItsUser(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	other := testutil.EnsureOtherUser(t)
	private := e.mkdir("private") // a 0700 home, as Debian makes them
	os.Chmod(private, 0o700)
	in := testutil.MkdirOwned(t, e.user, filepath.Join(private, "input"))
	os.Chmod(in, 0o755)                // readable by all, as mkdir makes it: only the home keeps others out
	os.Chown(in, int(e.user.UID), 100) // the group "users", not the user's own
	e.writeFile(filepath.Join(in, "secret"), []byte("secret"), 0o644)
	ctl := e.mkdir("ctl")
	job := e.script("job.sh", inRAM+`
ram "$1"
[ "$(stat -c %g:%a "$1")" = 100:755 ] || { echo "RAMDISK root is $(stat -c %g:%a "$1"), want the input's 100:755" >&2; exit 12; }
touch `+ctl+`/running
while [ ! -e `+ctl+`/done ]; do sleep 0.05; done
`)
	b := e.runBG("--in", in, "--delay", "1h", "--", job, in)
	testutil.WaitFor(t, "the job to run", step, poll, func() bool { return exists(filepath.Join(ctl, "running")) })
	j := e.job(1)
	for _, p := range []string{filepath.Join(j.Ramdisk, "secret"), filepath.Join(in, "secret")} {
		if out, err := e.as(other, "cat", p).CombinedOutput(); err == nil {
			t.Errorf("another user read %s: %s", p, out)
		}
		if out, err := e.as(e.user, "cat", p).CombinedOutput(); err != nil || string(out) != "secret" {
			t.Errorf("the job's user cannot read %s: %v %s", p, err, out)
		}
	}
	os.WriteFile(filepath.Join(ctl, "done"), nil, 0o644)
	if code := b.wait(t); code != 0 {
		t.Fatalf("job exit %d: %s", code, b.errb.String())
	}
}

// However waiting jobs and releases interleave, the RAM held never exceeds
// the capacity, at any commit: checked against the daemon's own event log,
// whose ids order every transition.
func TestNoRAMGivenTwice(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	const jobs = 8
	outs := make([]string, jobs)
	for i := range outs {
		outs[i] = e.mkdir("out" + itoa(i))
	}
	// Each job asks for more than half the node (512M): two never fit.
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, stderr, err := e.rsa(false, "submit", "--out", outs[i], "--capacity", "300M"); err != nil {
				t.Errorf("submit: %v %s", err, stderr)
			}
		}()
	}
	wg.Wait()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(e.dir, "state", "rsa.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// sweep replays every committed transition in commit order and fails
	// at the first moment two jobs held RAM together; it returns how many
	// jobs were ever given RAM.
	sweep := func() int {
		rows, err := db.Query(`SELECT job_id, rsa_state FROM events ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		held := map[int64]bool{}
		assigned := 0
		for rows.Next() {
			var id int64
			var st string
			if err := rows.Scan(&id, &st); err != nil {
				t.Fatal(err)
			}
			switch h := lifecycle.HoldsNodes(lifecycle.RSAState(st)); {
			case h && !held[id]:
				held[id] = true
				assigned++
			case !h:
				delete(held, id)
			}
			if len(held) > 1 {
				t.Fatalf("two jobs of 300M held RAM of a 512M node at once: %v", held)
			}
		}
		return assigned
	}
	// Release whatever holds RAM, several at once, until every job ran.
	deadline := time.Now().Add(60 * time.Second)
	for {
		sweep()
		var holding []string
		done := 0
		for id := 1; id <= jobs; id++ {
			j := e.job(id)
			switch {
			case j.Machine().Done():
				done++
			case j.RSA == lifecycle.Ready:
				holding = append(holding, itoa(id))
			}
		}
		if done == jobs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs did not all run: %d done", done)
		}
		if len(holding) > 0 {
			e.rsa(false, append([]string{"cancel"}, holding...)...)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := sweep(); n != jobs {
		t.Fatalf("%d of %d jobs were given RAM", n, jobs)
	}
}

// After the job ends, a process it left behind is ended (and the log says
// so), a late write fails instead of vanishing, every write that succeeded
// is on disk, and the RAM counts as held until the RAMDISK is really gone.
func TestLeftoversAndLateWrites(t *testing.T) {
	t.Parallel()
	e := setup(t, `[limits]
kill_grace = "1s"
`)
	out, ctl := e.mkdir("out"), e.mkdir("ctl")
	// The job leaves a writer behind in its own session: it writes a file
	// into the output every 20 ms and notes each write that succeeded.
	job := e.script("job.sh", inRAM+`
waitram "$1"
setsid sh -c 'cd "$1"; echo $$ > `+ctl+`/pid; trap "" TERM; i=0; while :; do i=$((i+1)); { echo $i > late$i; } 2>/dev/null && echo late$i >> `+ctl+`/written; sleep 0.02; done' sh "$1" < /dev/null > /dev/null 2>&1 &
while [ ! -s `+ctl+`/written ]; do sleep 0.01; done
`)
	b := e.runBG("--out", out, "--delay", "0", "--", job, out)
	if code := b.wait(t); code != 0 {
		t.Fatalf("job exit %d: %s", code, b.errb.String())
	}
	if stdout, stderr, err := e.rsa(false, "wait", "1"); err != nil {
		t.Fatalf("rsa wait: %v %s %s", err, stdout, stderr)
	}
	testutil.WaitFor(t, "the leftover writer to be ended", step, poll, func() bool { return pidGone(t, filepath.Join(ctl, "pid")) })
	written, _ := os.ReadFile(filepath.Join(ctl, "written"))
	for _, name := range strings.Fields(string(written)) {
		if !exists(filepath.Join(out, name)) {
			t.Errorf("%s was written into RAM successfully but is not on disk", name)
		}
	}
	e.logHas(1, "SIGTERM", "SIGKILL")
	e.noLeaks()

	// A process of root's inside the RAMDISK is never signalled: the job
	// waits in TEARDOWN_FAILED with its RAM held until an admin acts.
	out2 := e.mkdir("out2")
	job2 := e.script("job2.sh", inRAM+`waitram "$1"; echo x > "$1/x"; touch `+ctl+`/ran2
while [ ! -e `+ctl+`/inside ]; do sleep 0.05; done
`)
	b = e.runBG("--out", out2, "--delay", "0", "--", job2, out2)
	testutil.WaitFor(t, "job 2 to run", step, poll, func() bool { return exists(filepath.Join(ctl, "ran2")) })
	ramdisk := e.job(2).Ramdisk
	hold := exec.Command("sh", "-c", "while [ ! -e "+ctl+"/release ]; do sleep 0.05; done")
	hold.Dir = ramdisk
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { os.WriteFile(filepath.Join(ctl, "release"), nil, 0o644); hold.Wait() }()
	os.WriteFile(filepath.Join(ctl, "inside"), nil, 0o644)
	b.wait(t)
	testutil.WaitFor(t, "teardown to fail", step, poll, func() bool { return e.job(2).RSA == lifecycle.TeardownFailed })
	if j := e.job(2); !strings.Contains(j.Error, "root's") || j.Capacity() == 0 {
		t.Fatalf("job 2: %s %q capacity %d", j.RSA, j.Error, j.Capacity())
	}
	nodes, _, _ := e.rsa(true, "nodes", "--json")
	var nv struct{ Nodes []api.NodeView }
	json.Unmarshal([]byte(nodes), &nv)
	if len(nv.Nodes) != 1 || nv.Nodes[0].Used == 0 {
		t.Fatalf("RAM of a RAMDISK still alive counted free: %s", nodes)
	}
	// Sealed before its stage-out: even root's writes fail now.
	if err := os.WriteFile("/proc/"+itoa(hold.Process.Pid)+"/cwd/late", []byte("x"), 0o644); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("write into a RAMDISK whose stage-out was verified: %v, want EROFS", err)
	}
	os.WriteFile(filepath.Join(ctl, "release"), nil, 0o644)
	hold.Wait()
	if _, stderr, err := e.rsa(true, "retry", "2"); err != nil {
		t.Fatalf("retry: %v %s", err, stderr)
	}
	testutil.WaitFor(t, "job 2 released", step, poll, func() bool { return e.job(2).RSA == lifecycle.Released })
	e.noLeaks()
}

// One user's jobs cannot lock others out, INELIGIBLE jobs take no place, a
// job that never runs expires, and the per-job cap holds.
func TestLimitsPerUser(t *testing.T) {
	t.Parallel()
	const expiry = 8 * time.Second
	e := setup(t, fmt.Sprintf(`[limits]
max_jobs_per_user = 2
max_active_jobs = 3
unstarted_expiry = %q
max_job_capacity = "100M"
`, expiry))
	other := testutil.EnsureOtherUser(t)
	otherOut := testutil.MkdirOwned(t, other, filepath.Join(e.dir, "otherout"))
	// INELIGIBLE jobs (sized by an input larger than max_job_capacity)
	// take no place.
	big := e.mkdir("big-in")
	e.fill(big, 1, 101<<20)
	for i := range 3 {
		if _, stderr, err := e.rsa(false, "submit", "--in", big, "--out", e.mkdir("ineligible"+itoa(i))); err != nil {
			t.Fatalf("ineligible submit: %v %s", err, stderr)
		}
		testutil.WaitFor(t, "an INELIGIBLE job", step, poll, func() bool { return e.job(i+1).RSA == lifecycle.Ineligible })
	}
	if _, stderr, err := e.rsa(false, "submit", "--out", e.mkdir("big"), "--capacity", "2G"); err == nil || !strings.Contains(stderr, "max_job_capacity") {
		t.Fatalf("capacity above the cap: %v %q", err, stderr)
	}
	for i := range 2 {
		if _, stderr, err := e.rsa(false, "submit", "--out", e.mkdir("a"+itoa(i)), "--capacity", "64M"); err != nil {
			t.Fatalf("submit %d: %v %s", i, err, stderr)
		}
	}
	if _, stderr, err := e.rsa(false, "submit", "--out", e.mkdir("a2"), "--capacity", "64M"); err == nil || !strings.Contains(stderr, "max_jobs_per_user") {
		t.Fatalf("third job of one user: %v %q", err, stderr)
	}
	cmd := e.as(other, rsaBin, "--config", e.cfg, "submit", "--out", otherOut, "--capacity", "64M")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("another user is locked out: %v %s", err, out)
	}
	// Three jobs that count are active: the next is refused whoever asks.
	cmd = e.as(other, rsaBin, "--config", e.cfg, "submit", "--out", otherOut, "--capacity", "64M")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "max_active_jobs") {
		t.Fatalf("a fourth active job: %v %s", err, out)
	}
	// Never run: expired, RAM released, the user told why. Its clock
	// started at its last change, before this wait.
	testutil.WaitFor(t, fmt.Sprintf("job 4 to expire (unstarted_expiry %v)", expiry), expiry+step, poll, func() bool { return e.job(4).RSA == lifecycle.Released })
	if j := e.job(4); !strings.Contains(j.Error, "unstarted_expiry") {
		t.Fatalf("expired job's error: %q", j.Error)
	}
	e.logHas(4, "expired")
}

// A user learns nothing from RSA's checks that they could not see
// themselves, and sees only the public part of others' jobs.
func TestNoOracleAndPrivateData(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	secret := filepath.Join(e.dir, "secret")
	os.MkdirAll(filepath.Join(secret, "exists"), 0o755)
	os.Chmod(secret, 0o700)
	var msgs []string
	for _, p := range []string{filepath.Join(secret, "exists"), filepath.Join(secret, "missing")} {
		_, stderr, err := e.rsa(false, "submit", "--in", p)
		if err == nil {
			t.Fatalf("--in %s accepted", p)
		}
		msgs = append(msgs, strings.ReplaceAll(stderr, p, "PATH"))
	}
	if msgs[0] != msgs[1] {
		t.Errorf("RSA answers differently for a path the user cannot see that exists and one that does not:\n%s\n%s", msgs[0], msgs[1])
	}
	in := e.mkdir("in")
	id, stderr, err := e.rsa(false, "submit", "--in", in)
	if err != nil {
		t.Fatal(err, stderr)
	}
	cmd := e.userCmd(rsaBin, "--config", e.cfg, "status", "--all", "--json")
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 65534, Gid: 65534}
	pub, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(pub), in) || strings.Contains(string(pub), e.user.Home) || !strings.Contains(string(pub), e.user.Name) {
		t.Errorf("another user sees more than the public part of job %s:\n%s", strings.TrimSpace(id), pub)
	}
	if own, _, _ := e.rsa(false, "status", "--all", "--json"); !strings.Contains(own, in) {
		t.Errorf("the job's user does not see its own paths:\n%s", own)
	}
}

// A directory the user owns on a kernel pseudo file system (their own
// /proc/PID, say) is never mounted over, and with allowed_paths only the
// site's trees are.
func TestPseudoFSTargetsRefused(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	sleeper := e.userCmd("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	own := "/proc/" + strconv.Itoa(sleeper.Process.Pid)
	refused := func(path, why string) {
		t.Helper()
		_, stderr, err := e.rsa(false, "submit", "--in", path)
		if err == nil || !strings.Contains(stderr, why) {
			t.Errorf("--in %s: %v %q; want a refusal naming %q", path, err, stderr, why)
		}
	}
	refused(own, "on a proc file system")
	// The site allows only the user's work area (known once set up).
	outside := testutil.MkdirOwned(t, e.user, filepath.Join(e.dir, "elsewhere"))
	conf, _ := os.ReadFile(e.cfg)
	e.kill(syscall.SIGTERM)
	os.WriteFile(e.cfg, []byte(fmt.Sprintf("allowed_paths = [%q]\n", e.home)+string(conf)), 0o644)
	e.start()
	refused(outside, "allowed_paths")
	if _, stderr, err := e.rsa(false, "submit", "--out", e.mkdir("out")); err != nil {
		t.Fatalf("a directory in allowed_paths refused: %v %s", err, stderr)
	}
	e.rsa(false, "cancel", "1")
	e.rsa(false, "wait", "1")
	e.noLeaks()
}

// Many submissions of one user in parallel get no more places than the
// limit gives.
func TestLimitsHoldUnderConcurrentSubmissions(t *testing.T) {
	t.Parallel()
	e := setup(t, `[limits]
max_jobs_per_user = 2
`)
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted, refused := 0, 0
	for i := range 16 {
		out := e.mkdir("out" + itoa(i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, stderr, err := e.rsa(false, "submit", "--out", out, "--capacity", "16M")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				admitted++
			case strings.Contains(stderr, "max_jobs_per_user"):
				refused++
			default:
				t.Errorf("submit: %v %s", err, stderr)
			}
		}()
	}
	wg.Wait()
	if admitted != 2 || refused != 14 {
		t.Fatalf("16 submissions at once under max_jobs_per_user = 2: %d admitted, %d refused", admitted, refused)
	}
}

// limits.max_user_capacity bounds the RAM one user's jobs hold at once: a
// job that would pass it waits (and says why) while another user's job is
// served, and gets its RAM when the first is released.
func TestUserCapacityLimit(t *testing.T) {
	t.Parallel()
	e := setup(t, `[limits]
max_user_capacity = "100M"
`)
	if _, stderr, err := e.rsa(false, "submit", "--out", e.mkdir("big"), "--capacity", "200M"); err == nil || !strings.Contains(stderr, "max_user_capacity") {
		t.Fatalf("a job above the user limit: %v %q", err, stderr)
	}
	for i := range 2 {
		if _, stderr, err := e.rsa(false, "submit", "--out", e.mkdir("o"+itoa(i)), "--capacity", "64M"); err != nil {
			t.Fatalf("submit: %v %s", err, stderr)
		}
	}
	testutil.WaitFor(t, "job 1 ready", step, poll, func() bool { return e.job(1).RSA == lifecycle.Ready })
	testutil.WaitFor(t, "job 2 to wait for the user limit", step, poll, func() bool { return strings.Contains(e.job(2).Waiting, "max_user_capacity") })
	other := testutil.EnsureOtherUser(t)
	otherOut := testutil.MkdirOwned(t, other, filepath.Join(e.dir, "otherout"))
	if out, err := e.as(other, rsaBin, "--config", e.cfg, "submit", "--out", otherOut, "--capacity", "64M").CombinedOutput(); err != nil {
		t.Fatalf("another user: %v %s", err, out)
	}
	testutil.WaitFor(t, "the other user's job ready", step, poll, func() bool { return e.job(3).RSA == lifecycle.Ready })
	if j := e.job(2); j.RSA != lifecycle.Initial {
		t.Fatalf("job 2 is %s while job 1 holds the user's limit", j.RSA)
	}
	e.rsa(false, "cancel", "1")
	testutil.WaitFor(t, "job 2 ready once job 1 is released", step, poll, func() bool { return e.job(2).RSA == lifecycle.Ready })
	for _, id := range []string{"2", "3"} {
		e.rsa(true, "cancel", id)
		e.rsa(true, "wait", id)
	}
	e.noLeaks()
}
