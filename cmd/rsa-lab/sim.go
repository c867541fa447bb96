package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rsa-hpc/rsa/internal/sim"
	"github.com/rsa-hpc/rsa/internal/units"
)

// simParam is one model parameter's flag: its value as the flag shows it
// and how a value applies. Parameters start from the preset (--preset,
// the thesis' by default); only the flags given on the command line
// change them.
type simParam struct {
	name, kind, usage string
	get               func(c *sim.Config) string
	set               func(c *sim.Config, v string) error
}

// paramValue is a parameter's flag: kept as text, checked when set.
type paramValue struct {
	p    simParam
	text *string
}

func (v paramValue) String() string { return *v.text }
func (v paramValue) Type() string   { return v.p.kind }
func (v paramValue) Set(s string) error {
	var scratch sim.Config
	if err := v.p.set(&scratch, s); err != nil {
		return err
	}
	*v.text = s
	return nil
}

// simParams are every parameter's flag, in the order --help lists them:
// the machine and its workload, the shared file system, then RSA.
func simParams() []simParam {
	return slices.Concat(machineParams(), fsParams(), rsaParams())
}

// machineParams are the compute nodes', the queue's and the jobs' I/O.
func machineParams() []simParam {
	return []simParam{
		{"nodes", "int", "compute nodes (0: the trace header's MaxNodes, else MaxProcs/procs-per-node)",
			func(c *sim.Config) string { return strconv.Itoa(c.Nodes) },
			func(c *sim.Config, v string) error { return setInt(&c.Nodes, v, 0) }},
		{"procs-per-node", "int", "processors per node (0: MaxProcs/MaxNodes from the header, else 1)",
			func(c *sim.Config) string { return strconv.Itoa(c.ProcsPerNode) },
			func(c *sim.Config, v string) error { return setInt(&c.ProcsPerNode, v, 0) }},
		{"estimate-factor", "number", "a job's estimate is its requested time (or, when unknown, its run time) times this",
			func(c *sim.Config) string { return strconv.FormatFloat(c.EstimateFactor, 'g', -1, 64) },
			func(c *sim.Config, v string) error { return setFloat(&c.EstimateFactor, v) }},
		{"priority", "order", "queue order: fcfs, or sjf (shortest requested time first; arrivals can demote the head)",
			func(c *sim.Config) string { return c.Priority.String() },
			func(c *sim.Config, v string) (err error) { c.Priority, err = sim.ParsePriority(v); return err }},
		{"input", "size|dist", "input read per compute node at start: a size, uniform:MIN-MAX or exp:MEAN",
			func(c *sim.Config) string { return c.Workload.Input.String() },
			func(c *sim.Config, v string) (err error) { c.Workload.Input, err = sim.ParseDist(v); return err }},
		{"output", "size|dist", "output written per compute node at the end: a size, uniform:MIN-MAX or exp:MEAN",
			func(c *sim.Config) string { return c.Workload.Output.String() },
			func(c *sim.Config, v string) (err error) { c.Workload.Output, err = sim.ParseDist(v); return err }},
		{"files-per-node", "int", "files per compute node, read and written (one per process, thesis Table 5.2)",
			func(c *sim.Config) string { return strconv.Itoa(c.Workload.FilesPerNode) },
			func(c *sim.Config, v string) error { return setInt(&c.Workload.FilesPerNode, v, 0) }},
		{"seed", "int", "seed of the size distributions",
			func(c *sim.Config) string { return strconv.FormatUint(c.Seed, 10) },
			func(c *sim.Config, v string) error {
				n, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return errors.New("want a whole number, 0 or more")
				}
				c.Seed = n
				return nil
			}},
	}
}

// fsParams are the shared file system's.
func fsParams() []simParam {
	return []simParam{
		{"fs-bandwidth", "rate", "shared file system bandwidth, all clients (thesis Table 5.3: 2 GiB in 49.93 s)",
			func(c *sim.Config) string { return flagRate(c.FS.Bandwidth) },
			func(c *sim.Config, v string) (err error) { c.FS.Bandwidth, err = sim.ParseRate(v); return err }},
		{"fs-node-bandwidth", "rate", "one compute node's link, 0: no limit (thesis iperf: 943 Mbit/s)",
			func(c *sim.Config) string { return flagRate(c.FS.NodeBandwidth) },
			func(c *sim.Config, v string) (err error) { c.FS.NodeBandwidth, err = rateOrNone(v); return err }},
		{"fs-create-rate", "number", "shared file system creates per second, one creator (GUPFS Create-C)",
			func(c *sim.Config) string { return strconv.FormatFloat(c.FS.CreateRate, 'g', -1, 64) },
			func(c *sim.Config, v string) error { return setFloat(&c.FS.CreateRate, v) }},
		{"fs-contention", "number", "k: C creators in one directory cost 1+k(C-1) each (fitted to thesis Table 5.2)",
			func(c *sim.Config) string { return strconv.FormatFloat(c.FS.Contention, 'g', 6, 64) },
			func(c *sim.Config, v string) error { return setFloat(&c.FS.Contention, v) }},
	}
}

