package metabench

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/rsa-hpc/rsa/internal/bench/fio"
)

// fioJob is one participant's part of a phase as a fio job: a section of
// the job file of its own, so that each can have the directory of its
// own client mount.
type fioJob struct {
	name    string // the section's name, "p0"; fio names the job's files name.0, name.1, ...
	dir     string // directory=, as the participant reaches it
	nrfiles int
}

// fioSpec is the fio run that stands beside a phase: one engine, one job
// a participant.
type fioSpec struct {
	engine string // filecreate, filestat, filedelete, or sync (append)
	nbyte  int    // bytes each append writes; sync only
	jobs   []fioJob
}

// fioFileSize is the size fio is told the files have where the engine
// does no I/O (filecreate, filestat, filedelete): fio will not run a job
// whose files have no size, but with create_on_open it neither lays the
// files out nor writes to them, so they stay as process 0 made them,
// empty.
const fioFileSize = "4k"

// jobFile renders s as a fio job file.
func (s fioSpec) jobFile() string {
	var b strings.Builder
	opt := func(k, v string) { fmt.Fprintf(&b, "%s=%s\n", k, v) }
	b.WriteString("[global]\n")
	opt("ioengine", s.engine)
	// Threads, as METABENCH's processes are goroutines here; one file
	// open at a time, as METABENCH has; the job's name in its files'
	// names, so that jobs can share a directory (Create-C, the B phases).
	opt("thread", "1")
	opt("openfiles", "1")
	opt("filename_format", "$jobname.$filenum")
	// create_on_open: filecreate creates each file in the timed run, not
	// in fio's setup; the other engines then leave the files process 0
	// made as they are, where fio would otherwise lay them out (write
	// them to size) through the participant's mount before the run.
	opt("create_on_open", "1")
	opt("fallocate", "none")
	switch s.engine {
	case "sync":
		// One write of -b bytes at the end of each file: METABENCH's
		// append. fio opens O_RDWR and writes at the file's size where
		// METABENCH opens O_APPEND; on the empty files of the phase the
		// two write the same bytes at the same place.
		n := strconv.Itoa(s.nbyte)
		opt("rw", "write")
		opt("file_append", "1")
		opt("bs", n)
		opt("filesize", n)
		// No fadvise(DONTNEED) around each file: METABENCH drops no cache.
		opt("invalidate", "0")
	case "filestat":
		opt("filesize", fioFileSize)
		opt("stat_type", "stat")
	case "filedelete":
		opt("filesize", fioFileSize)
		opt("unlink", "0") // the engine's unlinks are the work; nothing is left to remove
	default:
		opt("filesize", fioFileSize)
	}
	for _, j := range s.jobs {
		fmt.Fprintf(&b, "\n[%s]\n", j.name)
		opt("directory", j.dir)
		opt("nrfiles", strconv.Itoa(j.nrfiles))
	}
	return b.String()
}

// fioJobResult is one job of fio's JSON report.
type fioJobResult struct {
	Name    string
	Ops     int           // files the job went through (total_ios: one I/O a file)
	Runtime time.Duration // the job's run, to fio's millisecond
	// InCalls is the time the job spent in the engine's calls (clat: the
	// creates, stats, unlinks or writes alone), to the nanosecond: all
	// there is to time a job that ran under a millisecond.
	InCalls time.Duration
}

// parseFio reads fio's JSON report (fio.Parse) into its jobs' results.
func parseFio(out []byte) ([]fioJobResult, error) {
	rep, err := fio.Parse(out)
	if err != nil {
		return nil, err
	}
	return fioJobs(rep), nil
}

// fioJobs is each job's result. The engines count their operations in
// one direction: filecreate, filestat and filedelete in read (the
// default rw), append in write.
func fioJobs(rep fio.Report) []fioJobResult {
	jobs := make([]fioJobResult, len(rep.Jobs))
	for k, j := range rep.Jobs {
		s := j.Read
		if j.Write.TotalIOs > 0 {
			s = j.Write
		}
		jobs[k] = fioJobResult{
			Name:    j.Name,
			Ops:     s.TotalIOs,
			Runtime: s.Runtime(),
			InCalls: time.Duration(float64(s.Clat.N) * s.Clat.Mean),
		}
	}
	return jobs
}

// fioAggregate turns fio's jobs into METABENCH's measure. fio times each
// job on its own and reports per-job rates; METABENCH's rate is all
// operations over the time from the barrier to the last participant's
// end. fio starts its jobs together once all are set up, much as the
// barrier releases METABENCH's processes, so the comparable number is
// the jobs' operations summed over the longest job's runtime. fio keeps
// runtimes in whole milliseconds; when every job ran under one (0 ms),
// the longest time in the calls stands in (inCalls), which leaves out
// fio's own work between the calls and so gives a higher rate.
func fioAggregate(jobs []fioJobResult) (ops int, elapsed time.Duration, inCalls bool) {
	ops, elapsed, calls := fioTimes(jobs)
	if elapsed == 0 {
		return ops, calls, true
	}
	return ops, elapsed, false
}

// fioTimes sums the jobs' operations and returns the longest runtime and
// the longest time in the calls.
func fioTimes(jobs []fioJobResult) (ops int, runtime, calls time.Duration) {
	for _, j := range jobs {
		ops += j.Ops
		runtime = max(runtime, j.Runtime)
		calls = max(calls, j.InCalls)
	}
	return ops, runtime, calls
}

// runFio runs the job file of s and returns each job's result.
func runFio(ctx context.Context, s fioSpec) ([]fioJobResult, error) {
	// The job file on standard input: nothing to write or remove.
	rep, err := fio.Run(ctx, fio.Cmd{Args: []string{"-"}, Stdin: s.jobFile()})
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, fmt.Errorf("%w, or run with --no-crosscheck", err)
		}
		return nil, fmt.Errorf("%s: %w", s.engine, err)
	}
	return fioJobs(rep), nil
}
