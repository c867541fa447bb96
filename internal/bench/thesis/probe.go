package thesis

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/rsa-hpc/rsa/internal/bench/crosscheck"
)

// Probe is one of E2's micro-benchmarks as its job runs it on one compute
// host: IOR writing a file per rank, or mdtest creating files, every rank
// in the one directory and every file fsync'd (as T52's writer does).
type Probe struct {
	Tool    string // ProbeIOR or ProbeMdtest
	IOR     string // IOR's prefix, as scripts/build-ior.sh prints it
	Ranks   int    // MPI ranks
	PerRank int    // files each rank makes (mdtest; IOR makes one)
	Size    int64  // bytes per file
}

// The probes' tools.
const (
	ProbeIOR    = "ior"
	ProbeMdtest = "mdtest"
)

// Files is how many files the probe leaves.
func (p Probe) Files() int {
	if p.Tool == ProbeIOR {
		return p.Ranks
	}
	return p.Ranks * p.PerRank
}

// Check reports a probe that cannot run, naming the flag to mend.
func (p Probe) Check() error {
	switch {
	case p.Tool != ProbeIOR && p.Tool != ProbeMdtest:
		return fmt.Errorf("probe tool %q: give %s or %s", p.Tool, ProbeIOR, ProbeMdtest)
	case p.IOR == "":
		return errors.New("no IOR prefix: give --ior, the prefix scripts/build-ior.sh prints")
	case p.Ranks < 1:
		return fmt.Errorf("%d ranks: give 1 or more", p.Ranks)
	case p.Tool == ProbeMdtest && p.PerRank < 1:
		return fmt.Errorf("%d files per rank: give 1 or more", p.PerRank)
	case p.Size < 1:
		return fmt.Errorf("file size %d: give 1 byte or more", p.Size)
	}
	return nil
}

// Args are the tool's arguments to write into dir. IOR: a file per rank
// (-F) of Size in transfers of at most 1 MiB, each fsync'd at its close
// (-e), kept (-k) for the stage-out; mdtest: the create phase alone (-C),
// files (-F) of Size written (-w) and fsync'd (-y) in one directory of
// dir, kept.
func (p Probe) Args(dir string) []string {
	size := strconv.FormatInt(p.Size, 10)
	if p.Tool == ProbeIOR {
		xfer := strconv.FormatInt(min(p.Size, 1<<20), 10)
		return []string{"-a", "POSIX", "-w", "-e", "-F", "-k", "-t", xfer, "-b", size, "-o", dir + "/ior"}
	}
	return []string{"-C", "-F", "-n", strconv.Itoa(p.PerRank), "-w", size, "-y", "-d", dir}
}

// Run runs the probe into dir and returns the tool's own rate: IOR's
// write bandwidth (bytes per second, open to close, the fsyncs in it) or
// mdtest's file creation rate (files per second, all ranks).
func (p Probe) Run(ctx context.Context, dir string) (float64, error) {
	if err := p.Check(); err != nil {
		return 0, err
	}
	if p.Tool == ProbeIOR {
		res, err := crosscheck.RunIOR(ctx, p.IOR, p.Ranks, p.Args(dir)...)
		if err != nil {
			return 0, err
		}
		if len(res.Tests) == 0 {
			return 0, errors.New("IOR reported no test")
		}
		w, ok := res.Tests[0].Op("write")
		if !ok || w.MeanMiBps <= 0 {
			return 0, errors.New("IOR reported no write bandwidth")
		}
		return w.MeanMiBps * (1 << 20), nil
	}
	res, err := crosscheck.RunMdtest(ctx, p.IOR, p.Ranks, p.Args(dir)...)
	if err != nil {
		return 0, err
	}
	op, ok := res.Rate("File creation")
	if !ok || op.Mean <= 0 {
		return 0, errors.New("mdtest reported no file creation rate")
	}
	return op.Mean, nil
}

// command is the probe as a job's command line, --dir to be added.
func (p Probe) command(lab string) string {
	return fmt.Sprintf("%s bench probe --tool %s --ior %s --ranks %d --per-rank %d --size %d --json", lab, p.Tool, p.IOR, p.Ranks, p.PerRank, p.Size)
}
