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
	// It computes for 10 minutes: long enough for a RAMDISK to be built
	// and mounted for output before it writes (there is no input, so no
	// RSA_DELAY).
	trace := fmt.Sprintf("; MaxNodes: %d\n; MaxProcs: %d\n1 0 -1 600 %d -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1\n",
		thesisComputeNodes, thesisFiles, thesisFiles)
	cfg = CalibrationConfig(cfg)
	with, err := Run(ctx, strings.NewReader(trace), cfg)
	if err != nil {
		return Calibration{}, err
	}
	cfg.RSA.Nodes = 0
	without, err := Run(ctx, strings.NewReader(trace), cfg)
	if err != nil {
		return Calibration{}, err
	}
	w, o := with.Gantt[0], without.Gantt[0]
	if !w.WriteRAM {
		switch {
		case with.Ineligible > 0:
			return Calibration{}, fmt.Errorf("calibration: alloc.Plan found the job of %d compute nodes ineligible for RSA: give --proportion and --min-job-nodes at most %d",
				thesisComputeNodes, thesisComputeNodes)
		case with.OutputTooLarge > 0:
			return Calibration{}, fmt.Errorf("calibration: the job's %d MiB of output did not fit in the RAM it was given: raise --ram (now %s per RSA node) or --rsa-nodes",
				thesisBytes/mib, units.FormatSize(cfg.RSA.RAM))
		}
		return Calibration{}, fmt.Errorf("calibration: the job's output did not go to RSA: is its RAMDISK built and mounted within the job's 600 s? (--boot %s, --mount %s)", cfg.RSA.Boot, cfg.RSA.Mount)
	}
	c := Calibration{
		FSOutput:        o.End - o.ComputeEnd,
		RSAOutput:       w.End - w.ComputeEnd,
		ThesisFSOutput:  thesisFSOutput,
		ThesisRSAOutput: thesisRSAOutput,
		ThesisStageOut:  thesisStageOut,
		ThesisSpeedup:   thesisFSOutput / thesisRSAOutput,
	}
	for _, s := range w.StageOut {
		c.StageOut += s.To - s.From
	}
	if c.RSAOutput > 0 {
		c.Speedup = c.FSOutput / c.RSAOutput
	}
	return c, nil
}

// CalibrationConfig is cfg as Calibrate runs it: thesis Table 5.2's
// machine and workload, cfg's shared file system and RSA.
func CalibrationConfig(cfg Config) Config {
	cfg.Nodes, cfg.ProcsPerNode = 0, 0
	cfg.Workload = Workload{Input: Fixed(0), Output: Fixed(thesisBytes / thesisComputeNodes), FilesPerNode: thesisFiles / thesisComputeNodes}
	cfg.Gantt = GanttWindow{Count: 1}
	cfg.Observe = nil
	return cfg
}
