package thesis

import (
	"context"
	"time"

	"github.com/rsa-hpc/rsa/internal/bench"
	"github.com/rsa-hpc/rsa/internal/sim"
)

// SimConfig is the simulator set to the emulated cluster as cal measured
// it at its rate: the shared file system's bandwidth is iperf3's from an
// RSA host, its create rate the small-file probe's; the compute host's
// link is what its stream probe wrote into the RAMDISK (the link or the
// FUSE client, whichever bounds); one RSA node (the RAMDISK's two hosts
// were measured as one, and one mover stages out) whose creates are the
// RAMDISK's small-file probe's and whose own link is not shaped here
// (10 Gbit/s: never the bound); the mover's rate and cost per file beyond
// the file system's create, and its fixed cost, are the stage-out's line.
func SimConfig(cal ModelCalibration, cell ModelCell) sim.Config {
	cfg := sim.Defaults()
	bytes := int64(cell.Ranks) * cell.Size
	cfg.FS = sim.SharedFS{Bandwidth: cal.SharedLink / 8, NodeBandwidth: cal.RSAWrite, CreateRate: 1 / cal.DirectCreate}
	cfg.RSA.Nodes, cfg.RSA.Proportion, cfg.RSA.MinJobNodes, cfg.RSA.ByCapacity = 1, 1, 1, false
	cfg.RSA.RAM = bytes*5/4 + 64<<20
	cfg.RSA.Link = 10e9 / 8
	cfg.RSA.CreateRate = 1 / cal.RSACreate
	cfg.RSA.StageOutRate = cal.StageRate
	cfg.RSA.StageFileCost = time.Duration(max(cal.StagePerFile-cal.DirectCreate, 0) * float64(time.Second))
	cfg.RSA.StageOutFixed = time.Duration(cal.StageFixed * float64(time.Second))
	return cfg
}

// SimPredict is the simulator's prediction of cell from cal: its job
// alone on a machine of one compute node, as E1 ran it.
func SimPredict(ctx context.Context, cal ModelCalibration, cell ModelCell) ([]bench.Row, error) {
	p, err := sim.Predict(ctx, SimConfig(cal, cell), sim.Probe{Nodes: 1, Files: cell.Ranks, Bytes: int64(cell.Ranks) * cell.Size})
	if err != nil {
		return nil, err
	}
	why := "rsa-lab sim, set from E2's micro-benchmarks at this link rate (SimConfig; nothing of T52): "
	return []bench.Row{
		cell.Row("E2 sim", "shared@1g", "hold", p.FSOutput, why+"the job's creates at the small-file rate, then its bytes"),
		cell.Row("E2 sim", "ram@1g", "hold", p.RSAOutput, why+"the same into the RAMDISK"),
		cell.Row("E2 sim", "ram@1g", "verified", p.Verified, why+"RSA's hold, then the stage-out: its fixed cost, its files, its bytes"),
	}, nil
}
