package metabench

import (
	"math"
	"strconv"
	"testing"

	"github.com/rsa-hpc/rsa/internal/bench"
)

func TestShapes(t *testing.T) {
	row := func(target string, p Phase, nproc int, v float64, extra ...string) bench.Row {
		params := map[string]string{"nfile": "20000", "nproc": strconv.Itoa(nproc), "N": strconv.Itoa(max(nproc-1, 1))}
		for i := 0; i+1 < len(extra); i += 2 {
			params[extra[i]] = extra[i+1]
		}
		return bench.Row{Bench: "metabench", Case: string(p), Target: target, Metric: "ops_per_s", Unit: "ops/s", Value: v, Params: params}
	}
	type want struct {
		target, cas, metric string
		value, source       float64
	}
	tests := []struct {
		name string
		rows []bench.Row
		want []want
	}{
		{
			name: "Create-C from two runs, in either order",
			rows: []bench.Row{row("shared@1g", CreateC, 3, 1400), row("shared@1g", CreateC, 2, 1120)},
			want: []want{{"shared@1g", "Create-C", "collapse", 0.8, 593.0 / 76}},
		},
		{
			name: "a missing count gives no shape",
			rows: []bench.Row{row("ram", CreateC, 2, 1000), row("ram", CreateB, 8, 1000), row("ram", StatA, 2, 5)},
		},
		{
			name: "two phases at one count; batches and other benches ignored",
			rows: []bench.Row{
				row("disk", UtimeA, 4, 300), row("disk", StatA, 4, 600),
				{Bench: "metabench", Case: "Stat-A", Target: "disk", Metric: "batch_ops_per_s", Value: 1, Params: map[string]string{"nproc": "4"}},
				{Bench: "mptio", Case: "Stat-A", Target: "disk", Metric: "ops_per_s", Value: 1, Params: map[string]string{"nproc": "4"}},
			},
			want: []want{{"disk", "Utime-A", "utime/stat", 0.5, 245.0 / 455}},
		},
		{
			name: "targets and sizes are not mixed",
			rows: []bench.Row{
				row("ram", CreateC, 2, 1000), row("disk", CreateC, 3, 10),
				row("ram", StatA, 1, 900, "nfile", "200"), row("ram", StatA, 2, 9),
			},
		},
		{
			name: "runs with -0 are not the table's",
			rows: []bench.Row{row("ram", StatB, 1, 900), row("ram", StatB, 2, 9, "proc0", "1")},
		},
		{
			name: "Untar's tarball param is kept apart from the others but matches itself",
			rows: []bench.Row{row("ram", Untar, 1, 100, "tarball", "synthetic"), row("ram", Untar, 8, 350, "tarball", "synthetic")},
			want: []want{{"ram", "Untar", "scaling", 3.5, 1415.0 / 345}},
		},
	}
	for _, tt := range tests {
		got := Shapes(tt.rows)
		if len(got) != len(tt.want) {
			t.Errorf("%s: %d shapes %+v, want %d", tt.name, len(got), got, len(tt.want))
			continue
		}
		for i, w := range tt.want {
			g := got[i]
			if g.Target != w.target || g.Case != w.cas || g.Metric != w.metric || g.Unit != "x" ||
				math.Abs(g.Value-w.value) > 1e-9 || g.SourceValue == nil || math.Abs(*g.SourceValue-w.source) > 1e-9 {
				t.Errorf("%s: shape %d = %+v (source %v), want %+v", tt.name, i, g, g.SourceValue, w)
			}
		}
	}
}
