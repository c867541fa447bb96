package report

import (
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/rsa-hpc/rsa/internal/bench"
	"github.com/rsa-hpc/rsa/internal/bench/sweep"
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
		{"mptio.svg", "MPTIO: Rate and E-Rate of each test on each target. MPTIO drops no cache between its tests (as the original): reads of what was just written come from this host's page cache, also on shared@1g, unless opened O_DIRECT (-I), which makes them cross the link.", MPTIORates},
		{"metabench.svg", "METABENCH: each test's rate against the number of processes, per target (on shared@1g, one FUSE client per process).", MetabenchCurves},
		{"sweep.svg", "The TMS sweep: MiB/s per queue depth and block size, O_DIRECT, on the RAM and the disk loop device.", SweepHeatMaps},
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

// mptioTests is MPTIO's order of its tests.
var mptioTests = []string{"Seq_Write", "Rd_Mod_Wrt", "Rand_Write", "Seq_Read", "Rand_Read"}

// MPTIORates draws each MPTIO test's Rate (solid) and E-Rate (dashed),
// the source's two bandwidths, one line per target and run shape
// (processes × threads × size), on a log scale: tmpfs and a 1 Gbit/s link
// lie orders apart.
func MPTIORates(path string, rows []bench.Row) error {
	type key struct{ target, metric string }
	series := map[key]plotter.XYs{}
	var targets []string
	for _, r := range rows {
		i := slices.Index(mptioTests, r.Case)
		if r.Bench != "mptio" || (r.Metric != "rate" && r.Metric != "e_rate") || i < 0 || r.Value <= 0 {
			continue
		}
		// A run of another shape (the quick profile's beside the
		// appendix sample's) is a line of its own.
		target := r.Target
		if r.Params["size"] != "" {
			target += fmt.Sprintf(", %s×%s×%s", r.Params["procs"], r.Params["threads"], r.Params["size"])
		}
		if r.Params["direct"] == "true" {
			target += ", O_DIRECT"
		}
		if !slices.Contains(targets, target) {
			targets = append(targets, target)
		}
		k := key{target, r.Metric}
		series[k] = append(series[k], plotter.XY{X: float64(i), Y: r.Value})
	}
	if len(targets) == 0 {
		return fmt.Errorf("MPTIO: %w", errNoRows)
	}
	p := plot.New()
	p.Title.Text = "MPTIO: Rate (solid) and E-Rate (dashed) per test"
	p.Y.Label.Text = "MiB/s"
	logY(p)
	legend := legendPlot()
	for i, target := range targets {
		for _, metric := range []string{"rate", "e_rate"} {
			xy := series[key{target, metric}]
			if len(xy) == 0 {
				continue
			}
			l, pts, err := addSeries(p, xy, i, metric == "e_rate")
			if err != nil {
				return fmt.Errorf("MPTIO: %w", err)
			}
			if metric == "rate" {
				legend.Legend.Add(target, l, pts)
			}
		}
	}
	p.NominalX(mptioTests...)
	return saveTiles(path, [][]*plot.Plot{{p, legend}}, 8*vg.Inch, 3.5*vg.Inch)
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

// legendPlot is a tile that shows only a legend, beside plots too full of
// lines to carry it.
func legendPlot() *plot.Plot {
	p := plot.New()
	p.HideAxes()
	p.Legend.Top = true
	p.Legend.Left = true
	return p
}

// MetabenchCurves draws one panel per target and size: each METABENCH
// test's rate against the number of processes, on a log scale (tmpfs and a
// 1 Gbit/s FUSE client lie orders apart).
func MetabenchCurves(path string, rows []bench.Row) error {
	type key struct{ target, test string }
	series := map[key]plotter.XYs{}
	var targets []string
	for _, r := range rows {
		if r.Bench != "metabench" || r.Metric != "ops_per_s" || r.Value <= 0 {
			continue
		}
		n, err := strconv.Atoi(r.Params["nproc"])
		if err != nil {
			return fmt.Errorf("METABENCH row's nproc %q: %w", r.Params["nproc"], err)
		}
		// Runs of another size (quick beside full) get a panel each.
		target := r.Target
		if f := r.Params["nfile"]; f != "" {
			target += ", " + f + " files"
		}
		if !slices.Contains(targets, target) {
			targets = append(targets, target)
		}
		k := key{target, r.Case}
		series[k] = append(series[k], plotter.XY{X: float64(n), Y: r.Value})
	}
	if len(targets) == 0 {
		return fmt.Errorf("METABENCH: %w", errNoRows)
	}
	var tests []string
	for k := range series {
		if !slices.Contains(tests, k.test) {
			tests = append(tests, k.test)
		}
	}
	slices.Sort(tests)
	plots := make([][]*plot.Plot, 1)
	legend, legendDone := legendPlot(), []string(nil)
	for _, target := range targets {
		p := plot.New()
		p.Title.Text = "METABENCH on " + target
		p.X.Label.Text = "processes"
		p.Y.Label.Text = "operations/s"
		logY(p)
		for i, test := range tests {
			xy := series[key{target, test}]
			if len(xy) == 0 {
				continue
			}
			l, pts, err := addSeries(p, xy, i, false)
			if err != nil {
				return fmt.Errorf("METABENCH: %w", err)
			}
			if !slices.Contains(legendDone, test) {
				legendDone = append(legendDone, test)
				legend.Legend.Add(test, l, pts)
			}
		}
		plots[0] = append(plots[0], p)
	}
	grid := rowsOf(append(plots[0], legend), 3)
	return saveTiles(path, grid, vg.Length(len(grid[0]))*3*vg.Inch, vg.Length(len(grid))*3.5*vg.Inch)
}

// rowsOf lays panels out n to a row, the last row padded with nil (Align
// wants a full grid; a nil tile stays empty).
func rowsOf(panels []*plot.Plot, n int) [][]*plot.Plot {
	var grid [][]*plot.Plot
	for len(panels) > 0 {
		row := make([]*plot.Plot, n)
		copy(row, panels[:min(n, len(panels))])
		grid = append(grid, row)
		panels = panels[min(n, len(panels)):]
	}
	return grid
}

// sweepKey is one heat map of the sweep: a device and a direction.
type sweepKey struct{ target, op string }

// sweepPoint is one cell of a heat map: its block size, queue depth and
// rate (MiB/s).
type sweepPoint struct {
	bs, qd int64
	rate   float64
}

// SweepHeatMaps draws the queue-depth × block-size sweep as one heat map
// per device and direction, each cell labelled with its MiB/s; colour
// follows log10 of the rate so that both ends of the range show.
func SweepHeatMaps(path string, rows []bench.Row) error {
	points, keys, err := sweepPoints(rows)
	if err != nil {
		return err
	}
	slices.SortFunc(keys, func(a, b sweepKey) int {
		return cmp.Or(cmp.Compare(a.target, b.target), -cmp.Compare(a.op, b.op))
	})
	var targets []string
	for _, k := range keys {
		if !slices.Contains(targets, k.target) {
			targets = append(targets, k.target)
		}
	}
	plots := make([][]*plot.Plot, len(targets))
	for _, k := range keys {
		p, err := sweepHeatMap(k, points[k])
		if err != nil {
			return err
		}
		row := slices.Index(targets, k.target)
		plots[row] = append(plots[row], p)
	}
	cols := 0
	for _, r := range plots {
		cols = max(cols, len(r))
	}
	for i := range plots { // Align wants a full grid
		for len(plots[i]) < cols {
			plots[i] = append(plots[i], nil)
		}
	}
	return saveTiles(path, plots, vg.Length(cols)*4.5*vg.Inch, vg.Length(len(plots))*3*vg.Inch)
}

// sweepPoints gathers the sweep's rate rows by heat map, the maps in the
// order the rows first name them.
func sweepPoints(rows []bench.Row) (map[sweepKey][]sweepPoint, []sweepKey, error) {
	points := map[sweepKey][]sweepPoint{}
	var keys []sweepKey
	for _, r := range rows {
		if r.Bench != "sweep" || r.Metric != "rate" {
			continue
		}
		bs, err := units.ParseSize(r.Params["bs"])
		if err == nil && bs <= 0 {
			err = fmt.Errorf("%q is no block size", r.Params["bs"])
		}
		if err != nil {
			return nil, nil, fmt.Errorf("sweep row's bs: %w", err)
		}
		qd, err := strconv.ParseInt(r.Params["qd"], 10, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("sweep row's qd %q: %w", r.Params["qd"], err)
		}
		k := sweepKey{r.Target, r.Case}
		if _, ok := points[k]; !ok {
			keys = append(keys, k)
		}
		points[k] = append(points[k], sweepPoint{bs, qd, r.Value})
	}
	if len(keys) == 0 {
		return nil, nil, fmt.Errorf("sweep: %w", errNoRows)
	}
	return points, keys, nil
}

// sweepHeatMap is one heat map: block sizes across, queue depths up.
func sweepHeatMap(k sweepKey, pts []sweepPoint) (*plot.Plot, error) {
	var bss, qds []int64
	for _, pt := range pts {
		if !slices.Contains(bss, pt.bs) {
			bss = append(bss, pt.bs)
		}
		if !slices.Contains(qds, pt.qd) {
			qds = append(qds, pt.qd)
		}
	}
	slices.Sort(bss)
	slices.Sort(qds)
	g := grid{cols: len(bss), rows: len(qds), z: make([]float64, len(bss)*len(qds))}
	for i := range g.z {
		g.z[i] = math.NaN()
	}
	var labels plotter.XYLabels
	for _, pt := range pts {
		c, r := slices.Index(bss, pt.bs), slices.Index(qds, pt.qd)
		g.z[r*g.cols+c] = math.Log10(math.Max(pt.rate, 1e-3))
		labels.XYs = append(labels.XYs, plotter.XY{X: float64(c), Y: float64(r)})
		labels.Labels = append(labels.Labels, strconv.FormatFloat(pt.rate, 'f', 0, 64))
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("sweep: %s %s, MiB/s", k.target, k.op)
	p.X.Label.Text = "block size"
	p.Y.Label.Text = "queue depth"
	hm := plotter.NewHeatMap(g, moreland.Kindlmann().Palette(200))
	hm.NaN = color.White
	p.Add(hm)
	lb, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].Font.Size = vg.Points(6)
		lb.TextStyle[i].XAlign = draw.XCenter
		lb.TextStyle[i].YAlign = draw.YCenter
		lb.TextStyle[i].Color = color.Gray{Y: 0x80}
	}
	p.Add(lb)
	var bsNames, qdNames []string
	for _, b := range bss {
		bsNames = append(bsNames, sweep.SizeLabel(b))
	}
	for _, q := range qds {
		qdNames = append(qdNames, strconv.FormatInt(q, 10))
	}
	p.NominalX(bsNames...)
	p.NominalY(qdNames...)
	p.X.Tick.Label.Font.Size = vg.Points(6)
	return p, nil
}

// grid is a heat map's cells, row-major.
type grid struct {
	cols, rows int
	z          []float64
}

func (g grid) Dims() (int, int)   { return g.cols, g.rows }
func (g grid) Z(c, r int) float64 { return g.z[r*g.cols+c] }
func (g grid) X(c int) float64    { return float64(c) }
func (g grid) Y(r int) float64    { return float64(r) }

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
