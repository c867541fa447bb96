package slurm

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	appU := "#!/bin/bash\n\n# set stage-in data directory:\n#RSA_DATA_IN=/home/u/test8/input\n# custom\n#RSA_STAGE_IN=/home/u/stage-in.sh\n\n" +
		"#RSA_DATA_OUT=/home/u/test8/results\n#RSA_STAGE_OUT=/home/u/stage-out.sh\n#RSA_DELAY=600\nmpirun ./x\n#RSA_DATA_IN=/ignored\n"
	r, ok, err := Parse([]byte(appU))
	if err != nil || !ok {
		t.Fatalf("App. U script: ok=%v err=%v", ok, err)
	}
	s := r.Spec
	if s.Input != "/home/u/test8/input" || s.Output != "/home/u/test8/results" || s.StageIn != "/home/u/stage-in.sh" ||
		s.StageOut != "/home/u/stage-out.sh" || s.Delay != 600*time.Second {
		t.Fatalf("App. U script parsed as %+v", s)
	}

	cases := []struct {
		name, script string
		ok           bool
		err          string // substring; "" for success
		check        func(Request) bool
	}{
		{"no directives", "#!/bin/sh\n#SBATCH -N 1\necho hi\n", false, "", nil},
		{"after the first command", "#!/bin/sh\necho hi\n#RSA_DATA_IN=/a\n", false, "", nil},
		{"key form", "#!/bin/sh\n#RSA in=/a out=/b capacity=2G pool=rsa delay=5m\n", true, "",
			func(r Request) bool {
				return r.Spec.Capacity == 2<<30 && r.Pool == "rsa" && r.Spec.Delay == 5*time.Minute && r.Spec.Output == "/b"
			}},
		{"built-in modes", "#RSA_DATA_IN=/a\n#RSA_STAGE_IN=unpack\n#RSA_DATA_OUT=/b\n#RSA_STAGE_OUT=pack\n", true, "",
			func(r Request) bool { return r.Spec.StageIn == "unpack" && r.Spec.StageOut == "pack" }},
		{"delay unset", "#RSA_DATA_OUT=/b\n", true, "", func(r Request) bool { return r.Spec.Delay < 0 }},
		{"unknown variable", "#!/bin/sh\n#RSA_DATA_INN=/a\n", true, "line 2", nil},
		{"unknown key", "#RSA in=/a colour=red\n", true, `"colour=red" is not a key=value`, nil},
		{"unknown directive", "#RSAX in=/a\n", true, "unknown directive #RSAX", nil},
		{"relative path", "#RSA_DATA_IN=data/in\n", true, "clean absolute path", nil},
		{"dot-dot path", "#RSA_DATA_OUT=/a/../b\n", true, "clean absolute path", nil},
		{"bad delay", "#RSA_DATA_OUT=/b\n#RSA_DELAY=soon\n", true, "delay \"soon\"", nil},
		{"bad capacity", "#RSA capacity=lots pool=rsa in=/a\n", true, "capacity \"lots\"", nil},
		{"capacity without pool", "#RSA capacity=1G in=/a\n", true, "capacity= and pool= go together", nil},
		{"twice", "#RSA_DATA_IN=/a\n#RSA in=/b\n", true, "already set on line 1", nil},
		{"empty value", "#RSA_DATA_IN=\n", true, "has no value", nil},
		{"missing =", "#RSA_DATA_IN /a\n", true, "unknown variable", nil},
		{"nothing to do", "#RSA_DELAY=5\n", true, "nothing to accelerate", nil},
		{"relative stage program", "#RSA_DATA_IN=/a\n#RSA_STAGE_IN=./s.sh\n", true, "stage-in program", nil},
		// Control characters and bytes that are not UTF-8 (FuzzParse
		// found them accepted), each refused with its line.
		{"escape in a path", "#!/bin/sh\n#RSA_DATA_IN=/a\x1b[2Jb\n", true, `line 2 "#RSA_DATA_IN=/a\x1b[2Jb": the value of in "/a\x1b[2Jb" contains the control character U+001B`, nil},
		{"NUL in a path", "#RSA in=/a\x00b\n", true, "U+0000", nil},
		{"CR inside a path", "#RSA_DATA_OUT=/a\rb\r\n", true, "U+000D", nil},
		{"tab inside a path", "#RSA_DATA_OUT=/a\tb\n", true, "U+0009", nil},
		{"C1 in a path", "#RSA_DATA_IN=/a\u009bb\n", true, "U+009B", nil},
		{"DEL in the pool", "#RSA pool=p\x7f capacity=1G in=/a\n", true, `the value of pool "p\x7f" contains the control character U+007F`, nil},
		{"not UTF-8", "#RSA_DATA_IN=/a\xffb\n", true, "is not valid UTF-8", nil},
		{"stage program", "#RSA_DATA_IN=/a\n#RSA_STAGE_IN=/s\x1b]0;x\x07\n", true, "line 2", nil},
		{"line too long", "#RSA_DATA_IN=/a\n#" + strings.Repeat("x", 1<<20) + "\n", true, "line 2", nil},
		{"control in a variable's name", "#RSA_\x1b]0;x\x07=/a\n", true, `unknown variable RSA_\u001b]0;x\u0007;`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, ok, err := Parse([]byte(c.script))
			if ok != c.ok {
				t.Errorf("ok = %v, want %v", ok, c.ok)
			}
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("error %v, want one containing %q", err, c.err)
			}
			if c.check != nil && !c.check(r) {
				t.Errorf("parsed as %+v", r)
			}
		})
	}
}

