package sim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rsa-hpc/rsa/internal/slurm"
)

// SacctFormat is the list of fields ReadSacct reads, in the order it
// expects them when the listing has no header line.
const SacctFormat = "JobIDRaw,Submit,Start,End,NNodes,NCPUS,Timelimit,State"

// SacctCommand is the command whose output ReadSacct reads. sacct lists
// only today's jobs unless given a period (--starttime, --endtime), and
// prints times as SLURM_TIME_FORMAT says: unset, or "standard", is the
// ISO form ReadSacct reads. With ",AdminComment" added at the end of the
// format, the input a job staged through RSA (RSA writes it there) is the
// job's input size instead of a draw from --input.
const SacctCommand = "sacct --parsable2 --noheader --allusers --format=" + SacctFormat

// The fields, by their index in sacctNames.
const (
	sacctID = iota
	sacctSubmit
	sacctStart
	sacctEnd
	sacctNodes
	sacctCPUs
	sacctLimit
	sacctState
	sacctFields
)

var sacctNames = [sacctFields]string{"JobIDRaw", "Submit", "Start", "End", "NNodes", "NCPUS", "Timelimit", "State"}

// sacctTimeLayout is sacct's time stamp with SLURM_TIME_FORMAT unset or
// "standard": local time, no zone.
const sacctTimeLayout = "2006-01-02T15:04:05"

// SacctStats says what ReadSacct made of its input, line by line.
type SacctStats struct {
	Lines int `json:"lines"` // lines read, blank and header lines included
	Jobs  int `json:"jobs"`  // allocations that started and ended: the trace's jobs
	// Skipped.
	Steps      int `json:"steps"`       // job steps (a dot in JobIDRaw): parts of a job already counted
	NotStarted int `json:"not_started"` // Start Unknown or None: pending, or cancelled before starting
	Running    int `json:"running"`     // started but End Unknown: no run time yet
	// Recorded counts the jobs whose input size RSA recorded (AdminComment).
	Recorded int `json:"recorded"`
	// The trace's zero, the earliest submission of a job kept, and the
	// latest.
	FirstSubmit time.Time `json:"first_submit"`
	LastSubmit  time.Time `json:"last_submit"`
}

// ReadSacct turns SacctCommand's output into a trace: one job per
// allocation that started and ended, its nodes (NNodes), processors
// (NCPUS), run time (End - Start) and requested time (Timelimit), in
// submit order, submissions counted from the earliest. Times are read in
// loc; only their differences matter, so loc matters only where a
// daylight-saving change falls inside the listing.
//
// The fields are read in SacctFormat's order, or in the order a header
// line names them (sacct without --noheader; other columns are then
// ignored). What is skipped, and counted in the stats:
//   - job steps (JobIDRaw 1234.batch, 1234.0): their allocation is the
//     job's own line;
//   - jobs that never started (Start Unknown or None): pending when sacct
//     ran, or cancelled while pending (so also the pending rest of a job
//     array). The simulator replays what a job did on its nodes; one that
//     never ran did nothing there, and it has no run time to replay.
//     Keeping such jobs with a run time of 0 would only have the
//     simulator skip them under "run time <= 0", beside jobs that did run.
//   - jobs still running (End Unknown): their run time is not known yet;
//     cutting it at the time of the listing would make them look shorter
//     than they are.
//
// Array tasks and the components of a heterogeneous job each have a raw
// id and an allocation of their own, and become jobs of their own, with
// the submission time sacct gives them. A line that cannot be read is an
// error naming its line number, the field and what to give instead.
func ReadSacct(r io.Reader, loc *time.Location) (*Trace, SacctStats, error) {
	var (
		st    SacctStats
		jobs  []sacctJob
		cols  = newSacctColumns()
		first = true // no line but blank ones read yet
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		st.Lines++
		n := st.Lines
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" {
			continue
		}
		fs := strings.Split(text, "|")
		for i := range fs {
			fs[i] = strings.TrimSpace(fs[i])
		}
		if first {
			first = false
			header, err := cols.readHeader(n, fs)
			if err != nil {
				return nil, st, err
			}
			if header {
				continue
			}
		}
		fs, again, err := cols.fit(n, fs)
		if err != nil {
			return nil, st, err
		}
		if again {
			continue // the header again: listings joined one after another
		}
		j, keep, err := cols.readJob(n, fs, loc, &st)
		if err != nil {
			return nil, st, err
		}
		if keep {
			jobs = append(jobs, j)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, st, fmt.Errorf("reading sacct line %d: %w", st.Lines+1, err)
	}
	if len(jobs) == 0 {
		return nil, st, fmt.Errorf("no job in sacct's listing both started and ended (%d lines: %d steps, %d never started, %d still running): give sacct a period with --starttime and --endtime (without them it lists today's jobs only); the command: %s",
			st.Lines, st.Steps, st.NotStarted, st.Running, SacctCommand)
	}
	t, err := sacctJobsTrace(jobs, &st)
	return t, st, err
}

