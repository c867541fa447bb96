// Package live drives a live rsa: Serve starts rsa serve and waits for its
// socket, Jobs and Newest read the job records it keeps. It is a package
// apart from rsatest because it imports internal/api, and rsatest imports
// nothing of RSA's: testutil builds on rsatest, and the tests of api, and
// of the packages api imports, use testutil. Like rsatest it never
// imports testing: the thesis re-runs, linked into rsa, use it too.
package live

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/rsatest"
)

// Daemon is an rsa serve started by Serve.
type Daemon struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd is waited for; then err is set
	err    error
}

// Serve starts bin serve --config config, its output appended to the file
// log, and waits up to within for it to answer on socket. A daemon that
// does not answer in time, or before ctx is done, is stopped (SIGTERM, by
// its pid) and an error returned; the caller reads log to say why.
func Serve(ctx context.Context, bin, config, socket, log string, within time.Duration) (*Daemon, error) {
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	// The daemon writes its own copy of the descriptor.
	defer f.Close()
	cmd := exec.Command(bin, "serve", "--config", config)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("rsa serve: %w", err)
	}
	d := &Daemon{cmd: cmd, exited: make(chan struct{})}
	go func() { d.err = cmd.Wait(); close(d.exited) }()
	c := api.NewClient(socket)
	answers := func() bool {
		_, err := c.Version(ctx)
		return err == nil || ctx.Err() != nil
	}
	if !rsatest.Poll(within, 20*time.Millisecond, answers) || ctx.Err() != nil {
		d.Stop(syscall.SIGTERM, 0)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("rsa serve did not answer on %s within %v", socket, within)
	}
	return d, nil
}

// Pid is the daemon's process id.
func (d *Daemon) Pid() int { return d.cmd.Process.Pid }

// Stop sends the daemon sig (SIGTERM to stop it, SIGKILL to crash it) and
// waits for it to exit; with patience above zero, one still running that
// long after is killed. It returns how the daemon exited.
func (d *Daemon) Stop(sig syscall.Signal, patience time.Duration) error {
	_ = d.cmd.Process.Signal(sig)
	if patience > 0 {
		select {
		case <-d.exited:
		case <-time.After(patience):
			_ = d.cmd.Process.Kill()
		}
	}
	<-d.exited
	return d.err
}
