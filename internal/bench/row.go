// Package bench holds what every benchmark of rsa-lab bench shares: the result
// row, set beside the number of the seed it is compared with, and its two
// renderings (JSON lines for make evidence, a table for a terminal).
//
// The benchmarks themselves live in sub-packages: bench/thesis re-runs
// the thesis' experiments, bench/tools runs IOR, mdtest and fio jobs in
// place of the other seeds' codes; each reports Rows.
package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// Row is one measured value. A row that has a counterpart in a seed
// carries it (SourceRef, SourceValue, SourceUnit), so that the side by side
// needs no lookup; a row without one leaves them empty.
type Row struct {
	Bench  string            `json:"bench"`            // "thesis", "ior", "mdtest", "fio"
	Case   string            `json:"case"`             // the source's name of the test: "Seq_Write", "Create-C", "T52"
	Target string            `json:"target,omitempty"` // "ram", "ram-blk", "disk", "ram@1g", "shared@1g", or a directory
	Params map[string]string `json:"params,omitempty"` // what the case was run with: "procs": "3", "recsz": "256K"
	Metric string            `json:"metric"`           // "rate", "e_rate", "e_time", "dtvar", "ops_per_s", "seconds"
	Unit   string            `json:"unit"`             // "MiB/s", "ops/s", "s", "%"
	Value  float64           `json:"value"`
	Runs   []float64         `json:"runs,omitempty"` // every repetition, when Value is their median

	SourceRef   string   `json:"source_ref,omitempty"`   // "GUPFS A.1 sample", "THESIS T5.2 Mean"
	SourceValue *float64 `json:"source_value,omitempty"` // the seed's number, in SourceUnit
	SourceUnit  string   `json:"source_unit,omitempty"`

	// Check names the cross-check tool and its value on the same target in
	// the same run; Agree is false when the two differ by more than
	// CrossCheckTolerance (the row is then marked disagree, never dropped).
	Check      string   `json:"check,omitempty"`
	CheckValue *float64 `json:"check_value,omitempty"`
	Agree      *bool    `json:"agree,omitempty"`

	Note string `json:"note,omitempty"`

	// Run is where the row was measured (nil in rows from before rows
	// carried it).
	Run *Provenance `json:"run,omitempty"`

	// CI is a 95% confidence interval of Value, from Runs (Bootstrap):
	// nil when the row has too few runs for one.
	CI *[2]float64 `json:"ci95,omitempty"`
}

// CrossCheckTolerance is how far a value may be from its cross-check and
// still agree with it: 10%, of the cross-check's value.
const CrossCheckTolerance = 0.10

// Source sets the seed's number beside the row.
func (r *Row) Source(ref string, value float64, unit string) {
	r.SourceRef, r.SourceValue, r.SourceUnit = ref, &value, unit
}

// CrossCheck records another tool's value for the same measurement and
// whether the two agree.
func (r *Row) CrossCheck(tool string, value float64) {
	agree := Agrees(r.Value, value)
	r.Check, r.CheckValue, r.Agree = tool, &value, &agree
}

// Agrees reports whether v is within CrossCheckTolerance of ref.
func Agrees(v, ref float64) bool {
	if ref == 0 {
		return v == 0
	}
	return math.Abs(v-ref) <= CrossCheckTolerance*math.Abs(ref)
}

// Median is the median of xs (the mean of the middle two for an even
// count); 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// WriteJSON writes rows as JSON lines, one object a line.
func WriteJSON(w io.Writer, rows []Row) error {
	enc := json.NewEncoder(w)
	for i := range rows {
		if err := enc.Encode(&rows[i]); err != nil {
			return fmt.Errorf("bench: write row %d: %w", i, err)
		}
	}
	return nil
}

// WriteTable writes rows as an aligned table for a terminal: the value,
// the seed's value and the cross-check side by side.
func WriteTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BENCH\tCASE\tTARGET\tMETRIC\tVALUE\tSOURCE\tCHECK\tPARAMS")
	for _, r := range rows {
		src := "-"
		if r.SourceValue != nil {
			src = fmt.Sprintf("%s %s (%s)", formatValue(*r.SourceValue), r.SourceUnit, r.SourceRef)
		}
		check := "-"
		if r.CheckValue != nil {
			check = fmt.Sprintf("%s %s", r.Check, formatValue(*r.CheckValue))
			if r.Agree != nil && !*r.Agree {
				check += " disagree"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s %s\t%s\t%s\t%s\n", r.Bench, r.Case, orDash(r.Target), r.Metric,
			formatValue(r.Value), r.Unit, src, check, formatParams(r.Params))
	}
	return tw.Flush()
}

func formatValue(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func formatParams(p map[string]string) string {
	if len(p) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k + "=" + p[k])
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
