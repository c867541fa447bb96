package metabench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Check is a phase's counterpart in another tool, run in the same run on
// the same directories with the same file count, participants and layout.
type Check struct {
	Phase Phase
	// Tool names the tool and how it was run: "fio filecreate",
	// "touch -c", "tar -xf". Empty when the phase has no counterpart or
	// the tool failed; Note then says which.
	Tool    string
	Ops     int
	Elapsed time.Duration // METABENCH's measure: from the start of all to the last one's end
	Note    string        // how the tool's method differs, mdtest's rate
}

// Rate is the check's aggregate rate, as Result.Rate.
func (c Check) Rate() float64 { return rate(c.Ops, c.Elapsed) }

// checkDir holds the cross-checks' directories in the run's.
const checkDir = "check"

// touchBatch is how many names one touch process is given: far below
// the kernel's limit on arguments, yet few processes for a share.
const touchBatch = 1000

// fioShortRun is the job time under which fio's whole milliseconds
// weigh on the rate enough to say so.
const fioShortRun = 50 * time.Millisecond

// crossCheck runs the counterpart of phase p, whose METABENCH result is
// res, in the run's check directory. A tool that fails leaves a Check
// without a Tool, its Note saying why; only a failure to set up, or the
// context's end, is an error.
func (r *runner) crossCheck(ctx context.Context, p Phase, res Result) (Check, error) {
	rel := filepath.Join(checkDir, phaseDir(p))
	if err := os.MkdirAll(r.setupPath(rel), 0o755); err != nil {
		return Check{}, fmt.Errorf("set up: %w", err)
	}
	var (
		chk Check
		err error
	)
	switch p {
	case UtimeA, UtimeB:
		chk, err = r.touchCheck(ctx, rel, layout{separate: p == UtimeA, populate: true})
	case Untar:
		chk, err = r.tarCheck(ctx, rel, res)
	default:
		spec, l, ok := r.fioPlan(p)
		if !ok {
			chk.Note = "no counterpart in another tool"
			break
		}
		if err = r.setUp(ctx, rel, l, spec.jobs); err == nil {
			chk, err = r.fioCheck(ctx, spec)
		}
		if p == CreateA {
			chk.Note = joinNotes(chk.Note, "fio times no batches: the aggregate only")
		}
	}
	chk.Phase = p
	if err != nil {
		return chk, err
	}
	switch p {
	case StatB, AppendB:
		chk.Note = joinNotes(chk.Note, "by name, where METABENCH's processes walk the directory by readdir")
	case UtimeB:
		chk.Note = joinNotes(chk.Note, "names listed before the start, where METABENCH's processes walk the directory by readdir")
	}
	return chk, nil
}

// layout is how a phase's files lie: a directory per participant
// (separate) or one for all, and made by process 0 beforehand (populate)
// or by the timed work.
type layout struct{ separate, populate bool }

// fioPlan is the fio run that stands beside phase p, its jobs' files
// laid out as l; false for a phase fio has no engine for.
func (r *runner) fioPlan(p Phase) (fioSpec, layout, bool) {
	rel := filepath.Join(checkDir, phaseDir(p))
	var (
		spec fioSpec
		l    = layout{separate: p == CreateB || p == StatA || p == AppendA || p == DeleteA}
	)
	switch p {
	case CreateA:
		// One job, the last process, all the files in one directory.
		job := fioJob{name: participantDir(0), dir: r.path(r.c.NProc-1, rel), nrfiles: r.c.NFile}
		return fioSpec{engine: "filecreate", jobs: []fioJob{job}}, layout{}, true
	case CreateB, CreateC:
		spec.engine = "filecreate"
	case StatA, StatB:
		spec.engine, l.populate = "filestat", true
	case AppendA, AppendB:
		spec.engine, spec.nbyte, l.populate = "sync", r.c.NByte, true
	case DeleteA, DeleteB:
		spec.engine, l.populate = "filedelete", true
	default:
		return fioSpec{}, layout{}, false
	}
	spec.jobs = r.checkJobs(rel, l)
	return spec, l, true
}

// checkJobs are the participants' parts of a check laid out as l, as
// METABENCH lays out the phase: a directory each (p0, p1, ...) or the
// one, each participant reaching it through its own mount, and its
// files named as fio names a job's (p0.0, p0.1, ...).
func (r *runner) checkJobs(rel string, l layout) []fioJob {
	jobs := make([]fioJob, r.n)
	for k := range jobs {
		name := participantDir(k)
		sub := rel
		if l.separate {
			sub = filepath.Join(rel, name)
		}
		_, count := share(r.c.NFile, r.n, k)
		jobs[k] = fioJob{name: name, dir: r.path(r.c.rank(k), sub), nrfiles: count}
	}
	return jobs
}

// setUp does process 0's part of a check laid out as l: it makes the
// participants' directories and, with populate, their files, empty.
func (r *runner) setUp(ctx context.Context, rel string, l layout, jobs []fioJob) error {
	for _, j := range jobs {
		sub := rel
		if l.separate {
			sub = filepath.Join(rel, j.name)
			if err := os.Mkdir(r.setupPath(sub), 0o755); err != nil {
				return fmt.Errorf("set up: %w", err)
			}
		}
		if l.populate {
			if err := populateNamed(ctx, r.setupPath(sub), j.name, j.nrfiles); err != nil {
				return fmt.Errorf("set up: %w", err)
			}
		}
	}
	return nil
}

