package thesis

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"github.com/rsa-hpc/rsa/internal/bench"
)

// TLC is the lifecycle's timings (thesis §5.1, App. T): how long RSA
// takes to construct a RAMDISK, stage in, switch it from input to output,
// stage out and destroy it. It reads them from the daemon's log of T52's
// RSA jobs (T52Jobs, gathered through T52.AfterJob), which have output
// only, and of a small job of its own with input and a switch delay,
// through the real lifecycle: rsa serve, the user, rsa run.
type TLC struct {
	RSA      string // the rsa binary, which the job's user can run
	Lab      string // the rsa-lab binary, which the job's user can run: the job's writes (bench write)
	User     string // the job's user (created, and removed after, if missing)
	Shared   string // a directory on shared@1g: the job's input and output
	Work     string // the daemon's state, socket and RAMDISK root (removed after)
	Files    int    // input files
	FileSize int64
	Delay    time.Duration // the input-to-output switch, after the job's start
	Runs     int

	T52Jobs []JobLog // T52's RSA jobs, each Label'd with its run
}

// Run runs the job with input Runs times and returns the rows of its
// log and of T52Jobs.
func (t TLC) Run(ctx context.Context) ([]bench.Row, error) {
	own, err := runsWithDaemon(ctx, t.RSA, t.Work, t.User, t.Runs, "TLC", t.once)
	if err != nil {
		return nil, err
	}
	return t.rows(own), nil
}

func (t TLC) once(ctx context.Context, d *daemon, cred *syscall.Credential, run int) (JobLog, error) {
	base := filepath.Join(t.Shared, fmt.Sprintf("tlc-%d-%d", os.Getpid(), run))
	defer os.RemoveAll(base)
	in, out := filepath.Join(base, "in"), filepath.Join(base, "out")
	for _, dir := range []string{base, in, out} {
		if err := mkdirOwned(dir, cred); err != nil {
			return JobLog{}, err
		}
	}
	// The input, as the user made it.
	if _, err := runAs(ctx, cred, t.Lab, "bench", "write", "--dir", in, "--ranks", strconv.Itoa(t.Files),
		"--size", strconv.FormatInt(t.FileSize, 10)); err != nil {
		return JobLog{}, fmt.Errorf("input: %w", err)
	}
	// The job writes once the RAM is at its output path, after the switch.
	capacity := strconv.FormatInt(2*int64(t.Files)*t.FileSize+(64<<20), 10)
	var stderr bytes.Buffer
	_, err := runAsStderr(ctx, cred, &stderr, t.RSA, "--socket", d.socket, "run", "--in", in, "--out", out,
		"--delay", t.Delay.String(), "--capacity", capacity, "--",
		t.Lab, "bench", "write", "--dir", out, "--ranks", "1", "--size", strconv.FormatInt(t.FileSize, 10), "--wait-mount")
	if err != nil {
		return JobLog{}, fmt.Errorf("rsa run: %w: %s", err, stderr.String())
	}
	m := regexp.MustCompile(`job (\d+) submitted`).FindStringSubmatch(stderr.String())
	if m == nil {
		return JobLog{}, fmt.Errorf("rsa run did not name its job: %s", stderr.String())
	}
	if _, err := runAs(ctx, cred, t.RSA, "--socket", d.socket, "wait", m[1]); err != nil {
		return JobLog{}, fmt.Errorf("job %s: stage-out: %w", m[1], err)
	}
	if _, err := (Output{Ranks: 1, Size: t.FileSize}).Check(out); err != nil {
		return JobLog{}, fmt.Errorf("job %s's output on the shared file system: %w", m[1], err)
	}
	l, err := ReadJobLog(ctx, t.RSA, d.socket, m[1])
	l.Label = "input job"
	return l, err
}

// appT is Appendix T's timing of phase for the 1-RSA-node jobs
// 1716–1718 (all three alike; epoch-second stamps, so ±1 s), and what to
// say beside it.
func appT(phase string) (v float64, ref, note string, ok bool) {
	switch phase {
	case PhaseConstruct:
		return 12, "THESIS App. T construct, 1 RSA node (jobs 1716-1718)",
			"of the thesis' 12 s, 10 are the prototype's fixed sleep 10 after starting PVFS (App. D): its work was ~2 s", true
	case PhaseGapOut:
		return 14, "THESIS App. T finished staging out -> destroying (jobs 1716-1718)", "the prototype polled (~15 s); RSA acts on the event", true
	case PhaseDestroy:
		return 2, "THESIS App. T destroy, 1 RSA node (jobs 1716-1718)", "", true
	}
	return 0, "", "", false
}

// rows sets the phases of own (the input job) and of T52Jobs beside
// App. T: medians over the jobs of each kind.
func (t TLC) rows(own []JobLog) []bench.Row {
	var rows []bench.Row
	group := func(logs []JobLog, params map[string]string, stageOutSrc bool) {
		for _, phase := range []string{PhaseConstruct, PhaseStageIn, PhaseSwitch, PhaseFinishOut, PhaseStageOut, PhaseGapOut, PhaseDestroy} {
			var runs []float64
			for _, l := range logs {
				if v, ok := l.Phases()[phase]; ok {
					runs = append(runs, v)
				}
			}
			if len(runs) == 0 {
				continue
			}
			r := bench.Row{Bench: "thesis", Case: "TLC", Target: "ram", Params: params, Metric: phase, Unit: "s",
				Value: bench.Median(runs), Runs: runs, Note: phaseNote(phase)}
			if v, ref, note, ok := appT(phase); ok {
				r.Source(ref, v, "s")
				r.Note = joinNote(r.Note, note)
			}
			if phase == PhaseStageOut && stageOutSrc {
				r.Source("THESIS App. T stage-out of a tiny output (jobs 1716-1718)", 1, "s")
			}
			rows = append(rows, r)
		}
	}
	group(own, map[string]string{"job": "input job", "files": strconv.Itoa(t.Files), "size": strconv.FormatInt(t.FileSize, 10),
		"delay": t.Delay.String(), "output": strconv.FormatInt(t.FileSize, 10)}, true)
	// T52's jobs, one group a label (a T52 run each shared latency).
	var labels []string
	byLabel := map[string][]JobLog{}
	for _, l := range t.T52Jobs {
		if _, ok := byLabel[l.Label]; !ok {
			labels = append(labels, l.Label)
		}
		byLabel[l.Label] = append(byLabel[l.Label], l)
	}
	for _, label := range labels {
		group(byLabel[label], map[string]string{"job": "T52", "run": label}, false)
	}
	return rows
}

// phaseNote says what a phase spans, in the daemon's states.
func phaseNote(phase string) string {
	switch phase {
	case PhaseConstruct:
		return "ASSIGNED -> BOOTED, from rsa log"
	case PhaseStageIn:
		return "STAGING_IN -> READY, from rsa log"
	case PhaseSwitch:
		return "the delay's end (UNMOUNT_NEEDED) -> INUSE_OUT, the RAMDISK rebuilt for output; for a job without input, MOUNTING -> INUSE_OUT"
	case PhaseFinishOut:
		return "the job's end -> STAGING_OUT"
	case PhaseStageOut:
		return "STAGING_OUT -> DONE_STAGING_OUT (copied and verified)"
	case PhaseGapOut:
		return "DONE_STAGING_OUT -> TEARDOWN"
	case PhaseDestroy:
		return "TEARDOWN -> DESTROYED"
	}
	return ""
}
