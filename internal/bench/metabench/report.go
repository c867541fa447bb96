package metabench

import (
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/rsa-hpc/rsa/internal/bench"
)

// WriteText writes the report as METABENCH's process 0 would: the run's
// settings, every phase's aggregate rate, each process's own rate, and
// Create-A's batch by batch.
func (r *Report) WriteText(w io.Writer) error {
	c := r.Config
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "METABENCH %s: nproc %d, N %d (%s)\n",
		r.Start.Format("2006-01-02 15:04:05"), c.NProc, r.N(), roleNote(c))
	fmt.Fprintf(tw, "-c %d -b %d -f %d%s\n", c.NFile, c.NByte, c.Freq, flagNote(c))
	fmt.Fprintf(tw, "working directories: %s%s\n", strings.Join(c.Dirs, " "), clientNote(c))
	if r.ran(Untar) {
		fmt.Fprintf(tw, "untar: %s\n", tarballNote(c))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "PHASE\tN\tPROCS\tOPS\tSECONDS\tOPS/S\tNOTE")
	for _, res := range r.Results {
		note := ""
		if !res.Phase.InSource() {
			note = "not in source"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.6f\t%.0f\t%s\n",
			res.Phase, r.N(), len(res.Ranks), res.Ops, res.Elapsed.Seconds(), res.Rate(), note)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "PHASE\tPROCESS\tOPS\tSECONDS\tOPS/S")
	for _, res := range r.Results {
		for _, rk := range res.Ranks {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.6f\t%.0f\n", res.Phase, rk.Rank, rk.Ops, rk.Elapsed.Seconds(), rk.Rate())
		}
	}
	if len(r.Checks) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "PHASE\tCHECK\tOPS\tSECONDS\tOPS/S\tNOTE")
		for _, chk := range r.Checks {
			tool, ops, secs, opsPerS := "-", "-", "-", "-"
			if chk.Tool != "" {
				tool, ops = chk.Tool, strconv.Itoa(chk.Ops)
				secs, opsPerS = fmt.Sprintf("%.6f", chk.Elapsed.Seconds()), fmt.Sprintf("%.0f", chk.Rate())
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", chk.Phase, tool, ops, secs, opsPerS, chk.Note)
		}
	}
	for _, res := range r.Results {
		if len(res.Batches) == 0 {
			continue
		}
		fmt.Fprintf(tw, "\nCreate-A by batches of %d (process %d; the directory grows)\n", c.Freq, c.NProc-1)
		fmt.Fprintln(tw, "FILES\tSECONDS\tOPS/S")
		first := 1
		for _, b := range res.Batches {
			fmt.Fprintf(tw, "%d-%d\t%.6f\t%.0f\n", first, first+b.Files-1, b.Elapsed.Seconds(), b.Rate())
			first += b.Files
		}
	}
	return tw.Flush()
}

// Rows are the report's results as bench rows, each beside GUPFS Table 1's
// number for the same process count where the table has one. Create-A's
// batches follow as rows of their own (metric batch_ops_per_s).
func (r *Report) Rows(target string) []bench.Row {
	c := r.Config
	params := map[string]string{
		"nfile": strconv.Itoa(c.NFile),
		"nbyte": strconv.Itoa(c.NByte),
		"freq":  strconv.Itoa(c.Freq),
		"nproc": strconv.Itoa(c.NProc),
		"N":     strconv.Itoa(r.N()),
	}
	if c.Proc0 {
		params["proc0"] = "1"
	}
	var rows []bench.Row
	for _, res := range r.Results {
		row := bench.Row{
			Bench: "metabench", Case: string(res.Phase), Target: target,
			Params: maps.Clone(params), Metric: "ops_per_s", Unit: "ops/s", Value: res.Rate(),
		}
		var notes []string
		if v, ok := table1(res.Phase, c.NProc, c.Proc0); ok {
			row.Source(fmt.Sprintf("GUPFS Table 1 N=%d", c.NProc), v, "ops/s")
		}
		if !res.Phase.InSource() {
			notes = append(notes, "not in source")
		}
		if res.Phase == Untar {
			row.Params["tarball"] = tarballParam(c)
			notes = append(notes, tarballNote(c))
		}
		if len(c.Dirs) == 1 && c.NProc > 1 {
			notes = append(notes, "one client cache: all processes share one mount")
		}
		if chk, ok := r.check(res.Phase); ok {
			if chk.Tool != "" {
				row.CrossCheck(chk.Tool, chk.Rate())
			}
			if chk.Note != "" {
				notes = append(notes, "check: "+chk.Note)
			}
		}
		row.Note = strings.Join(notes, "; ")
		rows = append(rows, row)

		for i, b := range res.Batches {
			brow := bench.Row{
				Bench: "metabench", Case: string(res.Phase), Target: target,
				Params: maps.Clone(params), Metric: "batch_ops_per_s", Unit: "ops/s", Value: b.Rate(),
			}
			brow.Params["batch"] = strconv.Itoa(i + 1)
			rows = append(rows, brow)
		}
	}
	return rows
}

// check returns the cross-check of phase p, if it was run.
func (r *Report) check(p Phase) (Check, bool) {
	for _, c := range r.Checks {
		if c.Phase == p {
			return c, true
		}
	}
	return Check{}, false
}

func (r *Report) ran(p Phase) bool {
	for _, res := range r.Results {
		if res.Phase == p {
			return true
		}
	}
	return false
}

func roleNote(c Config) string {
	switch {
	case c.NProc == 1:
		return "process 0 sets up and takes part"
	case c.Proc0:
		return "-0: process 0 sets up and takes part"
	}
	return "process 0 sets up only"
}

func flagNote(c Config) string {
	var s string
	if c.Cleanup {
		s += " -k"
	}
	if c.Proc0 {
		s += " -0"
	}
	return s
}

func clientNote(c Config) string {
	if len(c.Dirs) == 1 {
		return " (one client: every process shares one cache)"
	}
	return fmt.Sprintf(" (%d clients; process i works through directory i mod %d)", len(c.Dirs), len(c.Dirs))
}

// tarballParam names the archive briefly: "synthetic", "synthetic/10" or
// the user's file.
func tarballParam(c Config) string {
	switch {
	case c.Tarball != "":
		return c.Tarball
	case c.Tree.Scale > 1:
		return "synthetic/" + strconv.Itoa(c.Tree.Scale)
	}
	return "synthetic"
}

func tarballNote(c Config) string {
	if c.Tarball != "" {
		return c.Tarball
	}
	return c.Tree.String()
}