// rsaParams are RSA's: its nodes, allocation, mover and lifecycle times.
func rsaParams() []simParam {
	return []simParam{
		{"rsa-nodes", "int", "RSA nodes",
			func(c *sim.Config) string { return strconv.Itoa(c.RSA.Nodes) },
			func(c *sim.Config, v string) error { return setInt(&c.RSA.Nodes, v, 0) }},
		{"ram", "size", "RAM per RSA node lent to RAMDISKs",
			func(c *sim.Config) string { return units.FormatSize(c.RSA.RAM) },
			func(c *sim.Config, v string) (err error) { c.RSA.RAM, err = units.ParseSize(v); return err }},
		{"rsa-link", "rate", "one RSA node's link to the compute nodes (thesis iperf: 943 Mbit/s)",
			func(c *sim.Config) string { return flagRate(c.RSA.Link) },
			func(c *sim.Config, v string) (err error) { c.RSA.Link, err = sim.ParseRate(v); return err }},
		{"rsa-uplink", "rate", "all RSA nodes to all compute nodes together, 0: no limit (thesis: one 1 GbE link, 2 GiB in 35.87 s)",
			func(c *sim.Config) string { return flagRate(c.RSA.Uplink) },
			func(c *sim.Config, v string) (err error) { c.RSA.Uplink, err = rateOrNone(v); return err }},
		{"rsa-create-rate", "number", "creates per second per RSA node (thesis Table 5.5, bonnie++)",
			func(c *sim.Config) string { return strconv.FormatFloat(c.RSA.CreateRate, 'g', -1, 64) },
			func(c *sim.Config, v string) error { return setFloat(&c.RSA.CreateRate, v) }},
		{"proportion", "int", "compute nodes per RSA node (config: proportion)",
			func(c *sim.Config) string { return strconv.Itoa(c.RSA.Proportion) },
			func(c *sim.Config, v string) error { return setInt(&c.RSA.Proportion, v, 1) }},
		{"min-job-nodes", "int", "smaller jobs are INELIGIBLE (config: min_job_nodes; 0: = proportion)",
			func(c *sim.Config) string { return strconv.Itoa(c.RSA.MinJobNodes) },
			func(c *sim.Config, v string) error { return setInt(&c.RSA.MinJobNodes, v, 0) }},
		{"alloc", "mode", "how jobs ask for RAM: proportion (whole nodes) or capacity (their data size, explicitly)",
			func(c *sim.Config) string {
				if c.RSA.ByCapacity {
					return "capacity"
				}
				return "proportion"
			},
			func(c *sim.Config, v string) error {
				switch v {
				case "proportion", "capacity":
					c.RSA.ByCapacity = v == "capacity"
					return nil
				}
				return errors.New("want proportion or capacity")
			}},
		{"delay", "duration", "RSA_DELAY: input-to-output switch after the start (config: default_delay)",
			func(c *sim.Config) string { return c.RSA.Delay.String() },
			func(c *sim.Config, v string) (err error) { c.RSA.Delay, err = units.ParseDuration(v); return err }},
		{"stage-in-rate", "rate", "one RSA node's mover copying in (thesis rsync, Table 5.1)",
			func(c *sim.Config) string { return flagRate(c.RSA.StageInRate) },
			func(c *sim.Config, v string) (err error) { c.RSA.StageInRate, err = sim.ParseRate(v); return err }},
		{"stage-out-rate", "rate", "one RSA node's mover copying out (thesis rsync, Table 5.1)",
			func(c *sim.Config) string { return flagRate(c.RSA.StageOutRate) },
			func(c *sim.Config, v string) (err error) { c.RSA.StageOutRate, err = sim.ParseRate(v); return err }},
		{"stage-file-cost", "duration", "the mover's own time per file (fitted: rsync's 224 s in thesis Table 5.2)",
			func(c *sim.Config) string { return c.RSA.StageFileCost.String() },
			func(c *sim.Config, v string) (err error) {
				c.RSA.StageFileCost, err = units.ParseDuration(v)
				return err
			}},
		{"stage-in-lead", "duration", "stage in this long (plus one node's fill time) before the expected start; 0: at once (config: slurm.stage_in_lead)",
			func(c *sim.Config) string { return c.RSA.StageInLead.String() },
			func(c *sim.Config, v string) (err error) { c.RSA.StageInLead, err = units.ParseDuration(v); return err }},
		{"boot", "time+time", "building a RAMDISK, BASE+PER_NODE (thesis App. T)",
			func(c *sim.Config) string { return c.RSA.Boot.String() },
			func(c *sim.Config, v string) (err error) { c.RSA.Boot, err = parseLinear(v); return err }},
		{"destroy", "time+time", "tearing a RAMDISK down, BASE+PER_NODE (thesis App. T)",
			func(c *sim.Config) string { return c.RSA.Destroy.String() },
			func(c *sim.Config, v string) (err error) { c.RSA.Destroy, err = parseLinear(v); return err }},
		{"mount", "duration", "one bind mount or unmount on the job's nodes",
			func(c *sim.Config) string { return c.RSA.Mount.String() },
			func(c *sim.Config, v string) (err error) { c.RSA.Mount, err = units.ParseDuration(v); return err }},
	}
}

