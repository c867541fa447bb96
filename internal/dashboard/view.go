package dashboard

import (
	"context"
	"fmt"
	"html/template"
	"slices"
	"strings"
	"time"

	"github.com/rsa-hpc/rsa/internal/units"
)

// barWidth is the width, in SVG units, of a node's RAM bar.
const barWidth = 320

// indexView is what the front page shows.
type indexView struct {
	Now            time.Time
	Active, Recent []jobRow
	Nodes          []nodeRow
}

// jobRow is a job with what its table row says, worked out in Go so the
// template only places it.
type jobRow struct {
	Job
	Percent  float64 // of the current stage, when its total is known
	Known    bool    // Percent means something
	Progress string  // files, bytes, rate and ETA of the current stage
	RAM      string  // used of capacity
	RAMPct   float64
	When     string // the latest of created, started, finished
	Times    string // all three, for the tooltip
}

// nodeRow is a node with its bar's lengths.
type nodeRow struct {
	Node
	AllocW, UsedW float64
	Label         string
}

func (h *handler) indexData(ctx context.Context) (indexView, error) {
	jobs, err := h.src.Jobs(ctx, recentJobs)
	if err != nil {
		return indexView{}, fmt.Errorf("reading jobs: %w", err)
	}
	nodes, err := h.src.Nodes(ctx)
	if err != nil {
		return indexView{}, fmt.Errorf("reading nodes: %w", err)
	}
	v := indexView{Now: h.now()}
	for _, j := range jobs {
		if j.Done {
			v.Recent = append(v.Recent, newJobRow(j, v.Now))
		} else {
			v.Active = append(v.Active, newJobRow(j, v.Now))
		}
	}
	// Oldest active job first, as a queue reads; newest ended job first.
	slices.SortFunc(v.Active, func(a, b jobRow) int { return cmpInt(a.ID, b.ID) })
	slices.SortFunc(v.Recent, func(a, b jobRow) int { return cmpInt(b.ID, a.ID) })
	for _, n := range nodes {
		v.Nodes = append(v.Nodes, newNodeRow(n))
	}
	return v, nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func newJobRow(j Job, now time.Time) jobRow {
	r := jobRow{Job: j, Progress: progress(j), When: when(j, now), Times: times(j)}
	r.Percent, r.Known = percent(j)
	if j.Capacity > 0 {
		r.RAM = units.FormatSize(j.Used) + " of " + units.FormatSize(j.Capacity)
		r.RAMPct = clampPct(float64(j.Used) / float64(j.Capacity) * 100)
	}
	return r
}

// percent is how far the current stage is: by bytes when their total is
// known, else by files.
func percent(j Job) (float64, bool) {
	switch {
	case j.Phase == "":
		return 0, false
	case j.TotalBytes > 0:
		return clampPct(float64(j.Bytes) / float64(j.TotalBytes) * 100), true
	case j.TotalFiles > 0:
		return clampPct(float64(j.Files) / float64(j.TotalFiles) * 100), true
	}
	return 0, false
}

func clampPct(p float64) float64 { return min(max(p, 0), 100) }

// progress says what the current stage has done, as rsa status does.
func progress(j Job) string {
	if j.Phase == "" {
		return ""
	}
	parts := []string{fmt.Sprintf("%d", j.Files)}
	if j.TotalFiles > 0 {
		parts[0] += fmt.Sprintf("/%d", j.TotalFiles)
	}
	parts[0] += " files"
	b := units.FormatSize(j.Bytes)
	if j.TotalBytes > 0 {
		b += "/" + units.FormatSize(j.TotalBytes)
	}
	parts = append(parts, b)
	if j.Rate > 0 {
		parts = append(parts, units.FormatSize(int64(j.Rate))+"/s")
	}
	if j.ETA > 0 {
		parts = append(parts, "ETA "+j.ETA.Round(time.Second).String())
	}
	return strings.Join(parts, ", ")
}

func when(j Job, now time.Time) string {
	switch {
	case !j.Finished.IsZero():
		return "ended " + clock(j.Finished, now)
	case !j.Started.IsZero():
		return "started " + clock(j.Started, now)
	case !j.Created.IsZero():
		return "submitted " + clock(j.Created, now)
	}
	return ""
}

func times(j Job) string {
	var parts []string
	for _, t := range []struct {
		what string
		at   time.Time
	}{{"submitted", j.Created}, {"started", j.Started}, {"ended", j.Finished}} {
		if !t.at.IsZero() {
			parts = append(parts, t.what+" "+t.at.Format(time.DateTime))
		}
	}
	return strings.Join(parts, ", ")
}

// clock is a time of day, with the date only when it is not today's: a
// dashboard is read about now.
func clock(t, now time.Time) string {
	if t.Format(time.DateOnly) == now.In(t.Location()).Format(time.DateOnly) {
		return t.Format(time.TimeOnly)
	}
	return t.Format(time.DateTime)
}

func newNodeRow(n Node) nodeRow {
	r := nodeRow{Node: n}
	if n.Capacity > 0 {
		r.AllocW = barWidth * min(float64(n.Allocated)/float64(n.Capacity), 1)
		r.UsedW = barWidth * min(float64(n.Used)/float64(n.Capacity), 1)
	}
	r.Label = fmt.Sprintf("%s used, %s allocated of %s", units.FormatSize(n.Used), units.FormatSize(n.Allocated), units.FormatSize(n.Capacity))
	return r
}

// funcs are the templates' helpers.
func funcs() template.FuncMap {
	return template.FuncMap{
		"f1": func(x float64) string { return fmt.Sprintf("%.1f", x) },
		"f3": func(x float64) string { return fmt.Sprintf("%.3f", x) },
		"ts": func(t time.Time) string { return t.Format(time.DateTime) },
	}
}
