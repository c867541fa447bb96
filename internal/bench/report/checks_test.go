package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/rsa-hpc/rsa/internal/bench"
)

func TestCheckSummaries(t *testing.T) {
	row := func(bench_, target, tool string, ours, check float64, note string, runs ...float64) bench.Row {
		r := bench.Row{Bench: bench_, Target: target, Value: ours, Note: note, Runs: runs}
		r.CrossCheck(tool, check)
		return r
	}
	for _, tc := range []struct {
		name string
		rows []bench.Row
		want []checkSummary
	}{
		{name: "no checks", rows: []bench.Row{{Bench: "sweep", Value: 1}}},
		{
			name: "agree and disagree on both sides",
			rows: []bench.Row{
				row("sweep", "ram-dev", "fio", 100, 105, ""),
				row("sweep", "ram-dev", "fio", 100, 200, "fio ran 16 threads"),
				row("sweep", "ram-dev", "fio", 300, 200, "fio ran 16 threads"),
				row("sweep", "ram-dev", "fio", 300, 100, ""),
			},
			want: []checkSummary{{Bench: "sweep", Target: "ram-dev", Tool: "fio", Checked: 4, Agree: 1, Above: 2, Below: 1, NoNote: 1, Notes: []int{1}}},
		},
		{
			name: "a check inside ours' runs is within the spread; one run is no spread",
			rows: []bench.Row{
				row("metabench", "shared@1g", "mdtest -u", 100, 130, "a", 90, 100, 140),
				row("metabench", "shared@1g", "mdtest -u", 100, 130, "b", 100),
				row("metabench", "shared@1g", "mdtest -u", 100, 150, "a", 90, 100, 140),
			},
			want: []checkSummary{{Bench: "metabench", Target: "shared@1g", Tool: "mdtest", Checked: 3, Below: 3, InSpread: 1, Notes: []int{1, 2}}},
		},
		{
			name: "grouped by benchmark, target and tool, in the rows' order; notes numbered per benchmark",
			rows: []bench.Row{
				{Bench: "thesis", Note: "only a note"},
				row("thesis", "ram", "fio", 1, 2, "slow"),
				row("mptio", "ram", "fio", 1, 2, "slow"),
				row("thesis", "disk", "fio", 1, 1, ""),
				row("thesis", "ram", "bonnie++", 2, 1, "slow"),
			},
			want: []checkSummary{
				{Bench: "thesis", Target: "ram", Tool: "fio", Checked: 1, Below: 1, Notes: []int{2}},
				{Bench: "mptio", Target: "ram", Tool: "fio", Checked: 1, Below: 1, Notes: []int{1}},
				{Bench: "thesis", Target: "disk", Tool: "fio", Checked: 1, Agree: 1},
				{Bench: "thesis", Target: "ram", Tool: "bonnie++", Checked: 1, Above: 1, Notes: []int{2}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			notes := map[string][]string{}
			for _, r := range tc.rows {
				notes[r.Bench] = notesOf(tc.rows, r.Bench)
			}
			got := checkSummaries(tc.rows, notes)
			if !slices.EqualFunc(got, tc.want, func(a, b checkSummary) bool {
				return a.Bench == b.Bench && a.Target == b.Target && a.Tool == b.Tool && a.Checked == b.Checked && a.Agree == b.Agree &&
					a.Above == b.Above && a.Below == b.Below && a.InSpread == b.InSpread && a.NoNote == b.NoNote && slices.Equal(a.Notes, b.Notes)
			}) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestWriteCrossChecks(t *testing.T) {
	var b strings.Builder
	writeCrossChecks(&b, nil)
	if b.Len() != 0 {
		t.Errorf("no checks wrote %q", b.String())
	}
	many := checkSummary{Bench: "sweep", Target: "ram|dev", Tool: "fio", Checked: 20, Agree: 4, Above: 6, Below: 10, InSpread: 3}
	for n := 1; n <= maxNoteRefs+2; n++ {
		many.Notes = append(many.Notes, n)
	}
	writeCrossChecks(&b, []checkSummary{many, {Bench: "thesis", Target: "ram", Tool: "fio", Checked: 2, Agree: 1, Below: 1, NoNote: 1}})
	page := b.String()
	for _, want := range []string{
		"## Cross-checks at a glance",
		"| sweep | ram\\|dev | fio | 20 | 4 | 16 | 6 / 10 | 3 | 0 | [1], [2], [3], [4], [5], [6], [7], [8], [9], [10], [11], [12], and 2 more |",
		"| thesis | ram | fio | 2 | 1 | 1 | 0 / 1 | 0 | 1 |  |",
		"| all | | | 22 | 5 | 17 | 6 / 11 | 3 | 1 | |",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("summary lacks %q:\n%s", want, page)
		}
	}
}
