package sim

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/rsa-hpc/rsa/internal/units"
)

// part is a phase of a job's timeline as the Gantt chart colours it,
// after the thesis' Figure 2.1.
type part int

const (
	partWait part = iota
	partStageIn
	partIOShared
	partIORAM
	partCompute
	partStageOut
)

func (p part) String() string {
	return [...]string{"queue wait", "stage-in", "I/O, shared FS", "I/O, RSA", "compute", "stage-out"}[p]
}

func (p part) color() color.Color {
	return [...]color.RGBA{
		{R: 200, G: 200, B: 200, A: 255},
		{R: 66, G: 133, B: 244, A: 255},
		{R: 234, G: 67, B: 53, A: 255},
		{R: 251, G: 188, B: 5, A: 255},
		{R: 52, G: 168, B: 83, A: 255},
		{R: 142, G: 68, B: 173, A: 255},
	}[p]
}

// Plots writes the PNG charts into dir: gantt.png (the Gantt window with
// and without RSA), utilisation.png, ram.png and, for a sweep, sweep.png.
// It returns the files written.
func Plots(dir string, without, with *Result, axes []Axis, runs []SweepRun) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("plots: %w", err)
	}
	var files []string
	save := func(name string, err error) error {
		if err == nil {
			files = append(files, filepath.Join(dir, name))
		}
		return err
	}
	if err := save("gantt.png", ganttPNG(filepath.Join(dir, "gantt.png"), without, with)); err != nil {
		return files, err
	}
	if err := save("utilisation.png", utilPNG(filepath.Join(dir, "utilisation.png"), without, with)); err != nil {
		return files, err
	}
	if with != nil && with.RAMTotal > 0 {
		if err := save("ram.png", ramPNG(filepath.Join(dir, "ram.png"), with)); err != nil {
			return files, err
		}
	}
	if len(runs) > 0 {
		if err := save("sweep.png", sweepPNG(filepath.Join(dir, "sweep.png"), without, axes, runs)); err != nil {
			return files, err
		}
	}
	return files, nil
}

// ganttPNG draws the window's jobs side by side: with RSA on the left,
// without on the right, on one time axis, as Figure 2.1's columns.
func ganttPNG(file string, without, with *Result) error {
	var panels []*plot.Plot
	var t0, t1 float64 = math.Inf(1), math.Inf(-1)
	for _, r := range []*Result{with, without} {
		if r == nil || len(r.Gantt) == 0 {
			continue
		}
		lo, hi := ganttRange(r.Gantt)
		t0, t1 = math.Min(t0, lo), math.Max(t1, hi)
	}
	if math.IsInf(t0, 0) {
		return errors.New("plots: no jobs in the Gantt window (--gantt FIRST:COUNT names a job id of the trace and a count)")
	}
	for _, r := range []*Result{with, without} {
		if r == nil || len(r.Gantt) == 0 {
			continue
		}
		p := newPlot()
		p.Title.Text = "without RSA"
		if r.RSA {
			p.Title.Text = "with RSA"
		}
		p.X.Label.Text = "hours since the first job's submission"
		p.X.Min, p.X.Max = 0, (t1-t0)/3600
		p.Add(gantt{jobs: r.Gantt, t0: t0})
		names := make([]string, len(r.Gantt))
		for i, g := range r.Gantt {
			names[len(names)-1-i] = fmt.Sprintf("%d (%d)", g.ID, g.Nodes)
		}
		p.NominalY(names...)
		p.Y.Label.Text = "job (nodes)"
		// Empty rows above the first job leave the legend room.
		p.Y.Min, p.Y.Max = -0.6, float64(len(names))+legendRows
		if len(panels) == 0 {
			for k := partWait; k <= partStageOut; k++ {
				p.Legend.Add(k.String(), swatch{k.color()})
			}
			p.Legend.Top = true
		}
		panels = append(panels, p)
	}
	rows := max(len(names0(with, without)), 10) + legendRows
	return saveRow(file, panels, vg.Length(rows)*0.55*vg.Centimeter+3*vg.Centimeter)
}

// legendRows is the room the Gantt legend takes, in job rows.
const legendRows = 6

// names0 is the Gantt window of whichever run has one.
func names0(rs ...*Result) []GanttJob {
	for _, r := range rs {
		if r != nil && len(r.Gantt) > 0 {
			return r.Gantt
		}
	}
	return nil
}

func ganttRange(js []GanttJob) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, g := range js {
		lo = math.Min(lo, g.Submit)
		hi = math.Max(hi, g.End)
		for _, s := range append(append([]Span(nil), g.StageIn...), g.StageOut...) {
			hi = math.Max(hi, s.To)
		}
	}
	return lo, hi
}

