package sim

import "time"

// Result is what one simulation measured. Times are in seconds, so that
// JSON readers need no Go duration parser.
type Result struct {
	RSA     bool    `json:"rsa"`
	Nodes   int     `json:"compute_nodes"`
	Jobs    int     `json:"jobs"`
	Skipped Skipped `json:"skipped"`

	Makespan float64 `json:"makespan_s"` // first submit to last job end
	// Compute-node hours: held by jobs, computing, and held while waiting
	// on I/O (reads, writes, the input mount).
	NodeHours        float64 `json:"node_hours"`
	ComputeNodeHours float64 `json:"compute_node_hours"`
	IONodeHours      float64 `json:"io_wait_node_hours"`
	Utilisation      float64 `json:"utilisation"`        // node time held / (nodes × makespan)
	UsefulUtil       float64 `json:"useful_utilisation"` // node time computing / (nodes × makespan)
	MeanWait         float64 `json:"mean_wait_s"`
	// MeanBoundedSlowdown: (wait + time on nodes) / max(run time, 10 s),
	// at least 1, with the trace's run time as the job's ideal.
	MeanBoundedSlowdown float64 `json:"mean_bounded_slowdown"`

	OnDeck    int `json:"on_deck"`   // jobs that were head of the queue at least once
	Demotions int `json:"demotions"` // times a job on deck lost its place before starting

	// RSA only.
	JobsWithRSA    int     `json:"jobs_with_rsa"` // served input or output from RAM
	ShareWithRSA   float64 `json:"share_with_rsa"`
	InputFromRAM   int     `json:"input_from_ram"`
	OutputToRAM    int     `json:"output_to_ram"`
	Ineligible     int     `json:"ineligible"`       // alloc.Plan said never
	LateStageIns   int     `json:"late_stage_ins"`   // started while the stage-in was still under way
	NotStagedInYet int     `json:"not_staged_in"`    // on deck with input, no RAM yet when started (capacity or lead time)
	StageInsFailed int     `json:"stage_ins_failed"` // input larger than the RAM given
	OutputTooLarge int     `json:"output_too_large"` // output larger than the RAM given: written to the shared FS
	UnmountBusy    int     `json:"unmount_busy"`     // still reading input at the switch
	RAMPeak        int64   `json:"ram_peak_bytes"`
	RAMMean        float64 `json:"ram_mean_bytes"` // time average over the makespan
	RAMTotal       int64   `json:"ram_total_bytes"`
	Drained        float64 `json:"rsa_drained_s"` // when the last RAMDISK was released

	Events  int64   `json:"events"`
	Elapsed float64 `json:"elapsed_s"` // wall-clock time the simulation took

	// For the plots.
	Busy  Points     `json:"-"` // busy compute nodes over time
	RAM   Points     `json:"-"` // RSA RAM held over time, bytes
	Gantt []GanttJob `json:"-"`
}

// Skipped counts the trace's jobs the simulator left out, by reason.
type Skipped struct {
	NoRunTime   int `json:"run_time_not_positive"`
	NoProcs     int `json:"processors_unknown"`
	TooManyNode int `json:"more_nodes_than_machine"`
}

// Total is every job skipped.
func (s Skipped) Total() int { return s.NoRunTime + s.NoProcs + s.TooManyNode }

// GanttWindow picks the jobs whose timelines are kept: Count jobs in trace
// order, the first with a job id of at least First.
type GanttWindow struct {
	First int64
	Count int
}

// GanttJob is one job's timeline, in seconds from the trace's start; a
// phase that did not happen has From == To.
type GanttJob struct {
	ID         int64
	Nodes      int
	Submit     float64
	Start      float64
	ReadEnd    float64 // reading input, from Start (after the input mount)
	ComputeEnd float64
	End        float64 // writing output, from ComputeEnd
	ReadRAM    bool
	WriteRAM   bool
	StageIn    []Span // on the RSA nodes; more than one after a demotion
	StageOut   []Span
}

// Span is an interval in seconds.
type Span struct{ From, To float64 }

func secs(d time.Duration) float64 { return d.Seconds() }
