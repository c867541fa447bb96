package tools

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rsa-hpc/rsa/internal/bench"
)

func TestExpand(t *testing.T) {
	args := []string{"-d", "{each:md}", "-o", "{m0}/f", "{m1}/g"}
	tests := []struct {
		work  []string
		ranks int
		want  []string
	}{
		{[]string{"/a"}, 3, []string{"-d", "/a/md", "-o", "/a/f", "/a/g"}},
		{[]string{"/a", "/b", "/c"}, 2, []string{"-d", "/a/md-0@/b/md-1", "-o", "/a/f", "/b/g"}},
		{[]string{"/a", "/b"}, 4, []string{"-d", "/a/md-0@/b/md-1", "-o", "/a/f", "/b/g"}},
	}
	for _, tt := range tests {
		if got := expand(args, tt.work, tt.ranks); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("expand(%v, %d ranks) = %v, want %v", tt.work, tt.ranks, got, tt.want)
		}
	}
}

func TestMounts(t *testing.T) {
	jobs := []Job{
		{Ranks: 7, Args: []string{"-d", "{m0}/x"}},
		{Ranks: 1, Args: []string{"-d", "{m1}/x"}},
		{Ranks: 3, Args: []string{"-d", "{each:x}"}},
	}
	if n := Mounts(jobs); n != 3 {
		t.Errorf("Mounts = %d, want 3 (a rank each for {each:...})", n)
	}
	if n := Mounts(jobs[:2]); n != 2 {
		t.Errorf("Mounts = %d, want 2 (for {m1})", n)
	}
	if n := Mounts(jobs[:1]); n != 1 {
		t.Errorf("Mounts = %d, want 1", n)
	}
}

func TestGridAndSubstitute(t *testing.T) {
	pts := grid([]Var{{"QD", []string{"1", "8"}}, {"BS", []string{"4k", "1m"}}})
	want := []map[string]string{{"QD": "1", "BS": "4k"}, {"QD": "1", "BS": "1m"}, {"QD": "8", "BS": "4k"}, {"QD": "8", "BS": "1m"}}
	if !reflect.DeepEqual(pts, want) {
		t.Errorf("grid = %v, want %v", pts, want)
	}
	if g := grid(nil); len(g) != 1 {
		t.Errorf("grid of no variables = %v, want one point", g)
	}
	got, err := substitute("bs=${BS}\niodepth=${QD}\nname=$jobnum\n", pts[1])
	if err != nil || got != "bs=1m\niodepth=1\nname=$jobnum\n" {
		t.Errorf("substitute = %q, %v", got, err)
	}
	if _, err := substitute("bs=${BS} size=${SIZE} ${SIZE}", pts[0]); err == nil || !strings.HasSuffix(err.Error(), "no value for SIZE") {
		t.Errorf("substitute with SIZE unset: %v", err)
	}
}

func TestRowsOf(t *testing.T) {
	j := Job{Tool: IOR, Name: "g", Differs: "one host", Seeds: []Seed{
		{Metric: "write_rate", Case: "Seq_Write", Value: 9.17, Unit: "MB/s", Ref: "sample"},
		{Profile: "full", Metric: "write_time", Case: "Seq_Write", Value: 65.44, Unit: "s", Ref: "sample"},
		{Metric: "read_rate", Where: map[string]string{"target": "disk"}, Case: "Seq_Read", Value: 88, Unit: "MB/s", Ref: "sample"},
	}}
	vals := []value{{"write_rate", "MiB/s", 100}, {"write_time", "s", 2}, {"read_rate", "MiB/s", 300}}
	rows := rowsOf(j, Env{Target: "ram", Profile: "quick"}, map[string]string{"ranks": "12"}, vals)
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3: %+v", len(rows), rows)
	}
	w := rows[0]
	if w.Bench != "ior" || w.Case != "Seq_Write" || w.SourceValue == nil || *w.SourceValue != 9.17 || w.Note != "one host" ||
		w.Params["job"] != "g" || w.Params["ranks"] != "12" {
		t.Errorf("write_rate row = %+v", w)
	}
	// The full profile's time and the disk's read have no seed here.
	for _, r := range rows[1:] {
		if r.SourceValue != nil || r.Case != "g" {
			t.Errorf("%s row = %+v, want no seed, under the job's name", r.Metric, r)
		}
	}
	full := rowsOf(j, Env{Target: "disk", Profile: "full"}, nil, vals)
	for _, r := range full {
		if r.SourceValue == nil {
			t.Errorf("full profile on disk: %s row has no seed", r.Metric)
		}
	}
}

func TestMdtestMetric(t *testing.T) {
	for name, want := range map[string]string{"File creation": "create_rate", "File stat": "stat_rate", "File removal": "remove_rate",
		"Directory creation": "directory_creation_rate"} {
		if got, ok := mdtestMetric(name); !ok || got != want {
			t.Errorf("mdtestMetric(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	if _, ok := mdtestMetric("Tree creation"); ok {
		t.Error("Tree creation: a row, want none (mdtest's setup)")
	}
}

func TestShapes(t *testing.T) {
	row := func(target, c string, v float64, ref string, src float64) bench.Row {
		r := bench.Row{Bench: "mdtest", Case: c, Target: target, Metric: "stat_rate", Value: v}
		r.Source(ref, src, "ops/s")
		return r
	}
	rows := []bench.Row{
		row("shared@1g", "Stat-A", 20000, "GUPFS Table 1 N=1", 18019),
		row("shared@1g", "Stat-A", 400, "GUPFS Table 1 N=2", 255),
		row("ram", "Stat-A", 1e6, "GUPFS Table 1 N=1", 18019), // no N=2 on ram
		row("shared@1g", "Stat-A", 1, "GUPFS A.1 sample", 9),
	}
	got := Shapes(rows)
	if len(got) != 1 {
		t.Fatalf("Shapes = %+v, want one ratio", got)
	}
	r := got[0]
	if r.Target != "shared@1g" || r.Case != "Stat-A" || r.Metric != "cliff" || r.Value != 50 || r.Unit != "x" ||
		r.SourceValue == nil || *r.SourceValue != 18019.0/255 || !strings.Contains(r.SourceRef, "18019 / 255") {
		t.Errorf("shape = %+v", r)
	}
}
