package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/slurm"
)

// TestSlurmArgsAreNotFlags: what Slurm and its users pass a hook command
// (scontrol show bbstat --config=/dev/zero) reaches the daemon as
// arguments; rsa reads none of it as its own flags.
func TestSlurmArgsAreNotFlags(t *testing.T) {
	cases := []struct {
		name     string
		args     []string // after --socket SOCKET
		env      []string
		hook     string
		hookArgs []string
	}{
		{"option after the hook", []string{"slurm-bb", "get_status", "--config=/dev/zero"},
			nil, "get_status", []string{"--config=/dev/zero"}},
		{"as burst_buffer.lua calls it", []string{"--config", "/nonexistent.toml", "slurm-bb", "--", "get_status", "1001", "100", "--config=/dev/zero"},
			nil, "get_status", []string{"1001", "100", "--config=/dev/zero"}},
		{"socket option does not redirect rsa", []string{"slurm-bb", "--", "get_status", "--socket=/nonexistent", "--socket", "/x"},
			nil, "get_status", []string{"--socket=/nonexistent", "--socket", "/x"}},
		{"help option is an argument", []string{"slurm-bb", "get_status", "-h", "--help"},
			nil, "get_status", []string{"-h", "--help"}},
		{"a hook that looks like an option", []string{"slurm-bb", "--", "--version"}, nil, "--version", []string{}},
		{"prolog takes --", []string{"slurm-prolog", "--"}, []string{"SLURM_JOB_ID=7", "SLURM_JOB_NODELIST=n[1-2]"},
			"prolog", []string{"7", "", "", "n[1-2]"}},
		{"prolog passes the job's uid and gid", []string{"slurm-prolog"}, []string{"SLURM_JOB_ID=7", "SLURM_JOB_UID=1001", "SLURM_JOB_GID=100", "SLURM_JOB_NODELIST=n1"},
			"prolog", []string{"7", "1001", "100", "n1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := (&fakeDaemon{reply: api.HookReply{Verdict: api.Success}}).serve(t)
			out, errOut, status := runRSA(t, c.env, append([]string{"--socket", d.sock}, c.args...)...)
			if status != 0 {
				t.Fatalf("rsa exited %d:\n%s%s", status, out, errOut)
			}
			_, hooks := d.calls()
			if len(hooks) != 1 {
				t.Fatalf("the daemon heard %d hook calls, want 1; rsa said:\n%s%s", len(hooks), out, errOut)
			}
			if got := hooks[0]; got.Hook != c.hook || !slices.Equal(append([]string{}, got.Args...), c.hookArgs) {
				t.Errorf("the daemon heard hook %q args %q, want %q %q", got.Hook, got.Args, c.hook, c.hookArgs)
			}
			if strings.HasPrefix(c.args[0], "slurm-bb") && !strings.HasPrefix(out, "SUCCESS\n") {
				t.Errorf("slurm-bb printed %q, want SUCCESS first", out)
			}
		})
	}
}

// The path file gets only RSA_* lines free of control characters, checked
// where they are written whatever the daemon sent (audit finding 1).
func TestWritePathsRefusesAnythingButRSAVariables(t *testing.T) {
	for _, c := range []struct {
		env []string
		ok  bool
	}{
		{[]string{"RSA_RAMDISK=/run/rsa/ramdisk/1/ram", "RSA_DATA_IN=/home/u/in", "RSA_JOB_ID=1"}, true},
		{[]string{"RSA_DATA_IN=/home/u/x\nBASH_ENV=/tmp/evil.sh"}, false},
		{[]string{"BASH_ENV=/tmp/evil.sh"}, false},
		{[]string{"RSA_DATA_IN"}, false},
		{[]string{"RSA_DATA_IN=/x\x1b[2J"}, false},
	} {
		path := filepath.Join(t.TempDir(), "path_file")
		err := writePaths(path, c.env)
		b, _ := os.ReadFile(path)
		if c.ok != (err == nil) || (!c.ok && len(b) > 0) {
			t.Errorf("%q: %v, wrote %q", c.env, err, b)
		}
	}
}