// saveRow lays plots out in one row and writes them as one PNG.
func saveRow(file string, ps []*plot.Plot, height vg.Length) error {
	width := vg.Length(len(ps)) * 16 * vg.Centimeter
	img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(110))
	dc := draw.New(img)
	t := draw.Tiles{Rows: 1, Cols: len(ps), PadX: vg.Centimeter, PadTop: vg.Millimeter * 3, PadBottom: vg.Millimeter * 3,
		PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 3}
	cs := plot.Align([][]*plot.Plot{ps}, t, dc)
	for i, p := range ps {
		p.Draw(cs[0][i])
	}
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("plots: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("plots: writing %s: %w", file, err)
	}
	return f.Close()
}

// gantt draws one row per job, first at the top: on the compute nodes
// (lower half) the queue wait as a thin bar, then reading, computing and
// writing; on the RSA nodes (upper half) stage-in and stage-out.
type gantt struct {
	jobs []GanttJob
	t0   float64
}

func (g gantt) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	n := len(g.jobs)
	for i, j := range g.jobs {
		y := float64(n - 1 - i)
		bar := func(from, to, lo, hi float64, col color.Color) {
			if to <= from {
				return
			}
			x0, x1 := tx((from-g.t0)/3600), tx((to-g.t0)/3600)
			if x1-x0 < 1.5 { // keep a short phase visible
				x1 = x0 + 1.5
			}
			pts := []vg.Point{{X: x0, Y: ty(y + lo)}, {X: x1, Y: ty(y + lo)}, {X: x1, Y: ty(y + hi)}, {X: x0, Y: ty(y + hi)}}
			c.FillPolygon(col, c.ClipPolygonXY(pts))
		}
		io := func(ram bool) color.Color {
			if ram {
				return partIORAM.color()
			}
			return partIOShared.color()
		}
		bar(j.Submit, j.Start, -0.22, -0.12, partWait.color())
		bar(j.Start, j.ReadEnd, -0.4, 0.02, io(j.ReadRAM))
		bar(j.ReadEnd, j.ComputeEnd, -0.4, 0.02, partCompute.color())
		bar(j.ComputeEnd, j.End, -0.4, 0.02, io(j.WriteRAM))
		for _, s := range j.StageIn {
			bar(s.From, s.To, 0.08, 0.4, partStageIn.color())
		}
		for _, s := range j.StageOut {
			bar(s.From, s.To, 0.08, 0.4, partStageOut.color())
		}
	}
}

