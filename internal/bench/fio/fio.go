// Package fio runs fio and reads its JSON report: the part the
// thesis' fio cross-checks and rsa-lab bench tools' fio jobs share.
// fio is the independent measure beside each benchmark's own numbers,
// so each of them describes its I/O to fio and reads back what fio
// moved, how long it took and how fast. What a benchmark makes of the
// report (which direction, one job or the sum of many, which rate) is
// its own and stays with it; here is only what is the same for all: the
// report's shape, finding it in fio's output, and running fio with
// errors that say what went wrong.
package fio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Stats is one direction (read or write) of a job in fio's report, the
// fields the cross-checks read. A job that only writes has zero Stats in
// read, and the other way round; fio's file engines (filecreate,
// filestat, filedelete) count in read, fio's default direction.
type Stats struct {
	IOBytes   int64   `json:"io_bytes"`  // bytes moved
	BWBytes   int64   `json:"bw_bytes"`  // bytes a second: IOBytes over the runtime
	RuntimeMS int64   `json:"runtime"`   // the job's time in this direction, in fio's whole milliseconds
	TotalIOs  int     `json:"total_ios"` // I/Os done; one a file for the file engines
	Clat      Latency `json:"clat_ns"`   // completion latency: the time in the engine's calls
}

// Latency is a latency distribution of fio's report, in nanoseconds:
// how many were timed and their mean. N times Mean is the whole time in
// the calls, which still measures a job that ran under fio's millisecond.
type Latency struct {
	N    int     `json:"N"`
	Mean float64 `json:"mean"` // nanoseconds
}

// Runtime is RuntimeMS as a duration. fio keeps whole milliseconds, so
// a job that ran under one has a zero Runtime.
func (s Stats) Runtime() time.Duration { return time.Duration(s.RuntimeMS) * time.Millisecond }

// Job is one entry of fio's report: a job, or with group_reporting all
// the jobs of a group together (bytes summed, runtime the longest job's).
type Job struct {
	Name  string `json:"jobname"`
	Error int    `json:"error"` // fio's errno for the job; Parse refuses a report with one
	Read  Stats  `json:"read"`
	Write Stats  `json:"write"`
}

// Report is the part of fio's --output-format=json the cross-checks read.
type Report struct {
	Jobs []Job `json:"jobs"`
}

// ErrNoJobs is Parse's error for a report without jobs (fio ran
// nothing), for a caller that words it its own way.
var ErrNoJobs = errors.New("fio's report has no jobs")

// Parse reads fio's JSON report from its standard output. fio may print
// notes ("fio: ...") before the JSON, so it starts at the first brace,
// and it reads one object, so that text after it does no harm. A report
// without jobs, or with a job that failed, is an error: there is nothing
// to compare then.
func Parse(out []byte) (Report, error) {
	i := bytes.IndexByte(out, '{')
	if i < 0 {
		return Report{}, errors.New("no JSON report in fio's output")
	}
	var rep Report
	if err := json.NewDecoder(bytes.NewReader(out[i:])).Decode(&rep); err != nil {
		return Report{}, fmt.Errorf("fio's JSON report: %w", err)
	}
	if len(rep.Jobs) == 0 {
		return Report{}, ErrNoJobs
	}
	for _, j := range rep.Jobs {
		if j.Error != 0 {
			return Report{}, fmt.Errorf("fio job %s failed: error %d", j.Name, j.Error)
		}
	}
	return rep, nil
}

// Cmd is one run of fio.
type Cmd struct {
	// Args are fio's arguments after --output-format=json: job options
	// (--name=... first), job files, or "-" for the job file in Stdin.
	Args []string
	// Stdin is a job file handed to fio on its standard input (with the
	// argument "-"): nothing to write to disk or remove after.
	Stdin string
	// Dir is the directory fio runs in, where relative paths of the job
	// are; "" is this process' own.
	Dir string
}

// waitDelay is how long Run waits for fio to end once ctx has ended.
const waitDelay = 10 * time.Second

// Run runs fio --output-format=json with c's arguments and parses its
// report. Its errors name the command and carry what fio said on
// standard error. Where fio is not installed the error says how to
// install it and wraps exec.ErrNotFound, so that a caller can test for
// it (errors.Is) and add its own way out; where ctx ended, the error
// wraps ctx's.
func Run(ctx context.Context, c Cmd) (Report, error) {
	cmd := exec.CommandContext(ctx, "fio", append([]string{"--output-format=json"}, c.Args...)...)
	cmd.Dir = c.Dir
	// fio runs each job in a process of its own, which holds fio's
	// standard output too: killed outright (exec's default), fio would
	// leave them running, and Wait waiting on them. SIGTERM has fio stop
	// its jobs and exit; should it not, Wait gives up after waitDelay.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = waitDelay
	if c.Stdin != "" {
		cmd.Stdin = strings.NewReader(c.Stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	name := strings.Join(append([]string{"fio"}, c.Args...), " ")
	if err := cmd.Run(); err != nil {
		switch {
		case errors.Is(err, exec.ErrNotFound):
			return Report{}, fmt.Errorf("fio is not installed (%w): apt-get install fio", err)
		case ctx.Err() != nil:
			return Report{}, fmt.Errorf("%s: %w", name, ctx.Err())
		}
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return Report{}, fmt.Errorf("%s: %w: %s", name, err, msg)
		}
		return Report{}, fmt.Errorf("%s: %w", name, err)
	}
	rep, err := Parse(stdout.Bytes())
	if err != nil {
		return Report{}, fmt.Errorf("%s: %w", name, err)
	}
	return rep, nil
}