// sacctJob is a job ReadSacct keeps, with its submit time as sacct gave it.
type sacctJob struct {
	job    TraceJob
	submit time.Time
}

// sacctColumns are where a listing's fields are: in SacctFormat's order,
// or in the order its header names them.
type sacctColumns struct {
	col   [sacctFields]int // the column of each field
	width int              // columns in a line
	head  []string         // the header line's fields, if it has one
	// admin is the AdminComment column, or -1: the header names one,
	// or, without a header, lines have one more field.
	admin int
}

func newSacctColumns() sacctColumns {
	c := sacctColumns{width: sacctFields, admin: -1}
	for i := range c.col {
		c.col[i] = i
	}
	return c
}

// readHeader reads the first line's fields fs (line n) as sacct's header
// if they name JobIDRaw, and reports whether they did. A header naming
// JobID instead is an error.
func (c *sacctColumns) readHeader(n int, fs []string) (bool, error) {
	has := func(name string) bool {
		return slices.ContainsFunc(fs, func(s string) bool { return strings.EqualFold(s, name) })
	}
	switch {
	case has(sacctNames[sacctID]):
		fs = trimParsable(fs, len(fs)-1)
		col, err := sacctHeader(n, fs)
		if err != nil {
			return false, err
		}
		c.col, c.head, c.width = col, fs, len(fs)
		c.admin = slices.IndexFunc(fs, func(s string) bool { return strings.EqualFold(s, "AdminComment") })
		return true, nil
	case has("JobID"):
		return false, fmt.Errorf("sacct line %d: the header names JobID: give sacct --format=%s, with JobIDRaw (array and heterogeneous jobs' JobID, 1234_5 or 1234+1, is not a number)", n, SacctFormat)
	}
	return false, nil
}

// fit returns line n's fields fs as the columns read them; again is true
// for the header line repeated. Without a header, a line with more fields
// than SacctFormat's ends in an AdminComment.
func (c *sacctColumns) fit(n int, fs []string) (_ []string, again bool, _ error) {
	if c.head == nil && len(fs) > sacctFields {
		// AdminComment last, as SacctCommand's comment says: the
		// site's text in it may hold the separator.
		fs = append(fs[:sacctFields], strings.Join(fs[sacctFields:], "|"))
		c.admin, c.width = sacctFields, sacctFields+1
	} else if c.head == nil {
		c.admin, c.width = -1, sacctFields
	}
	fs = trimParsable(fs, c.width)
	if c.head != nil && slices.EqualFunc(fs, c.head, strings.EqualFold) {
		return nil, true, nil
	}
	if len(fs) != c.width {
		names := strings.Join(sacctNames[:], "|")
		if c.head != nil {
			names = strings.Join(c.head, "|")
		}
		return nil, false, fmt.Errorf("sacct line %d: %d fields, want %d separated by '|' (%s): run %s", n, len(fs), c.width, names, SacctCommand)
	}
	return fs, false, nil
}