func setInt(p *int, v string, least int) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < least {
		return fmt.Errorf("want a whole number of at least %d", least)
	}
	*p = n
	return nil
}

func setFloat(p *float64, v string) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return errors.New("want a number, 0 or more")
	}
	*p = f
	return nil
}

// flagRate prints a speed so that ParseRate reads it back: whole Gbit/s
// or Mbit/s as bits (link speeds), whole GiB/s as such, the rest in MiB/s.
func flagRate(r float64) string {
	if r == 0 {
		return "0"
	}
	whole := func(x float64) bool { return x == math.Trunc(x) }
	switch bits := r * 8; {
	case whole(bits / 1e9):
		return strconv.FormatFloat(bits/1e9, 'f', -1, 64) + "Gbit"
	case whole(bits / 1e6):
		return strconv.FormatFloat(bits/1e6, 'f', -1, 64) + "Mbit"
	case whole(r / (1 << 30)):
		return strconv.FormatFloat(r/(1<<30), 'f', -1, 64) + "GiB/s"
	}
	return strconv.FormatFloat(r/(1<<20), 'f', 2, 64) + "MiB/s"
}

// rateOrNone reads a speed, or 0 for no limit.
func rateOrNone(v string) (float64, error) {
	if v == "0" {
		return 0, nil
	}
	return sim.ParseRate(v)
}

func parseLinear(v string) (sim.Linear, error) {
	b, n, _ := strings.Cut(v, "+")
	base, err1 := units.ParseDuration(b)
	var per time.Duration
	var err2 error
	if n != "" {
		per, err2 = units.ParseDuration(n)
	}
	if err1 != nil || err2 != nil {
		return sim.Linear{}, errors.New("write BASE+PER_NODE, e.g. 10s+1.5s")
	}
	return sim.Linear{Base: base, PerNode: per}, nil
}

type simFlags struct {
	values    map[string]*string
	preset    string
	testbed   string // --preset's old name, kept as an alias
	fromSacct string
	sweep     []string
	plots     string
	gantt     string
	json      bool
}

// testbedPreset is the preset a value of the deprecated --testbed names.
func testbedPreset(testbed string) (string, bool) {
	switch testbed {
	case "thesis":
		return "testbed", true
	case "measured":
		return "measured", true
	}
	return "", false
}

func simCmd() *cobra.Command {
	cmd, _ := newSimCmd()
	return cmd
}

