package thesis

import (
	"strings"
	"testing"
)

func TestProbeArgs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     Probe
		files int
		args  string
	}{
		{"IOR streams", Probe{Tool: ProbeIOR, IOR: "/p", Ranks: 16, Size: 32 << 20}, 16,
			"-a POSIX -w -e -F -k -t 1048576 -b 33554432 -o /d/ior"},
		{"IOR small files, a transfer each", Probe{Tool: ProbeIOR, IOR: "/p", Ranks: 2, Size: 4096}, 2,
			"-a POSIX -w -e -F -k -t 4096 -b 4096 -o /d/ior"},
		{"mdtest creates", Probe{Tool: ProbeMdtest, IOR: "/p", Ranks: 16, PerRank: 32, Size: 4096}, 512,
			"-C -F -n 32 -w 4096 -y -d /d"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.p.Check(); err != nil {
				t.Fatal(err)
			}
			if got := tc.p.Files(); got != tc.files {
				t.Errorf("Files() = %d, want %d", got, tc.files)
			}
			if got := strings.Join(tc.p.Args("/d"), " "); got != tc.args {
				t.Errorf("Args = %q\nwant %q", got, tc.args)
			}
		})
	}
}

func TestProbeCheck(t *testing.T) {
	ok := Probe{Tool: ProbeMdtest, IOR: "/p", Ranks: 1, PerRank: 1, Size: 1}
	for _, tc := range []struct {
		name string
		edit func(*Probe)
		want string // in the error
	}{
		{"tool", func(p *Probe) { p.Tool = "fio" }, "give ior or mdtest"},
		{"prefix", func(p *Probe) { p.IOR = "" }, "--ior"},
		{"ranks", func(p *Probe) { p.Ranks = 0 }, "0 ranks"},
		{"files per rank", func(p *Probe) { p.PerRank = 0 }, "0 files per rank"},
		{"size", func(p *Probe) { p.Size = 0 }, "file size 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ok
			tc.edit(&p)
			if err := p.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check() = %v, want an error saying %q", err, tc.want)
			}
		})
	}
	if err := ok.Check(); err != nil {
		t.Errorf("Check() of a good probe = %v", err)
	}
}
