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
	"github.com/rsa-hpc/rsa/internal/config"
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
// where they are written whatever the daemon sent.
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
// epilog of one of RSA's jobs wait out a restart for slurm.prolog_grace,
// then let the job go on without RSA; those of any other job go on at once.
// A job is RSA's when the daemon has marked it or, for the prolog, when its
// script (read with scontrol, as the daemon reads it) has #RSA lines RSA
// takes: a job the daemon's poller has not met yet is waited for too. The
// prolog of an RSA job that gives up says why in the job's Slurm comment.
// Both exit 0 (a failing PrologSlurmctld would requeue or hold the job) and
// say so.
func TestPrologEpilogGiveUpOnADownDaemon(t *testing.T) {
	// The grace an RSA job's hook must wait out. Any other job gets an
	// hour it must not wait: runRSA's deadline would kill a run that
	// waited it, and the exit status would fail the case.
	const grace, never = 3 * time.Second, time.Hour
	const rsaScript = "#!/bin/bash\n#RSA_DATA_OUT=/home/u/out\ntrue\n"
	cases := []struct {
		name   string
		hook   string
		marked bool
		// script is what scontrol write batch_script prints; "": it fails.
		script string
		rsas   bool // the job is RSA's: its hook waits out the grace
	}{
		{"prolog/marked", "prolog", true, "", true},
		{"epilog/marked", "epilog", true, "", true},
		{"prolog/unmarked, script unreadable", "prolog", false, "", false},
		{"epilog/unmarked", "epilog", false, "", false},
		{"prolog/unmarked, #RSA lines", "prolog", false, rsaScript, true},
		{"prolog/unmarked, no #RSA line", "prolog", false, "#!/bin/bash\ntrue\n", false},
		// Polling never takes a job whose #RSA lines are wrong.
		{"prolog/unmarked, a bad #RSA line", "prolog", false, "#!/bin/bash\n#RSA_DATA_INN=/x\ntrue\n", false},
		// A job the daemon never marked got no RAMDISK to unmount.
		{"epilog/unmarked, #RSA lines", "epilog", false, rsaScript, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			sock := filepath.Join(dir, "no-daemon.sock")
			markers := slurm.Markers{Dir: (&config.Config{Socket: sock}).MarkersDir()}
			if err := markers.Sync([]string{"8"}); err != nil {
				t.Fatal(err)
			}
			if c.marked {
				if err := markers.Set("7"); err != nil {
					t.Fatal(err)
				}
			}
			bin, calls := fakeScontrol(t, c.script)
			wait := never
			if c.rsas {
				wait = grace
			}
			conf := filepath.Join(dir, "rsa.toml")
			if err := os.WriteFile(conf, fmt.Appendf(nil, "[slurm]\nprolog_grace = %q\nbin = %q\n", wait, bin), 0o600); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, errOut, status := runRSA(t, []string{"SLURM_JOB_ID=7", "SLURM_JOB_NODELIST=n1"}, "--config", conf, "--socket", sock, "slurm-"+c.hook)
			took := time.Since(start)
			if status != 0 || !strings.Contains(errOut, "goes on without RSA") {
				t.Errorf("exit %d, %q; want 0 and the job going on without RSA", status, errOut)
			}
			// Shorter would not ride out a restart of rsa serve.
			if c.rsas && took < grace {
				t.Errorf("gave up on an RSA job after %v, before slurm.prolog_grace (%v)", took, grace)
			}
			updates := slices.DeleteFunc(strings.Split(readFile(calls), "\n"), func(l string) bool { return !strings.HasPrefix(l, "update ") })
			switch {
			case c.rsas && c.hook == "prolog":
				if want := "update JobId=7 Comment=RSA: rsa serve did not answer within slurm.prolog_grace (3s)"; len(updates) != 1 || !strings.HasPrefix(updates[0], want) {
					t.Errorf("scontrol %q, want one %q...", updates, want)
				}
			case len(updates) > 0:
				t.Errorf("the job's comment was set for a job that waited for nothing: scontrol %q", updates)
			}
		})
	}
}

// fakeScontrol is a directory (slurm.bin) whose scontrol prints script for
// write batch_script (fails when script is "") and logs every call, one
// line each, to the file calls.
func fakeScontrol(t *testing.T, script string) (bin, calls string) {
	t.Helper()
	dir := t.TempDir()
	bin, calls = filepath.Join(dir, "bin"), filepath.Join(dir, "calls")
	job := filepath.Join(dir, "job.sh")
	write := "exit 1"
	if script != "" {
		if err := os.WriteFile(job, []byte(script), 0o600); err != nil {
			t.Fatal(err)
		}
		write = "exec cat " + job
	}
	sh := fmt.Sprintf("#!/bin/sh\necho \"$*\" >>%s\nif [ \"$1\" = write ]; then %s; fi\n", calls, write)
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "scontrol"), []byte(sh), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, calls
}

// TestGraceFor: the hooks slurmctld runs under its locks, and bbstat's
// get_status, never wait for a daemon that is down; the prolog and the
// epilog wait slurm.prolog_grace; the hooks Slurm blocks in while a job is
// pending wait as long as any client; slurmscriptd's others a while.
func TestGraceFor(t *testing.T) {
	const prolog = 7 * time.Second
	cases := []struct {
		hook string
		want time.Duration
	}{
		{"job_process", 0}, {"paths", 0}, {"pools", 0}, {"get_status", 0},
		{"prolog", prolog}, {"epilog", prolog},
		{"data_in", daemonGrace}, {"data_out", daemonGrace}, {"pre_run", daemonGrace}, {"teardown", daemonGrace},
		{"setup", 2 * time.Minute}, {"post_run", 2 * time.Minute}, {"test_data_in", 2 * time.Minute}, {"real_size", 2 * time.Minute},
	}
	for _, c := range cases {
		if got := graceFor(c.hook, prolog); got != c.want {
			t.Errorf("graceFor(%q) = %v, want %v", c.hook, got, c.want)
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

// TestHooksInsideSlurmctldWithoutDaemon: while rsa serve restarts, the
// hooks slurmctld runs under its locks answer at once and let the job go
// on (otherwise a restart of rsa serve would refuse an sbatch or hold a
// start), and say what was skipped; a hook of slurmscriptd's (setup) waits
// the restart out instead of failing the job at once.
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
		// How long they wait for the daemon is graceFor's: not at all
		// (TestGraceFor).
		out, _, status := runRSA(t, nil, append([]string{"--socket", sock, "slurm-bb", "--"}, c.args...)...)
		if status != 0 || !strings.HasPrefix(out, c.want) {
			t.Errorf("%s: exit %d, %q; want %q...", c.args[0], status, out, c.want)
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
