package sweep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/rsa-hpc/rsa/internal/bench/fio"
)

// FioResult is fio's measure of one direction of a point.
type FioResult struct {
	Bytes       int64         // io_bytes
	Runtime     time.Duration // runtime, to fio's millisecond
	BytesPerSec float64       // bw_bytes: Bytes over Runtime
}

// MiBPerSec is the rate in the unit of the sweep's rows.
func (r FioResult) MiBPerSec() float64 { return r.BytesPerSec / (1 << 20) }

// fioArgs are fio's arguments for the same pass the sweep makes: O_DIRECT,
// libaio at iodepth qd (qd requests in flight from one thread, where the
// sweep has qd threads), bs-sized sequential requests over size bytes,
// stopped at the same cap.
func fioArgs(p pass) []string {
	return passArgs(p, p.size, "--ioengine=libaio", "--iodepth="+strconv.Itoa(p.qd))
}

// fioArgsThreads are fio's arguments for the pass made the sweep's own
// way: qd threads, each with one synchronous O_DIRECT request at a time
// (psync) over its own qd-th of the size, reported as one job. Run where
// the libaio check disagrees, it tells the way the qd requests are kept
// in flight (qd threads, or one thread's asynchronous queue) apart from
// the sweep's own code; ok is false when a thread's share would be less
// than one request.
func fioArgsThreads(p pass) (args []string, ok bool) {
	share := p.size / int64(p.qd) / p.bs * p.bs
	if share < p.bs {
		return nil, false
	}
	return passArgs(p, share, "--ioengine=psync", "--thread", "--numjobs="+strconv.Itoa(p.qd), "--group_reporting",
		"--offset_increment="+strconv.FormatInt(share, 10)), true
}

// passArgs are the arguments every fio run of a pass shares, with how it
// keeps requests in flight and size bytes for each of its jobs. Its
// --output-format=json repeats the one fio.Run puts first, which fio
// takes as one.
func passArgs(p pass, size int64, how ...string) []string {
	args := []string{"--name=p", "--filename=" + p.path, "--direct=1"}
	args = append(args, how...)
	return append(args,
		"--bs="+strconv.FormatInt(p.bs, 10),
		"--size="+strconv.FormatInt(size, 10),
		"--rw="+string(p.dir),
		"--runtime="+strconv.FormatInt(max(p.limit.Milliseconds(), 1), 10)+"ms",
		"--time_based=0",
		"--output-format=json",
	)
}

// runFio runs fio with args (fioArgs or fioArgsThreads of p) for the pass
// and reads its report.
func runFio(ctx context.Context, p pass, args []string) (FioResult, error) {
	// fio makes a regular file where the name it is given does not
	// exist, even under /dev: a device that vanished must not become one.
	if st, err := os.Stat(p.path); err != nil {
		return FioResult{}, fmt.Errorf("fio: %w", err)
	} else if st.Mode().Type() != os.ModeDevice {
		return FioResult{}, fmt.Errorf("fio: %s is not a block device", p.path)
	}
	rep, err := fio.Run(ctx, fio.Cmd{Args: args})
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return FioResult{}, fmt.Errorf("%w, or run with --no-fio", err)
		}
		return FioResult{}, err
	}
	r, err := fioResult(rep, p.dir)
	if err != nil {
		return FioResult{}, fmt.Errorf("fio %s: %w", strings.Join(args, " "), err)
	}
	return r, nil
}

// ParseFio reads the one job of fio's JSON report and returns its dir
// half. fio may print notes before the JSON (fio.Parse skips them).
func ParseFio(out []byte, dir Direction) (FioResult, error) {
	rep, err := fio.Parse(out)
	if errors.Is(err, fio.ErrNoJobs) {
		return FioResult{}, errors.New("fio's report has 0 jobs, not 1")
	} else if err != nil {
		return FioResult{}, err
	}
	return fioResult(rep, dir)
}

// fioResult is the dir half of the one job of a parsed report.
func fioResult(rep fio.Report, dir Direction) (FioResult, error) {
	if len(rep.Jobs) != 1 {
		return FioResult{}, fmt.Errorf("fio's report has %d jobs, not 1", len(rep.Jobs))
	}
	job := rep.Jobs[0]
	var s fio.Stats
	switch dir {
	case Write:
		s = job.Write
	case Read:
		s = job.Read
	default:
		return FioResult{}, fmt.Errorf("direction %q: use %s or %s", dir, Write, Read)
	}
	if s.IOBytes <= 0 || s.BWBytes <= 0 {
		return FioResult{}, fmt.Errorf("fio job %s moved no bytes in its %s", job.Name, dir)
	}
	return FioResult{Bytes: s.IOBytes, Runtime: s.Runtime(), BytesPerSec: float64(s.BWBytes)}, nil
}
