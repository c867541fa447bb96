package tools

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"

	"github.com/rsa-hpc/rsa/internal/bench"
)

// A shape is a ratio between two cells of GUPFS Table 1 that the report
// points out: what a run on other hardware should reproduce, where the
// absolute rates cannot compare.
type shape struct {
	metric     string // the row's metric: what the ratio shows
	c          string // Table 1's test
	numN, denN int    // Table 1's process counts
	why        string
}

// shapes are the ratios the mdtest jobs can show.
var shapes = []shape{
	{"cliff", "Stat-A", 1, 2, "a stat is answered from the client's cache with one client, over the network with two"},
	{"cliff", "Stat-B", 1, 2, "a stat is answered from the client's cache with one client, over the network with two"},
	{"scaling", "Create-B", 3, 1, "creates in separate directories rise with the clients"},
	{"scaling", "Create-B", 8, 3, "creates in separate directories rise with the clients, with diminishing returns"},
}

// tableRE finds Table 1's N in a seed's reference.
var tableRE = regexp.MustCompile(`^GUPFS Table 1 N=(\d+)$`)

// Shapes derives from mdtest rows set beside GUPFS Table 1 (of any runs,
// on any targets) the ratios the table is known for, each beside the same
// ratio of the table: "Stat-A cliff, N=1 over N=2: ours 1.1× | GUPFS
// 70.7×". A ratio is left out where either cell was not measured.
func Shapes(rows []bench.Row) []bench.Row {
	type key struct {
		target, c string
		n         int
	}
	type cell struct{ ours, source float64 }
	cells := map[key]cell{}
	var targets []string
	for _, r := range rows {
		if r.Bench != string(Mdtest) || r.SourceValue == nil {
			continue
		}
		m := tableRE.FindStringSubmatch(r.SourceRef)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		k := key{r.Target, r.Case, n}
		if _, dup := cells[k]; dup {
			continue // the first run of a cell stands for it
		}
		cells[k] = cell{r.Value, *r.SourceValue}
		if !slices.Contains(targets, r.Target) {
			targets = append(targets, r.Target)
		}
	}
	var out []bench.Row
	for _, t := range targets {
		for _, s := range shapes {
			num, ok1 := cells[key{t, s.c, s.numN}]
			den, ok2 := cells[key{t, s.c, s.denN}]
			if !ok1 || !ok2 || den.ours == 0 || den.source == 0 {
				continue
			}
			r := bench.Row{
				Bench: string(Mdtest), Case: s.c, Target: t, Metric: s.metric, Unit: "x",
				Params: map[string]string{"of": fmt.Sprintf("N=%d/N=%d", s.numN, s.denN)},
				Value:  num.ours / den.ours,
				Note:   "derived from the rows beside Table 1; GUPFS reports it because " + s.why,
			}
			r.Source(fmt.Sprintf("GUPFS Table 1 (derived: %s / %s)", strconv.FormatFloat(num.source, 'f', -1, 64),
				strconv.FormatFloat(den.source, 'f', -1, 64)), num.source/den.source, "x")
			out = append(out, r)
		}
	}
	return out
}
