package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Trace is a workload held in memory, in the terms the SWF Reader streams
// it: the header the machine is read from, and the jobs. ReadSacct builds
// one from Slurm's accounting.
//
// Jobs must be in submit order, each Submit counted from the trace's zero;
// Run refuses a trace that is not.
type Trace struct {
	Header Header
	Jobs   []TraceJob
}

// Run simulates t under cfg, as Run does an SWF trace.
func (t *Trace) Run(ctx context.Context, cfg Config) (*Result, error) {
	began := time.Now()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if len(t.Jobs) == 0 {
		return nil, errors.New("the trace has no jobs, nothing to simulate")
	}
	return simulate(ctx, began, t.Header, &traceJobs{jobs: t.Jobs}, cfg)
}

// HasJob reports whether t has a job with this id.
func (t *Trace) HasJob(id int64) bool {
	for _, j := range t.Jobs {
		if j.ID == id {
			return true
		}
	}
	return false
}

// traceJobs gives a Trace's jobs one at a time, checking their order as
// the SWF Reader does.
type traceJobs struct {
	jobs []TraceJob
	next int
}

func (s *traceJobs) Next() (TraceJob, error) {
	if s.next == len(s.jobs) {
		return TraceJob{}, io.EOF
	}
	j := s.jobs[s.next]
	if s.next > 0 {
		if prev := s.jobs[s.next-1]; j.Submit < prev.Submit {
			return TraceJob{}, fmt.Errorf("trace line %d: submit time %s is before the previous job's %s; a trace's jobs must be in submit order",
				j.Line, j.Submit, prev.Submit)
		}
	}
	s.next++
	return j, nil
}

// Runner runs one configuration on a trace fixed beforehand (a Sweep's
// points, each on the same jobs).
type Runner func(ctx context.Context, cfg Config) (*Result, error)
