package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rsa-hpc/rsa/internal/bench"
)

// checkSummary counts the cross-checked rows of one benchmark on one
// target by one checking tool, so that the page says in one table which
// checks disagreed, on which side, and where the explanation stands.
type checkSummary struct {
	Bench, Target, Tool string
	Checked, Agree      int
	Above, Below        int   // disagreeing rows with ours above or below the check
	InSpread            int   // disagreeing rows whose check lies within ours' runs
	NoNote              int   // disagreeing rows without a note
	Notes               []int // the disagreeing rows' note numbers (1-based, per benchmark)
}

// notesOf is the benchmark's notes in the order its rows first name them:
// the numbering of the notes under its table.
func notesOf(rows []bench.Row, name string) []string {
	var notes []string
	for _, r := range rows {
		if r.Bench == name && r.Note != "" && !slices.Contains(notes, r.Note) {
			notes = append(notes, r.Note)
		}
	}
	return notes
}

// checkSummaries groups the rows that carry a cross-check, in the order
// the rows first show each group. notes is each benchmark's numbering
// (notesOf).
func checkSummaries(rows []bench.Row, notes map[string][]string) []checkSummary {
	var out []checkSummary
	for _, r := range rows {
		if r.CheckValue == nil || r.Agree == nil {
			continue
		}
		tool, _, _ := strings.Cut(r.Check, " ")
		i := slices.IndexFunc(out, func(s checkSummary) bool {
			return s.Bench == r.Bench && s.Target == r.Target && s.Tool == tool
		})
		if i < 0 {
			out = append(out, checkSummary{Bench: r.Bench, Target: r.Target, Tool: tool})
			i = len(out) - 1
		}
		s := &out[i]
		s.Checked++
		if *r.Agree {
			s.Agree++
			continue
		}
		if r.Value > *r.CheckValue {
			s.Above++
		} else {
			s.Below++
		}
		if len(r.Runs) > 1 && slices.Min(r.Runs) <= *r.CheckValue && *r.CheckValue <= slices.Max(r.Runs) {
			s.InSpread++
		}
		if n := slices.Index(notes[r.Bench], r.Note); r.Note == "" || n < 0 {
			s.NoNote++
		} else if !slices.Contains(s.Notes, n+1) {
			s.Notes = append(s.Notes, n+1)
		}
	}
	for i := range out {
		slices.Sort(out[i].Notes)
	}
	return out
}

// maxNoteRefs is how many note numbers a summary row names before it
// says how many more there are: a sweep has a note a row.
const maxNoteRefs = 12

// writeCrossChecks writes the summary table of the cross-checks, with a
// line of totals; nothing when no row was checked.
func writeCrossChecks(b *strings.Builder, sums []checkSummary) {
	if len(sums) == 0 {
		return
	}
	b.WriteString("\n## Cross-checks at a glance\n\n")
	b.WriteString("Every row that another tool checked, by benchmark, target and tool: how many agree within 10%, how many do not and on which side ours lies. " +
		"\"Within our spread\" counts the disagreeing rows whose check lies between the lowest and the highest of our repeated runs (the machine's own variation covers the difference). " +
		"The notes named are those of the disagreeing rows, numbered as under each benchmark's table, where each says how the two tools measured; \"no note\" counts the disagreeing rows that have none.\n\n")
	b.WriteString("| bench | target | check | rows checked | agree | disagree | ours above / below | within our spread | no note | notes |\n|---|---|---|---|---|---|---|---|---|---|\n")
	var total checkSummary
	for _, s := range sums {
		dis := s.Checked - s.Agree
		refs := make([]string, 0, min(len(s.Notes), maxNoteRefs))
		for _, n := range s.Notes[:min(len(s.Notes), maxNoteRefs)] {
			refs = append(refs, fmt.Sprintf("[%d]", n))
		}
		if more := len(s.Notes) - maxNoteRefs; more > 0 {
			refs = append(refs, fmt.Sprintf("and %d more", more))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %d | %d | %d | %d / %d | %d | %d | %s |\n", cell(s.Bench), cell(s.Target), cell(s.Tool),
			s.Checked, s.Agree, dis, s.Above, s.Below, s.InSpread, s.NoNote, cell(strings.Join(refs, ", ")))
		total.Checked += s.Checked
		total.Agree += s.Agree
		total.Above += s.Above
		total.Below += s.Below
		total.InSpread += s.InSpread
		total.NoNote += s.NoNote
	}
	fmt.Fprintf(b, "| all | | | %d | %d | %d | %d / %d | %d | %d | |\n", total.Checked, total.Agree, total.Checked-total.Agree,
		total.Above, total.Below, total.InSpread, total.NoNote)
}