func TestExpandHosts(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		bad  bool
	}{
		{"n1", []string{"n1"}, false},
		{"n[1-3],m2", []string{"n1", "n2", "n3", "m2"}, false},
		{"n[1,3-4]", []string{"n1", "n3", "n4"}, false},
		{"c[01-02]", []string{"c01", "c02"}, false},
		{"r[1-2]n[1-2]", []string{"r1n1", "r1n2", "r2n1", "r2n2"}, false},
		{"", nil, false},
		{"n[3-1]", nil, true},
		{"n[x]", nil, true},
		{"n[0-9]x,m", []string{"n0x", "n1x", "n2x", "n3x", "n4x", "n5x", "n6x", "n7x", "n8x", "n9x", "m"}, false},
		{"n[008-010]", []string{"n008", "n009", "n010"}, false},
		// Bounded before anything is allocated (fuzzing: a few bytes
		// asked for billions of names).
		{"n[0-999999999]", nil, true},
		{"n[0-99999]x[0-99999]", nil, true},
		{"n[0-9999999999]", nil, true},
		{"n[" + strings.Repeat("0-99999,", 4) + "0]", nil, true},
		{"n[1-" + strings.Repeat("9", 30) + "]", nil, true},
		{"n[1-+5]", nil, true},
		{strings.Repeat("x", 300), nil, true},
		{strings.Repeat("[1]", 300), nil, true},
		{"n[" + strings.Repeat("0", 300) + "1]", nil, true},
		// Not host names.
		{"../../etc", nil, true},
		{"..", nil, true},
		{"n[1]/x", nil, true},
		{"a b", nil, true},
		{"n\x00", nil, true},
		{"n\x1b[2J", nil, true},
		{"n[1]]", nil, true},
		{"a],b", nil, true},
		{"n\xff", nil, true},
	}
	for _, c := range cases {
		got, err := ExpandHosts(c.in)
		if (err != nil) != c.bad || !slices.Equal(got, c.want) {
			t.Errorf("ExpandHosts(%q) = %v, %v; want %v (error %v)", c.in, got, err, c.want, c.bad)
		}
	}
	// The bound is the count of names: a list of exactly maxHosts passes.
	if got, err := ExpandHosts(fmt.Sprintf("n[1-%d]", maxHosts)); err != nil || len(got) != maxHosts {
		t.Errorf("%d names: %d, %v", maxHosts, len(got), err)
	}
	if _, err := ExpandHosts(fmt.Sprintf("n[1-%d],m", maxHosts)); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d host names", maxHosts)) {
		t.Errorf("%d names: %v", maxHosts+1, err)
	}
	// A bound of the caller's: exactly it passes, one more does not,
	// over items and within a product.
	for _, c := range []struct {
		in    string
		limit int
		ok    bool
	}{{"n[1-10]", 10, true}, {"n[1-11]", 10, false}, {"n[1-6],m[1-5]", 10, false}, {"r[1-2]n[1-5]", 10, true}, {"r[1-3]n[1-4]", 10, false}} {
		got, err := ExpandHostsMax(c.in, c.limit)
		if c.ok && (err != nil || len(got) > c.limit) || !c.ok && (err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d host names", c.limit))) {
			t.Errorf("ExpandHostsMax(%q, %d) = %d names, %v", c.in, c.limit, len(got), err)
		}
	}
}