// TestPrologEpilogGiveUpOnADownDaemon: with no daemon, the prolog and the
// epilog of one of RSA's jobs (marked by the daemon) wait out a restart for
// 30 s, then let the job go on without RSA; those of any other job go on
// at once (issue 16, point 2). Both exit 0 (a failing PrologSlurmctld
// would requeue or hold the job) and say so.
func TestPrologEpilogGiveUpOnADownDaemon(t *testing.T) {
	for _, hook := range []string{"prolog", "epilog"} {
		for _, marked := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/marked=%v", hook, marked), func(t *testing.T) {
				t.Parallel()
				sock := filepath.Join(t.TempDir(), "no-daemon.sock")
				markers := slurm.MarkersFor(sock)
				if err := markers.Sync([]string{"8"}); err != nil {
					t.Fatal(err)
				}
				if marked {
					if err := markers.Set("7"); err != nil {
						t.Fatal(err)
					}
				}
				start := time.Now()
				_, errOut, status := runRSA(t, []string{"SLURM_JOB_ID=7", "SLURM_JOB_NODELIST=n1"}, "--socket", sock, "slurm-"+hook)
				took := time.Since(start)
				if status != 0 || !strings.Contains(errOut, "goes on without RSA") {
					t.Errorf("exit %d, %q; want 0 and the job going on without RSA", status, errOut)
				}
				switch {
				// Shorter would not ride out a restart of rsa serve.
				case marked && took < 25*time.Second:
					t.Errorf("gave up on an RSA job after %v, before the 30 s a restart may take", took)
				// A job RSA has nothing for is not held up (the bound
				// is the second, with room for a loaded machine).
				case !marked && took > 3*time.Second:
					t.Errorf("held a job that is not RSA's for %v", took)
				}
			})
		}
	}
}

// An array task's setup falls back to its array job's script, in the same
// state directory, and only for paths and ids of Slurm's own shape.
func TestArrayScript(t *testing.T) {
	cases := []struct {
		path, array, want string
		ok                bool
	}{
		{"/var/spool/slurmctld/hash.9/job.19/script", "18", "/var/spool/slurmctld/hash.8/job.18/script", true},
		{"/s/hash.3/job.123/script", "4242", "/s/hash.2/job.4242/script", true},
		{"/s/hash.9/job.19/script", "", "", false},
		{"/s/hash.9/job.19/script", "0", "", false},
		{"/s/hash.9/job.19/script", "18/../../etc", "", false},
		{"/s/job.19/script", "18", "", false},
		{"relative/hash.9/job.19/script", "18", "", false},
	}
	for _, c := range cases {
		got, ok := arrayScript(c.path, c.array)
		if got != c.want || ok != c.ok {
			t.Errorf("arrayScript(%q, %q) = %q, %v; want %q, %v", c.path, c.array, got, ok, c.want, c.ok)
		}
	}
}

// TestHooksInsideSlurmctldWithoutDaemon: while rsa serve restarts, the hooks
// slurmctld runs under its locks answer at once and let the job go on
// (a refused sbatch, a held start otherwise: issue 14's crash test), and
// say what was skipped; a hook of slurmscriptd's (setup) waits the restart
// out instead of failing the job at once.
func TestHooksInsideSlurmctldWithoutDaemon(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "no-daemon.sock")
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n#RSA capacity=1G\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"job_process", script, "1000", "1000"}, "SUCCESS\nRSA: the rsa daemon did not answer; the job's #RSA lines are checked"},
		{[]string{"paths", "7", "1000", "1000", filepath.Join(dir, "path_file")}, "SUCCESS\nRSA: the rsa daemon did not answer; the job's RSA_* variables are not set"},
		{[]string{"pools"}, "ERROR\n"},
	} {
		start := time.Now()
		out, _, status := runRSA(t, nil, append([]string{"--socket", sock, "slurm-bb", "--"}, c.args...)...)
		if status != 0 || !strings.HasPrefix(out, c.want) {
			t.Errorf("%s: exit %d, %q; want %q...", c.args[0], status, out, c.want)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("%s held slurmctld for %v", c.args[0], took)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "path_file")); err == nil {
		t.Error("paths wrote a path file without the daemon")
	}

	// setup rides out a restart: still asking after a few seconds.
	cmd := exec.Command(rsaBin, "--socket", sock, "slurm-bb", "--", "setup", "7", "1000", "1000", "0", script, "")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Errorf("setup gave up at once without the daemon: %v", err)
	case <-time.After(3 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}
