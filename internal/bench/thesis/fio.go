package thesis

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// fioRate is what a fio run moved and how fast, for one direction: the
// sum over its jobs (one with group_reporting).
type fioRate struct {
	Bytes int64   // io_bytes
	MiBps float64 // bw_bytes over 2^20
}

// fioGroupNote qualifies a rate fio gives for many jobs: group_reporting
// divides by the longest job's runtime, not the span from the first
// job's start to the last one's end, so jobs that hardly overlap (a small
// run: each rank's 1 MiB done before the next thread starts) read high.
const fioGroupNote = "fio's rate is over its longest job's runtime: high where the jobs hardly overlap (small runs)"

// fioReport is the part of fio's --output-format=json that the
// cross-checks read.
type fioReport struct {
	Jobs []struct {
		Name  string   `json:"jobname"`
		Error int      `json:"error"`
		Read  fioStats `json:"read"`
		Write fioStats `json:"write"`
	} `json:"jobs"`
}

type fioStats struct {
	IOBytes int64 `json:"io_bytes"`
	BWBytes int64 `json:"bw_bytes"` // bytes/s over the job's runtime
}

// parseFio reads fio's JSON report and sums the jobs' reads and writes.
// fio may print notes before the JSON ("fio: ..."): they are skipped.
func parseFio(out []byte) (read, write fioRate, err error) {
	start := bytes.IndexByte(out, '{')
	if start < 0 {
		return read, write, errors.New("fio: no JSON report in its output")
	}
	var r fioReport
	if err := json.Unmarshal(out[start:], &r); err != nil {
		return read, write, fmt.Errorf("fio's JSON report: %w", err)
	}
	if len(r.Jobs) == 0 {
		return read, write, errors.New("fio's JSON report has no jobs")
	}
	for _, j := range r.Jobs {
		if j.Error != 0 {
			return read, write, fmt.Errorf("fio job %s: error %d", j.Name, j.Error)
		}
		read.Bytes += j.Read.IOBytes
		read.MiBps += float64(j.Read.BWBytes) / (1 << 20)
		write.Bytes += j.Write.IOBytes
		write.MiBps += float64(j.Write.BWBytes) / (1 << 20)
	}
	return read, write, nil
}

// runFio runs fio with args and its JSON report, and parses it.
func runFio(ctx context.Context, args ...string) (read, write fioRate, err error) {
	cmd := exec.CommandContext(ctx, "fio", append(args[:len(args):len(args)], "--output-format=json")...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return read, write, fmt.Errorf("fio %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return parseFio(stdout.Bytes())
}