// fioCheck runs spec and sums its jobs as METABENCH does (fioAggregate).
func (r *runner) fioCheck(ctx context.Context, spec fioSpec) (Check, error) {
	tool := "fio " + spec.engine
	if spec.engine == "sync" {
		tool = "fio append"
	}
	jobs, err := runFio(ctx, spec)
	if err != nil {
		if ctx.Err() != nil {
			return Check{}, ctx.Err()
		}
		return Check{Note: "cross-check failed: " + firstLine(err)}, nil
	}
	ops, elapsed, inCalls := fioAggregate(jobs)
	chk := Check{Tool: tool, Ops: ops, Elapsed: elapsed,
		Note: fmt.Sprintf("%s: the files of its %d job(s) over the longest one's runtime", tool, len(jobs))}
	switch {
	case inCalls:
		chk.Note = joinNotes(chk.Note, "every job under fio's 1 ms: the time in the calls instead, without fio's own work, so a higher rate")
	case elapsed < fioShortRun:
		// fio reports whole milliseconds: up to one off.
		ms := elapsed.Milliseconds()
		chk.Note = joinNotes(chk.Note, fmt.Sprintf("the longest job took %d ms, which fio counts in whole ms (±%.0f%%)", ms, 100/float64(ms)))
	}
	if _, runtime, calls := fioTimes(jobs); runtime > 0 && calls > 0 {
		// Where fio's own work between files outweighs the calls (a RAM
		// file system), the two rates part: the second says by how much.
		chk.Note = joinNotes(chk.Note, fmt.Sprintf("in the calls alone %.0f ops/s", rate(ops, calls)))
	}
	if elapsed == 0 {
		chk.Tool = ""
		chk.Note = joinNotes(chk.Note, "no rate: fio measured no time")
	}
	return chk, nil
}

// touchCheck is Utime's counterpart. No packaged tool times utime (fio
// has no such engine), so each participant runs GNU touch -c on its
// share: utimensat(path, NULL) a file, both times to now, which is
// utime(path, NULL), but from another program, by path, in batches.
func (r *runner) touchCheck(ctx context.Context, rel string, l layout) (Check, error) {
	jobs := r.checkJobs(rel, l)
	if err := r.setUp(ctx, rel, l, jobs); err != nil {
		return Check{}, err
	}
	tasks := make([]task, len(jobs))
	for k, j := range jobs {
		names := make([]string, j.nrfiles)
		for i := range names {
			names[i] = j.name + "." + strconv.Itoa(i)
		}
		tasks[k] = task{
			rank: r.c.rank(k),
			work: func(ctx context.Context) (int, error) {
				done := 0
				for len(names) > 0 {
					batch := names[:min(touchBatch, len(names))]
					names = names[len(batch):]
					if err := runIn(ctx, j.dir, "touch", append([]string{"-c", "--"}, batch...)...); err != nil {
						return done, err
					}
					done += len(batch)
				}
				return done, nil
			},
		}
	}
	return r.execCheck(ctx, "touch -c", tasks,
		fmt.Sprintf("no packaged tool times utime: GNU touch -c (utimensat, both times to now), a process a participant, %d names a call; process starts are in the time", touchBatch))
}

// tarCheck is Untar's counterpart: tar -xf, one a participant at once,
// each from its client's local tarball into a directory process 0 made.
func (r *runner) tarCheck(ctx context.Context, rel string, res Result) (Check, error) {
	if len(res.Ranks) == 0 {
		return Check{Note: "no Untar result to count the archive's files by"}, nil
	}
	tasks := make([]task, r.n)
	for k := range tasks {
		sub := filepath.Join(rel, participantDir(k))
		if err := os.Mkdir(r.setupPath(sub), 0o755); err != nil {
			return Check{}, fmt.Errorf("set up: %w", err)
		}
		rank := r.c.rank(k)
		dest, tarball := r.path(rank, sub), r.tarballs[rank%len(r.tarballs)]
		files := res.Ops / len(res.Ranks) // every participant unpacks the whole archive
		tasks[k] = task{
			rank: rank,
			work: func(ctx context.Context) (int, error) {
				// --no-same-owner: root's tar would chown every file,
				// which Extract does not do.
				if err := runIn(ctx, dest, "tar", "--no-same-owner", "-xf", tarball); err != nil {
					return 0, err
				}
				return files, nil
			},
		}
	}
	return r.execCheck(ctx, "tar -xf", tasks, "tar -xf --no-same-owner, a process a participant; its start is in the time")
}

// execCheck times tasks that run other programs as METABENCH times its
// processes (runTimed). A program that fails leaves no rate.
func (r *runner) execCheck(ctx context.Context, tool string, tasks []task, note string) (Check, error) {
	res, err := runTimed(ctx, tasks)
	if err != nil {
		if ctx.Err() != nil {
			return Check{}, ctx.Err()
		}
		return Check{Note: "cross-check failed: " + firstLine(err)}, nil
	}
	return Check{Tool: tool, Ops: res.Ops, Elapsed: res.Elapsed, Note: note}, nil
}

// runIn runs a program in dir, its error holding what it printed.
func runIn(ctx context.Context, dir, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s in %s: %w: %s", name, dir, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// populateNamed creates files prefix.0 to prefix.(count-1), empty, in
// path, as process 0.
func populateNamed(ctx context.Context, path, prefix string, count int) error {
	d, err := openDir(path)
	if err != nil {
		return err
	}
	defer d.close()
	for i := range count {
		if i%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := create(d, prefix+"."+strconv.Itoa(i)); err != nil {
			return err
		}
	}
	return nil
}

func joinNotes(notes ...string) string {
	var keep []string
	for _, n := range notes {
		if n != "" {
			keep = append(keep, n)
		}
	}
	return strings.Join(keep, "; ")
}

// firstLine is err's message up to its first line break: a tool's whole
// output does not belong in a row's note.
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
