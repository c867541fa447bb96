package notify

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeMail is a program that records its arguments, environment and
// standard input in dir, as mail(1) would take them.
func fakeMail(t *testing.T, body string) (prog, dir string) {
	t.Helper()
	dir = t.TempDir()
	prog = filepath.Join(dir, "mail")
	script := "#!/bin/sh\nd=" + dir + "\nprintf '%s\\n' \"$@\" > $d/args\nenv > $d/env\ncat > $d/stdin\n" + body
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return prog, dir
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Send calls the program as Slurm calls MailProg, -s SUBJECT USER, with
// RSA's words in the subject and environment and the job's own text,
// made safe, only on standard input.
func TestSendAsMailProg(t *testing.T) {
	prog, dir := fakeMail(t, "")
	n := Notice{Kind: StageOutFailed, Job: 17, SlurmJob: "4242", User: "alice", Output: "/home/alice/out\n-s evil",
		Error: "copying x: disk quota exceeded\x1b[2J"}
	if err := (Program{Path: prog}).Send(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	if got, want := read(t, filepath.Join(dir, "args")), "-s\nRSA job 17 (Slurm job 4242): stage-out failed\nalice\n"; got != want {
		t.Errorf("arguments %q, want %q", got, want)
	}
	env := read(t, filepath.Join(dir, "env"))
	for _, want := range []string{"RSA_JOB_ID=17\n", "RSA_SLURM_JOB_ID=4242\n", "RSA_NOTICE=stage-out_failed\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("environment lacks %q:\n%s", want, env)
		}
	}
	if strings.Contains(env, "alice") || strings.Contains(env, "quota") {
		t.Errorf("the job's values reached the environment:\n%s", env)
	}
	msg := read(t, filepath.Join(dir, "stdin"))
	for _, want := range []string{"kept in RAM", "disk quota exceeded", "rsa retry 17", "rsa retry --to DIR 17", "rsa discard 17"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "\x1b") || strings.Contains(msg, "\n-s evil") {
		t.Errorf("the job's text reached the message unchecked:\n%q", msg)
	}
}

// What Send refuses or reports: a user name that would read as an option,
// a program that fails (its last words in the error), one that hangs
// (killed at the timeout, with what it started).
func TestSendFailures(t *testing.T) {
	ok, _ := fakeMail(t, "")
	failing, _ := fakeMail(t, "echo 'mail: no MTA configured' >&2; exit 3\n")
	hanging, dir := fakeMail(t, "sleep 60 & echo $! > "+"$d/child\nwait\n")
	cases := []struct {
		name string
		p    Program
		user string
		want string
	}{
		{"an option for a user", Program{Path: ok}, "-oProgramFile=/tmp/x", "not a user name"},
		{"an empty user", Program{Path: ok}, "", "not a user name"},
		{"a failing program", Program{Path: failing}, "alice", "no MTA configured"},
		{"a hanging program", Program{Path: hanging, Timeout: 300 * time.Millisecond}, "alice", "did not end within"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.p.Send(context.Background(), Notice{Kind: OutputLost, Job: 3, User: c.user})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want an error saying %q", err, c.want)
			}
		})
	}
	// The hanging program's child went with it.
	b, err := os.ReadFile(filepath.Join(dir, "child"))
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(string(b))
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil || strings.Contains(string(st), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hanging program's child %s outlived it", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The message says what each kind means and what the user can do.
func TestMessages(t *testing.T) {
	since := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	cases := []struct {
		n    Notice
		want []string
	}{
		{Notice{Kind: StageOutFailed, Job: 5, Error: "e"}, []string{"failed", "not lost", "rsa retry 5"}},
		{Notice{Kind: OutputHeld, Job: 5, Since: since}, []string{"since 2026-12-01T08:00:00Z", "rsa discard 5"}},
		{Notice{Kind: OutputLost, Job: 5, Error: "node rsa2 rebooted"}, []string{"was lost", "node rsa2 rebooted", "rsa log 5"}},
	}
	for _, c := range cases {
		msg := Message(c.n)
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: message lacks %q:\n%s", c.n.Kind, w, msg)
			}
		}
	}
	if s := Subject(Notice{Kind: OutputLost, Job: 5, SlurmJob: "1;rm"}); s != "RSA job 5: output lost" {
		t.Errorf("subject with a Slurm id that is not one: %q", s)
	}
}
