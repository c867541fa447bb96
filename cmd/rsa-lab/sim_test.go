package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsa-hpc/rsa/internal/sim"
)

// simConfig parses args as rsa-lab sim does and returns what it would run.
func simConfig(t *testing.T, args ...string) (sim.Config, sim.Preset, error) {
	t.Helper()
	cmd, f := newSimCmd()
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatalf("rsa-lab sim %s: %v", strings.Join(args, " "), err)
	}
	return f.config(cmd)
}

// A preset sets every parameter, flags change it, and the warnings fire
// for a preset mixed with flags of another era, never for a preset alone.
func TestSimPresetFlags(t *testing.T) {
	modern := sim.Modern()
	tests := []struct {
		name     string
		args     []string
		preset   string
		check    func(c sim.Config) bool
		warnings []string // each a warning's part, in order
	}{
		{"no preset: thesis", nil, "thesis", func(c sim.Config) bool { return c.FS == sim.Defaults().FS && c.RSA == sim.Defaults().RSA }, nil},
		{"thesis", []string{"--preset", "thesis"}, "thesis", func(c sim.Config) bool { return c.RSA == sim.Defaults().RSA }, nil},
		{"modern", []string{"--preset", "modern"}, "modern", func(c sim.Config) bool { return c.FS == modern.FS && c.RSA == modern.RSA }, nil},
		{"modern, more RAM", []string{"--preset=modern", "--ram", "2T"}, "modern", func(c sim.Config) bool {
			return c.RSA.RAM == 2<<40 && c.RSA.Nodes == modern.RSA.Nodes && c.FS == modern.FS
		}, nil},
		{"modern, the thesis' rsync as the flags print it",
			[]string{"--preset", "modern", "--stage-in-rate", "39.38MiB/s", "--stage-out-rate", "39.38MiB/s"}, "modern", nil,
			[]string{"--stage-in-rate", "--stage-out-rate", "--fs-bandwidth 20.0 GiB/s is today's speed"}},
		{"thesis, a modern file system", []string{"--preset", "thesis", "--fs-bandwidth", "20G", "--fs-node-bandwidth", "100Gbit"}, "thesis", nil,
			[]string{"--stage-in-rate", "--stage-out-rate", "--fs-bandwidth 20.0 GiB/s is today's speed"}},
		{"modern, no per-client limit", []string{"--preset", "modern", "--fs-node-bandwidth", "0"}, "modern", nil,
			[]string{"--stage-in-rate", "--stage-out-rate"}},
		{"--testbed thesis", []string{"--testbed", "thesis"}, "testbed", func(c sim.Config) bool { return c.RSA.Uplink > 0 }, nil},
		{"--testbed measured", []string{"--testbed", "measured"}, "measured", func(c sim.Config) bool { return c.RSA.StageFileCost == 0 }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, p, err := simConfig(t, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if p.Name != tt.preset {
				t.Errorf("preset %s, want %s", p.Name, tt.preset)
			}
			if tt.check != nil && !tt.check(c) {
				t.Errorf("parameters %+v", c)
			}
			got := c.Warnings()
			if len(got) != len(tt.warnings) {
				t.Fatalf("%d warnings, want %d: %q", len(got), len(tt.warnings), got)
			}
			for i, w := range tt.warnings {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %d is %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
	for _, bad := range [][]string{
		{"--preset", "bluegene"},
		{"--testbed", "bluegene"},
		{"--testbed", "thesis", "--preset", "modern"},
	} {
		if _, _, err := simConfig(t, bad...); err == nil {
			t.Errorf("rsa-lab sim %s: accepted", strings.Join(bad, " "))
		}
	}
}

// Every preset's values print as flags that read back to the same values:
// --help's list of what each preset sets can be typed back.
func TestSimPresetParamsRoundTrip(t *testing.T) {
	for _, p := range sim.Presets() {
		c := p.Config()
		for _, sp := range simParams() {
			v := sp.get(&c)
			var back sim.Config
			if err := sp.set(&back, v); err != nil {
				t.Errorf("preset %s: --%s=%s: %v", p.Name, sp.name, v, err)
				continue
			}
			if again := sp.get(&back); again != v {
				t.Errorf("preset %s: --%s=%s reads back as %s", p.Name, sp.name, v, again)
			}
		}
	}
}

// rsa-lab sim --help lists every preset and what it sets, and the sacct
// command --from-sacct reads.
func TestSimHelpListsPresets(t *testing.T) {
	cmd, _ := newSimCmd()
	help := cmd.Long
	for _, p := range sim.Presets() {
		if !strings.Contains(help, "  "+p.Name+": ") {
			t.Errorf("--help does not list preset %s", p.Name)
		}
	}
	for _, want := range []string{
		"--fs-bandwidth=20GiB/s", "--ram=1.4T", "--rsa-link=100Gbit", "--stage-in-rate=3GiB/s", // modern
		"--rsa-uplink=57.10MiB/s", // testbed
		sim.SacctCommand, "--starttime",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("--help does not say %q", want)
		}
	}
}

// runSimCmd runs rsa-lab sim with args and returns its standard output and
// error.
func runSimCmd(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd, _ := newSimCmd()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err = cmd.Execute()
	return out.String(), errb.String(), err
}

const sacctTestdata = "../../internal/sim/testdata/"

func TestSimFromSacct(t *testing.T) {
	out, _, err := runSimCmd(t, "--from-sacct", sacctTestdata+"sacct.txt", "--nodes", "16", "--preset", "modern", "--proportion", "4", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep simReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if rep.Sacct == nil || rep.Sacct.Jobs != 9 || rep.Sacct.Steps != 4 || rep.Sacct.NotStarted != 2 || rep.Sacct.Running != 1 {
		t.Errorf("sacct %+v, want 9 jobs, 4 steps, 2 never started, 1 running", rep.Sacct)
	}
	if rep.Preset != "modern" || rep.WithoutRSA == nil || rep.WithoutRSA.Jobs != 8 || rep.WithRSA == nil || rep.WithRSA.Nodes != 16 {
		t.Errorf("report: preset %s, runs %+v / %+v", rep.Preset, rep.WithoutRSA, rep.WithRSA)
	}
	if len(rep.Warnings) > 0 {
		t.Errorf("warnings %q", rep.Warnings)
	}

	out, _, err = runSimCmd(t, "--from-sacct", sacctTestdata+"sacct.txt", "--nodes", "16", "--gantt", "1012:2")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "sacct listing "+sacctTestdata+"sacct.txt: 17 lines, 9 jobs that ran") ||
		!strings.Contains(out, "parameters: preset thesis, changed by --nodes") {
		t.Errorf("text output:\n%s", out)
	}

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no --nodes", []string{"--from-sacct", sacctTestdata + "sacct.txt"}, "give --nodes"},
		{"with a trace", []string{"--from-sacct", sacctTestdata + "sacct.txt", "--nodes", "8", "x.swf"}, "not both"},
		{"--procs-per-node", []string{"--from-sacct", sacctTestdata + "sacct.txt", "--nodes", "8", "--procs-per-node", "4"}, "--procs-per-node does not apply"},
		{"a bad line", []string{"--from-sacct", sacctTestdata + "sacct_bad.txt", "--nodes", "8"}, `sacct line 4: field 7 (Timelimit) is "1-25:00:00"`},
		{"no such file", []string{"--from-sacct", "/nonexistent/x", "--nodes", "8"}, "--from-sacct: open /nonexistent/x"},
		{"--gantt of a job not listed", []string{"--from-sacct", sacctTestdata + "sacct.txt", "--nodes", "8", "--gantt", "1005:3"}, "the trace has no job 1005"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runSimCmd(t, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// The warnings reach standard error in text, and the JSON's warnings: for
// a preset mixed with another era's flags, not for the preset alone.
func TestSimWarnPrinted(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "t.swf")
	if err := os.WriteFile(trace, []byte("; MaxNodes: 4\n1 0 -1 60 2 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want int // warnings
	}{
		{[]string{"--preset", "modern"}, 0},
		{[]string{"--preset", "thesis"}, 0},
		{[]string{"--preset", "modern", "--stage-in-rate", "39.38MiB/s", "--stage-out-rate", "39.38MiB/s"}, 3},
		{[]string{"--preset", "thesis", "--rsa-link", "100Gbit"}, 1},
	}
	for _, tt := range tests {
		_, stderr, err := runSimCmd(t, append(tt.args, trace)...)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(stderr, "rsa-lab sim: warning:"); n != tt.want {
			t.Errorf("rsa-lab sim %s: %d warnings on standard error, want %d:\n%s", strings.Join(tt.args, " "), n, tt.want, stderr)
		}
		out, _, err := runSimCmd(t, append(tt.args, "--json", trace)...)
		if err != nil {
			t.Fatal(err)
		}
		var rep simReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		if len(rep.Warnings) != tt.want {
			t.Errorf("rsa-lab sim %s --json: warnings %q, want %d", strings.Join(tt.args, " "), rep.Warnings, tt.want)
		}
	}
}
