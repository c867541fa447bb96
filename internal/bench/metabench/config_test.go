package metabench

import (
	"slices"
	"strings"
	"testing"
)

func TestParticipants(t *testing.T) {
	tests := []struct {
		nproc int
		proc0 bool
		want  int
		ranks []int // the process number of each participant
	}{
		{nproc: 1, want: 1, ranks: []int{0}},
		{nproc: 1, proc0: true, want: 1, ranks: []int{0}},
		{nproc: 2, want: 1, ranks: []int{1}},
		{nproc: 4, want: 3, ranks: []int{1, 2, 3}},
		{nproc: 4, proc0: true, want: 4, ranks: []int{0, 1, 2, 3}},
		{nproc: 8, want: 7, ranks: []int{1, 2, 3, 4, 5, 6, 7}},
	}
	for _, tt := range tests {
		c := Config{NProc: tt.nproc, Proc0: tt.proc0}
		if got := c.Participants(); got != tt.want {
			t.Errorf("nproc %d, -0 %v: %d participants, want %d", tt.nproc, tt.proc0, got, tt.want)
		}
		var ranks []int
		for k := range c.Participants() {
			ranks = append(ranks, c.rank(k))
		}
		if !slices.Equal(ranks, tt.ranks) {
			t.Errorf("nproc %d, -0 %v: participants are processes %v, want %v", tt.nproc, tt.proc0, ranks, tt.ranks)
		}
	}
}

func TestPhases(t *testing.T) {
	all := []Phase{CreateA, CreateB, CreateC, StatA, StatB, UtimeA, UtimeB, AppendA, AppendB, Untar, DeleteA, DeleteB}
	tests := []struct {
		name string
		c    Config
		want []Phase
	}{
		{"none means all", Config{}, all},
		{"-C", Config{Create: true}, []Phase{CreateA, CreateB, CreateC}},
		{"-S -T", Config{Stat: true, Untar: true}, []Phase{StatA, StatB, Untar}},
		{"delete alone", Config{Delete: true}, []Phase{DeleteA, DeleteB}},
	}
	for _, tt := range tests {
		if got := tt.c.Phases(); !slices.Equal(got, tt.want) {
			t.Errorf("%s: phases %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	good := Config{NFile: 10, NByte: 16, Freq: 5, NProc: 3, Dirs: []string{dir}}
	tests := []struct {
		name   string
		change func(*Config)
		want   string // in the error; empty for none
	}{
		{"good", func(*Config) {}, ""},
		{"no processes", func(c *Config) { c.NProc = 0 }, "at least 1 (-n)"},
		{"no files", func(c *Config) { c.NFile = 0 }, "-c 0"},
		{"fewer files than participants", func(c *Config) { c.NFile = 1 }, "raise -c to at least 2"},
		{"no batch", func(c *Config) { c.Freq = 0 }, "-f 0"},
		{"empty append", func(c *Config) { c.NByte = 0 }, "-b 0"},
		{"empty append without -A", func(c *Config) { c.NByte = 0; c.Create = true }, ""},
		{"no dir", func(c *Config) { c.Dirs = nil }, "give one with -w"},
		{"relative dir", func(c *Config) { c.Dirs = []string{"rel"} }, "give an absolute path"},
		{"missing dir", func(c *Config) { c.Dirs = []string{dir + "/missing"} }, "no such file"},
		{"missing tarball", func(c *Config) { c.Tarball = dir + "/none.tar" }, "--tarball"},
		{"empty tree", func(c *Config) { c.Tree = Tree{Dirs: 1} }, "0 files"},
	}
	for _, tt := range tests {
		c := good
		tt.change(&c)
		err := c.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want one saying %q", tt.name, err, tt.want)
		}
	}
}