// readJob reads line n's fields fs. keep is false for a line the stats
// count instead: a job step, a job that never started or one still
// running.
func (c *sacctColumns) readJob(n int, fs []string, loc *time.Location, st *SacctStats) (_ sacctJob, keep bool, _ error) {
	get := func(f int) string { return fs[c.col[f]] }
	bad := func(f int, fix string) error {
		return fmt.Errorf("sacct line %d: field %d (%s) is %q: %s", n, c.col[f]+1, sacctNames[f], get(f), fix)
	}
	rawID, _, isStep := strings.Cut(get(sacctID), ".")
	id, err := strconv.ParseInt(rawID, 10, 64)
	if err != nil || id < 0 {
		return sacctJob{}, false, bad(sacctID, "want the raw job id, digits with .STEP for a step; give sacct --format=JobIDRaw, not JobID (array and heterogeneous jobs' JobID, 1234_5 or 1234+1, is not a number)")
	}
	if isStep {
		st.Steps++
		return sacctJob{}, false, nil
	}
	submit, ok, err := sacctTime(get(sacctSubmit), loc)
	if err != nil {
		return sacctJob{}, false, bad(sacctSubmit, err.Error())
	}
	if !ok {
		return sacctJob{}, false, bad(sacctSubmit, "every job has a submit time; want a time such as 2024-05-01T12:00:00")
	}
	start, started, err := sacctTime(get(sacctStart), loc)
	if err != nil {
		return sacctJob{}, false, bad(sacctStart, err.Error()+", or Unknown or None for a job that never started")
	}
	end, ended, err := sacctTime(get(sacctEnd), loc)
	if err != nil {
		return sacctJob{}, false, bad(sacctEnd, err.Error()+", or Unknown for a job still running")
	}
	nodes, err := strconv.Atoi(get(sacctNodes))
	if err != nil || nodes < 0 {
		return sacctJob{}, false, bad(sacctNodes, "want a whole number of nodes, 0 or more")
	}
	cpus, err := strconv.Atoi(get(sacctCPUs))
	if err != nil || cpus < 0 {
		return sacctJob{}, false, bad(sacctCPUs, "want a whole number of processors, 0 or more")
	}
	limit, err := timelimit(get(sacctLimit))
	if err != nil {
		return sacctJob{}, false, bad(sacctLimit, err.Error())
	}
	if get(sacctState) == "" {
		return sacctJob{}, false, bad(sacctState, "want the job's state, such as COMPLETED")
	}
	switch {
	case !started:
		st.NotStarted++
		return sacctJob{}, false, nil
	case !ended:
		st.Running++
		return sacctJob{}, false, nil
	case end.Before(start):
		return sacctJob{}, false, fmt.Errorf("sacct line %d: field %d (End) %s is before field %d (Start) %s: fix the line or drop it",
			n, c.col[sacctEnd]+1, get(sacctEnd), c.col[sacctStart]+1, get(sacctStart))
	case end.Sub(start) > MaxTraceSeconds*time.Second:
		return sacctJob{}, false, fmt.Errorf("sacct line %d: the job ran from %s to %s, more than 1e9 s (about 31 years), the most the simulator takes: fix the line or drop it",
			n, get(sacctStart), get(sacctEnd))
	}
	if nodes == 0 {
		cpus = 0 // no node count: the simulator counts it "processors unknown"
	}
	tj := TraceJob{Line: n, ID: id, Run: end.Sub(start), Procs: cpus, Nodes: nodes, ReqTime: limit}
	if c.admin >= 0 {
		if b, _, ok := slurm.ParseAccounting(fs[c.admin]); ok && b > 0 {
			tj.Input = b
			st.Recorded++
		}
	}
	return sacctJob{job: tj, submit: submit}, true, nil
}

// sacctJobsTrace is the trace of the jobs kept, in submit order (sacct
// lists them by id; the simulator takes them as they arrive), submissions
// counted from the earliest; it sets the stats' job count and span.
func sacctJobsTrace(jobs []sacctJob, st *SacctStats) (*Trace, error) {
	slices.SortStableFunc(jobs, func(a, b sacctJob) int { return a.submit.Compare(b.submit) })
	st.Jobs = len(jobs)
	st.FirstSubmit, st.LastSubmit = jobs[0].submit, jobs[len(jobs)-1].submit
	t := &Trace{Header: Header{MaxJobs: len(jobs)}, Jobs: make([]TraceJob, len(jobs))}
	for i, k := range jobs {
		since := k.submit.Sub(st.FirstSubmit)
		if since > MaxTraceSeconds*time.Second {
			return nil, fmt.Errorf("sacct line %d: submitted %s, more than 1e9 s (about 31 years) after the first job (line %d), the most the simulator takes: list a shorter period",
				k.job.Line, k.submit.Format(sacctTimeLayout), jobs[0].job.Line)
		}
		k.job.Submit = since
		t.Jobs[i] = k.job
	}
	return t, nil
}

