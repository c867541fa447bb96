package tools

import (
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

const sampleIOR = `# a comment
run g quick 12 -a POSIX -w -b 16m -o {m0}/f   # the rest of a line too
run g full  12 -a POSIX -w -b 50m -o {m0}/f
seed g write_rate Seq_Write 9.17 MB/s GUPFS A.1 sample
seed g/full write_time Seq_Write 65.44 s GUPFS A.1 sample (E-Time)
differs g one host
none Rd_Mod_Wrt: no counterpart: none at all
`

const sampleFio = `run tms quick 1 tms.fio QD=1,8 BS=64k
seed tms write_rate@target=disk,qd=8,bs=64k write 80 MB/s TMS
`

func TestLoad(t *testing.T) {
	fsys := fstest.MapFS{
		"ior.jobs":    {Data: []byte(sampleIOR)},
		"mdtest.jobs": {Data: []byte("run one quick,full 1 -F -C -n 10 -d {m0}/x\n")},
		"fio.jobs":    {Data: []byte(sampleFio)},
		"tms.fio":     {Data: []byte("[write]\nrw=write\n")},
	}
	s, err := Load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Jobs) != 4 {
		t.Fatalf("%d jobs, want 4: %+v", len(s.Jobs), s.Jobs)
	}
	g := s.Jobs[0]
	want := Job{Tool: IOR, Name: "g", Profiles: []string{"quick"}, Ranks: 12, Line: 2,
		Args: []string{"-a", "POSIX", "-w", "-b", "16m", "-o", "{m0}/f"},
		Seeds: []Seed{
			{Metric: "write_rate", Case: "Seq_Write", Value: 9.17, Unit: "MB/s", Ref: "GUPFS A.1 sample"},
			{Profile: "full", Metric: "write_time", Case: "Seq_Write", Value: 65.44, Unit: "s", Ref: "GUPFS A.1 sample (E-Time)"},
		},
		Differs: "one host"}
	if !reflect.DeepEqual(g, want) {
		t.Errorf("job g =\n%+v\nwant\n%+v", g, want)
	}
	if u := s.Unmatched; len(u) != 1 || u[0] != (Unmatched{IOR, "Rd_Mod_Wrt", "no counterpart: none at all"}) {
		t.Errorf("unmatched = %+v", u)
	}
	tms := s.Jobs[3]
	if tms.FioFile != "tms.fio" || !reflect.DeepEqual(tms.Grid, []Var{{"QD", []string{"1", "8"}}, {"BS", []string{"64k"}}}) ||
		!reflect.DeepEqual(tms.Seeds[0].Where, map[string]string{"target": "disk", "qd": "8", "bs": "64k"}) {
		t.Errorf("fio job = %+v", tms)
	}
	quick, err := s.Select("quick", []Tool{IOR, Fio})
	if err != nil || len(quick) != 2 || quick[0].Name != "g" || quick[1].Name != "tms" {
		t.Errorf("Select(quick, ior and fio) = %+v, %v", quick, err)
	}
	if _, err := s.Select("slow", Tools); err == nil {
		t.Error("Select of an unknown profile: no error")
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, ior, fio string
		want           string
	}{
		{"unknown statement", "walk g quick 1 -w\n", "", "unknown statement"},
		{"bad profile", "run g slow 1 -w\n", "", `profile "slow"`},
		{"bad ranks", "run g quick none -w\n", "", `ranks "none"`},
		{"twice", "run g quick 1 -w\nrun g quick 1 -r\n", "", "runs twice"},
		{"seed of nothing", "seed h write_rate X 1 MB/s ref\n", "", "no run line"},
		{"differs of nothing", "differs h text\n", "", "no run line"},
		{"bad value", "run g quick 1 -w\nseed g write_rate X many MB/s ref\n", "", `value "many"`},
		{"none without why", "none Rd_Mod_Wrt\n", "", "want a case, a colon and why"},
		{"fio ranks", "", "run t quick 2 tms.fio\n", "ranks must be 1"},
		{"fio file missing", "", "run t quick 1 gone.fio\n", "gone.fio"},
		{"fio sets DIR", "", "run t quick 1 tms.fio DIR=/tmp\n", "set by the run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{
				"ior.jobs":    {Data: []byte(tt.ior)},
				"mdtest.jobs": {Data: nil},
				"fio.jobs":    {Data: []byte(tt.fio)},
				"tms.fio":     {Data: []byte("[w]\n")},
			}
			if _, err := Load(fsys); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load = %v, want an error with %q", err, tt.want)
			}
		})
	}
	if _, err := Load(fstest.MapFS{}); err == nil || !strings.Contains(err.Error(), "ior.jobs") {
		t.Errorf("Load of no files = %v, want an error naming ior.jobs", err)
	}
}
