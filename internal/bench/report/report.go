// Package report turns rsa-lab bench's rows (JSON lines) into
// docs/evidence.md: a table per benchmark with the seeds' numbers beside
// ours, the cross-checks, and plots.
package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/rsa-hpc/rsa/internal/bench"
)

// Meta is what the page says about where and how it was measured.
type Meta struct {
	Machine  string   // e.g. "2 cores (AMD EPYC), 24 GiB, Linux 6.18, Debian 12"
	Commands []string // the commands that produced the rows
	Date     time.Time
	Plots    []Figure // plots, their paths relative to the page
	// Sections holds, by benchmark, what its section says besides its
	// table.
	Sections map[string]Section
}

// Section is what a benchmark's section says besides its table: a
// paragraph before it, and after it a line for each seed test that the
// benchmark has no counterpart for, and why.
type Section struct {
	Intro     string
	Unmatched []string
}

// Markdown writes the page: one section per benchmark, one table per
// section, rows in the order given.
func Markdown(w io.Writer, rows []bench.Row, m Meta) error {
	var b strings.Builder
	b.WriteString("# Evidence: the seeds' experiments, re-run\n\n")
	b.WriteString("Written by `rsa-lab bench report` from the JSON lines of the runs listed below; do not edit by hand. `make evidence` runs every benchmark at the sources' sizes and writes this page anew.\n\n")
	// The page is written at once; the runs behind it may span days (make
	// evidence resumes by part), so each command says when it ran.
	fmt.Fprintf(&b, "- Written: %s\n- Machine: %s\n", m.Date.UTC().Format("2006-01-02 15:04 UTC"), m.Machine)
	if len(m.Commands) > 0 {
		b.WriteString("- Commands:\n")
		for _, c := range m.Commands {
			fmt.Fprintf(&b, "  - `%s`\n", c)
		}
	}
	b.WriteString("\nEach value stands beside the number the source gives for the same measurement (\"source\"), and, where one ran, beside another tool's value on the same target in the same run (\"check\"; more than 10% apart is marked **disagree**). Ratios compare shapes across hardware 15–25 years apart; absolute values do not compare.\n\n")
	b.WriteString(machineLimits + "\n" + relatedSystems)
	writeHeadline(&b, rows)
	var benches []string
	for _, r := range rows {
		if !slices.Contains(benches, r.Bench) {
			benches = append(benches, r.Bench)
		}
	}
	// A row's note (why a check disagrees, what a value leaves out) is
	// listed under its benchmark's table, each text once, and the row
	// names its number: the table stays readable and nothing is hidden.
	notes := map[string][]string{}
	for _, name := range benches {
		notes[name] = notesOf(rows, name)
	}
	writeCrossChecks(&b, checkSummaries(rows, notes))
	where := provenances(rows)
	for _, name := range benches {
		fmt.Fprintf(&b, "\n## %s\n\n", name)
		sec := m.Sections[name]
		if sec.Intro != "" {
			b.WriteString(sec.Intro + "\n\n")
		}
		b.WriteString("| case | target | metric | params | ours | source | ours / source | check | note | where |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, r := range rows {
			if r.Bench != name {
				continue
			}
			ref := ""
			if r.Note != "" {
				ref = fmt.Sprintf("[%d]", slices.Index(notes[name], r.Note)+1)
			}
			src, ratio, target := "", "", r.Target
			if nodeLocal(r.Target) {
				target += " (node-local)"
			} else if r.SourceValue != nil {
				src = fmt.Sprintf("%s %s (%s)", num(*r.SourceValue), r.SourceUnit, r.SourceRef)
				if *r.SourceValue != 0 {
					ratio = num(r.Value / *r.SourceValue) + "×"
				}
			}
			check := ""
			if r.CheckValue != nil {
				check = fmt.Sprintf("%s %s", r.Check, num(*r.CheckValue))
				if r.Agree != nil && !*r.Agree {
					check += " **disagree**"
				}
			}
			val := num(r.Value) + " " + r.Unit
			switch {
			case r.CI != nil:
				val += fmt.Sprintf(" (95%% CI %s–%s, %d runs)", num(r.CI[0]), num(r.CI[1]), len(r.Runs))
			case len(r.Runs) > 1:
				lo, hi := slices.Min(r.Runs), slices.Max(r.Runs)
				val += fmt.Sprintf(" (%s–%s)", num(lo), num(hi))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", cell(r.Case), cell(target), cell(r.Metric),
				cell(params(r.Params)), cell(val), cell(src), ratio, cell(check), ref, where.key(r))
		}
		if len(notes[name]) > 0 {
			b.WriteString("\nNotes:\n\n")
			for i, n := range notes[name] {
				fmt.Fprintf(&b, "%d. %s\n", i+1, strings.ReplaceAll(n, "\n", " "))
			}
		}
		if len(sec.Unmatched) > 0 {
			b.WriteString("\nSeed tests no job stands in for:\n\n")
			for _, u := range sec.Unmatched {
				fmt.Fprintf(&b, "- %s\n", strings.ReplaceAll(u, "\n", " "))
			}
		}
	}
	where.write(&b)
	if len(m.Plots) > 0 {
		b.WriteString("\n## Plots\n\n")
		for _, p := range m.Plots {
			fmt.Fprintf(&b, "%s\n\n![%s](%s)\n\n", p.Caption, p.Path, p.Path)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeHeadline lists the ratios first: they, not absolute values,
// compare across hardware generations. A node-local ratio is listed
// apart, without the source's number (nodeLocal).
func writeHeadline(b *strings.Builder, rows []bench.Row) {
	var beside, local []string
	for _, r := range rows {
		if r.Unit != "x" || r.SourceValue == nil {
			continue
		}
		if nodeLocal(r.Target) {
			local = append(local, fmt.Sprintf("- %s %s %s, %s (%s): %s×", r.Bench, r.Case, r.Metric, r.Target, params(r.Params), num(r.Value)))
			continue
		}
		beside = append(beside, fmt.Sprintf("- %s %s %s, %s (%s): ours %s× | %s %s×",
			r.Bench, r.Case, r.Metric, r.Target, params(r.Params), num(r.Value), r.SourceRef, num(*r.SourceValue)))
	}
	if len(beside) > 0 {
		b.WriteString("\n## Ratios beside the sources'\n\n" + strings.Join(beside, "\n") + "\n")
	}
	if len(local) > 0 {
		b.WriteString("\n## Ratios of a node-local RAM disk\n\nThe local engine's tmpfs on the job's own host against the shared file system: what any node-local RAM disk gives, not RSA's design, so not set beside the sources' numbers (see above).\n\n" + strings.Join(local, "\n") + "\n")
	}
}

func num(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

func params(p map[string]string) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+p[k])
	}
	return strings.Join(parts, " ")
}

// cell keeps a value from breaking the table.
func cell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }

