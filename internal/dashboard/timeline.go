package dashboard

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// phaseRun is the row of job-state RUNNING: the job holds its compute
// nodes. The other rows are the lifecycle's phases of the job's RAMDISK;
// every row's name is also its bars' data-phase value.
const phaseRun = "job-run"

// row is one line of the chart.
type row struct{ phase, label string }

// rows are the chart's lines, top to bottom: the job's run, then its
// RAMDISK's phases in the order of the ideal path.
func rows() []row {
	return []row{
		{phaseRun, "job running"},
		{string(lifecycle.PhaseBuild), "build"},
		{string(lifecycle.PhaseStageIn), "stage-in"},
		{string(lifecycle.PhaseReady), "ready"},
		{string(lifecycle.PhaseInUseIn), "in use: input"},
		{string(lifecycle.PhaseSwitch), "switch"},
		{string(lifecycle.PhaseInUseOut), "in use: output"},
		{string(lifecycle.PhaseStageOut), "stage-out"},
		{string(lifecycle.PhaseTeardown), "teardown"},
	}
}

// interval is a stretch of time the job spent in one pair of states.
type interval struct {
	From, To           time.Time
	JobState, RSAState string
}

// intervals turns state changes into the stretches between them: each
// event's states hold until the next event. The last stretch of a job not
// done ends now; a done job's last event (RELEASED) is an instant.
func intervals(evs []Event, now time.Time) []interval {
	out := make([]interval, 0, len(evs))
	for i, e := range evs {
		to := now
		switch {
		case i+1 < len(evs):
			to = evs[i+1].At
		case done(e):
			to = e.At
		}
		if to.Before(e.At) { // a clock step back must not draw a negative bar
			to = e.At
		}
		out = append(out, interval{From: e.At, To: to, JobState: e.JobState, RSAState: e.RSAState})
	}
	return out
}

// done is whether nothing more will happen to a job whose last event is e,
// as the lifecycle decides it.
func done(e Event) bool {
	return lifecycle.Job{State: lifecycle.JobState(e.JobState), RSA: lifecycle.RSAState(e.RSAState)}.Done()
}

// bar is a stretch of one phase group, merged from consecutive intervals.
type bar struct {
	Phase    string
	From, To time.Time
	States   []string // the rsa-states (or job-state, for the run) it covers
}

// bars groups intervals into the chart's bars: one per uninterrupted
// stretch of a phase group, and one per stretch of the job running.
func bars(ivs []interval) []bar {
	var phases, runs []bar
	switching := false
	for _, iv := range ivs {
		running := lifecycle.Job{State: lifecycle.JobState(iv.JobState)}.Runs()
		var phase string
		phase, switching = phaseOf(lifecycle.RSAState(iv.RSAState), running, switching)
		phases = extend(phases, phase, iv, iv.RSAState)
		if running {
			runs = extend(runs, phaseRun, iv, iv.JobState)
		} else {
			runs = extend(runs, "", iv, "")
		}
	}
	return append(drop(runs), drop(phases)...)
}

// extend adds iv to the last bar if it is of the same phase, or starts a
// new one. A phase of "" is a gap: it ends the bar before it.
func extend(bs []bar, phase string, iv interval, state string) []bar {
	if n := len(bs); n > 0 && bs[n-1].Phase == phase {
		b := &bs[n-1]
		b.To = iv.To
		if state != "" && b.States[len(b.States)-1] != state {
			b.States = append(b.States, state)
		}
		return bs
	}
	return append(bs, bar{Phase: phase, From: iv.From, To: iv.To, States: []string{state}})
}

// drop removes the gaps.
func drop(bs []bar) []bar {
	out := bs[:0]
	for _, b := range bs {
		if b.Phase != "" {
			out = append(out, b)
		}
	}
	return out
}

// phaseOf is the row of rsa-state s, "" for a state without one. The
// switch from input to output tears the input RAMDISK down and builds the
// output one, so the rebuilding states that follow an unmount while the
// job runs belong to the switch, which the mount for output ends;
// elsewhere they are the job's own build and teardown.
func phaseOf(s lifecycle.RSAState, running, switching bool) (phase string, stillSwitching bool) {
	p := lifecycle.PhaseOf(s)
	switch {
	case p == lifecycle.PhaseSwitch:
		return string(p), running && !lifecycle.BeingMounted(s)
	case switching && running && lifecycle.Rebuilding(s):
		return string(lifecycle.PhaseSwitch), true
	}
	return charted(p), false
}

// charted is p's row: "" for phases the chart has no row for (waiting
// for nodes, without RSA, aborted, ended).
func charted(p lifecycle.Phase) string {
	for _, r := range rows() {
		if r.phase == string(p) {
			return r.phase
		}
	}
	return ""
}

