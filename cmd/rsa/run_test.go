package main

import (
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// command is rsa run's COMMAND in these tests: it notes in $OUT that it
// started and which signal it got, and exits 3 on one.
const command = `got() { echo "$1" >>"$OUT"; kill $!; exit 3; }
trap 'got TERM' TERM; trap 'got HUP' HUP; trap 'got INT' INT
echo started >>"$OUT"
sleep 30 & wait`

func startRun(t *testing.T, sock string) (p *rsaProc, out string) {
	t.Helper()
	out = filepath.Join(t.TempDir(), "out")
	return startRSA(t, []string{"OUT=" + out}, "--socket", sock, "run", "--", "sh", "-c", command), out
}

func waitStarted(t *testing.T, p *rsaProc, out string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(readFile(out), "started"); {
		if time.Now().After(deadline) {
			t.Fatalf("the command did not start:\n%s", p.errText())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitFile(t *testing.T, path, s string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(readFile(path), s); {
		if time.Now().After(deadline) {
			t.Fatalf("%s has %q, want %q", path, readFile(path), s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readyJob() api.JobView {
	return api.JobView{Job: job.Job{ID: 1, State: lifecycle.OnDeck, RSA: lifecycle.Ready, Version: 1}}
}

// TestRunForwardsSignals: while COMMAND runs, rsa run passes SIGTERM,
// SIGHUP and SIGINT on, reports the end to the daemon and exits with
// COMMAND's status.
func TestRunForwardsSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT} {
		t.Run(unix.SignalName(sig), func(t *testing.T) {
			d := (&fakeDaemon{job: readyJob()}).serve(t)
			p, out := startRun(t, d.sock)
			waitStarted(t, p, out)
			syscall.Kill(p.cmd.Process.Pid, sig)
			if st := p.exit(t, 15*time.Second); st != 3 {
				t.Errorf("rsa run exited %d, want COMMAND's 3:\n%s", st, p.errText())
			}
			name := strings.TrimPrefix(unix.SignalName(sig), "SIG")
			if got := readFile(out); !strings.Contains(got, name) {
				t.Errorf("COMMAND did not get %s; it noted %q", name, got)
			}
			if verbs, _ := d.calls(); !slices.Contains(verbs, api.VerbFinish) {
				t.Errorf("the daemon heard %q, not that the command finished", verbs)
			}
		})
	}
}

// TestRunInterrupted: a signal that comes while rsa run waits (for the
// input, or for a daemon that is gone) ends it at once with a message and
// 128+signo.
func TestRunInterrupted(t *testing.T) {
	cases := []struct {
		name    string
		rsa     lifecycle.RSAState // READY: COMMAND starts; STAGING_IN: it never does
		gone    bool               // the daemon goes away once rsa run waits
		sig     syscall.Signal
		status  int
		message string
		verb    string // what the daemon last heard
	}{
		{"waiting for the input", lifecycle.StagingIn, false, syscall.SIGTERM, 143,
			"job 1 cancelled: interrupted by SIGTERM before the command started", api.VerbCancel},
		{"waiting for the input, daemon gone", lifecycle.StagingIn, true, syscall.SIGINT, 130,
			"job 1: interrupted by SIGINT before the command started; cancelling it failed", ""},
		{"reporting the end, daemon gone", lifecycle.Ready, true, syscall.SIGTERM, 143,
			"job 1: interrupted by SIGTERM before the daemon heard that the command ended", api.VerbStart},
		{"reporting the end, daemon gone, SIGHUP", lifecycle.Ready, true, syscall.SIGHUP, 129,
			"job 1: interrupted by SIGHUP before the daemon heard that the command ended", api.VerbStart},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := readyJob()
			j.RSA = c.rsa
			d := (&fakeDaemon{job: j}).serve(t)
			p, out := startRun(t, d.sock)
			p.waitLine(t, "job 1 submitted")
			if c.rsa == lifecycle.Ready {
				waitStarted(t, p, out)
			}
			if c.gone {
				d.gone()
			}
			if c.rsa == lifecycle.Ready {
				// The first signal is COMMAND's; rsa run then waits to
				// report its end.
				syscall.Kill(p.cmd.Process.Pid, c.sig)
				waitFile(t, out, strings.TrimPrefix(unix.SignalName(c.sig), "SIG"))
			}
			if c.gone {
				p.waitLine(t, "the rsa daemon is unreachable")
			}
			syscall.Kill(p.cmd.Process.Pid, c.sig)
			if st := p.exit(t, 15*time.Second); st != c.status {
				t.Errorf("rsa run exited %d, want %d:\n%s", st, c.status, p.errText())
			}
			if !strings.Contains(p.errText(), c.message) {
				t.Errorf("rsa run said:\n%s\nwant a line with %q", p.errText(), c.message)
			}
			var last string
			if verbs, _ := d.calls(); len(verbs) > 0 {
				last = verbs[len(verbs)-1]
			}
			if last != c.verb {
				t.Errorf("the daemon heard %q last, want %q", last, c.verb)
			}
			if c.rsa != lifecycle.Ready && readFile(out) != "" {
				t.Errorf("COMMAND ran: %q", readFile(out))
			}
		})
	}
}

// TestRunNoDaemon: with no daemon at all, rsa run says so at once and
// does not run COMMAND.
func TestRunNoDaemon(t *testing.T) {
	p, out := startRun(t, filepath.Join(t.TempDir(), "nothing.sock"))
	if st := p.exit(t, 15*time.Second); st != 1 {
		t.Errorf("rsa run exited %d, want 1:\n%s", st, p.errText())
	}
	if !strings.Contains(p.errText(), "cannot reach the rsa daemon") {
		t.Errorf("rsa run said %q, want that it cannot reach the daemon", p.errText())
	}
	if readFile(out) != "" {
		t.Errorf("COMMAND ran: %q", readFile(out))
	}
}