// T52Curve draws the compute-hold ratio and the time-to-safe ratio of
// T52 against the latency added to the shared file system, to path (SVG
// or PNG by its extension). It fails if the rows hold no T52 latency runs.
func T52Curve(path string, rows []bench.Row) error {
	series := map[string]plotter.XYs{}
	for _, r := range rows {
		if r.Bench != "thesis" || r.Case != "T52" || (r.Metric != "hold_ratio" && r.Metric != "safe_ratio") {
			continue
		}
		d, err := time.ParseDuration(cmp.Or(r.Params["shared_latency"], "0s"))
		if err != nil {
			return fmt.Errorf("T52 curve: row's shared_latency %q: %w", r.Params["shared_latency"], err)
		}
		name := r.Target + ": " + r.Metric
		if so := r.Params["stage_out"]; so != "" {
			name += ", stage-out " + so
		}
		series[name] = append(series[name], plotter.XY{X: float64(d) / float64(time.Millisecond), Y: r.Value})
	}
	if len(series) == 0 {
		return fmt.Errorf("T52 curve: %w (T52 hold_ratio or safe_ratio)", errNoRows)
	}
	p := plot.New()
	p.Title.Text = "T52: shared@1g / RSA, against per-create latency on shared@1g"
	p.X.Label.Text = "latency added to each create and open (ms)"
	p.Y.Label.Text = "shared / RSA (thesis: hold 30.9x, safe 4.3x; 5.2x with tar)"
	logY(p)
	names := make([]string, 0, len(series))
	for name := range series {
		names = append(names, name)
	}
	slices.Sort(names)
	for i, name := range names {
		l, pts, err := addSeries(p, series[name], i, strings.Contains(name, "safe"))
		if err != nil {
			return fmt.Errorf("T52 curve: %w", err)
		}
		p.Legend.Add(name, l, pts)
	}
	p.Legend.Top = true
	return p.Save(7*vg.Inch, 4*vg.Inch, path)
}

// machines numbers the distinct provenances of rows (where they were
// measured) in the order rows first name them.
type machines []bench.Provenance

func provenances(rows []bench.Row) machines {
	var ms machines
	for _, r := range rows {
		if r.Run != nil && !slices.Contains(ms, *r.Run) {
			ms = append(ms, *r.Run)
		}
	}
	return ms
}

// key is r's provenance's name in the tables: "m1", ...; "—" for a row
// from before rows recorded it.
func (ms machines) key(r bench.Row) string {
	if r.Run == nil {
		return "—"
	}
	return fmt.Sprintf("m%d", slices.Index(ms, *r.Run)+1)
}

func (ms machines) write(b *strings.Builder) {
	b.WriteString("\n## Where each row ran\n\nEach table's last column names the run a row came from: its host, kernel, CPU and version of the lab, the share of CPU time the hypervisor took during it (steal) and the load when it began. A row marked — was measured before rows recorded this; its command's date is listed at the top.\n\n")
	for i, m := range ms {
		fmt.Fprintf(b, "- m%d: %s\n", i+1, m)
	}
}
