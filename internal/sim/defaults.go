package sim

import (
	"time"

	"github.com/rsa-hpc/rsa/internal/config"
)

// Numbers from the seed documents (/work/shared/seeds; derivations in
// docs/simulator.md). Sizes are binary: the thesis' "2GB" is 16384² doubles.
const (
	mib = 1 << 20
	gib = 1 << 30
	tib = 1 << 40

	// Thesis Table 5.2 (file per process, 1,024 nodes, 2,048 processes):
	// 2,048 files of 1 MiB into one directory.
	thesisFiles        = 2048
	thesisBytes        = 2 * gib
	thesisComputeNodes = 1024
	thesisFSOutput     = 1109.86 // s to GPFS, mean of 3 runs
	thesisRSAOutput    = 35.87   // s to RSA, default stage-out runs
	thesisStageOut     = 224.0   // s, rsync stage-out of those files
	// Table 5.3: the same 2 GiB to one shared GPFS file with MPI-IO: no
	// create storm, so this is the file system's bandwidth for the job.
	thesisSharedFile = 49.925776 // s
	// Table 5.1: rsync stages one 2 GiB file out in 52 s (mean).
	thesisRsyncOneFile = 52.0 // s
	// §5.2.4: iperf between the BG/L front end and an RSA node.
	iperfBits = 943e6 // bit/s
	// GUPFS METABENCH Create-C with one creator (GFS 5.1): 598 creates/s.
	gupfsCreates = 598.0
	// Thesis Table 5.5: bonnie++ on one RSA node's RAMDISK: 7,470 creates/s.
	ramdiskCreates = 7470.0
	// App. C: DEFAULT_DELAY=300, the input-to-output switch.
	thesisDelay = 300 * time.Second

	// docs/performance.md, this project's rsa copy on dataset (a), the
	// thesis' 2,048 × 1 MiB: disk->tmpfs cold 1.46 s, tmpfs->disk warm 3.98 s
	// (medians of 3 runs, each ending with sync).
	measuredStageIn  = 1.46 // s
	measuredStageOut = 3.98 // s
)

// thesisFSBandwidth is GPFS as the thesis' 1,024-node job saw it (Table 5.3).
func thesisFSBandwidth() float64 { return thesisBytes / thesisSharedFile }

// thesisContention fits the contention term so that a job of 2,048
// processes each creating one file in one directory spends Table 5.2's
// 1,109.86 s: the creates take what the shared-file write (Table 5.3)
// does not explain.
func thesisContention() float64 {
	creates := thesisFSOutput - thesisBytes/thesisFSBandwidth()
	perCreate := creates * gupfsCreates / thesisFiles // in uncontended creates
	return (perCreate - 1) / (thesisFiles - 1)
}

// thesisUplink is what RSA delivered through the one 1 GbE link between
// the RSA nodes and the BG/L (Table 5.2: 2 GiB in 35.87 s, PVFS over TCP,
// about half the link).
func thesisUplink() float64 { return thesisBytes / thesisRSAOutput }

// thesisStageFileCost fits rsync's per-file time so that Table 5.2's
// stage-out (224 s) is its creates, its bytes and this cost per file.
func thesisStageFileCost() time.Duration {
	rest := thesisStageOut - thesisFiles/gupfsCreates - thesisBytes/thesisFSBandwidth()
	return time.Duration(rest / thesisFiles * float64(time.Second))
}

// Defaults is the model with every number from the seeds, applied to the
// trace's machine: the thesis test bed's GPFS, 1 GbE links, RSA timings
// and allocation rule, and its job's I/O per node (2 files of 1 MiB, one
// per process; input assumed to mirror output, which the thesis did not
// measure). Unlike the test bed, each RSA node's link reaches the compute
// nodes (no shared uplink), as the thesis' target design intends.
func Defaults() Config {
	return Config{
		EstimateFactor: 1,
		Priority:       FCFS,
		Workload: Workload{
			Input:        Fixed(2 * mib),
			Output:       Fixed(2 * mib),
			FilesPerNode: 2, // BG/L virtual-node mode: 2 processes per node
		},
		FS: SharedFS{
			Bandwidth:     thesisFSBandwidth(),
			NodeBandwidth: iperfBits / 8,
			CreateRate:    gupfsCreates,
			Contention:    thesisContention(),
		},
		RSA: RSA{
			Nodes:         16,
			RAM:           32 * gib,
			Link:          iperfBits / 8,
			CreateRate:    ramdiskCreates,
			Proportion:    config.DefaultProportion,
			Delay:         thesisDelay,
			StageInRate:   thesisBytes / thesisRsyncOneFile,
			StageOutRate:  thesisBytes / thesisRsyncOneFile,
			StageFileCost: thesisStageFileCost(),
			StageInLead:   10 * time.Minute, // config: slurm.stage_in_lead
			// App. T: construction 12 s on 1 node, 22 s on 8 (a fixed
			// 10 s settle included); destruction 2 s and 10 s.
			Boot:    Linear{Base: 10571 * time.Millisecond, PerNode: 1429 * time.Millisecond},
			Destroy: Linear{Base: 857 * time.Millisecond, PerNode: 1143 * time.Millisecond},
			// Not measured; the thesis' log (1 s resolution) shows none.
			Mount: time.Second,
		},
		Seed: 1,
	}
}