func TestParseSqueue(t *testing.T) {
	js, err := parseSqueue([]byte("12|PENDING|Resources|2|(null)|2026-11-22T10:00:00|1001|1001\n13|RUNNING|None|1|n1|N/A|0|0\n"))
	if err != nil || len(js) != 2 {
		t.Fatalf("%v %v", js, err)
	}
	if !js[0].Pending() || js[0].NodeList != "" || js[0].Start.IsZero() || js[0].UID != 1001 || !js[1].Running() || js[1].Ended() {
		t.Fatalf("parsed %+v", js)
	}
	far := time.Now().Add(365 * 24 * time.Hour).Format("2006-01-02T15:04:05")
	if js, err := parseSqueue([]byte("14|PENDING|Resources|1|(null)|" + far + "|1001|1001\n")); err != nil || !js[0].Start.IsZero() {
		t.Errorf("Slurm's one-year placeholder was read as an expected start: %+v %v", js, err)
	}
	if _, err := parseSqueue([]byte("garbage\n")); err == nil {
		t.Fatal("garbage accepted")
	}
}

func TestParseVersion(t *testing.T) {
	for _, c := range []struct {
		in           string
		major, minor int
		bad          bool
	}{
		{"slurm 22.05.8\n", 22, 5, false},
		{"slurm-wlm 23.02.0", 23, 2, false},
		{"slurm 25.11.7", 25, 11, false},
		{"slurm", 0, 0, true},
		{"scontrol: fatal: Could not establish a configuration source", 0, 0, true},
		{"slurm x.y", 0, 0, true},
	} {
		major, minor, err := ParseVersion(c.in)
		if major != c.major || minor != c.minor || (err != nil) != c.bad {
			t.Errorf("ParseVersion(%q) = %d, %d, %v", c.in, major, minor, err)
		}
	}
}

// The node count sbatch would read from the script's own lines: what the
// sbatch-time warning about a job too small for RSA goes by.
func TestScriptNodes(t *testing.T) {
	cases := []struct {
		lines string
		want  int
	}{
		{"", 0},
		{"#SBATCH -N 2", 2},
		{"#SBATCH -N2", 2},
		{"#SBATCH --nodes=4-8", 4},
		{"#SBATCH --nodes 16", 16},
		{"#SBATCH -n 64 -N 3 --exclusive", 3},
		{"#SBATCH -N 2\n#SBATCH -N 200", 200},
		{"#SBATCH --ntasks=8", 0},
		{"#SBATCH -N", 0},
		{"#SBATCH -N many", 0},
		{"#SBATCHX -N 2", 0},
		{"# SBATCH -N 2", 0},
		{"#SBATCH -N 2\necho hi\n#SBATCH -N 500", 2}, // Slurm stops at the first command
	}
	for _, c := range cases {
		r, _, err := Parse([]byte("#!/bin/bash\n" + c.lines + "\n#RSA_DATA_IN=/in\ntrue\n"))
		if err != nil && !strings.Contains(c.lines, "echo") {
			t.Errorf("%q: %v", c.lines, err)
		}
		if r.ScriptNodes != c.want {
			t.Errorf("%q: %d nodes, want %d", c.lines, r.ScriptNodes, c.want)
		}
	}
}

func TestCountNodes(t *testing.T) {
	cases := []struct {
		out  string
		want int
	}{
		{"", 0},
		{"c1\n", 1},
		{"c1\nc2\n", 2},
		{"c1\nc2\nc1\n", 2}, // c1 in two partitions
		{"  c1 \n\n", 1},
	}
	for _, c := range cases {
		if got := countNodes([]byte(c.out)); got != c.want {
			t.Errorf("countNodes(%q) = %d, want %d", c.out, got, c.want)
		}
	}
}
