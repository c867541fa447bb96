package report

import (
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/rsa-hpc/rsa/internal/bench"
	"github.com/rsa-hpc/rsa/internal/units"
)

// A figure is one plot file: its name under the plot directory and how to
// draw it from the rows. draw fails with errNoRows when the rows hold
// nothing for it: that benchmark did not run, and the page goes without
// the plot.
type figure struct {
	name, caption string
	draw          func(path string, rows []bench.Row) error
}

// A Figure is a plot written to Path, with what it shows.
type Figure struct{ Path, Caption string }

var errNoRows = errors.New("no rows for it")

// figures is every plot the page can carry, in the page's order.
func figures() []figure {
	return []figure{
		{"t52-latency.svg", "T52: the compute-hold and time-to-safe ratios (shared@1g / RSA) against the latency added to each create and open on shared@1g, per RSA placement and stage-out.", T52Curve},
		{"t52-timeline.svg", "T52 as a timeline, per latency and way of running: how long the job held its compute nodes, then how long until its output was verified on shared@1g.", T52Timeline},
		{"tms.svg", "The TMS device sweep as fio runs it (job tms): MiB/s against the block size, a line per queue depth, write solid and read dashed, a panel per target.", TMSCurves},
	}
}

// Plots draws into dir every plot the rows hold data for, and returns the
// files written (their paths) and, for each left out, why.
func Plots(dir string, rows []bench.Row) (written []Figure, left []error) {
	for _, f := range figures() {
		p := filepath.Join(dir, f.name)
		if err := f.draw(p, rows); err != nil {
			left = append(left, fmt.Errorf("%s: %w", f.name, err))
			continue
		}
		written = append(written, Figure{Path: p, Caption: f.caption})
	}
	return written, left
}

// T52Timeline draws, for each latency added to the shared file system, a
// Gantt-style line per way of running T52: how long the job held its
// compute nodes, and after that how long until its output was verified on
// the shared file system (for the job writing there directly the two
// coincide: it returns once its files are closed and fsync'd).
func T52Timeline(path string, rows []bench.Row) error {
	type span struct{ held, safe float64 }
	type panel struct {
		latency time.Duration
		via     string
		names   []string
		spans   map[string]span
	}
	panels := map[string]*panel{}
	for _, r := range rows {
		if r.Bench != "thesis" || r.Case != "T52" || (r.Metric != "hold" && r.Metric != "safe") || strings.Contains(r.Target, " ") {
			continue
		}
		lat, err := time.ParseDuration(cmp.Or(r.Params["shared_latency"], "0s"))
		if err != nil {
			return fmt.Errorf("row's shared_latency %q: %w", r.Params["shared_latency"], err)
		}
		key := lat.String() + "|" + r.Params["via"]
		p := panels[key]
		if p == nil {
			p = &panel{latency: lat, via: r.Params["via"], spans: map[string]span{}}
			panels[key] = p
		}
		name := "RSA on " + r.Target
		if r.Target == "shared@1g" {
			name = "direct to shared@1g"
		}
		if so := r.Params["stage_out"]; so != "" {
			name += ", stage-out " + so
		}
		s, seen := p.spans[name]
		if !seen {
			p.names = append(p.names, name)
		}
		if r.Metric == "hold" {
			s.held = r.Value
		} else {
			s.safe = r.Value
		}
		p.spans[name] = s
	}
	if len(panels) == 0 {
		return fmt.Errorf("T52 timeline: %w (T52 hold and safe)", errNoRows)
	}
	keys := make([]string, 0, len(panels))
	for k := range panels {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		pa, pb := panels[a], panels[b]
		return cmp.Or(cmp.Compare(pa.via, pb.via), cmp.Compare(pa.latency, pb.latency))
	})
	held, staging := plotutil.Color(0), color.RGBA{R: 0xf0, G: 0xb0, B: 0x40, A: 0xff}
	plots := make([][]*plot.Plot, len(keys))
	for i, k := range keys {
		pn := panels[k]
		slices.Sort(pn.names)
		p := plot.New()
		p.Title.Text = fmt.Sprintf("T52, %s per create and open on shared@1g", pn.latency)
		if pn.via != "" {
			p.Title.Text += " (" + pn.via + ")"
		}
		p.X.Label.Text = "seconds from the job's start"
		p.X.Min = 0
		for y, name := range pn.names {
			s := pn.spans[name]
			if s.safe < s.held { // direct: safe when it returns
				s.safe = s.held
			}
			if err := addBar(p, float64(y), 0, s.held, held); err != nil {
				return err
			}
			if s.safe > s.held {
				if err := addBar(p, float64(y), s.held, s.safe, staging); err != nil {
					return err
				}
			}
		}
		p.NominalY(pn.names...)
		if i == 0 { // room above the bars for the legend
			p.Y.Max = float64(len(pn.names)) + 1
			p.Legend.Add("compute nodes held", swatch(held))
			p.Legend.Add("stage-out until verified on shared@1g", swatch(staging))
			p.Legend.Top = true
		}
		plots[i] = []*plot.Plot{p}
	}
	return saveTiles(path, plots, 8*vg.Inch, vg.Length(len(keys))*1.8*vg.Inch)
}

