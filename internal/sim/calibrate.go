package sim

import (
	"context"
	"fmt"
	"strings"

	"github.com/rsa-hpc/rsa/internal/units"
)

// Calibration is thesis Table 5.2's job run through the simulator: 1,024
// compute nodes, 2,048 processes each writing one 1 MiB file into one
// directory, alone on the machine, once to the shared file system and
// once to RSA. Seconds.
type Calibration struct {
	FSOutput  float64 `json:"fs_output_s"`  // writing to the shared FS (thesis: 1,109.86)
	RSAOutput float64 `json:"rsa_output_s"` // writing to RAM (thesis: 35.87)
	StageOut  float64 `json:"stage_out_s"`  // RSA copying it out after the job (thesis, rsync: 224)
	Speedup   float64 `json:"speedup"`      // FSOutput / RSAOutput (thesis: 30.9)

	ThesisFSOutput  float64 `json:"thesis_fs_output_s"`
	ThesisRSAOutput float64 `json:"thesis_rsa_output_s"`
	ThesisStageOut  float64 `json:"thesis_stage_out_s"`
	ThesisSpeedup   float64 `json:"thesis_speedup"`
}

// Calibrate runs the Table 5.2 job under cfg's shared file system and RSA
// (the workload and machine are the table's; cfg.RSA.Nodes must be > 0).
func Calibrate(ctx context.Context, cfg Config) (Calibration, error) {
	p, err := Predict(ctx, cfg, Probe{Nodes: thesisComputeNodes, Files: thesisFiles, Bytes: thesisBytes})
	if err != nil {
		return Calibration{}, fmt.Errorf("calibration: %w", err)
	}
	c := Calibration{
		FSOutput:        p.FSOutput,
		RSAOutput:       p.RSAOutput,
		StageOut:        p.StageOut,
		ThesisFSOutput:  thesisFSOutput,
		ThesisRSAOutput: thesisRSAOutput,
		ThesisStageOut:  thesisStageOut,
		ThesisSpeedup:   thesisFSOutput / thesisRSAOutput,
	}
	if c.RSAOutput > 0 {
		c.Speedup = c.FSOutput / c.RSAOutput
	}
	return c, nil
}

// A Probe is one job alone on the machine: Nodes compute nodes whose
// processes write Files files of Bytes in all (an even share each) into
// one directory when their computation ends, with no input.
type Probe struct {
	Nodes int
	Files int
	Bytes int64
}

// Prediction is what the simulator gives a Probe, in seconds from the end
// of its computation.
type Prediction struct {
	FSOutput  float64 // writing its output straight to the shared FS
	RSAOutput float64 // writing it to its RAMDISK: the nodes' hold
	// Verified is when RSA's stage-out of it has ended (the output on
	// the shared FS).
	Verified float64
	StageOut float64 // the stage-out's own time, within Verified
}

// Predict runs p through cfg's shared file system and RSA (cfg.RSA.Nodes
// must be > 0), once with RSA and once without.
func Predict(ctx context.Context, cfg Config, p Probe) (Prediction, error) {
	if p.Nodes < 1 || p.Files < p.Nodes || p.Bytes < 1 {
		return Prediction{}, fmt.Errorf("probe of %d nodes, %d files, %d bytes: give at least one node, a file per node and a byte", p.Nodes, p.Files, p.Bytes)
	}
	// It computes for 10 minutes: long enough for a RAMDISK to be built
	// and mounted for output before it writes (there is no input, so no
	// RSA_DELAY).
	trace := fmt.Sprintf("; MaxNodes: %d\n; MaxProcs: %d\n1 0 -1 600 %d -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1\n",
		p.Nodes, p.Files, p.Files)
	cfg = ProbeConfig(cfg, p)
	with, err := Run(ctx, strings.NewReader(trace), cfg)
	if err != nil {
		return Prediction{}, err
	}
	cfg.RSA.Nodes = 0
	without, err := Run(ctx, strings.NewReader(trace), cfg)
	if err != nil {
		return Prediction{}, err
	}
	w, o := with.Gantt[0], without.Gantt[0]
	if !w.WriteRAM {
		switch {
		case with.Ineligible > 0:
			return Prediction{}, fmt.Errorf("alloc.Plan found the job of %d compute nodes ineligible for RSA: give --proportion and --min-job-nodes at most %d",
				p.Nodes, p.Nodes)
		case with.OutputTooLarge > 0:
			return Prediction{}, fmt.Errorf("the job's %d MiB of output did not fit in the RAM it was given: raise --ram (now %s per RSA node) or --rsa-nodes",
				p.Bytes/mib, units.FormatSize(cfg.RSA.RAM))
		}
		return Prediction{}, fmt.Errorf("the job's output did not go to RSA: is its RAMDISK built and mounted within the job's 600 s? (--boot %s, --mount %s)", cfg.RSA.Boot, cfg.RSA.Mount)
	}
	pr := Prediction{FSOutput: o.End - o.ComputeEnd, RSAOutput: w.End - w.ComputeEnd}
	for _, s := range w.StageOut {
		pr.StageOut += s.To - s.From
		pr.Verified = s.To - w.ComputeEnd
	}
	return pr, nil
}

// CalibrationConfig is cfg as Calibrate runs it: thesis Table 5.2's
// machine and workload, cfg's shared file system and RSA.
func CalibrationConfig(cfg Config) Config {
	return ProbeConfig(cfg, Probe{Nodes: thesisComputeNodes, Files: thesisFiles, Bytes: thesisBytes})
}

// ProbeConfig is cfg as Predict runs p: p's machine and workload, cfg's
// shared file system and RSA.
func ProbeConfig(cfg Config, p Probe) Config {
	cfg.Nodes, cfg.ProcsPerNode = 0, 0
	cfg.Workload = Workload{Input: Fixed(0), Output: Fixed(p.Bytes / int64(p.Nodes)), FilesPerNode: p.Files / p.Nodes}
	cfg.Gantt = GanttWindow{Count: 1}
	cfg.Observe = nil
	return cfg
}