// Chart geometry, in SVG user units (1 unit = 1 CSS px at natural size).
const (
	labelW  = 130.0 // the phase names' column
	plotW   = 740.0 // the time axis' length
	rightW  = 30.0  // room for the last tick's label
	rowH    = 26.0
	barH    = 16.0
	axisH   = 34.0
	minBarW = 1.0 // an instant still shows as a hairline
)

// chart is a laid-out timeline, ready for the template.
type chart struct {
	Width, Height, PlotH float64
	PlotX                float64
	Rows                 []chartRow
	Bars                 []chartBar
	Ticks                []tick
}

type chartRow struct {
	Phase, Label string
	Y, TextY     float64
}

type chartBar struct {
	Phase         string
	X, Y, W, H    float64
	Start, Length float64 // seconds from the first event, and duration
	Title         string
}

type tick struct {
	X     float64
	Label string
}

// layout places bars on a time axis that starts at the first event and
// ends at the last bar's end (at least one second, so an instant job is
// still a chart).
func layout(bs []bar, t0, end time.Time) chart {
	span := math.Max(end.Sub(t0).Seconds(), 1)
	x := func(t time.Time) float64 { return labelW + t.Sub(t0).Seconds()/span*plotW }
	c := chart{Width: labelW + plotW + rightW, PlotX: labelW}
	rowY := map[string]float64{}
	for i, r := range rows() {
		y := float64(i) * rowH
		rowY[r.phase] = y
		c.Rows = append(c.Rows, chartRow{Phase: r.phase, Label: r.label, Y: y, TextY: y + rowH/2 + 4})
	}
	c.PlotH = float64(len(c.Rows)) * rowH
	c.Height = c.PlotH + axisH
	for _, b := range bs {
		start, length := b.From.Sub(t0).Seconds(), b.To.Sub(b.From).Seconds()
		c.Bars = append(c.Bars, chartBar{
			Phase: b.Phase, X: x(b.From), Y: rowY[b.Phase] + (rowH-barH)/2,
			W: math.Max(length/span*plotW, minBarW), H: barH,
			Start: start, Length: length,
			Title: fmt.Sprintf("%s: from %s for %s (%s)", b.Phase, secs(start), secs(length), strings.Join(b.States, ", ")),
		})
	}
	step := tickStep(span)
	decimals := max(0, int(-math.Floor(math.Log10(step)+1e-9))) // as many as the step has
	// Counted, not summed: adding up a step like 0.1 drifts.
	for i := 0; float64(i)*step <= span*(1+1e-9); i++ {
		s := float64(i) * step
		c.Ticks = append(c.Ticks, tick{X: labelW + s/span*plotW, Label: strconv.FormatFloat(s, 'f', decimals, 64) + "s"})
	}
	return c
}

// tickStep is a round step (1, 2 or 5 times a power of ten) that puts at
// most ten ticks on the axis.
func tickStep(span float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(span/10)))
	for _, m := range []float64{1, 2, 5, 10} {
		if span/(m*p) <= 10 {
			return m * p
		}
	}
	return 10 * p
}

// secs prints seconds with as many decimals as short spans need.
func secs(s float64) string {
	switch {
	case s >= 100:
		return fmt.Sprintf("%.0fs", s)
	case s >= 10:
		return fmt.Sprintf("%.1fs", s)
	}
	return fmt.Sprintf("%.2fs", s)
}

// jobView is what a job's page shows.
type jobView struct {
	ID     int64
	Job    *Job // nil when the job is no longer among the listed ones
	Last   Event
	Done   bool
	Chart  chart
	Events []eventRow
}

type eventRow struct {
	Event
	Offset string // since the first event
}

func (h *handler) jobData(ctx context.Context, id int64) (jobView, error) {
	evs, err := h.src.Events(ctx, id)
	if err != nil {
		return jobView{}, fmt.Errorf("reading job %d's events: %w", id, err)
	}
	if len(evs) == 0 {
		return jobView{}, fmt.Errorf("job %d has no events: %w", id, ErrNotFound)
	}
	jobs, err := h.src.Jobs(ctx, recentJobs)
	if err != nil {
		return jobView{}, fmt.Errorf("reading jobs: %w", err)
	}
	v := jobView{ID: id, Last: evs[len(evs)-1], Done: done(evs[len(evs)-1])}
	for i := range jobs {
		if jobs[i].ID == id {
			v.Job = &jobs[i]
		}
	}
	ivs := intervals(evs, h.now())
	t0, end := evs[0].At, ivs[len(ivs)-1].To
	v.Chart = layout(bars(ivs), t0, end)
	for _, e := range evs {
		v.Events = append(v.Events, eventRow{Event: e, Offset: secs(e.At.Sub(t0).Seconds())})
	}
	return v, nil
}
