// Package slurm is RSA's knowledge of Slurm: the job-script directives
// (#RSA_DATA_IN=… and #RSA key=value), host lists, and reading squeue and
// scontrol. It must not touch the store, mounts or RAMDISKs: the Slurm
// adapter (internal/slurm/adapter) turns what this package reads into
// lifecycle events, through the daemon.
package slurm

import (
	"bufio"
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/stage"
	"github.com/rsa-hpc/rsa/internal/textsafe"
	"github.com/rsa-hpc/rsa/internal/units"
)

// Directive is the prefix of every RSA line in a job script; burst_buffer.conf
// sets Directive=RSA so Slurm hands these lines to burst_buffer.lua.
const Directive = "RSA"

// Request is what a job script asks of RSA.
type Request struct {
	Spec job.Spec
	// Pool is the burst buffer pool named with an explicit capacity.
	Pool string
	// ScriptNodes is the least node count the script's own #SBATCH
	// lines ask for (-N, --nodes), 0 if they do not say. sbatch's
	// command line overrides it, and Slurm 22.05 does not tell the
	// burst buffer plugin that: it is a hint, not the job's size.
	ScriptNodes int
}

// ParseError names the line of the job script and the fix.
type ParseError struct {
	Line int
	Text string
	Why  string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("job script line %d %q: %s", e.Line, e.Text, e.Why)
}

// The thesis' variables (App. R, U) and the #RSA key each is also known by.
var variables = map[string]string{
	"DATA_IN":   "in",
	"DATA_OUT":  "out",
	"STAGE_IN":  "stage_in",
	"STAGE_OUT": "stage_out",
	"DELAY":     "delay",
	"INPUT":     "input",
	"OUTPUT":    "output",
}

var keys = []string{"in", "out", "input", "output", "stage_in", "stage_out", "delay", "capacity", "pool"}

