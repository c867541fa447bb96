package crosscheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MdtestResult is what one mdtest run reports: its SUMMARY tables. mdtest
// has no machine-readable summary (its CSV option holds per-rank figures,
// not the table), so the table is what the field quotes.
type MdtestResult struct {
	Version    string // mdtest's own version, "4.1.0+dev"
	Tasks      int
	Nodes      int
	Iterations int // -i

	// Rates is the "SUMMARY rate" table, in operations per second of all
	// tasks. mdtest leaves it out with -Z.
	Rates []MdtestOp

	// Times is the "SUMMARY time" table, printed with -Z or -P. mdtest
	// heads it "ms/op", but its figures are seconds per phase (mdtest.c
	// prints time_before_barrier, t_end - t_start of the whole phase):
	// the unit is taken as it is, not as labelled.
	Times []MdtestOp
}

// MdtestOp is one row of a SUMMARY table: one operation over all
// iterations.
type MdtestOp struct {
	Name string // mdtest's name: "File creation", "Directory stat", "Tree removal"

	// Max, Min and Mean are over iterations, of all tasks together; StdDev
	// is 0 for one iteration.
	Max, Min, Mean, StdDev float64

	// Rank holds the figures of single ranks, printed only with
	// --showRankStatistics; nil without.
	Rank *MdtestRankStats
}

// MdtestRankStats is the per-rank part of a SUMMARY row.
type MdtestRankStats struct {
	Max, Min, Mean float64
}

// Rate returns the row of operation name ("File creation") of the rate table.
func (r *MdtestResult) Rate(name string) (MdtestOp, bool) {
	for _, op := range r.Rates {
		if op.Name == name {
			return op, true
		}
	}
	return MdtestOp{}, false
}

// ParseMdtest parses mdtest's standard output. Lines other than the header
// and the SUMMARY tables (warnings, -v progress) are skipped.
func ParseMdtest(out []byte) (*MdtestResult, error) {
	res := &MdtestResult{}
	// table is the table whose rows follow, nil outside one.
	var table *[]MdtestOp
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "mdtest-") && strings.Contains(line, " was launched with "):
			// "mdtest-4.1.0+dev was launched with 2 total task(s) on 1 node(s)"
			// The counts are context, not results: a line worded
			// otherwise leaves them 0 rather than failing the parse.
			f := strings.Fields(line)
			res.Version = strings.TrimPrefix(f[0], "mdtest-")
			if len(f) >= 9 {
				res.Tasks, _ = strconv.Atoi(f[4])
				res.Nodes, _ = strconv.Atoi(f[8])
			}
			continue
		case strings.HasPrefix(line, "SUMMARY "):
			// "SUMMARY rate (in ops/sec): (of 2 iterations)"
			n, err := summaryIterations(line)
			if err != nil {
				return nil, err
			}
			res.Iterations = n
			switch {
			case strings.HasPrefix(line, "SUMMARY rate"):
				table = &res.Rates
			case strings.HasPrefix(line, "SUMMARY time"):
				table = &res.Times
			default:
				return nil, fmt.Errorf("crosscheck: mdtest summary of an unknown kind: %q", line)
			}
			continue
		}
		if table == nil {
			continue
		}
		f := strings.Fields(line)
		if len(f) > 0 && (f[0] == "Operation" || f[0] == "---------") {
			continue // the column heads and the rule under them
		}
		op, ok, err := mdtestRow(f)
		if err != nil {
			return nil, fmt.Errorf("crosscheck: mdtest summary row %q: %w", line, err)
		}
		if !ok {
			table = nil // the table ends at the first line that is no row
			continue
		}
		*table = append(*table, op)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("crosscheck: reading mdtest output: %w", err)
	}
	if len(res.Rates) == 0 && len(res.Times) == 0 {
		return nil, errors.New("crosscheck: no SUMMARY table in mdtest output (did mdtest abort?)")
	}
	return res, nil
}

func summaryIterations(line string) (int, error) {
	_, after, ok := strings.Cut(line, "(of ")
	if ok {
		if n, _, ok := strings.Cut(after, " iteration"); ok {
			if i, err := strconv.Atoi(n); err == nil {
				return i, nil
			}
		}
	}
	return 0, fmt.Errorf("crosscheck: no iteration count in mdtest's %q", line)
}

// mdtestRow parses the fields of a SUMMARY row: a name of one or more
// words, then four figures, or seven with --showRankStatistics. It
// reports false for a line that is no row.
func mdtestRow(f []string) (MdtestOp, bool, error) {
	// The name ends where the figures start: no name word is a number.
	i := 0
	for i < len(f) && !isFigure(f[i]) {
		i++
	}
	name, figs := strings.Join(f[:i], " "), f[i:]
	if name == "" || len(figs) == 0 {
		return MdtestOp{}, false, nil
	}
	if len(figs) != 4 && len(figs) != 7 {
		return MdtestOp{}, false, fmt.Errorf("%d figures, want 4 or 7", len(figs))
	}
	v := make([]float64, len(figs))
	for j, s := range figs {
		var err error
		if v[j], err = parseFigure(s); err != nil {
			return MdtestOp{}, false, err
		}
	}
	op := MdtestOp{Name: name}
	if len(v) == 7 {
		op.Rank = &MdtestRankStats{Max: v[0], Min: v[1], Mean: v[2]}
		v = v[3:]
	}
	op.Max, op.Min, op.Mean, op.StdDev = v[0], v[1], v[2], v[3]
	return op, true, nil
}

func isFigure(s string) bool {
	_, err := parseFigure(s)
	return err == nil
}

// parseFigure parses a figure mdtest printed with %14.3f, "-nan" (0/0 in
// C) included.
func parseFigure(s string) (float64, error) {
	if s == "-nan" {
		s = "nan"
	}
	return strconv.ParseFloat(s, 64)
}
