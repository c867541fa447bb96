package crosscheck

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestParseMdtest(t *testing.T) {
	tests := []struct {
		file       string
		iterations int
		rates      []MdtestOp
		times      int // rows of the time table
	}{
		{
			file:       "mdtest-n100.txt",
			iterations: 1,
			rates: []MdtestOp{
				{Name: "Directory creation", Max: 371835.461, Min: 371835.461, Mean: 371835.461},
				{Name: "Directory stat", Max: 1740375.104, Min: 1740375.104, Mean: 1740375.104},
				{Name: "Directory rename", Max: 339619.757, Min: 339619.757, Mean: 339619.757},
				{Name: "Directory removal", Max: 437590.402, Min: 437590.402, Mean: 437590.402},
				{Name: "File creation", Max: 388361.481, Min: 388361.481, Mean: 388361.481},
				{Name: "File stat", Max: 1784810.213, Min: 1784810.213, Mean: 1784810.213},
				{Name: "File read", Max: 975419.535, Min: 975419.535, Mean: 975419.535},
				{Name: "File removal", Max: 576536.632, Min: 576536.632, Mean: 576536.632},
				{Name: "Tree creation", Max: 83886.080, Min: 83886.080, Mean: 83886.080},
				{Name: "Tree removal", Max: 246723.765, Min: 246723.765, Mean: 246723.765},
			},
		},
		{
			// -F: files only, no directory rows.
			file:       "mdtest-n100-F.txt",
			iterations: 1,
			rates: []MdtestOp{
				{Name: "File creation", Max: 297152.249, Min: 297152.249, Mean: 297152.249},
				{Name: "File stat", Max: 826463.842, Min: 826463.842, Mean: 826463.842},
				{Name: "File read", Max: 687027.682, Min: 687027.682, Mean: 687027.682},
				{Name: "File removal", Max: 431069.270, Min: 431069.270, Mean: 431069.270},
				{Name: "Tree creation", Max: 59074.704, Min: 59074.704, Mean: 59074.704},
				{Name: "Tree removal", Max: 144631.172, Min: 144631.172, Mean: 144631.172},
			},
		},
		{
			// -i 2 -P --showRankStatistics: two tables of seven figures a row.
			file:       "mdtest-n100-i2-P-ranks.txt",
			iterations: 2,
			rates: []MdtestOp{
				{Name: "Directory creation", Max: 355298.941, Min: 324134.776, Mean: 339716.859, StdDev: 22036.393,
					Rank: &MdtestRankStats{Max: 178937.884, Min: 162067.388, Mean: 170935.311}},
				{Name: "Directory stat", Max: 1105218.445, Min: 1081006.186, Mean: 1093112.315, StdDev: 17120.653,
					Rank: &MdtestRankStats{Max: 884874.262, Min: 543303.627, Mean: 711242.058}},
				{Name: "Directory rename", Max: 290263.253, Min: 246289.137, Mean: 268276.195, StdDev: 31094.395,
					Rank: &MdtestRankStats{Max: 148998.366, Min: 123289.359, Mean: 135809.019}},
				{Name: "Directory removal", Max: 428208.678, Min: 397564.360, Mean: 412886.519, StdDev: 21668.805,
					Rank: &MdtestRankStats{Max: 215978.579, Min: 199159.734, Mean: 207519.367}},
				{Name: "File creation", Max: 326786.443, Min: 306265.352, Mean: 316525.898, StdDev: 14510.603,
					Rank: &MdtestRankStats{Max: 164740.927, Min: 153356.636, Mean: 161428.922}},
				{Name: "File stat", Max: 1129018.573, Min: 1057832.030, Mean: 1093425.302, StdDev: 50336.487,
					Rank: &MdtestRankStats{Max: 884874.262, Min: 528916.015, Mean: 716749.603}},
				{Name: "File read", Max: 749652.189, Min: 633102.491, Mean: 691377.340, StdDev: 82413.082,
					Rank: &MdtestRankStats{Max: 488277.532, Min: 317509.765, Mean: 395069.382}},
				{Name: "File removal", Max: 486578.190, Min: 440346.877, Mean: 463462.533, StdDev: 32690.475,
					Rank: &MdtestRankStats{Max: 248036.901, Min: 220752.842, Mean: 235100.602}},
				{Name: "Tree creation", Max: 199728.762, Min: 21732.145, Mean: 110730.453, StdDev: 125862.615,
					Rank: &MdtestRankStats{Max: 199728.762, Min: 21732.145, Mean: 110730.453}},
				{Name: "Tree removal", Max: 209715.200, Min: 167772.160, Mean: 188743.680, StdDev: 29658.208,
					Rank: &MdtestRankStats{Max: 209715.200, Min: 167772.160, Mean: 188743.680}},
			},
			times: 10,
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			res, err := ParseMdtest(readSample(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if res.Version != "4.1.0+dev" || res.Tasks != 2 || res.Nodes != 1 || res.Iterations != tt.iterations {
				t.Errorf("Version, Tasks, Nodes, Iterations = %q, %d, %d, %d; want 4.1.0+dev, 2, 1, %d",
					res.Version, res.Tasks, res.Nodes, res.Iterations, tt.iterations)
			}
			if !reflect.DeepEqual(res.Rates, tt.rates) {
				t.Errorf("Rates =\n%s\nwant\n%s", opsString(res.Rates), opsString(tt.rates))
			}
			if len(res.Times) != tt.times {
				t.Errorf("%d rows of times, want %d", len(res.Times), tt.times)
			}
		})
	}
}

// opsString shows ops one a line, with what Rank points to rather than
// its address.
func opsString(ops []MdtestOp) string {
	var b strings.Builder
	for _, op := range ops {
		fmt.Fprintf(&b, "\t%s: %v %v %v %v", op.Name, op.Max, op.Min, op.Mean, op.StdDev)
		if op.Rank != nil {
			fmt.Fprintf(&b, " rank %+v", *op.Rank)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestParseMdtestTimes(t *testing.T) {
	res, err := ParseMdtest(readSample(t, "mdtest-n100-i2-P-ranks.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// "   Directory creation          0.001          0.001          0.001                  0.001          0.001          0.001          0.000"
	want := MdtestOp{Name: "Directory creation", Max: 0.001, Min: 0.001, Mean: 0.001, StdDev: 0,
		Rank: &MdtestRankStats{Max: 0.001, Min: 0.001, Mean: 0.001}}
	if got := res.Times[0]; !reflect.DeepEqual(got, want) {
		t.Errorf("Times[0] = %s, want %s", opsString([]MdtestOp{got}), opsString([]MdtestOp{want}))
	}
	if got := res.Times[len(res.Times)-1].Name; got != "Tree removal" {
		t.Errorf("last row of times is %q, want Tree removal", got)
	}
}

func TestMdtestResultRate(t *testing.T) {
	res, err := ParseMdtest(readSample(t, "mdtest-n100-F.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if op, ok := res.Rate("File creation"); !ok || op.Mean != 297152.249 {
		t.Errorf(`Rate("File creation") = %+v, %v; want mean 297152.249`, op, ok)
	}
	if op, ok := res.Rate("Directory creation"); ok {
		t.Errorf(`Rate("Directory creation") of a files-only run = %+v, want none`, op)
	}
}

// mdtest prints 0/0 as -nan; the sample is real output with one figure
// replaced so.
func TestParseMdtestNaN(t *testing.T) {
	out := strings.Replace(string(readSample(t, "mdtest-n100.txt")),
		"   File stat                 1784810.213    1784810.213    1784810.213          0.000",
		"   File stat                 1784810.213    1784810.213    1784810.213           -nan", 1)
	res, err := ParseMdtest([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if op, _ := res.Rate("File stat"); !math.IsNaN(op.StdDev) || op.Mean != 1784810.213 {
		t.Errorf(`Rate("File stat") = %+v, want mean 1784810.213 and StdDev NaN`, op)
	}
}

func TestParseMdtestErrors(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want string // in the error
	}{
		// A run that aborted (no such directory): warnings, no table.
		{"aborted run", string(readSample(t, "mdtest-abort.stdout")), "no SUMMARY table"},
		{"ior output", string(readSample(t, "ior-fpp-wr-i1.json")), "no SUMMARY table"},
		{"nothing", "", "no SUMMARY table"},
		{"no iteration count", "SUMMARY rate (in ops/sec):\n", "no iteration count"},
		{"row cut short", "SUMMARY rate (in ops/sec): (of 1 iterations)\n   File creation  1.000  2.000\n", "2 figures, want 4 or 7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := ParseMdtest([]byte(tt.out))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseMdtest = %+v, %v; want an error with %q", res, err, tt.want)
			}
		})
	}
}
