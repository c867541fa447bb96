package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// rsaBin is the rsa binary the tests run, built by TestMain.
var rsaBin string

func TestMain(m *testing.M) { testutil.RunWithRSA(m, &rsaBin) }

// fakeDaemon serves the API on a socket with canned answers and records
// what it is asked. Calls it does not expect panic (the embedded nil
// Service).
type fakeDaemon struct {
	api.Service
	sock string
	srv  *http.Server

	mu       sync.Mutex
	job      api.JobView // the one job, as Submit and Job return it
	events   []job.Event
	stageLog string
	nodes    []api.NodeView
	removed  []string
	version  api.VersionInfo
	verbs    []string
	hooks    []api.HookRequest
	reply    api.HookReply
	certs    []api.CertificateView
	certsErr error
}

// serve starts f on a socket in a fresh directory.
func (f *fakeDaemon) serve(t *testing.T) *fakeDaemon {
	t.Helper()
	f.sock = filepath.Join(t.TempDir(), "rsa.sock")
	l, err := api.Listen(f.sock)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = api.NewServer(f, slog.New(slog.DiscardHandler))
	go f.srv.Serve(l)
	t.Cleanup(f.gone)
	return f
}

// gone stops the daemon as a crash would: connections cut, socket removed.
func (f *fakeDaemon) gone() {
	f.srv.Close()
	os.Remove(f.sock)
}

func (f *fakeDaemon) Submit(context.Context, api.Peer, api.SubmitRequest) (*api.JobView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	j := f.job
	return &j, nil
}

func (f *fakeDaemon) Jobs(context.Context, api.Peer, bool) ([]api.JobView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return []api.JobView{f.job}, nil
}

func (f *fakeDaemon) Job(ctx context.Context, _ api.Peer, _, after int64, wait time.Duration) (*api.JobView, error) {
	f.mu.Lock()
	j := f.job
	f.mu.Unlock()
	if j.Version <= after {
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	return &j, nil
}

func (f *fakeDaemon) Events(context.Context, api.Peer, int64) ([]job.Event, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.events, f.stageLog, nil
}

func (f *fakeDaemon) Act(_ context.Context, _ api.Peer, _ int64, verb string, _ api.ActOptions) (*api.JobView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.verbs = append(f.verbs, verb)
	switch verb {
	case api.VerbStart:
		f.job.State, f.job.RSA = lifecycle.Running, lifecycle.InUseIn
	case api.VerbFinish, api.VerbCancel:
		f.job.State = lifecycle.Finished
	}
	f.job.Version++
	j := f.job
	return &j, nil
}

func (f *fakeDaemon) Nodes(context.Context, api.Peer) ([]api.NodeView, error) { return f.nodes, nil }

func (f *fakeDaemon) Settle(context.Context, api.Peer, string, api.SettleRequest) (*api.SettleReport, error) {
	return nil, api.NotFound("nothing is owed")
}

func (f *fakeDaemon) Quarantined(context.Context, api.Peer) ([]api.QuarantinedView, error) {
	return nil, nil
}

func (f *fakeDaemon) GC(context.Context, api.Peer, api.GCRequest) (*api.GCReport, error) {
	return &api.GCReport{Removed: f.removed}, nil
}

func (f *fakeDaemon) Version(context.Context) api.VersionInfo { return f.version }

func (f *fakeDaemon) Certificates(context.Context, api.Peer) ([]api.CertificateView, error) {
	return f.certs, f.certsErr
}

func (f *fakeDaemon) Hook(_ context.Context, _ api.Peer, r api.HookRequest) (*api.HookReply, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hooks = append(f.hooks, r)
	rep := f.reply
	return &rep, nil
}

func (f *fakeDaemon) calls() (verbs []string, hooks []api.HookRequest) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.verbs...), append([]api.HookRequest(nil), f.hooks...)
}

// rsaProc is a running rsa, its stderr read line by line.
type rsaProc struct {
	cmd    *exec.Cmd
	lines  chan string
	mu     sync.Mutex
	stderr bytes.Buffer
	done   chan struct{} // closed when it exited; then err is its Wait's
	err    error
}

// startRSA runs rsa with args in its own process group, which the test
// kills at its end.
func startRSA(t *testing.T, env []string, args ...string) *rsaProc {
	t.Helper()
	p := &rsaProc{cmd: exec.Command(rsaBin, args...), lines: make(chan string, 100), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := p.cmd.Process.Pid
	t.Cleanup(func() {
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p
}

func (p *rsaProc) errText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// waitLine waits for a line of stderr that holds s.
func (p *rsaProc) waitLine(t *testing.T, s string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l := <-p.lines:
			if strings.Contains(l, s) {
				return
			}
		case <-p.done:
			t.Fatalf("rsa exited (%v) before saying %q:\n%s", p.err, s, p.errText())
		case <-timeout:
			t.Fatalf("rsa did not say %q:\n%s", s, p.errText())
		}
	}
}

// exit waits up to within for rsa to exit and returns its status.
func (p *rsaProc) exit(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(within):
		t.Fatalf("rsa did not exit within %s:\n%s", within, p.errText())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

// runRSA runs rsa to its end and returns its stdout and stderr.
func runRSA(t *testing.T, env []string, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	// A deadline: a hung rsa fails its test instead of the package.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, rsaBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		status = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), status
}

// readFile is the file's text, "" if it does not exist.
func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