// newSimCmd is rsa-lab sim, and the flags it parses into.
func newSimCmd() (*cobra.Command, *simFlags) {
	f := &simFlags{values: map[string]*string{}}
	def := sim.Defaults()
	cmd := &cobra.Command{
		Use:   "sim [flags] [TRACE]",
		Short: "Simulate a batch machine with and without RSA on a workload trace",
		Long: `Replay a workload on a simulated machine twice, without and with RSA, and
compare: compute-node hours spent waiting on I/O, utilisation, makespan, waits,
bounded slowdown, how many jobs RSA served and how full its RAM was. The
workload is a Standard Workload Format trace (Parallel Workloads Archive), or
your Slurm's accounting (--from-sacct). The scheduler is FCFS (or SJF) with
EASY backfill; RSA's side is the daemon's own lifecycle machine and allocation
planner. Every model parameter is a flag; docs/simulator.md says where each
number comes from, docs/sizing.md how to size RSA for a site with them.

  rsa-lab sim internal/sim/testdata/lublin_256.swf
  rsa-lab sim --preset modern --nodes 200 --input exp:20G --output exp:20G TRACE
  rsa-lab sim --sweep rsa-nodes=2,4,8 --sweep proportion=16,64,128 --plots out/ TRACE
  rsa-lab sim --from-sacct jobs.sacct --nodes 200 --preset modern
  rsa-lab sim --preset testbed        # thesis Table 5.2's job, simulated
  rsa-lab sim --preset measured       # the same with rsa copy as the mover

` + presetHelp() + `

From Slurm (--from-sacct FILE): FILE holds sacct's listing of the period to
simulate, made on a host that reaches Slurm's accounting (without --starttime,
sacct lists today's jobs only):

  ` + sim.SacctCommand + ` \
    --starttime 2025-01-01 --endtime 2025-04-01 > FILE

A header line (sacct without --noheader) is read too. Times are sacct's
default form, 2025-01-01T12:00:00, read in this host's time zone. Each job
that started and ended is one job: its nodes (NNodes), run time (End - Start)
and time limit. Job steps, jobs that never started and jobs still running are
skipped and counted. sacct does not record the machine's size: give --nodes.
Nor does Slurm record I/O: every job's sizes come from --input and --output.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSim(cmd, f, args)
		},
	}
	fl := cmd.Flags()
	for _, p := range simParams() {
		text := p.get(&def)
		f.values[p.name] = &text
		fl.Var(paramValue{p, &text}, p.name, p.usage)
	}
	fl.StringVar(&f.preset, "preset", "thesis", "start from the parameters of preset `NAME`: "+strings.Join(presetNames(), ", ")+" (listed above); flags given change them")
	fl.StringVar(&f.testbed, "testbed", "", "thesis or measured: the old name of --preset testbed and --preset measured")
	_ = fl.MarkDeprecated("testbed", "use --preset testbed (for --testbed thesis) or --preset measured")
	fl.StringVar(&f.fromSacct, "from-sacct", "", "simulate Slurm's accounting instead of a TRACE: `FILE` holds the output of "+sim.SacctCommand+" (needs --nodes)")
	fl.StringArrayVar(&f.sweep, "sweep", nil, "vary KEY=V1,V2,... (rsa-nodes, ram, proportion, link); repeat for a grid")
	fl.StringVar(&f.plots, "plots", "", "write PNG charts into this directory")
	fl.StringVar(&f.gantt, "gantt", "", "the Gantt chart's jobs, FIRST_ID:COUNT (default: 30 from the middle of the trace)")
	fl.BoolVar(&f.json, "json", false, "print JSON instead of text")
	return cmd, f
}

func presetNames() []string {
	var names []string
	for _, p := range sim.Presets() {
		names = append(names, p.Name)
	}
	return names
}

// presetHelp lists the presets for --help, each with the parameters it
// sets that differ from the defaults, as the flags print them.
func presetHelp() string {
	var b strings.Builder
	b.WriteString("Presets (--preset NAME) set every parameter; a flag given on the command line\n")
	b.WriteString("overrides its value. The flags' defaults below are preset thesis'.\n")
	def := sim.Defaults()
	for _, p := range sim.Presets() {
		b.WriteString("\n")
		b.WriteString(wrap("  "+p.Name+": "+p.Summary, "    ", 80))
		c := p.Config()
		var set []string
		for _, sp := range simParams() {
			if v := sp.get(&c); v != sp.get(&def) {
				set = append(set, "--"+sp.name+"="+v)
			}
		}
		if len(set) > 0 {
			b.WriteString(wrap("    sets "+strings.Join(set, ", "), "      ", 80))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// wrap breaks s into lines of at most width at spaces, indenting the lines
// after the first; each line ends in a newline. A number stays on the line
// of the word after it (its unit).
func wrap(s, indent string, width int) string {
	var words []string
	for w := range strings.FieldsSeq(s) {
		if n := len(words); n > 0 && strings.Trim(words[n-1], "0123456789.,") == "" {
			words[n-1] += " " + w
			continue
		}
		words = append(words, w)
	}
	var b strings.Builder
	line := s[:len(s)-len(strings.TrimLeft(s, " "))] // s's own indent
	for i, w := range words {
		switch {
		case i == 0:
			line += w
		case len(line)+1+len(w) > width:
			b.WriteString(line + "\n")
			line = indent + w
		default:
			line += " " + w
		}
	}
	b.WriteString(line + "\n")
	return b.String()
}

// config is the preset with the flags given on the command line applied.
func (f *simFlags) config(cmd *cobra.Command) (sim.Config, sim.Preset, error) {
	name := f.preset
	if f.testbed != "" {
		if cmd.Flags().Changed("preset") {
			return sim.Config{}, sim.Preset{}, errors.New("--testbed is the old name of --preset: give --preset alone")
		}
		var ok bool
		if name, ok = testbedPreset(f.testbed); !ok {
			return sim.Config{}, sim.Preset{}, fmt.Errorf("--testbed %q: want thesis or measured (now --preset testbed or --preset measured)", f.testbed)
		}
	}
	preset, err := sim.PresetNamed(name)
	if err != nil {
		return sim.Config{}, sim.Preset{}, fmt.Errorf("--preset: %w", err)
	}
	cfg := preset.Config()
	for _, p := range simParams() {
		if !cmd.Flags().Changed(p.name) {
			continue
		}
		if err := p.set(&cfg, *f.values[p.name]); err != nil {
			return cfg, preset, fmt.Errorf("--%s %q: %w", p.name, *f.values[p.name], err)
		}
	}
	return cfg, preset, nil
}

// simReport is the JSON output.
type simReport struct {
	Trace string `json:"trace,omitempty"`
	// Sacct says what became of the lines of --from-sacct's listing.
	Sacct       *sim.SacctStats   `json:"sacct,omitempty"`
	Preset      string            `json:"preset"`
	Flags       []string          `json:"flags,omitempty"` // the parameters given on the command line
	Parameters  map[string]string `json:"parameters"`
	WithoutRSA  *sim.Result       `json:"without_rsa,omitempty"`
	WithRSA     *sim.Result       `json:"with_rsa,omitempty"`
	Sweep       *simSweep         `json:"sweep,omitempty"`
	Calibration *sim.Calibration  `json:"calibration,omitempty"`
	Plots       []string          `json:"plots,omitempty"`
	// Warnings say what in the parameters makes the answer doubtful
	// (sim.Config.Warnings).
	Warnings []string `json:"warnings,omitempty"`
}

type simSweep struct {
	Keys []string       `json:"keys"`
	Runs []sim.SweepRun `json:"runs"`
}

// simTrace is the workload a run replays: an SWF file, read afresh for
// each run, or sacct's listing, read once.
type simTrace struct {
	run sim.Runner
	// hasJob reports whether the trace has a job with this id.
	hasJob func(id int64) (bool, error)
	// middle is the id --gantt starts from by default.
	middle func() (int64, error)
}

// swfTrace is the SWF trace at path.
func swfTrace(path string) simTrace {
	open := func() (io.ReadCloser, error) {
		r, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("trace: %w", err)
		}
		return r, nil
	}
	return simTrace{
		run: func(ctx context.Context, c sim.Config) (*sim.Result, error) { return sim.RunTrace(ctx, open, c) },
		hasJob: func(id int64) (bool, error) {
			r, err := open()
			if err != nil {
				return false, err
			}
			defer r.Close()
			return sim.HasJob(r, id)
		},
		middle: func() (int64, error) {
			r, err := open()
			if err != nil {
				return 0, err
			}
			defer r.Close()
			rd, err := sim.NewReader(r)
			if err != nil {
				return 0, err
			}
			return int64(rd.Header.MaxJobs / 2), nil
		},
	}
}

// sacctTrace reads sacct's listing at path, its times in the local zone.
func sacctTrace(path string) (simTrace, sim.SacctStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return simTrace{}, sim.SacctStats{}, fmt.Errorf("--from-sacct: %w", err)
	}
	defer f.Close()
	t, st, err := sim.ReadSacct(f, time.Local)
	if err != nil {
		return simTrace{}, st, fmt.Errorf("--from-sacct %s: %w", path, err)
	}
	return simTrace{
		run:    t.Run,
		hasJob: func(id int64) (bool, error) { return t.HasJob(id), nil },
		middle: func() (int64, error) { return t.Jobs[len(t.Jobs)/2].ID, nil },
	}, st, nil
}

func runSim(cmd *cobra.Command, f *simFlags, args []string) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	cfg, preset, err := f.config(cmd)
	if err != nil {
		return err
	}
	axes, err := sim.ParseSweep(f.sweep)
	if err != nil {
		return err
	}
	rep := simReport{Preset: preset.Name, Parameters: map[string]string{}, Warnings: cfg.Warnings()}
	for _, p := range simParams() {
		rep.Parameters[p.name] = p.get(&cfg)
		if cmd.Flags().Changed(p.name) {
			rep.Flags = append(rep.Flags, p.name)
		}
	}
	if !f.json {
		for _, w := range rep.Warnings {
			fmt.Fprintln(stderr, "rsa-lab sim: warning:", w)
		}
	}
	ctx := cmd.Context()
	var tr simTrace
	switch {
	case len(args) > 0 && f.fromSacct != "":
		return errors.New("give a TRACE or --from-sacct FILE, not both")
	case f.fromSacct != "":
		if cmd.Flags().Changed("procs-per-node") {
			return errors.New("--procs-per-node does not apply to --from-sacct: sacct gives each job's nodes (NNodes)")
		}
		if cfg.Nodes == 0 {
			return errors.New("--from-sacct: sacct does not record the machine's size: give --nodes, the compute nodes the jobs ran on (a partition's: scontrol show partition NAME, TotalNodes)")
		}
		var st sim.SacctStats
		if tr, st, err = sacctTrace(f.fromSacct); err != nil {
			return err
		}
		rep.Trace, rep.Sacct = f.fromSacct, &st
	case len(args) > 0:
		tr, rep.Trace = swfTrace(args[0]), args[0]
	default:
		return runCalibration(ctx, stdout, f, cfg, preset, &rep)
	}
	if cfg.Gantt, err = ganttWindow(f.gantt, tr); err != nil {
		return err
	}
	if err := runTrace(ctx, f, tr, cfg, axes, &rep); err != nil {
		return err
	}
	if f.json {
		return printJSON(stdout, rep)
	}
	printSim(stdout, &rep, cfg)
	return nil
}

// runCalibration is rsa-lab sim without a trace: a preset that calibrates
// runs thesis Table 5.2's job, and the report gives the table's workload
// as the parameters used.
func runCalibration(ctx context.Context, stdout io.Writer, f *simFlags, cfg sim.Config, preset sim.Preset, rep *simReport) error {
	if !preset.Calibrates {
		return fmt.Errorf("give a trace (the bundled example is internal/sim/testdata/lublin_256.swf) or --from-sacct FILE; or, to simulate thesis Table 5.2's job, --preset testbed (now %s)", preset.Name)
	}
	if cfg.RSA.Nodes == 0 {
		return fmt.Errorf("--preset %s without a trace compares the shared file system with RSA: give --rsa-nodes above 0", preset.Name)
	}
	cal, err := sim.Calibrate(ctx, cfg)
	if err != nil {
		return err
	}
	used := sim.CalibrationConfig(cfg) // the table's workload, not the flags'
	for _, p := range simParams() {
		rep.Parameters[p.name] = p.get(&used)
	}
	rep.Calibration = &cal
	if f.json {
		return printJSON(stdout, *rep)
	}
	printCalibration(stdout, preset.Name, cal)
	return nil
}

// runTrace replays the trace without RSA and, with RSA nodes, with it,
// then over the sweep's grid, and draws the plots --plots asks for; the
// results go into rep.
func runTrace(ctx context.Context, f *simFlags, tr simTrace, cfg sim.Config, axes []sim.Axis, rep *simReport) error {
	base := cfg
	base.RSA.Nodes = 0
	var err error
	if rep.WithoutRSA, err = tr.run(ctx, base); err != nil {
		return err
	}
	if cfg.RSA.Nodes > 0 {
		if rep.WithRSA, err = tr.run(ctx, cfg); err != nil {
			return err
		}
	}
	if len(axes) > 0 {
		runs, err := sim.Sweep(ctx, tr.run, cfg, axes)
		if err != nil {
			return err
		}
		rep.Sweep = &simSweep{Runs: runs}
		for _, a := range axes {
			rep.Sweep.Keys = append(rep.Sweep.Keys, a.Key)
		}
	}
	if f.plots != "" {
		var runs []sim.SweepRun
		if rep.Sweep != nil {
			runs = rep.Sweep.Runs
		}
		if rep.Plots, err = sim.Plots(f.plots, rep.WithoutRSA, rep.WithRSA, axes, runs); err != nil {
			return err
		}
	}
	return nil
}

// ganttWindow reads --gantt, or picks 30 jobs from the middle of the trace.
func ganttWindow(spec string, tr simTrace) (sim.GanttWindow, error) {
	if spec != "" {
		a, b, ok := strings.Cut(spec, ":")
		first, err1 := strconv.ParseInt(a, 10, 64)
		n, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || n < 1 {
			return sim.GanttWindow{}, fmt.Errorf("--gantt %q: write FIRST_JOB_ID:COUNT, e.g. 5000:30", spec)
		}
		found, err := tr.hasJob(first)
		if err != nil {
			return sim.GanttWindow{}, err
		}
		if !found {
			return sim.GanttWindow{}, fmt.Errorf("--gantt %q: the trace has no job %d; give the id of one of its jobs (field 1 of a job line)", spec, first)
		}
		return sim.GanttWindow{First: first, Count: n}, nil
	}
	first, err := tr.middle()
	if err != nil {
		return sim.GanttWindow{}, err
	}
	return sim.GanttWindow{First: first, Count: 30}, nil
}

func printCalibration(w io.Writer, preset string, c sim.Calibration) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "thesis Table 5.2's job on preset %s, the thesis' test bed: 1,024 nodes, 2,048 processes, one 1 MiB file each, one directory\n\n", preset)
	fmt.Fprintf(tw, "\tsimulated\tthesis\n")
	fmt.Fprintf(tw, "output to the shared FS\t%.2f s\t%.2f s\n", c.FSOutput, c.ThesisFSOutput)
	fmt.Fprintf(tw, "output to RSA\t%.2f s\t%.2f s\n", c.RSAOutput, c.ThesisRSAOutput)
	fmt.Fprintf(tw, "I/O time, shared FS / RSA\t%.1fx\t%.1fx\n", c.Speedup, c.ThesisSpeedup)
	fmt.Fprintf(tw, "stage-out after the job\t%.0f s\t%.0f s (rsync)\n", c.StageOut, c.ThesisStageOut)
	tw.Flush()
}

func printSim(w io.Writer, rep *simReport, cfg sim.Config) {
	o, r := rep.WithoutRSA, rep.WithRSA
	sk := o.Skipped
	kind := "trace"
	if st := rep.Sacct; st != nil {
		kind = "sacct listing"
		fmt.Fprintf(w, "sacct listing %s: %d lines, %d jobs that ran, submitted %s to %s; not jobs: %d steps, %d never started, %d still running\n",
			rep.Trace, st.Lines, st.Jobs, st.FirstSubmit.Format(time.DateTime), st.LastSubmit.Format(time.DateTime), st.Steps, st.NotStarted, st.Running)
		if st.Recorded > 0 {
			fmt.Fprintf(w, "sacct listing %s: %d jobs' input sizes as RSA recorded them (AdminComment); the others' from --input\n", rep.Trace, st.Recorded)
		}
	}
	fmt.Fprintf(w, "%s %s: %d jobs simulated on %d compute nodes; %d skipped (run time <= 0: %d, processors unknown: %d, more nodes than the machine: %d)\n",
		kind, rep.Trace, o.Jobs, o.Nodes, sk.Total(), sk.NoRunTime, sk.NoProcs, sk.TooManyNode)
	given := "no flags"
	if len(rep.Flags) > 0 {
		given = "--" + strings.Join(rep.Flags, ", --")
	}
	fmt.Fprintf(w, "parameters: preset %s, changed by %s\n", rep.Preset, given)
	fmt.Fprintf(w, "I/O per node: input %s, output %s, %d files; shared FS %s, %.0f creates/s\n",
		rep.Parameters["input"], rep.Parameters["output"], cfg.Workload.FilesPerNode, sim.FormatRate(cfg.FS.Bandwidth), cfg.FS.CreateRate)
	if r != nil {
		least := cfg.RSA.MinJobNodes
		if least == 0 {
			least = cfg.RSA.Proportion
		}
		rule := fmt.Sprintf("whole nodes, one per %d compute nodes (jobs from %d nodes)", cfg.RSA.Proportion, least)
		if cfg.RSA.ByCapacity {
			rule = "each job's data size"
		}
		fmt.Fprintf(w, "RSA: %d nodes x %s, link %s; RAM by %s; RSA_DELAY %s\n",
			cfg.RSA.Nodes, units.FormatSize(cfg.RSA.RAM), sim.FormatRate(cfg.RSA.Link), rule, cfg.RSA.Delay)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	// Labels padded to one width read left-aligned in right-aligned cells.
	row := func(name string, a, b string) { fmt.Fprintf(tw, "%-46s\t%s\t%s\t\n", name, a, b) }
	dash := "-"
	with := func(f func(*sim.Result) string) string {
		if r == nil {
			return dash
		}
		return f(r)
	}
	row("", "without RSA", "with RSA")
	row("compute-node hours waiting on I/O", fmt.Sprintf("%.1f", o.IONodeHours), with(func(r *sim.Result) string {
		return fmt.Sprintf("%.1f (%+.1f %%)", r.IONodeHours, pct(r.IONodeHours, o.IONodeHours))
	}))
	row("compute-node hours held (computing + I/O)", fmt.Sprintf("%.0f", o.NodeHours), with(func(r *sim.Result) string { return fmt.Sprintf("%.0f", r.NodeHours) }))
	row("utilisation (nodes held)", fmt.Sprintf("%.2f %%", 100*o.Utilisation), with(func(r *sim.Result) string { return fmt.Sprintf("%.2f %%", 100*r.Utilisation) }))
	row("makespan", days(o.Makespan), with(func(r *sim.Result) string { return days(r.Makespan) }))
	row("mean wait", hours(o.MeanWait), with(func(r *sim.Result) string { return hours(r.MeanWait) }))
	row("mean bounded slowdown (10 s)", fmt.Sprintf("%.1f", o.MeanBoundedSlowdown), with(func(r *sim.Result) string { return fmt.Sprintf("%.1f", r.MeanBoundedSlowdown) }))
	row("on deck / demotions", fmt.Sprintf("%d / %d", o.OnDeck, o.Demotions), with(func(r *sim.Result) string { return fmt.Sprintf("%d / %d", r.OnDeck, r.Demotions) }))
	if r != nil {
		row("jobs served by RSA", dash, fmt.Sprintf("%d (%.1f %%)", r.JobsWithRSA, 100*r.ShareWithRSA))
		row("  input from RAM / output to RAM", dash, fmt.Sprintf("%d / %d", r.InputFromRAM, r.OutputToRAM))
		row("  ineligible (capacity.Decide)", dash, strconv.Itoa(r.Ineligible))
		row("stage-ins late / not begun at start", dash, fmt.Sprintf("%d / %d", r.LateStageIns, r.NotStagedInYet))
		if r.StageInsFailed+r.OutputTooLarge+r.UnmountBusy > 0 {
			row("input / output larger than RAM, busy unmounts", dash, fmt.Sprintf("%d / %d, %d", r.StageInsFailed, r.OutputTooLarge, r.UnmountBusy))
		}
		row("RSA RAM held: peak / mean", dash, fmt.Sprintf("%s (%.0f %%) / %s (%.0f %%)",
			units.FormatSize(r.RAMPeak), pct0(float64(r.RAMPeak), float64(r.RAMTotal)),
			units.FormatSize(int64(r.RAMMean)), pct0(r.RAMMean, float64(r.RAMTotal))))
	}
	row("simulated in", fmt.Sprintf("%.2f s (%d events)", o.Elapsed, o.Events), with(func(r *sim.Result) string {
		return fmt.Sprintf("%.2f s (%d events)", r.Elapsed, r.Events)
	}))
	tw.Flush()
	if rep.Sweep != nil {
		fmt.Fprintln(w)
		printSweep(w, rep.Sweep, o)
	}
	for _, p := range rep.Plots {
		fmt.Fprintf(w, "wrote %s\n", p)
	}
}

func printSweep(w io.Writer, s *simSweep, o *sim.Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tI/O node-h\tvs without\tutil\tmean wait\tbsld\tRSA jobs\tlate\tnot begun\tRAM peak\tRAM mean\t\n", strings.Join(s.Keys, "\t"))
	for _, run := range s.Runs {
		r := run.Result
		fmt.Fprintf(tw, "%s\t%.1f\t%+.1f %%\t%.2f %%\t%s\t%.1f\t%.1f %%\t%d\t%d\t%.0f %%\t%.0f %%\t\n",
			strings.Join(run.Values, "\t"), r.IONodeHours, pct(r.IONodeHours, o.IONodeHours), 100*r.Utilisation,
			hours(r.MeanWait), r.MeanBoundedSlowdown, 100*r.ShareWithRSA, r.LateStageIns, r.NotStagedInYet,
			pct0(float64(r.RAMPeak), float64(r.RAMTotal)), pct0(r.RAMMean, float64(r.RAMTotal)))
	}
	tw.Flush()
}

// pct is the change from b to a in per cent.
func pct(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * (a - b) / b
}

// pct0 is a as a share of b in per cent.
func pct0(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * a / b
}

func days(s float64) string  { return fmt.Sprintf("%.2f d", s/86400) }
func hours(s float64) string { return fmt.Sprintf("%.2f h", s/3600) }
