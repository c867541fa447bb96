package sim

import (
	"fmt"
	"time"

	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// Config is one simulation: the machine, the workload's I/O, the shared
// file system and RSA. RSA.Nodes == 0 simulates the machine without RSA.
type Config struct {
	Nodes          int     // compute nodes; 0: the trace header's
	ProcsPerNode   int     // processors per node; 0: the trace header's
	EstimateFactor float64 // a job's estimate is its requested time (else its run time) times this
	Priority       Priority
	Workload       Workload
	FS             SharedFS
	RSA            RSA
	Seed           uint64 // for size distributions; a run is a function of its config

	// Gantt keeps the timelines of a window of jobs for the Gantt chart.
	Gantt GanttWindow
	// Observe, if set, sees every lifecycle.Step the simulator takes, in
	// the order it takes them: the job before, the event, the outcome
	// (ignored ones included), and the RAM on RSA nodes the job holds
	// after the step (nil: none), which is alloc.Plan's decision.
	Observe func(id int64, before lifecycle.Job, ev lifecycle.Event, out lifecycle.Outcome, parts []job.Part) `json:"-"`
}

// Workload is the I/O each job does, per compute node. A job reads its
// input when it starts and writes its output when its computation ends,
// one file per process (the thesis' file-per-process case).
type Workload struct {
	Input        Dist
	Output       Dist
	FilesPerNode int
}

// SharedFS is the site's parallel file system.
type SharedFS struct {
	Bandwidth     float64 // bytes/s, all clients together
	NodeBandwidth float64 // bytes/s, one compute node's link to it; 0: no limit
	CreateRate    float64 // creates (and opens) per second by one creator
	// Contention: C processes creating files in one directory make each
	// create cost 1+Contention·(C−1) times one uncontended create, so a
	// job's create phase grows with the square of its processes (the
	// directory lock collapse of thesis Table 5.2 and GUPFS Create-C).
	Contention float64
	// HostContention: a job's creates in one directory from K compute
	// nodes each cost 1+HostContention·(1−1/K) uncontended ones (the
	// directory's token moving between client nodes, as the evidence's
	// E4 shim models GPFS: its revoke over its local create).
	HostContention float64
}

// RSA is the accelerator and the daemon's policy.
type RSA struct {
	Nodes       int
	RAM         int64   // bytes lent to RAMDISKs per RSA node
	Link        float64 // bytes/s, one RSA node's link to the compute nodes
	Uplink      float64 // bytes/s, all RSA nodes to all compute nodes; 0: no limit
	CreateRate  float64 // creates per second per RSA node (RAM-backed metadata)
	Proportion  int     // compute nodes per RSA node (config: proportion)
	MinJobNodes int     // smaller jobs are ineligible; 0: Proportion (config: min_job_nodes)
	// ByCapacity asks for each job's data size explicitly instead of whole
	// nodes by proportion (the capacity= request of rsa run and #RSA).
	ByCapacity   bool
	Delay        time.Duration // RSA_DELAY: the input-to-output switch
	StageInRate  float64       // bytes/s, one RSA node's mover copying in
	StageOutRate float64       // bytes/s, one RSA node's mover copying out
	// StageFileCost is the mover's own time per file, beyond the file
	// system's (rsync's per-file round trips).
	StageFileCost time.Duration
	// StageOutFixed is a stage-out's own time beside its files and bytes:
	// from the job's end until the mover's first file, and the verify's
	// and the hand-back's (0 in the seeds, which give none apart).
	StageOutFixed time.Duration
	StageInLead   time.Duration // config slurm.stage_in_lead; 0: stage in as soon as on deck
	Boot          Linear        // building a RAMDISK on n nodes
	Destroy       Linear        // tearing it down
	Mount         time.Duration // a bind mount or unmount on the job's nodes
}

// Linear is a time that grows with the number of RSA nodes.
type Linear struct {
	Base    time.Duration
	PerNode time.Duration
}

func (l Linear) of(n int) time.Duration { return l.Base + time.Duration(n)*l.PerNode }

func (l Linear) String() string { return fmt.Sprintf("%s+%s", l.Base, l.PerNode) }

// minJobNodes is the policy's threshold, defaulting as the config does.
func (r RSA) minJobNodes() int {
	if r.MinJobNodes > 0 {
		return r.MinJobNodes
	}
	return r.Proportion
}

// check refuses a config the model cannot run, naming the flag to fix.
func (c Config) check() error {
	switch {
	case c.EstimateFactor <= 0:
		return fmt.Errorf("estimate factor %g: must be more than 0 (--estimate-factor)", c.EstimateFactor)
	case c.Workload.FilesPerNode < 0:
		return fmt.Errorf("files per node %d: must be 0 or more (--files-per-node)", c.Workload.FilesPerNode)
	case c.FS.Bandwidth <= 0:
		return fmt.Errorf("shared file system bandwidth must be more than 0 (--fs-bandwidth)")
	case c.FS.CreateRate <= 0:
		return fmt.Errorf("shared file system create rate must be more than 0 (--fs-create-rate)")
	case c.FS.Contention < 0:
		return fmt.Errorf("contention %g: must be 0 or more (--fs-contention)", c.FS.Contention)
	case c.FS.HostContention < 0:
		return fmt.Errorf("host contention %g: must be 0 or more", c.FS.HostContention)
	case c.RSA.Nodes < 0:
		return fmt.Errorf("RSA nodes %d: must be 0 (no RSA) or more (--rsa-nodes)", c.RSA.Nodes)
	}
	if c.RSA.Nodes == 0 {
		return nil
	}
	switch {
	case c.RSA.RAM <= 0:
		return fmt.Errorf("RAM per RSA node must be more than 0 (--ram)")
	case c.RSA.Link <= 0:
		return fmt.Errorf("RSA link speed must be more than 0 (--rsa-link)")
	case c.RSA.CreateRate <= 0:
		return fmt.Errorf("RSA create rate must be more than 0 (--rsa-create-rate)")
	case c.RSA.Proportion < 1:
		return fmt.Errorf("proportion %d: must be at least 1 compute node per RSA node (--proportion)", c.RSA.Proportion)
	case c.RSA.StageInRate <= 0 || c.RSA.StageOutRate <= 0:
		return fmt.Errorf("stage rates must be more than 0 (--stage-in-rate, --stage-out-rate)")
	}
	return nil
}