// trimParsable drops the empty field after the '|' that sacct --parsable
// (not --parsable2) ends each line with, when a line of width fields has
// one more.
func trimParsable(fs []string, width int) []string {
	if len(fs) == width+1 && fs[width] == "" {
		return fs[:width]
	}
	return fs
}

// sacctHeader maps sacct's header line (fs, at line n) to the column of
// each field ReadSacct reads.
func sacctHeader(n int, fs []string) ([sacctFields]int, error) {
	var col [sacctFields]int
	for f, name := range sacctNames {
		i := slices.IndexFunc(fs, func(s string) bool { return strings.EqualFold(s, name) })
		if i < 0 {
			return col, fmt.Errorf("sacct line %d: the header has no %s column: give sacct --format=%s", n, name, SacctFormat)
		}
		col[f] = i
	}
	return col, nil
}

// sacctTime reads one of sacct's time stamps in loc; known is false for
// Unknown and None, sacct's words for a time that has not come.
func sacctTime(s string, loc *time.Location) (t time.Time, known bool, err error) {
	if strings.EqualFold(s, "Unknown") || strings.EqualFold(s, "None") {
		return time.Time{}, false, nil
	}
	t, err = time.ParseInLocation(sacctTimeLayout, s, loc)
	if err != nil {
		return time.Time{}, false, errors.New("want a time such as 2024-05-01T12:00:00 (run sacct with SLURM_TIME_FORMAT=standard)")
	}
	return t, true, nil
}

// timelimit reads sacct's Timelimit: [D-]HH:MM:SS as sacct prints it, or
// another of Slurm's forms (MM, MM:SS, D-HH, D-HH:MM). UNLIMITED and
// Partition_Limit are no limit the listing gives: 0, which the simulator
// reads as unknown (the run time stands in for the estimate).
func timelimit(s string) (time.Duration, error) {
	const want = "want [D-]HH:MM:SS (as sacct prints it), MM:SS, UNLIMITED or Partition_Limit"
	if strings.EqualFold(s, "UNLIMITED") || strings.EqualFold(s, "Partition_Limit") {
		return 0, nil
	}
	var days int64
	rest, hasDays := s, false
	if d, r, ok := strings.Cut(s, "-"); ok {
		n, ok := wholeNumber(d)
		if !ok {
			return 0, errors.New(want)
		}
		days, rest, hasDays = n, r, true
	}
	var v []int64
	for p := range strings.SplitSeq(rest, ":") {
		n, ok := wholeNumber(p)
		if !ok {
			return 0, errors.New(want)
		}
		v = append(v, n)
	}
	var h, m, sec int64
	switch {
	case hasDays && len(v) <= 3: // D-HH, D-HH:MM, D-HH:MM:SS
		h = v[0]
		if len(v) > 1 {
			m = v[1]
		}
		if len(v) > 2 {
			sec = v[2]
		}
		if h >= 24 || m >= 60 || sec >= 60 {
			return 0, errors.New(want)
		}
	case len(v) == 1: // MM
		m = v[0]
	case len(v) == 2: // MM:SS
		m, sec = v[0], v[1]
		if sec >= 60 {
			return 0, errors.New(want)
		}
	case len(v) == 3: // HH:MM:SS
		h, m, sec = v[0], v[1], v[2]
		if m >= 60 || sec >= 60 {
			return 0, errors.New(want)
		}
	default:
		return 0, errors.New(want)
	}
	// Each part is at most 9 digits (wholeNumber): no overflow here.
	total := ((days*24+h)*60+m)*60 + sec
	if total > MaxTraceSeconds {
		return 0, errors.New("more than 1e9 s (about 31 years), the most the simulator takes; give UNLIMITED for no limit")
	}
	return time.Duration(total) * time.Second, nil
}

// wholeNumber reads 1 to 9 decimal digits.
func wholeNumber(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 9 {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
