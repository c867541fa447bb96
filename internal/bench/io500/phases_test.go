package io500

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func testConfig() Config {
	return Config{Data: "/d", Results: "/r", Stonewall: 30 * time.Second, EasyBlock: "1g", HardSegments: 100, EasyFiles: 1000, HardFiles: 500}
}

// The phases' arguments are the harness' own (phase_*.c at the IO500
// commit whose IOR third_party/ior is), the caps in place of its sizes.
func TestArgs(t *testing.T) {
	c := testConfig()
	tests := []struct {
		phase string
		want  []string // in order, each once
		not   []string
	}{
		{"ior-easy-write", []string{"-t 2m", "-b 1g", "-F", "-w", "-D 30", "-O stoneWallingWearOut=1", "-o /d/ior-easy/ior_file_easy", "-O stoneWallingStatusFile=/r/ior-easy.stonewall"}, []string{"-r"}},
		{"ior-easy-read", []string{"-C", "-Q 1", "-F", "-r", "-R"}, []string{"-w", "-D"}},
		{"ior-hard-write", []string{"-t 47008", "-b 47008", "-s 100", "-w", "-D 30", "-o /d/ior-hard/file"}, []string{"-F"}},
		{"ior-hard-read", []string{"-s 100", "-r", "-R"}, []string{"-w", "-F"}},
		{"mdtest-easy-write", []string{"-n 1000", "-u", "-L", "-F", "-C", "-Y", "-W 30", "-d /d/mdtest-easy", "-x /r/mdtest-easy.stonewall"}, []string{"-w"}},
		{"mdtest-easy-stat", []string{"-u", "-T"}, []string{"-C"}},
		{"mdtest-easy-delete", []string{"-u", "-r"}, []string{"-C"}},
		{"mdtest-hard-write", []string{"-n 500", "-t", "-w 3901", "-e 3901", "-C", "-W 30", "-d /d/mdtest-hard"}, []string{"-u"}},
		{"mdtest-hard-stat", []string{"-T"}, []string{"-C", "-u"}},
		{"mdtest-hard-read", []string{"-E", "-X"}, []string{"-C"}},
		{"mdtest-hard-delete", []string{"-r"}, []string{"-C"}},
	}
	for _, tt := range tests {
		t.Run(tt.phase, func(t *testing.T) {
			args, err := c.Args(Phase{Name: tt.phase})
			if err != nil {
				t.Fatal(err)
			}
			joined := " " + strings.Join(args, " ") + " "
			for _, w := range tt.want {
				if strings.Count(joined, " "+w+" ") != 1 {
					t.Errorf("args %q: want %q once", joined, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(joined, " "+n+" ") {
					t.Errorf("args %q: want no %q", joined, n)
				}
			}
		})
	}
	if _, err := c.Args(Phase{Name: "find"}); err == nil {
		t.Error("Args(find): want an error (find runs no tool)")
	}
}

// Every phase but find has arguments, and the list is the harness' twelve
// standard phases in its order.
func TestPhases(t *testing.T) {
	var names []string
	for _, p := range Phases {
		names = append(names, p.Name)
		if p.Tool == "find" {
			continue
		}
		if _, err := testConfig().Args(p); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
	}
	want := []string{"ior-easy-write", "mdtest-easy-write", "ior-hard-write", "mdtest-hard-write", "find", "ior-easy-read",
		"mdtest-easy-stat", "ior-hard-read", "mdtest-hard-stat", "mdtest-easy-delete", "mdtest-hard-read", "mdtest-hard-delete"}
	if !slices.Equal(names, want) {
		t.Errorf("phases %v, want %v", names, want)
	}
}

func TestCheck(t *testing.T) {
	for name, mod := range map[string]func(*Config){
		"relative data":   func(c *Config) { c.Data = "d" },
		"short stonewall": func(c *Config) { c.Stonewall = time.Millisecond },
		"no easy files":   func(c *Config) { c.EasyFiles = 0 },
		"no easy block":   func(c *Config) { c.EasyBlock = "" },
	} {
		c := testConfig()
		mod(&c)
		if err := c.Check(); err == nil {
			t.Errorf("%s: Check passed, want an error", name)
		}
	}
	if err := testConfig().Check(); err != nil {
		t.Errorf("a good config: %v", err)
	}
	if testConfig().Compliant() {
		t.Error("a 30 s stonewall: Compliant, want not")
	}
}

func TestScoreOf(t *testing.T) {
	var all []Result
	for _, p := range Phases {
		v := 2.0 // every bandwidth 2 GiB/s
		if p.Group == Metadata {
			v = 8 // every metadata rate 8 kIOPS
		}
		all = append(all, Result{Phase: p.Name, Group: p.Group, Value: v})
	}
	s, err := ScoreOf(all)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(s.Bandwidth-2) > 1e-9 || math.Abs(s.Metadata-8) > 1e-9 || math.Abs(s.Total-4) > 1e-9 {
		t.Errorf("score %+v, want bw 2, md 8, score 4", s)
	}
	// A geometric mean: 1 and 4 give 2.
	uneven := slices.Clone(all)
	uneven[0].Value, uneven[2].Value, uneven[5].Value, uneven[7].Value = 1, 4, 1, 4
	if s, _ := ScoreOf(uneven); math.Abs(s.Bandwidth-2) > 1e-9 {
		t.Errorf("bw %g from 1, 4, 1, 4: want 2", s.Bandwidth)
	}
	if _, err := ScoreOf(all[1:]); err == nil || !strings.Contains(err.Error(), "ior-easy-write") {
		t.Errorf("a run without ior-easy-write: err %v, want one naming it", err)
	}
	zero := slices.Clone(all)
	zero[4].Value = 0
	if _, err := ScoreOf(zero); err == nil || !strings.Contains(err.Error(), "find") {
		t.Errorf("find at 0: err %v, want one naming find", err)
	}
	if _, err := ScoreOf(append(slices.Clone(all), all[0])); err == nil {
		t.Error("a phase twice: no error")
	}
}

// A run may be split in two: the writes, then the phases that a
// read-only file system allows, on what the writes left (read-only by
// then); the deletes and mdtest-hard-read (whose mdtest opens read-write)
// run in neither.
func TestParts(t *testing.T) {
	tests := []struct {
		part Part
		want []string
	}{
		{All, nil}, // every phase
		{Writes, []string{"ior-easy-write", "mdtest-easy-write", "ior-hard-write", "mdtest-hard-write"}},
		{Reads, []string{"find", "ior-easy-read", "mdtest-easy-stat", "ior-hard-read", "mdtest-hard-stat"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.part), func(t *testing.T) {
			var got []string
			for _, p := range Phases {
				if tt.part.Has(p) {
					got = append(got, p.Name)
				}
			}
			want := tt.want
			if want == nil {
				for _, p := range Phases {
					want = append(want, p.Name)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s runs %q, want %q", tt.part, got, want)
			}
		})
	}
	if _, err := ParsePart("reads"); err == nil || !strings.Contains(err.Error(), "give all, write or read") {
		t.Errorf("ParsePart(reads) = %v, want an error naming the parts", err)
	}
}

// The read phases on a data directory no write run left refuse, naming
// the step that is missing, before any tool starts.
func TestReadsNeedWrites(t *testing.T) {
	c := testConfig()
	c.Data, c.Results = t.TempDir(), t.TempDir()
	_, err := Runner{IOR: "/nonexistent", Ranks: 1, Part: Reads}.Run(t.Context(), c)
	if err == nil || !strings.Contains(err.Error(), "run part write first") {
		t.Fatalf("Run(Reads) with no timestamp = %v, want an error asking for the write phases first", err)
	}
}
