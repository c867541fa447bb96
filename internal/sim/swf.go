package sim

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// The Standard Workload Format of the Parallel Workloads Archive
// (https://www.cs.huji.ac.il/labs/parallel/workload/swf.html): header
// comments starting with ';', then one job per line in 18 whitespace-
// separated fields, -1 meaning unknown, sorted by submit time.
const swfFields = 18

// Field numbers as the format's definition counts them (1-based).
var swfFieldNames = [swfFields + 1]string{
	1: "job id", 2: "submit time", 3: "wait time", 4: "run time", 5: "allocated processors",
	6: "average CPU time", 7: "used memory", 8: "requested processors", 9: "requested time",
	10: "requested memory", 11: "status", 12: "user", 13: "group", 14: "executable",
	15: "queue", 16: "partition", 17: "preceding job", 18: "think time",
}

// Header is what a trace's header comments say about its machine; 0 where
// the header says nothing.
type Header struct {
	MaxNodes int
	MaxProcs int
	MaxJobs  int
}

// ProcsPerNode is how many processors make one node: MaxProcs/MaxNodes when
// the header gives both and it is more than one, else 1 (one processor is
// one node, the archive's convention for machines without the split).
func (h Header) ProcsPerNode() int {
	if h.MaxNodes > 0 && h.MaxProcs > h.MaxNodes {
		return h.MaxProcs / h.MaxNodes
	}
	return 1
}

// TraceJob is one job of a trace, in the fields the simulator uses: an
// SWF line (Reader), or an allocation sacct listed (ReadSacct).
type TraceJob struct {
	Line    int // line number in the trace, for messages
	ID      int64
	Submit  time.Duration // since the trace's zero
	Run     time.Duration // <= 0: unknown or zero
	Procs   int           // allocated processors, else requested; <= 0: unknown
	ReqTime time.Duration // requested time; <= 0: unknown
	// Nodes is the job's node count where the trace records it (sacct's
	// NNodes); 0: Procs divided by the processors per node (SWF).
	Nodes int
	// Input is the bytes the job read as input where the trace records
	// them (what RSA staged in, from sacct's AdminComment); 0: unknown,
	// drawn from the workload's input distribution.
	Input int64
}

// Reader streams jobs from an SWF trace; it keeps nothing per job.
type Reader struct {
	sc      *bufio.Scanner
	line    int
	Header  Header
	pending string // the first job line, read while looking for the header
	havePen bool
	last    time.Duration
}

// NewReader reads the header comments up to the first job line.
func NewReader(r io.Reader) (*Reader, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	rd := &Reader{sc: sc}
	for sc.Scan() {
		rd.line++
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		if !strings.HasPrefix(s, ";") {
			rd.pending, rd.havePen = s, true
			break
		}
		rd.header(s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading trace line %d: %w", rd.line+1, err)
	}
	return rd, nil
}

// header takes the keys the simulator needs from one comment line. Archive
// headers carry remarks after the number ("; MaxNodes: 128 (8 reserved)"),
// so only the leading integer counts, and a value without one is ignored.
func (r *Reader) header(s string) {
	key, val, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(s, ";")), ":")
	if !ok {
		return
	}
	fs := strings.Fields(val)
	if len(fs) == 0 {
		return
	}
	n, err := strconv.Atoi(fs[0])
	if err != nil || n <= 0 {
		return
	}
	switch strings.TrimSpace(key) {
	case "MaxNodes":
		r.Header.MaxNodes = n
	case "MaxProcs":
		r.Header.MaxProcs = n
	case "MaxJobs":
		r.Header.MaxJobs = n
	case "MaxRecords":
		if r.Header.MaxJobs == 0 {
			r.Header.MaxJobs = n
		}
	}
}

