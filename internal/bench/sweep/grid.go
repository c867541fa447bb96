package sweep

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/rsa-hpc/rsa/internal/bench"
)

// Grid is one device's sweep in one direction as a table: a row for each
// block size, a column for each queue depth, as TMS charted it. It is
// plain data, for a table here and a plot later.
type Grid struct {
	Device     string
	Direction  Direction
	QDs        []int   // the columns
	BlockSizes []int64 // the rows
	// Rates are the sweep's MiB/s, Rates[bs][qd] in the order of
	// BlockSizes and QDs; 0 where the point was skipped or not run.
	Rates [][]float64
	// Fio are fio's MiB/s for the same points; 0 where fio did not run.
	Fio [][]float64
}

// Grids arranges points as one Grid for each device and direction, in
// the order the points came.
func Grids(points []Point) []Grid {
	type key struct {
		device string
		dir    Direction
	}
	var keys []key
	byKey := map[key][]Point{}
	for _, p := range points {
		k := key{p.Device, p.Direction}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], p)
	}
	grids := make([]Grid, 0, len(keys))
	for _, k := range keys {
		grids = append(grids, newGrid(k.device, k.dir, byKey[k]))
	}
	return grids
}

func newGrid(device string, dir Direction, points []Point) Grid {
	g := Grid{Device: device, Direction: dir}
	for _, p := range points {
		g.QDs = append(g.QDs, p.QD)
		g.BlockSizes = append(g.BlockSizes, p.BlockSize)
	}
	g.QDs = uniqueSorted(g.QDs)
	g.BlockSizes = uniqueSorted(g.BlockSizes)
	g.Rates, g.Fio = make([][]float64, len(g.BlockSizes)), make([][]float64, len(g.BlockSizes))
	for i := range g.BlockSizes {
		g.Rates[i], g.Fio[i] = make([]float64, len(g.QDs)), make([]float64, len(g.QDs))
	}
	for _, p := range points {
		i, _ := slices.BinarySearch(g.BlockSizes, p.BlockSize)
		j, _ := slices.BinarySearch(g.QDs, p.QD)
		if p.Skip == "" {
			g.Rates[i][j] = p.Rate()
		}
		if p.Fio != nil {
			g.Fio[i][j] = *p.Fio
		}
	}
	return g
}

// Max is the grid's highest rate.
func (g *Grid) Max() float64 {
	var m float64
	for _, row := range g.Rates {
		for _, v := range row {
			m = max(m, v)
		}
	}
	return m
}

// shades mark a cell's rate against the grid's highest, from under a
// fifth of it to the top fifth, so that the shape shows at a glance.
const shades = "·░▒▓█"

func shade(v, top float64) string {
	levels := []rune(shades)
	if top <= 0 {
		return string(levels[0])
	}
	return string(levels[min(len(levels)-1, int(v/top*float64(len(levels))))])
}

// WriteText writes the grid as a table of MiB/s, each cell shaded by its
// share of the grid's highest rate, with fio's rate beside it in brackets
// and a ! where the two differ by more than bench.CrossCheckTolerance.
// A skipped point is a -.
func (g *Grid) WriteText(w io.Writer) error {
	top := g.Max()
	if _, err := fmt.Fprintf(w, "%s %s, MiB/s (fio in brackets; ! over %.0f%% apart), shaded by share of the top %s:\n",
		g.Device, g.Direction, bench.CrossCheckTolerance*100, formatRate(top)); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := []string{"bs \\ qd"}
	for _, qd := range g.QDs {
		header = append(header, strconv.Itoa(qd))
	}
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for i, bs := range g.BlockSizes {
		cells := []string{SizeLabel(bs)}
		for j := range g.QDs {
			cells = append(cells, g.cell(i, j, top))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	return tw.Flush()
}

func (g *Grid) cell(i, j int, top float64) string {
	v, fio := g.Rates[i][j], g.Fio[i][j]
	if v == 0 {
		return "-"
	}
	s := formatRate(v) + " " + shade(v, top)
	if fio > 0 {
		mark := ""
		if !bench.Agrees(v, fio) {
			mark = "!"
		}
		s += " (" + formatRate(fio) + mark + ")"
	}
	return s
}

// WriteGrids writes each grid's table, a blank line between two.
func WriteGrids(w io.Writer, grids []Grid) error {
	for i := range grids {
		if i > 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		if err := grids[i].WriteText(w); err != nil {
			return err
		}
	}
	return nil
}

func formatRate(v float64) string {
	if v >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}