// addBar draws a horizontal bar at row y from x0 to x1.
func addBar(p *plot.Plot, y, x0, x1 float64, c color.Color) error {
	const half = 0.3
	poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: y - half}, {X: x1, Y: y - half}, {X: x1, Y: y + half}, {X: x0, Y: y + half}})
	if err != nil {
		return fmt.Errorf("bar: %w", err)
	}
	poly.Color = c
	poly.LineStyle.Width = 0
	p.Add(poly)
	return nil
}

// swatch is a legend entry of one filled colour.
func swatch(c color.Color) plot.Thumbnailer {
	poly, _ := plotter.NewPolygon(plotter.XYs{{}, {X: 1}, {X: 1, Y: 1}})
	poly.Color = c
	poly.LineStyle.Width = 0
	return poly
}

// logY puts p's Y axis on a log scale.
func logY(p *plot.Plot) {
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
}

// addSeries adds xy to p, sorted by X, as a line with points in the i-th
// colour and shape, dashed if asked.
func addSeries(p *plot.Plot, xy plotter.XYs, i int, dashed bool) (*plotter.Line, *plotter.Scatter, error) {
	slices.SortFunc(xy, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
	l, pts, err := plotter.NewLinePoints(xy)
	if err != nil {
		return nil, nil, err
	}
	l.Color, pts.Color, pts.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(l, pts)
	return l, pts, nil
}

// saveTiles draws plots, aligned in their grid, into one file at path, in
// the format its extension names (svg, png, pdf).
func saveTiles(path string, plots [][]*plot.Plot, w, h vg.Length) error {
	c, err := draw.NewFormattedCanvas(w, h, strings.TrimPrefix(filepath.Ext(path), "."))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	dc := draw.New(c)
	t := draw.Tiles{
		Rows: len(plots), Cols: len(plots[0]),
		PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2,
	}
	canvases := plot.Align(plots, t, dc)
	for j := range plots {
		for i, p := range plots[j] {
			if p != nil {
				p.Draw(canvases[j][i])
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// TMSCurves draws the fio rows of the TMS sweep (job tms): for each
// target a panel of the rate against the block size (log scale), a line
// per queue depth and direction. It fails if a row's block size or queue
// depth is not one.
func TMSCurves(path string, rows []bench.Row) error {
	type key struct {
		qd   int64
		read bool
	}
	series := map[string]map[key]plotter.XYs{}
	var targets []string
	for _, r := range rows {
		if r.Bench != "fio" || r.Params["job"] != "tms" || r.Value <= 0 {
			continue
		}
		bs, err := units.ParseSize(r.Params["bs"])
		if err != nil || bs <= 0 {
			return fmt.Errorf("TMS: a row's block size %q: %v", r.Params["bs"], err)
		}
		qd, err := strconv.ParseInt(r.Params["qd"], 10, 64)
		if err != nil || qd <= 0 {
			return fmt.Errorf("TMS: a row's queue depth %q: %v", r.Params["qd"], err)
		}
		if series[r.Target] == nil {
			series[r.Target] = map[key]plotter.XYs{}
			targets = append(targets, r.Target)
		}
		k := key{qd, r.Metric == "read_rate"}
		series[r.Target][k] = append(series[r.Target][k], plotter.XY{X: float64(bs) / 1024, Y: r.Value})
	}
	if len(targets) == 0 {
		return fmt.Errorf("TMS: %w", errNoRows)
	}
	var panels []*plot.Plot
	for _, t := range targets {
		p := plot.New()
		p.Title.Text = "fio tms on " + t
		p.X.Label.Text = "block size (KiB)"
		p.Y.Label.Text = "MiB/s"
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		// A linear rate from zero: on shared@1g the points lie within a
		// few percent of the link's rate, which a log scale would blow up.
		p.Y.Min = 0
		keys := make([]key, 0, len(series[t]))
		for k := range series[t] {
			keys = append(keys, k)
		}
		// Writes before reads at each depth: the same rows draw the same
		// file.
		slices.SortFunc(keys, func(a, b key) int {
			return cmp.Or(cmp.Compare(a.qd, b.qd), cmp.Compare(b2i(a.read), b2i(b.read)))
		})
		var depths []int64
		for _, k := range keys {
			if !slices.Contains(depths, k.qd) {
				depths = append(depths, k.qd)
			}
			l, pts, err := addSeries(p, series[t][k], slices.Index(depths, k.qd), k.read)
			if err != nil {
				return fmt.Errorf("TMS: %w", err)
			}
			if !k.read {
				p.Legend.Add(fmt.Sprintf("qd %d", k.qd), l, pts)
			}
		}
		p.Legend.Left = true
		panels = append(panels, p)
	}
	return saveTiles(path, [][]*plot.Plot{panels}, vg.Length(len(panels))*4*vg.Inch, 3.5*vg.Inch)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
