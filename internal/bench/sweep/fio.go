package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
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
	return []string{
		"--name=p",
		"--filename=" + p.path,
		"--direct=1",
		"--ioengine=libaio",
		"--iodepth=" + strconv.Itoa(p.qd),
		"--bs=" + strconv.FormatInt(p.bs, 10),
		"--size=" + strconv.FormatInt(p.size, 10),
		"--rw=" + string(p.dir),
		"--runtime=" + strconv.FormatInt(max(p.limit.Milliseconds(), 1), 10) + "ms",
		"--time_based=0",
		"--output-format=json",
	}
}

// runFio runs fio for the pass and parses its report.
func runFio(ctx context.Context, p pass) (FioResult, error) {
	// fio makes a regular file where the name it is given does not
	// exist, even under /dev: a device that vanished must not become one.
	if st, err := os.Stat(p.path); err != nil {
		return FioResult{}, fmt.Errorf("fio: %w", err)
	} else if st.Mode().Type() != os.ModeDevice {
		return FioResult{}, fmt.Errorf("fio: %s is not a block device", p.path)
	}
	args := fioArgs(p)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "fio", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return FioResult{}, fmt.Errorf("fio is not installed (apt-get install fio), or run with --no-fio: %w", err)
		}
		return FioResult{}, fmt.Errorf("fio %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	r, err := ParseFio(stdout.Bytes(), p.dir)
	if err != nil {
		return FioResult{}, fmt.Errorf("fio %s: %w", strings.Join(args, " "), err)
	}
	return r, nil
}

// fioReport is the part of fio's --output-format=json the sweep reads.
type fioReport struct {
	Jobs []struct {
		Name  string     `json:"jobname"`
		Error int        `json:"error"`
		Read  fioRWStats `json:"read"`
		Write fioRWStats `json:"write"`
	} `json:"jobs"`
}

type fioRWStats struct {
	IOBytes   int64 `json:"io_bytes"`
	BWBytes   int64 `json:"bw_bytes"`
	RuntimeMS int64 `json:"runtime"`
}

// ParseFio reads the one job of fio's JSON report and returns its dir
// half. fio may print notes before the JSON, so it starts at the first
// brace and stops at the end of the object.
func ParseFio(out []byte, dir Direction) (FioResult, error) {
	i := bytes.IndexByte(out, '{')
	if i < 0 {
		return FioResult{}, errors.New("no JSON report in fio's output")
	}
	var rep fioReport
	if err := json.NewDecoder(bytes.NewReader(out[i:])).Decode(&rep); err != nil {
		return FioResult{}, fmt.Errorf("fio's JSON report: %w", err)
	}
	if len(rep.Jobs) != 1 {
		return FioResult{}, fmt.Errorf("fio's report has %d jobs, not 1", len(rep.Jobs))
	}
	job := rep.Jobs[0]
	if job.Error != 0 {
		return FioResult{}, fmt.Errorf("fio job %s failed: error %d", job.Name, job.Error)
	}
	var s fioRWStats
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
	return FioResult{
		Bytes:       s.IOBytes,
		Runtime:     time.Duration(s.RuntimeMS) * time.Millisecond,
		BytesPerSec: float64(s.BWBytes),
	}, nil
}
