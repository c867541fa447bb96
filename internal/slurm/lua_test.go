package slurm

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The hooks of contrib/slurm/burst_buffer.lua, as Slurm 22.05 (11) and
// 24.05+ (13) call them.
var hooks = []string{
	"slurm_bb_job_process", "slurm_bb_pools", "slurm_bb_job_teardown", "slurm_bb_setup",
	"slurm_bb_data_in", "slurm_bb_test_data_in", "slurm_bb_real_size", "slurm_bb_paths",
	"slurm_bb_pre_run", "slurm_bb_post_run", "slurm_bb_data_out", "slurm_bb_test_data_out",
	"slurm_bb_get_status",
}

// TestBurstBufferLua runs the real Lua in Debian's lua5.1 with a stub in
// place of rsa: each hook makes exactly one rsa call with Slurm's own
// values, passes rsa's verdict and message back, and refuses anything that
// could reach the shell.
func TestBurstBufferLua(t *testing.T) {
	lua, err := exec.LookPath("lua5.1")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("lua5.1 is missing (make deps installs it)")
		}
		t.Skip("lua5.1 is not installed (make deps installs it)")
	}
	dir := t.TempDir()
	stub := filepath.Join(dir, "rsa")
	calls := filepath.Join(dir, "calls")
	// The stub logs its arguments, each ended by "|" (which the Lua never
	// passes), one call a line, and answers what the test says.
	if err := os.WriteFile(stub, []byte("#!/bin/sh\nprintf '%s|' \"$@\" >> \"$STUB_CALLS\"\necho >> \"$STUB_CALLS\"\nprintf '%b' \"$STUB_REPLY\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../../contrib/slurm/burst_buffer.lua")
	if err != nil {
		t.Fatal(err)
	}
	script := strings.Replace(string(src), `local RSA = "/usr/local/bin/rsa"`, `local RSA = "`+stub+`"`, 1)
	if script == string(src) {
		t.Fatal("burst_buffer.lua has no `local RSA = \"/usr/local/bin/rsa\"` line to point elsewhere")
	}
	bb := filepath.Join(dir, "burst_buffer.lua")
	os.WriteFile(bb, []byte(script), 0o644)

	// run calls one hook the way slurmctld would and prints rc and message.
	run := func(t *testing.T, reply, call string) (rc, msg, args string) {
		t.Helper()
		os.Remove(calls)
		driver := `slurm = { SUCCESS = 0, ERROR = -1, log_info = function() end }
dofile(arg[1])
local rc, msg = ` + call + `
io.write(tostring(rc), "\n", tostring(msg))`
		cmd := exec.Command(lua, "-", bb) // the driver on stdin, arg[1] = bb
		cmd.Stdin = strings.NewReader(driver)
		cmd.Env = append(os.Environ(), "STUB_CALLS="+calls, "STUB_REPLY="+reply)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("lua: %v\n%s", err, out)
		}
		rc, msg, _ = strings.Cut(string(out), "\n")
		b, _ := os.ReadFile(calls)
		return rc, msg, strings.TrimSpace(string(b))
	}

	t.Run("all hooks defined", func(t *testing.T) {
		var checks []string
		for _, h := range hooks {
			checks = append(checks, `assert(type(`+h+`) == "function", "`+h+`")`)
		}
		rc, _, _ := run(t, "SUCCESS\n", `(function() `+strings.Join(checks, "; ")+` return 0, "" end)()`)
		if rc != "0" {
			t.Fatal("a hook is missing")
		}
	})

	cases := []struct {
		name, call, reply string
		// arg: what rsa was called with after "slurm-bb", one space
		// between arguments; "-" for no call.
		wantRC, wantMsg, arg string
	}{
		{"job_process 22.05", `slurm_bb_job_process("/var/spool/slurm/hash.1/job.1/script")`, `SUCCESS\n`,
			"0", "", "-- job_process /var/spool/slurm/hash.1/job.1/script  "},
		{"job_process 23.02 with uid, gid and job_info", `slurm_bb_job_process("/s/script", 1001, 100, {})`, `SUCCESS\n`,
			"0", "", "-- job_process /s/script 1001 100"},
		{"job_process refusal", `slurm_bb_job_process("/s/script")`, `ERROR\nRSA: job script line 2: unknown variable\n`,
			"-1", "RSA: job script line 2: unknown variable", "-- job_process /s/script  "},
		{"pools", `slurm_bb_pools()`, `SUCCESS\n{"pools":[]}\n`, "0", `{"pools":[]}`, "-- pools"},
		{"setup drops the user's pool name", `slurm_bb_setup(7, 1001, 100, "rsa", 1048576, "/s/script")`, `SUCCESS\n`,
			"0", "", "-- setup 7 1001 100 1048576 /s/script "},
		{"setup of an array task names its array job (23.02+)", `slurm_bb_setup(19, 1001, 100, "rsa", 0, "/s/hash.9/job.19/script", {array_job_id = 18})`, `SUCCESS\n`,
			"0", "", "-- setup 19 1001 100 0 /s/hash.9/job.19/script 18"},
		{"data_in failure (22.05: no uid, gid)", `slurm_bb_data_in(7, "/s/script")`, `ERROR\nRSA stage-in failed: tape offline\n`,
			"-1", "RSA stage-in failed: tape offline", "-- data_in 7  "},
		{"data_in 23.02 passes the job's uid and gid", `slurm_bb_data_in(7, "/s/script", 1001, 100, {})`, `SUCCESS\n`,
			"0", "", "-- data_in 7 1001 100"},
		{"test_data_in busy (24.05)", `slurm_bb_test_data_in(7, "/s/script", 1001, 100, {})`, `BUSY\nstaging in\n`,
			"0", "BUSY", "-- test_data_in 7 1001 100"},
		{"paths", `slurm_bb_paths(7, "/s/script", "/s/path")`, `SUCCESS\n`, "0", "", "-- paths 7   /s/path"},
		{"paths 23.02", `slurm_bb_paths(7, "/s/script", "/s/path", 1001, 100, {})`, `SUCCESS\n`, "0", "", "-- paths 7 1001 100 /s/path"},
		{"teardown", `slurm_bb_job_teardown(7, "/s/script", "true")`, `SUCCESS\nRAMDISK released\n`,
			"0", "RAMDISK released", "-- teardown 7   true"},
		{"get_status 23.02", `slurm_bb_get_status(0, 0, "7")`, `SUCCESS\nJOBID ...\n`, "0", "JOBID ...", "-- get_status 0 0 7"},
		// scontrol show bbstat --config=/dev/zero: a user's text that
		// looks like an option reaches rsa after "--", as an argument.
		{"get_status option-like argument", `slurm_bb_get_status(1001, 100, "--config=/dev/zero")`, `SUCCESS\n`,
			"0", "", "-- get_status 1001 100 --config=/dev/zero"},
		{"get_status 22.05 option-like argument", `slurm_bb_get_status("--socket=/tmp/x", "-h")`, `SUCCESS\n`,
			"0", "", "-- get_status --socket=/tmp/x -h"},
		{"empty argument keeps its place", `slurm_bb_setup(7, 1001, 100, "rsa", "", "/s/script")`, `SUCCESS\n`, "0", "", "-- setup 7 1001 100  /s/script "},
		{"rsa broken", `slurm_bb_pre_run(7, "/s/script")`, `panic: something\n`, "-1", "panic: something", "-- pre_run 7  "},
		{"shell text refused", `slurm_bb_get_status("7; touch /tmp/owned")`, `SUCCESS\n`,
			"-1", `rsa: refusing unexpected argument "7; touch /tmp/owned"`, "-"},
		{"quotes refused", `slurm_bb_get_status("$(id)")`, `SUCCESS\n`, "-1", `rsa: refusing unexpected argument "$(id)"`, "-"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rc, msg, args := run(t, c.reply, c.call)
			if rc != c.wantRC || msg != c.wantMsg {
				t.Errorf("returned %s %q, want %s %q", rc, msg, c.wantRC, c.wantMsg)
			}
			argv := strings.Split(strings.TrimSuffix(args, "|"), "|")
			i := slices.Index(argv, "slurm-bb")
			switch {
			case c.arg == "-" && args != "":
				t.Errorf("rsa was called (%q); the hook should have refused first", args)
			case c.arg != "-" && strings.Contains(args, "\n"):
				t.Errorf("rsa was called more than once:\n%s", args)
			case c.arg != "-" && (i < 0 || !slices.Equal(argv[i+1:], strings.Split(c.arg, " "))):
				t.Errorf("rsa was called with %q, want ... slurm-bb %q", argv, strings.Split(c.arg, " "))
			}
		})
	}
}
