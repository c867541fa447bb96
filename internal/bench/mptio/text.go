package mptio

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ReportName is the file -N name writes the report to: name_YYYYMMDD_HHMMSS,
// after the run's start.
func ReportName(name string, start time.Time) string {
	return name + "_" + start.Format("20060102_150405")
}

// WriteReport writes the report in MPTIO's layout: the run's parameters,
// a line per test with its aggregate figures, and the node details, a
// column group per test and a line per rank. A first line, which MPTIO
// did not print, gives the flags the run had.
func WriteReport(w io.Writer, r *Result) error {
	p := r.Plan
	c := &p.Config
	b := bufio.NewWriter(w)

	flags := *c
	if flags.Unique {
		flags.Dir = filepath.Dir(flags.Dir) // Run made the -U directory in -d
	}
	fmt.Fprintf(b, "# mptio %s\n\n", flags.CommandLine())
	fmt.Fprintln(b, "Size (MB) Recsz (KB) Num_proc Thrd/proc Tot_thrd Rec/proc Rec/th")
	fmt.Fprintln(b, "--------- ---------- -------- --------- -------- -------- ------")
	fmt.Fprintf(b, "%9s %10s %8d %9d %8d %8d %6d\n\n", decimal(MiB(p.ProcSize)), decimal(float64(c.RecordSize)/1024),
		c.Procs, c.Threads, c.Procs*c.Threads, int64(c.Threads)*p.Records, p.Records)

	sums := r.Summaries()
	fmt.Fprintln(b, "Test Name  Recsz Tot_thrd Rate MB/s     E-Rate   E-Time   %DtVar")
	fmt.Fprintln(b, "---------- ----- -------- ----------- ---------- -------- --------")
	for _, s := range sums {
		fmt.Fprintf(b, "%-10s %5s %8d %11.2f %10.2f %8.2f %8.2f\n", s.Test, decimal(float64(c.RecordSize)/1024),
			s.Threads, s.Rate, s.ERate, s.ETime, s.DtVar)
	}

	const cell = 28 // " %9.2f %8.2f %7.2f "
	rule := "|------|" + strings.Repeat(strings.Repeat("-", cell)+"|", len(sums))
	fmt.Fprintln(b, "\nNODE DETAILS")
	fmt.Fprintln(b, rule)
	fmt.Fprint(b, "| Node |")
	for _, s := range sums {
		fmt.Fprintf(b, " %-*s |", cell-2, s.Test)
	}
	fmt.Fprint(b, "\n|      |")
	for range sums {
		fmt.Fprintf(b, " %9s %8s %7s |", "Rate", "Time", "%Sys")
	}
	fmt.Fprintln(b)
	fmt.Fprintln(b, rule)
	for rank := range c.Procs {
		fmt.Fprintf(b, "| %4d |", rank)
		for _, s := range sums {
			n := s.Nodes[rank]
			fmt.Fprintf(b, " %9.2f %8.2f %7.2f |", n.Rate, n.Time, n.Sys)
		}
		fmt.Fprintln(b)
	}
	fmt.Fprintln(b, rule)
	if err := b.Flush(); err != nil {
		return fmt.Errorf("mptio: write report: %w", err)
	}
	return nil
}

// decimal prints x as a whole number when it is one, else with one or two
// decimals: "200", "0.5", "170.67".
func decimal(x float64) string {
	if x == float64(int64(x)) {
		return strconv.FormatInt(int64(x), 10)
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

// CommandLine is c in MPTIO's flags, with -n for the process count.
func (c *Config) CommandLine() string {
	args := []string{"-n", strconv.Itoa(c.Procs)}
	if c.Mode == Device {
		for _, d := range c.Devices {
			args = append(args, "-R", d)
		}
	} else {
		args = append(args, "-"+c.Mode.String())
	}
	if c.GlobalSize > 0 {
		args = append(args, "-F", SizeString(c.GlobalSize))
	} else {
		args = append(args, "-f", SizeString(c.ProcSize))
	}
	args = append(args, "-b", SizeString(c.RecordSize), "-t", strconv.Itoa(c.Threads))
	for _, t := range c.Skip {
		args = append(args, "-k", strconv.Itoa(int(t)))
	}
	if c.NRand > 0 {
		args = append(args, "-a", strconv.FormatInt(c.NRand, 10))
	}
	flag := func(on bool, f ...string) {
		if on {
			args = append(args, f...)
		}
	}
	flag(c.Rotate, "-r")
	flag(c.Direct, "-I")
	flag(c.OverlapProcs, "-O", "p")
	flag(c.OverlapThreads, "-O", "t")
	flag(c.Offset > 0, "-s", SizeString(c.Offset))
	flag(c.Keep, "-K")
	flag(c.Check, "-C")
	flag(c.Unique, "-U")
	flag(c.Mode != Device && c.Dir != "", "-d", c.Dir)
	return strings.Join(args, " ")
}

// SizeString prints n bytes as MPTIO's flags take them: with the largest
// of the suffixes G, M, K that divides it exactly (200M, 256K), else in
// bytes.
func SizeString(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
