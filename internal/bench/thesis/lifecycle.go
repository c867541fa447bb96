package thesis

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"time"
)

// JobLog is one RSA job's transitions, as rsa log --json gives them.
type JobLog struct {
	Job    string
	Label  string // which run it came from, for the rows ("shared_latency=0s")
	Events []LogEvent
	// Lines is the job's own log (its tail, as rsa log gives it): what
	// RSA noted for the job's user, staging output, the RAMDISK's
	// profile.
	Lines string
}

// LogEvent is one transition of a job's rsa-state or job-state.
type LogEvent struct {
	At       time.Time
	Kind     string
	From, To string // rsa-state, "" when only the job-state changed
	JobFrom  string // job-state, "" when only the rsa-state changed
	JobTo    string
}

var (
	rsaChange = regexp.MustCompile(`rsa-state (\S+) -> (\S+)`)
	jobChange = regexp.MustCompile(`job-state (\S+) -> (\S+?)[,:]?(?:\s|$)`)
)

// ParseJobLog parses the output of rsa log --json JOB. The daemon writes
// a transition's message as "job-state A -> B, rsa-state C -> D", either
// part alone, and ": why" after it; other events (the submission) carry
// no transition and are skipped.
func ParseJobLog(out []byte) (JobLog, error) {
	var raw struct {
		Events []struct {
			JobID   int64     `json:"job_id"`
			At      time.Time `json:"at"`
			Kind    string    `json:"kind"`
			Message string    `json:"message"`
		} `json:"events"`
		Lines string `json:"stage_log"`
	}
	var l JobLog
	if err := json.Unmarshal(out, &raw); err != nil {
		return l, fmt.Errorf("rsa log --json: %w", err)
	}
	l.Lines = raw.Lines
	for _, e := range raw.Events {
		l.Job = fmt.Sprint(e.JobID)
		ev := LogEvent{At: e.At, Kind: e.Kind}
		if m := rsaChange.FindStringSubmatch(e.Message); m != nil {
			ev.From, ev.To = m[1], strings.TrimRight(m[2], ",:")
		}
		if m := jobChange.FindStringSubmatch(e.Message); m != nil {
			ev.JobFrom, ev.JobTo = m[1], m[2]
		}
		if ev.To != "" || ev.JobTo != "" {
			l.Events = append(l.Events, ev)
		}
	}
	if len(l.Events) == 0 {
		return l, fmt.Errorf("rsa log --json: no transitions in %d events", len(raw.Events))
	}
	return l, nil
}

// ReadJobLog asks the daemon at socket for job's log.
func ReadJobLog(ctx context.Context, rsa, socket, job string) (JobLog, error) {
	cmd := exec.CommandContext(ctx, rsa, "--socket", socket, "log", "--json", job)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return JobLog{}, fmt.Errorf("rsa log %s: %w: %s", job, err, bytes.TrimSpace(stderr.Bytes()))
	}
	l, err := ParseJobLog(stdout.Bytes())
	if err != nil {
		return l, fmt.Errorf("job %s: %w", job, err)
	}
	return l, nil
}

// Phase names, in the order of a job's life: App. T's events, and what
// lies between them.
const (
	PhaseConstruct = "construct"      // ASSIGNED → the first BOOTED (App. T: assign → "done constructing")
	PhaseStageIn   = "stage_in"       // STAGING_IN → out of it
	PhaseSwitch    = "switch"         // UNMOUNT_NEEDED (the delay's end) → INUSE_OUT; without input, MOUNTING → INUSE_OUT
	PhaseFinishOut = "finish_to_out"  // the job's end → STAGING_OUT
	PhaseStageOut  = "stage_out"      // STAGING_OUT → DONE_STAGING_OUT
	PhaseGapOut    = "out_to_destroy" // DONE_STAGING_OUT → the last TEARDOWN (App. T: "finished staging out" → "destroying")
	PhaseDestroy   = "destroy"        // the last TEARDOWN → DESTROYED
)

// Phases are the phases of the job's life in seconds, those it went
// through: a job without input has no stage-in.
func (l JobLog) Phases() map[string]float64 {
	first := func(state string) (time.Time, bool) {
		for _, e := range l.Events {
			if e.To == state {
				return e.At, true
			}
		}
		return time.Time{}, false
	}
	lastIndex := func(state string) int {
		for i := len(l.Events) - 1; i >= 0; i-- {
			if l.Events[i].To == state {
				return i
			}
		}
		return -1
	}
	p := map[string]float64{}
	span := func(name string, from time.Time, okFrom bool, to time.Time, okTo bool) {
		if okFrom && okTo && !to.Before(from) {
			p[name] = to.Sub(from).Seconds()
		}
	}
	assigned, okA := first("ASSIGNED")
	booted, okB := first("BOOTED")
	span(PhaseConstruct, assigned, okA, booted, okB)
	if in, ok := first("STAGING_IN"); ok {
		for _, e := range l.Events {
			if e.From == "STAGING_IN" && !e.At.Before(in) {
				span(PhaseStageIn, in, true, e.At, true)
				break
			}
		}
	}
	inUse, okU := first("INUSE_OUT")
	if sw, ok := first("UNMOUNT_NEEDED"); ok {
		span(PhaseSwitch, sw, true, inUse, okU)
	} else {
		mnt, ok := first("MOUNTING")
		span(PhaseSwitch, mnt, ok, inUse, okU)
	}
	out, okO := first("STAGING_OUT")
	for _, e := range l.Events {
		if e.JobTo == "FINISHED" {
			span(PhaseFinishOut, e.At, true, out, okO)
			break
		}
	}
	done, okD := first("DONE_STAGING_OUT")
	span(PhaseStageOut, out, okO, done, okD)
	if i := lastIndex("TEARDOWN"); i >= 0 {
		td := l.Events[i].At
		span(PhaseGapOut, done, okD, td, true)
		if j := slices.IndexFunc(l.Events[i:], func(e LogEvent) bool { return e.To == "DESTROYED" }); j >= 0 {
			span(PhaseDestroy, td, true, l.Events[i+j].At, true)
		}
	}
	return p
}
