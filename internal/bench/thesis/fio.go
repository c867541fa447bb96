package thesis

import (
	"context"

	"github.com/rsa-hpc/rsa/internal/bench/fio"
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

// parseFio reads fio's JSON report (fio.Parse) and sums the jobs'
// reads and writes.
func parseFio(out []byte) (read, write fioRate, err error) {
	rep, err := fio.Parse(out)
	if err != nil {
		return read, write, err
	}
	read, write = fioRates(rep)
	return read, write, nil
}

// fioRates sums the report's jobs, read and write apart.
func fioRates(rep fio.Report) (read, write fioRate) {
	for _, j := range rep.Jobs {
		read.Bytes += j.Read.IOBytes
		read.MiBps += float64(j.Read.BWBytes) / (1 << 20)
		write.Bytes += j.Write.IOBytes
		write.MiBps += float64(j.Write.BWBytes) / (1 << 20)
	}
	return read, write
}

// fioNoFallocate is what every fio run here does that fio by default
// does not: fio reserves a new file's blocks (fallocate) before its clock
// starts, which on tmpfs allocates and zeroes every page there, so the
// timed write runs about 4x faster than one that allocates
// (docs/performance.md, "Measurements behind choices in the code"). The
// writers it checks allocate as they write, as an application does.
const fioNoFallocate = "--fallocate=none"

// runFio runs fio with args (fio.Run), the file's blocks allocated as it
// writes (fioNoFallocate), and sums its report.
func runFio(ctx context.Context, args ...string) (read, write fioRate, err error) {
	rep, err := fio.Run(ctx, fio.Cmd{Args: append([]string{fioNoFallocate}, args...)})
	if err != nil {
		return read, write, err
	}
	read, write = fioRates(rep)
	return read, write, nil
}