// Next returns the next job, or io.EOF after the last.
func (r *Reader) Next() (TraceJob, error) {
	for {
		var s string
		if r.havePen {
			s, r.havePen = r.pending, false
		} else {
			if !r.sc.Scan() {
				if err := r.sc.Err(); err != nil {
					return TraceJob{}, fmt.Errorf("reading trace line %d: %w", r.line+1, err)
				}
				return TraceJob{}, io.EOF
			}
			r.line++
			s = strings.TrimSpace(r.sc.Text())
		}
		if s == "" || strings.HasPrefix(s, ";") {
			continue // comments may appear anywhere; only the leading ones are the header
		}
		j, err := r.parse(s)
		if err != nil {
			return TraceJob{}, err
		}
		if j.Submit < r.last {
			return TraceJob{}, fmt.Errorf("trace line %d: submit time %d s is before the previous job's %d s; SWF traces are sorted by submit time (sort -n -k2 the job lines)",
				r.line, int64(j.Submit/time.Second), int64(r.last/time.Second))
		}
		r.last = j.Submit
		return j, nil
	}
}

func (r *Reader) parse(s string) (TraceJob, error) {
	fs := strings.Fields(s)
	if len(fs) != swfFields {
		return TraceJob{}, fmt.Errorf("trace line %d: %d fields, want %d (Standard Workload Format)", r.line, len(fs), swfFields)
	}
	var v [swfFields + 1]float64
	for i, f := range fs {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return TraceJob{}, fmt.Errorf("trace line %d: field %d (%s) is %q, not a number (-1 means unknown)", r.line, i+1, swfFieldNames[i+1], f)
		}
		v[i+1] = x
	}
	if v[2] < 0 {
		return TraceJob{}, fmt.Errorf("trace line %d: field 2 (submit time) is %s; it must be 0 or more seconds", r.line, fs[1])
	}
	for _, i := range []int{2, 4, 9} {
		if v[i] > MaxTraceSeconds {
			return TraceJob{}, fmt.Errorf("trace line %d: field %d (%s) is %s s, more than 1e9 s (about 31 years), the most the simulator takes; fix the line or drop the job",
				r.line, i, swfFieldNames[i], fs[i-1])
		}
	}
	procs := v[5]
	if procs <= 0 {
		procs = v[8]
	}
	return TraceJob{
		Line:    r.line,
		ID:      int64(v[1]),
		Submit:  seconds(v[2]),
		Run:     seconds(v[4]),
		Procs:   int(procs),
		ReqTime: seconds(v[9]),
	}, nil
}

// MaxTraceSeconds bounds a trace's submit, run and requested times (about
// 31 years): sums of such times stay far from time.Duration's limit.
const MaxTraceSeconds = 1e9

// seconds converts a trace's seconds, at most MaxTraceSeconds (parse
// checks); unknown (-1) stays negative.
func seconds(x float64) time.Duration {
	return time.Duration(x * float64(time.Second))
}

// maxEstimate caps a job's estimate: 4e9 s (about 127 years) added to any
// simulated time stays within time.Duration.
const maxEstimate = 4e9 * time.Second

// estimate is what the scheduler believes a job will take: its requested
// time, else its run time, times factor; at least a second and at most
// maxEstimate, clamped before converting so that no factor overflows it.
func estimate(t TraceJob, factor float64) time.Duration {
	est := t.ReqTime
	if est <= 0 {
		est = t.Run // unknown request: the run time is the estimate (docs)
	}
	x := float64(est) * factor
	if x >= float64(maxEstimate) {
		return maxEstimate
	}
	return max(time.Second, time.Duration(x))
}

// HasJob reports whether the trace read from r has a job line with this
// id, reading it to the end at most.
func HasJob(r io.Reader, id int64) (bool, error) {
	rd, err := NewReader(r)
	if err != nil {
		return false, err
	}
	for {
		j, err := rd.Next()
		switch {
		case err == io.EOF:
			return false, nil
		case err != nil:
			return false, err
		case j.ID == id:
			return true, nil
		}
	}
}
