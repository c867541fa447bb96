// Package tools runs IOR, mdtest and fio on a benchmark target, as job
// files describe them, and sets each result beside the number a seed gives
// for the same measurement where the two are defined alike. It stands in
// for the seeds' own codes (GUPFS MPTIO and METABENCH, the TMS device
// sweep): the tools the field trusts measure, the job files say what each
// job stands for (cmd/rsa-lab/jobs/README.md has their grammar).
package tools

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
)

// Tool is a program that runs jobs: its name is its job file's
// (TOOL.jobs) and its rows' Bench.
type Tool string

// The tools, in the order a run takes them.
const (
	IOR    Tool = "ior"
	Mdtest Tool = "mdtest"
	Fio    Tool = "fio"
)

// Tools are every tool, in the order a run takes them.
var Tools = []Tool{IOR, Mdtest, Fio}

// Profiles are the profiles a job can name.
var Profiles = []string{"quick", "full"}

// Job is one run of a tool (for fio, one a point of its grid).
type Job struct {
	Tool     Tool
	Name     string
	Profiles []string // the profiles it runs in
	Ranks    int      // MPI ranks (IOR, mdtest)
	Args     []string // the tool's arguments, placeholders unexpanded
	// FioFile is fio's job file (a name in the jobs' directory) and
	// Grid the values its variables take: fio runs once a combination.
	FioFile string
	Grid    []Var
	Seeds   []Seed
	Differs string // how the job's definition differs from the seed test's
	Line    int    // where its run statement is, for errors
}

// Var is a variable of a fio job file and the values it takes in turn.
type Var struct {
	Name   string
	Values []string
}

// Seed is a seed's number for one metric of a job.
type Seed struct {
	Profile string            // "" for every profile
	Metric  string            // the row's metric: "write_rate"
	Where   map[string]string // the row's params (and "target") it needs
	Case    string            // the seed's name of the test: "Seq_Write"
	Value   float64
	Unit    string
	Ref     string // where the seed gives it: "GUPFS A.1 sample"
}

// Unmatched is a seed test no job stands in for, and why.
type Unmatched struct {
	Tool      Tool
	Case, Why string
}

// Set is what the job files hold.
type Set struct {
	Jobs      []Job
	Unmatched []Unmatched
	fsys      fs.FS // where fio's job files are
}

// Load reads TOOL.jobs of every tool from fsys, and checks that every
// fio job file they name is there.
func Load(fsys fs.FS) (*Set, error) {
	s := &Set{fsys: fsys}
	var errs []error
	for _, t := range Tools {
		name := string(t) + ".jobs"
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("tools: %w", err))
			continue
		}
		jobs, un, err := parse(t, name, string(b))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, j := range jobs {
			if j.FioFile == "" {
				continue
			}
			if _, err := fs.Stat(fsys, j.FioFile); err != nil {
				errs = append(errs, fmt.Errorf("tools: %s:%d: %w", name, j.Line, err))
			}
		}
		s.Jobs = append(s.Jobs, jobs...)
		s.Unmatched = append(s.Unmatched, un...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

// Select returns the jobs of the tools that run in profile, in the
// files' order.
func (s *Set) Select(profile string, tools []Tool) ([]Job, error) {
	if !slices.Contains(Profiles, profile) {
		return nil, fmt.Errorf("tools: profile %q: use %s", profile, strings.Join(Profiles, " or "))
	}
	var out []Job
	for _, j := range s.Jobs {
		if slices.Contains(tools, j.Tool) && slices.Contains(j.Profiles, profile) {
			out = append(out, j)
		}
	}
	return out, nil
}

// parse reads one job file. Statements naming a job (seed, differs) may
// come before or after its run lines, and apply to every profile's run of
// that name.
func parse(tool Tool, file, text string) ([]Job, []Unmatched, error) {
	var (
		jobs    []Job
		un      []Unmatched
		seeds   = map[string][]Seed{}
		differs = map[string]string{}
		errs    []error
		named   = map[string]bool{}
	)
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		bad := func(format string, a ...any) {
			errs = append(errs, fmt.Errorf("tools: %s:%d: %s", file, n, fmt.Sprintf(format, a...)))
		}
		switch f[0] {
		case "run":
			j, err := parseRun(tool, f[1:])
			if err != nil {
				bad("%v", err)
				continue
			}
			j.Line = n
			for _, p := range j.Profiles {
				key := j.Name + "/" + p
				if named[key] {
					bad("job %s runs twice in profile %s", j.Name, p)
				}
				named[key] = true
			}
			jobs = append(jobs, j)
		case "seed":
			if len(f) < 7 {
				bad("seed JOB[/PROFILE] METRIC[@VAR=V,...] CASE VALUE UNIT REF...: too few fields")
				continue
			}
			sd, job, err := parseSeed(f[1:])
			if err != nil {
				bad("%v", err)
				continue
			}
			seeds[job] = append(seeds[job], sd)
		case "differs":
			if len(f) < 3 {
				bad("differs JOB TEXT...: no text")
				continue
			}
			differs[f[1]] = strings.Join(f[2:], " ")
		case "none":
			c, why, ok := strings.Cut(strings.Join(f[1:], " "), ": ")
			if !ok || c == "" || why == "" {
				bad("none CASE: TEXT...: want a case, a colon and why")
				continue
			}
			un = append(un, Unmatched{Tool: tool, Case: c, Why: why})
		default:
			bad("unknown statement %q: use run, seed, differs or none", f[0])
		}
	}
	for name := range seeds {
		if !slices.ContainsFunc(jobs, func(j Job) bool { return j.Name == name }) {
			errs = append(errs, fmt.Errorf("tools: %s: seed of job %s, which has no run line", file, name))
		}
	}
	for name := range differs {
		if !slices.ContainsFunc(jobs, func(j Job) bool { return j.Name == name }) {
			errs = append(errs, fmt.Errorf("tools: %s: differs of job %s, which has no run line", file, name))
		}
	}
	for i := range jobs {
		jobs[i].Seeds = seeds[jobs[i].Name]
		jobs[i].Differs = differs[jobs[i].Name]
	}
	return jobs, un, errors.Join(errs...)
}

