// Package notify tells a job's user what waits for them: a stage-out that
// failed (their output held in RAM), output lost with its RAMDISK, output
// still held long after. It calls a program of the site's as Slurm calls
// its MailProg:
//
//	PROGRAM -s SUBJECT USER
//
// with the message on its standard input, so that mail(1), or a script
// that posts to a chat or a ticket system, serves as it is.
//
// Nothing a user controls reaches the program's arguments or environment:
// the subject is RSA's words and numbers, the user name one that passwd
// gave and that cannot be read as an option; the message on standard input
// is made safe to print line by line (package textsafe).
package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rsa-hpc/rsa/internal/textsafe"
)

// Kind is what a notice is about.
type Kind string

const (
	// StageOutFailed: the output waits in RAM for its user (or root) to
	// retry or discard it.
	StageOutFailed Kind = "stage-out failed"
	// OutputHeld: a reminder that output still waits in RAM.
	OutputHeld Kind = "output held in RAM"
	// OutputLost: the output went with its RAMDISK before it was
	// verified on disk.
	OutputLost Kind = "output lost"
)

// Notice is one message to a job's user.
type Notice struct {
	Kind     Kind
	Job      int64  // RSA's job id
	SlurmJob string // the scheduler's job id, "" for none; digits only reach the program
	User     string // the job's user, as passwd names them
	Output   string // the job's output directory
	Error    string // why, as the job's record says
	// Since is when the output began to wait in RAM (OutputHeld).
	Since time.Time
}

// Program runs the site's notification program.
type Program struct {
	Path    string        // absolute; checked by the config
	Timeout time.Duration // a program still running then is killed, with its process group
}

// DefaultTimeout bounds a notification program that hangs (an MTA that
// does not answer): it must never hold anything up.
const DefaultTimeout = 30 * time.Second

// userName is what passwd's names look like on every system RSA runs on
// (POSIX portable names, with the '$' of machine accounts); above all, no
// leading '-', which the program would read as an option.
var userName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*\$?$`)

// slurmID is a Slurm job id as RSA accepts one (12345, 12345_7, 12345+1).
var slurmID = regexp.MustCompile(`^[0-9]+([_+][0-9]+)?$`)

// Send runs the program for n and waits for it, up to p.Timeout. An error
// names the program and carries the end of what it wrote.
func (p Program) Send(ctx context.Context, n Notice) error {
	if !userName.MatchString(n.User) {
		return fmt.Errorf("not telling user %s of job %d: not a user name passwd gives", strconv.Quote(n.User), n.Job)
	}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.Path, "-s", Subject(n), n.User)
	cmd.Stdin = strings.NewReader(Message(n))
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8",
		"RSA_JOB_ID=" + strconv.FormatInt(n.Job, 10), "RSA_NOTICE=" + strings.ReplaceAll(string(n.Kind), " ", "_")}
	if slurmID.MatchString(n.SlurmJob) {
		cmd.Env = append(cmd.Env, "RSA_SLURM_JOB_ID="+n.SlurmJob)
	}
	cmd.Dir = "/"
	// Its own process group, killed whole at the timeout: a mail program
	// that forks a sendmail must not outlive it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	var out tail
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("notification program %s did not end within %s: killed", p.Path, timeout)
	}
	if err != nil {
		return fmt.Errorf("notification program %s: %w%s", p.Path, err, out.last())
	}
	return nil
}

// Subject is the notice's subject line: RSA's words and numbers only.
func Subject(n Notice) string {
	job := "RSA job " + strconv.FormatInt(n.Job, 10)
	if slurmID.MatchString(n.SlurmJob) {
		job += " (Slurm job " + n.SlurmJob + ")"
	}
	return job + ": " + string(n.Kind)
}

// Message is the notice's text: what happened and what the user can do.
// Every line of it is safe to print.
func Message(n Notice) string {
	var b strings.Builder
	id := strconv.FormatInt(n.Job, 10)
	switch n.Kind {
	case StageOutFailed, OutputHeld:
		if n.Kind == OutputHeld {
			fmt.Fprintf(&b, "The output of RSA job %s has waited in RAM since %s, because its stage-out failed.\n", id, n.Since.Format(time.RFC3339))
		} else {
			fmt.Fprintf(&b, "The stage-out of RSA job %s failed. Its output is kept in RAM, not lost.\n", id)
		}
		if n.Error != "" {
			fmt.Fprintf(&b, "Why: %s\n", textsafe.Line(n.Error))
		}
		if n.Output != "" {
			fmt.Fprintf(&b, "Output directory: %s\n", textsafe.Line(n.Output))
		}
		fmt.Fprintf(&b, "\nWhat you can do, once the cause is fixed:\n"+
			"  rsa retry %[1]s              stage it out again\n"+
			"  rsa retry --to DIR %[1]s     stage it out to another directory of yours\n"+
			"  rsa discard %[1]s            give it up and free its RAM (lost for good)\n"+
			"  rsa log %[1]s                what happened, file by file\n", id)
	case OutputLost:
		fmt.Fprintf(&b, "The output of RSA job %s was lost with its RAMDISK before it was verified on disk.\n", id)
		if n.Error != "" {
			fmt.Fprintf(&b, "Why: %s\n", textsafe.Line(n.Error))
		}
		fmt.Fprintf(&b, "What reached the disk, if anything, is listed by: rsa log %s\n", id)
	}
	return b.String()
}

// tail keeps the last bytes a program wrote, for the error.
type tail struct{ buf bytes.Buffer }

const tailBytes = 512

func (t *tail) Write(p []byte) (int, error) {
	t.buf.Write(p)
	if over := t.buf.Len() - tailBytes; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tail) last() string {
	s := strings.TrimSpace(t.buf.String())
	if s == "" {
		return ""
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return ": " + textsafe.Line(s)
}
