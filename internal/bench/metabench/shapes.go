package metabench

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/rsa-hpc/rsa/internal/bench"
)

// A shape is a ratio between two cells of Table 1 that the GUPFS report
// points out (seed-experiments §2.2): what a re-run on other hardware
// should reproduce, where the absolute rates cannot compare.
type shape struct {
	metric       string // the row's metric: what the ratio shows
	num, den     Phase
	numN, denN   int // process counts (Table 1's N)
	sourceReason string
}

// tableShapes are the ratios of Table 1 the report's text points out.
func tableShapes() []shape {
	return []shape{
		{"collapse", CreateC, CreateC, 2, 3, "a shared directory's creates collapse once two or more clients contend for it"},
		{"scaling", CreateB, CreateB, 8, 2, "creates in separate directories rise with clients, with diminishing returns"},
		{"cliff", StatA, StatA, 1, 2, "a stat is answered from the local cache with one client, over the network with more"},
		{"cliff", StatB, StatB, 1, 2, "a stat is answered from the local cache with one client, over the network with more"},
		{"utime/stat", UtimeA, StatA, 4, 4, "a utime costs about two stats (an exclusive lock and a journal entry)"},
		{"scaling", Untar, Untar, 8, 1, "Untar's work grows with the clients: it rises, then flattens"},
	}
}

// Shapes derives, from rows of METABENCH runs (any number of runs, at
// any process counts, on any targets), the ratios GUPFS Table 1 is known
// for, each beside the same ratio of the table: "Create-C collapse, N=2
// over N=3: ours 0.8× | GUPFS 7.8×". A shape is left out where a run of
// either count is missing, and for runs with -0 (the table has none).
// Rows of one target compare only with rows of the same sizes.
func Shapes(rows []bench.Row) []bench.Row {
	type key struct {
		target, sizes string
		phase         Phase
		nproc         int
	}
	rate := map[key]float64{}
	var groups []key // target and sizes, in the order first seen
	for _, r := range rows {
		if r.Bench != "metabench" || r.Metric != "ops_per_s" || r.Params["proc0"] != "" {
			continue
		}
		n, err := strconv.Atoi(r.Params["nproc"])
		if err != nil {
			continue
		}
		k := key{target: r.Target, sizes: sizes(r.Params), phase: Phase(r.Case), nproc: n}
		if _, dup := rate[k]; dup {
			continue // the first run of a cell stands for it
		}
		rate[k] = r.Value
		g := key{target: k.target, sizes: k.sizes}
		if !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	var out []bench.Row
	for _, g := range groups {
		for _, s := range tableShapes() {
			num, ok1 := rate[key{g.target, g.sizes, s.num, s.numN}]
			den, ok2 := rate[key{g.target, g.sizes, s.den, s.denN}]
			srcNum, ok3 := table1(s.num, s.numN, false)
			srcDen, ok4 := table1(s.den, s.denN, false)
			if !ok1 || !ok2 || !ok3 || !ok4 || den == 0 {
				continue
			}
			label := fmt.Sprintf("N=%d/N=%d", s.numN, s.denN)
			if s.num != s.den {
				label = fmt.Sprintf("%s/%s at N=%d", s.num, s.den, s.numN)
			}
			r := bench.Row{
				Bench: "metabench", Case: string(s.num), Target: g.target, Metric: s.metric, Unit: "x",
				Params: map[string]string{"of": label}, Value: num / den,
				Note: fmt.Sprintf("derived from the ops_per_s rows (%s); GUPFS reports it because %s", g.sizes, s.sourceReason),
			}
			r.Source(fmt.Sprintf("GUPFS Table 1 (derived: %s / %s)", strconv.FormatFloat(srcNum, 'f', -1, 64),
				strconv.FormatFloat(srcDen, 'f', -1, 64)), srcNum/srcDen, "x")
			out = append(out, r)
		}
	}
	return out
}

// sizes names a run's sizes: its params but the process counts.
func sizes(p map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(p)) {
		if k != "nproc" && k != "N" {
			parts = append(parts, k+"="+p[k])
		}
	}
	return strings.Join(parts, " ")
}