// swatch is a legend entry's coloured box.
type swatch struct{ c color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	c.FillPolygon(s.c, []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
}

// utilPNG plots busy compute nodes over time, with and without RSA.
func utilPNG(file string, without, with *Result) error {
	p := newPlot()
	p.Title.Text = "compute nodes held by jobs"
	p.X.Label.Text = "days since the trace's start"
	p.Y.Label.Text = "utilisation"
	p.Y.Min, p.Y.Max = 0, 1.2 // room for the legend
	for _, r := range []struct {
		res  *Result
		name string
		col  color.Color
		dash bool
	}{{without, "without RSA", partIOShared.color(), true}, {with, "with RSA", partStageIn.color(), false}} {
		if r.res == nil {
			continue
		}
		xy := make(plotter.XYs, len(r.res.Busy.X))
		for i := range xy {
			xy[i].X = r.res.Busy.X[i] / 86400
			xy[i].Y = r.res.Busy.Y[i] / float64(r.res.Nodes)
		}
		if err := addLine(p, xy, r.name, r.col, r.dash); err != nil {
			return err
		}
	}
	p.Legend.Top = true
	return p.Save(22*vg.Centimeter, 11*vg.Centimeter, file)
}

// ramPNG plots RSA RAM held over time.
func ramPNG(file string, with *Result) error {
	p := newPlot()
	p.Title.Text = fmt.Sprintf("RSA RAM held (of %s)", units.FormatSize(with.RAMTotal))
	p.X.Label.Text = "days since the trace's start"
	p.Y.Label.Text = "share of RSA RAM"
	p.Y.Min, p.Y.Max = 0, 1.2
	xy := make(plotter.XYs, len(with.RAM.X))
	for i := range xy {
		xy[i].X = with.RAM.X[i] / 86400
		xy[i].Y = with.RAM.Y[i] / float64(with.RAMTotal)
	}
	if err := addLine(p, xy, "held", partStageOut.color(), false); err != nil {
		return err
	}
	return p.Save(22*vg.Centimeter, 11*vg.Centimeter, file)
}

// sweepPNG plots two panels against the first axis, one line per
// combination of the other axes: compute-node hours waiting on I/O (the
// machine without RSA dashed), and the mean share of RSA RAM held.
func sweepPNG(file string, without *Result, axes []Axis, runs []SweepRun) error {
	numeric := true
	for _, v := range axes[0].Values {
		if _, err := sweepX(axes[0].Key, v); err != nil {
			numeric = false
		}
	}
	type line struct {
		name    string
		io, ram plotter.XYs
	}
	var lines []*line
	byName := map[string]*line{}
	for _, r := range runs {
		name := "with RSA"
		if len(axes) > 1 {
			name = ""
			for i, v := range r.Values[1:] {
				name += fmt.Sprintf("%s=%s ", axes[i+1].Key, v)
			}
		}
		x := float64(slices.Index(axes[0].Values, r.Values[0]))
		if numeric {
			x, _ = sweepX(axes[0].Key, r.Values[0])
		}
		l := byName[name]
		if l == nil {
			l = &line{name: name}
			byName[name] = l
			lines = append(lines, l)
		}
		l.io = append(l.io, plotter.XY{X: x, Y: r.Result.IONodeHours})
		share := 0.0
		if r.Result.RAMTotal > 0 {
			share = 100 * r.Result.RAMMean / float64(r.Result.RAMTotal)
		}
		l.ram = append(l.ram, plotter.XY{X: x, Y: share})
	}
	io, ram := newPlot(), newPlot()
	io.Title.Text = "compute-node hours waiting on I/O"
	io.Y.Label.Text = "node-hours"
	ram.Title.Text = "RSA RAM held, mean"
	ram.Y.Label.Text = "% of RSA RAM"
	ram.Y.Max = 105
	for _, p := range []*plot.Plot{io, ram} {
		p.X.Label.Text = axes[0].Key
		p.Y.Min = 0
		if !numeric {
			p.NominalX(axes[0].Values...)
		}
	}
	palette := []color.Color{partStageIn.color(), partCompute.color(), partStageOut.color(), partIORAM.color(), partIOShared.color(), color.Black}
	for i, l := range lines {
		col := palette[i%len(palette)]
		if err := addPoints(io, l.io, l.name, col); err != nil {
			return err
		}
		if err := addPoints(ram, l.ram, l.name, col); err != nil {
			return err
		}
	}
	if without != nil && len(lines) > 0 {
		xs := lines[0].io
		lo, hi := xs[0].X, xs[len(xs)-1].X
		base := plotter.XYs{{X: lo, Y: without.IONodeHours}, {X: hi, Y: without.IONodeHours}}
		if err := addLine(io, base, "without RSA", color.Gray{Y: 90}, true); err != nil {
			return err
		}
		io.Y.Max = sweepYMax(without.IONodeHours, runs)
	}
	io.Legend.Top = true
	ram.Legend = plot.NewLegend() // the same lines as on the left
	return saveRow(file, []*plot.Plot{io, ram}, 12*vg.Centimeter)
}

// sweepYMax is the top of sweep.png's I/O panel: room for the legend above
// the machine without RSA, and for every run, even one above it.
func sweepYMax(without float64, runs []SweepRun) float64 {
	top := 1.3 * without
	for _, r := range runs {
		top = max(top, 1.1*r.Result.IONodeHours)
	}
	return top
}

// addPoints adds a line with its points marked.
func addPoints(p *plot.Plot, xy plotter.XYs, name string, col color.Color) error {
	l, pts, err := plotter.NewLinePoints(xy)
	if err != nil {
		return fmt.Errorf("plots: %s: %w", name, err)
	}
	l.Color, pts.Color = col, col
	l.Width = vg.Points(1.2)
	pts.Shape = draw.CircleGlyph{}
	p.Add(l, pts)
	p.Legend.Add(name, l, pts)
	return nil
}

// sweepX is a swept value as a number: nodes, GiB, compute nodes per RSA
// node, MiB/s.
func sweepX(key, v string) (float64, error) {
	var c Config
	if err := sweepKeys()[key](&c, v); err != nil {
		return 0, err
	}
	switch key {
	case "rsa-nodes":
		return float64(c.RSA.Nodes), nil
	case "ram":
		return float64(c.RSA.RAM) / gib, nil
	case "proportion":
		return float64(c.RSA.Proportion), nil
	case "link":
		return c.RSA.Link / mib, nil
	}
	return strconv.ParseFloat(v, 64)
}

// plainTicks labels the default ticks without padding zeros ("250", not
// "250.00").
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'g', -1, 64)
		}
	}
	return ts
}

// newPlot is a plot with plain tick labels.
func newPlot() *plot.Plot {
	p := plot.New()
	p.X.Tick.Marker = plainTicks{}
	p.Y.Tick.Marker = plainTicks{}
	return p
}

func addLine(p *plot.Plot, xy plotter.XYs, name string, col color.Color, dashed bool) error {
	if len(xy) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xy)
	if err != nil {
		return fmt.Errorf("plots: %s: %w", name, err)
	}
	l.Color = col
	l.Width = vg.Points(1.2)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}