func parseRun(tool Tool, f []string) (Job, error) {
	if len(f) < 4 {
		return Job{}, errors.New("run NAME PROFILES RANKS ARG...: too few fields")
	}
	j := Job{Tool: tool, Name: f[0], Profiles: strings.Split(f[1], ",")}
	if strings.Contains(j.Name, "/") {
		return Job{}, fmt.Errorf("job name %q: no '/' (it separates a seed's profile)", j.Name)
	}
	for _, p := range j.Profiles {
		if !slices.Contains(Profiles, p) {
			return Job{}, fmt.Errorf("job %s: profile %q: use %s", j.Name, p, strings.Join(Profiles, ", "))
		}
	}
	ranks, err := strconv.Atoi(f[2])
	if err != nil || ranks < 1 {
		return Job{}, fmt.Errorf("job %s: ranks %q: want a count of 1 or more", j.Name, f[2])
	}
	j.Ranks = ranks
	j.Args = f[3:]
	if tool != Fio {
		return j, nil
	}
	if ranks != 1 {
		return Job{}, fmt.Errorf("job %s: fio starts its own jobs: ranks must be 1", j.Name)
	}
	j.FioFile = j.Args[0]
	for _, a := range j.Args[1:] {
		name, vals, ok := strings.Cut(a, "=")
		if !ok || name == "" || vals == "" {
			return Job{}, fmt.Errorf("job %s: %q: want VAR=V1,V2,...", j.Name, a)
		}
		if name == "DIR" || name == "DIRECT" {
			return Job{}, fmt.Errorf("job %s: %s is set by the run, not the job", j.Name, name)
		}
		j.Grid = append(j.Grid, Var{Name: name, Values: strings.Split(vals, ",")})
	}
	j.Args = nil
	return j, nil
}

// parseSeed parses JOB[/PROFILE] METRIC[@K=V,...] CASE VALUE UNIT REF...
// and returns the seed and its job's name.
func parseSeed(f []string) (Seed, string, error) {
	job, profile, _ := strings.Cut(f[0], "/")
	if profile != "" && !slices.Contains(Profiles, profile) {
		return Seed{}, "", fmt.Errorf("seed of %s: profile %q: use %s", job, profile, strings.Join(Profiles, ", "))
	}
	metric, where, _ := strings.Cut(f[1], "@")
	s := Seed{Profile: profile, Metric: metric, Case: f[2], Unit: f[4], Ref: strings.Join(f[5:], " ")}
	if where != "" {
		s.Where = map[string]string{}
		for _, kv := range strings.Split(where, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return Seed{}, "", fmt.Errorf("seed of %s: %q: want VAR=V", job, kv)
			}
			s.Where[k] = v
		}
	}
	v, err := strconv.ParseFloat(f[3], 64)
	if err != nil {
		return Seed{}, "", fmt.Errorf("seed of %s: value %q: %w", job, f[3], err)
	}
	s.Value = v
	return s, job, nil
}
