package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// hostile is text a user controls (a path, a stage program's last line of
// stderr) with what would act on a terminal: clear screen, window title,
// carriage return, C1 CSI, a byte that is not UTF-8, a bidi override.
const hostile = "x\x1b[2J\x1b]0;owned\x07\rfake\u009b1m\x9b\xff\u202eevil"

// TestOutputEscaped: no command prints the daemon's strings raw.
func TestOutputEscaped(t *testing.T) {
	j := api.JobView{Job: job.Job{ID: 1, State: lifecycle.Finished, RSA: lifecycle.StageOutFailed, Version: 1,
		User: hostile, Error: hostile, Ramdisk: "/run/rsa/" + hostile, Spec: job.Spec{SchedulerID: hostile, Output: hostile}}}
	d := (&fakeDaemon{
		job:      j,
		events:   []job.Event{{JobID: 1, At: time.Unix(1, 0), Kind: "fail", Message: hostile}},
		stageLog: "copied\n" + hostile + "\n\tdone\n",
		nodes:    []api.NodeView{{Name: hostile, Engine: hostile}},
		removed:  []string{hostile},
		version:  api.VersionInfo{Version: hostile, Config: hostile},
		reply:    api.HookReply{Verdict: api.Success, Message: "JOBID\n" + hostile},
	}).serve(t)
	cases := []struct {
		args []string
		json bool
	}{
		{args: []string{"status", "--all"}},
		{args: []string{"status", "--json"}, json: true},
		{args: []string{"wait", "1"}},
		{args: []string{"log", "1"}},
		{args: []string{"log", "1", "--json"}, json: true},
		{args: []string{"cancel", "1", "--json"}, json: true},
		{args: []string{"nodes"}},
		{args: []string{"gc"}},
		{args: []string{"version"}},
		{args: []string{"slurm-bb", "--", "get_status"}},
		{args: []string{"slurm-prolog"}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			out, errOut, _ := runRSA(t, []string{"SLURM_JOB_ID=1"}, append([]string{"--socket", d.sock}, c.args...)...)
			all := out + errOut
			if rawControls(all) {
				t.Errorf("raw control characters reach the terminal:\n%q", all)
			}
			if !strings.Contains(all, `\u001b[2J`) {
				t.Errorf("the hostile text is not shown escaped:\n%s", all)
			}
			if c.json && !json.Valid([]byte(out)) {
				t.Errorf("not JSON any more:\n%s", out)
			}
		})
	}
}

// TestRunOutputEscaped: rsa run's progress messages quote the daemon too.
func TestRunOutputEscaped(t *testing.T) {
	d := (&fakeDaemon{job: api.JobView{Job: job.Job{ID: 1, State: lifecycle.OnDeck, RSA: lifecycle.Ineligible,
		Version: 1, Error: hostile}}}).serve(t)
	out, errOut, status := runRSA(t, nil, "--socket", d.sock, "run", "--", "true")
	if status != 0 || !strings.Contains(errOut, `runs without RSA: x\u001b[2J`) {
		t.Fatalf("rsa run exited %d, saying:\n%s", status, errOut)
	}
	if rawControls(out + errOut) {
		t.Errorf("raw control characters reach the terminal:\n%q", out+errOut)
	}
}

// rawControls reports whether s holds what hostile puts on a terminal
// (checked here without textsafe, which is under test).
func rawControls(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\t' || 0x7f <= r && r <= 0x9f || r == '\u202e' {
			return true
		}
	}
	return false
}

// TestStatusTable: hostile cells do not shift the table's columns.
func TestStatusTable(t *testing.T) {
	d := (&fakeDaemon{job: api.JobView{Job: job.Job{ID: 1, State: lifecycle.Running, RSA: lifecycle.InUseIn,
		User: "a\tb\nc", Spec: job.Spec{SchedulerID: "7\t8"}}}}).serve(t)
	out, errOut, status := runRSA(t, nil, "--socket", d.sock, "status")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if status != 0 || len(lines) != 2 {
		t.Fatalf("rsa status exited %d and printed %d lines, want a header and one job:\n%s%s", status, len(lines), out, errOut)
	}
	for i, want := range []string{"1", `7\t8`, `a\tb\nc`, "RUNNING", "INUSE_IN"} {
		if f := strings.Fields(lines[1]); len(f) <= i || f[i] != want {
			t.Errorf("column %d of %q is not %q", i+1, lines[1], want)
		}
	}
}