// Parse reads the RSA directives of a job script. Like Slurm, it reads only
// the leading comment block: the first line that does not start with '#'
// ends it. ok is false when the script has no RSA line at all.
func Parse(script []byte) (r Request, ok bool, err error) {
	r.Spec.Delay = -1 // not given: the daemon's default_delay
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(script))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), " \t\r")
		if line == "" {
			continue // Slurm's tokenizer skips empty lines
		}
		if line[0] != '#' {
			break
		}
		if opts, isSbatch := strings.CutPrefix(line, "#SBATCH"); isSbatch {
			if nodes := sbatchNodes(opts); nodes > 0 {
				r.ScriptNodes = nodes // the last one wins, as in sbatch
			}
			continue
		}
		rest, isRSA := strings.CutPrefix(line[1:], Directive)
		if !isRSA {
			continue
		}
		ok = true
		bad := func(format string, a ...any) error {
			return &ParseError{Line: n, Text: line, Why: fmt.Sprintf(format, a...)}
		}
		var pairs [][2]string
		switch {
		case strings.HasPrefix(rest, "_"):
			name, val, found := strings.Cut(rest[1:], "=")
			k, known := variables[name]
			if !known {
				// Escaped: the message reaches sbatch's and squeue's terminals.
				return r, ok, bad("unknown variable RSA_%s; write one of RSA_DATA_IN, RSA_DATA_OUT, RSA_INPUT, RSA_OUTPUT, RSA_STAGE_IN, RSA_STAGE_OUT, RSA_DELAY", textsafe.Line(name))
			}
			if !found {
				return r, ok, bad("missing '=': write #RSA_%s=VALUE", name)
			}
			pairs = append(pairs, [2]string{k, strings.TrimSpace(val)})
		case rest == "" || rest[0] == ' ' || rest[0] == '\t':
			for _, f := range strings.Fields(rest) {
				k, v, found := strings.Cut(f, "=")
				if !found || !slices.Contains(keys, k) {
					return r, ok, bad("%q is not a key=value setting; #RSA takes %s", f, strings.Join(keys, "=, ")+"=")
				}
				pairs = append(pairs, [2]string{k, v})
			}
		default:
			return r, ok, bad("unknown directive #RSA%s; write #RSA_DATA_IN=DIR and the like, or #RSA key=value", textsafe.Line(rest))
		}
		for _, p := range pairs {
			k, v := p[0], p[1]
			if prev, dup := seen[k]; dup {
				return r, ok, bad("%s is already set on line %d; give it once", k, prev)
			}
			seen[k] = n
			if v == "" {
				return r, ok, bad("%s has no value", k)
			}
			// Values become mount points, program paths, the job's
			// environment and lines an administrator reads: refused here,
			// with their line, as a submission refuses them.
			if err := job.CheckText("the value of "+k, v); err != nil {
				return r, ok, bad("%v", err)
			}
			if err := set(&r, k, v); err != nil {
				return r, ok, bad("%v", err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		// The line that stopped the scanner is the one after the last read.
		return r, ok, &ParseError{Line: n + 1, Text: "…", Why: fmt.Sprintf("cannot read the job script: %v; keep every line below 1 MiB", err)}
	}
	if !ok {
		return r, false, nil
	}
	if r.Spec.Capacity > 0 && r.Pool == "" || r.Spec.Capacity == 0 && r.Pool != "" {
		return r, ok, &ParseError{Line: max(seen["capacity"], seen["pool"]), Text: "#RSA", Why: "capacity= and pool= go together (Slurm accounts a capacity in a pool): write #RSA capacity=SIZE pool=NAME"}
	}
	if r.Spec.Input == "" && r.Spec.Output == "" && r.Spec.StageIn == "" {
		return r, ok, &ParseError{Line: 1, Text: "#RSA", Why: "nothing to accelerate: add #RSA_DATA_IN=DIR and/or #RSA_DATA_OUT=DIR"}
	}
	return r, ok, nil
}

func set(r *Request, k, v string) error {
	path := func(dst *string, what string) error {
		if !filepath.IsAbs(v) || filepath.Clean(v) != v {
			return fmt.Errorf("%s %q must be a clean absolute path (no '..', no trailing '/')", what, v)
		}
		*dst = v
		return nil
	}
	switch k {
	case "in":
		return path(&r.Spec.Input, "the input directory")
	case "out":
		return path(&r.Spec.Output, "the output directory")
	case "stage_in", "stage_out":
		dst := &r.Spec.StageIn
		if k == "stage_out" {
			dst = &r.Spec.StageOut
		}
		if stage.BuiltIn(v) {
			*dst = v
			return nil
		}
		return path(dst, "the "+strings.ReplaceAll(k, "_", "-")+" program")
	case "delay":
		d, err := units.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("delay %q: give seconds or a duration such as 10m", v)
		}
		r.Spec.Delay = d
	case "capacity":
		n, err := units.ParseSize(v)
		if err != nil || n < 1<<20 {
			return fmt.Errorf("capacity %q: give a size of at least 1M such as 64G", v)
		}
		r.Spec.Capacity = n
	case "pool":
		r.Pool = v
	case "input":
		if v != job.InputImage && v != job.InputFiles {
			return fmt.Errorf("input %q: write input=image (a read-only image of the input directory) or input=files (a read-write copy, for a job that writes into its input directory)", v)
		}
		r.Spec.InputMode = v
	case "output":
		if v != job.OutputShared && v != job.OutputPrivate {
			return fmt.Errorf("output %q: write output=shared (one RAM file system all the job's nodes share) or output=private (one of its own per compute node)", v)
		}
		r.Spec.OutputMode = v
	}
	return nil
}

// EnvLines are the variables a job sees (burst_buffer's paths hook writes
// them to the job's environment).
func EnvLines(ramdisk string, s job.Spec) []string {
	out := []string{"RSA_RAMDISK=" + ramdisk}
	add := func(k, v string) {
		if v != "" {
			out = append(out, k+"="+v)
		}
	}
	add("RSA_DATA_IN", s.Input)
	add("RSA_DATA_OUT", s.Output)
	if s.Delay >= 0 {
		add("RSA_DELAY", fmt.Sprint(int64(s.Delay/time.Second)))
	}
	return out
}

// sbatchNodes reads the least node count from the options of one #SBATCH
// line: "-N 2", "-N2", "--nodes=2-4", "--nodes 2"; 0 if it gives none.
func sbatchNodes(opts string) int {
	if opts != "" && opts[0] != ' ' && opts[0] != '\t' {
		return 0 // #SBATCHX is no directive
	}
	fields := strings.Fields(opts)
	nodes := 0
	for i, f := range fields {
		var v string
		switch {
		case f == "-N" || f == "--nodes":
			if i+1 < len(fields) {
				v = fields[i+1]
			}
		case strings.HasPrefix(f, "--nodes="):
			v = strings.TrimPrefix(f, "--nodes=")
		case strings.HasPrefix(f, "-N"):
			v = strings.TrimPrefix(f, "-N")
		default:
			continue
		}
		least, _, _ := strings.Cut(v, "-")
		if n, err := strconv.Atoi(least); err == nil && n > 0 {
			nodes = n
		}
	}
	return nodes
}
