package sweep

import (
	"fmt"
	"strconv"

	"github.com/rsa-hpc/rsa/internal/bench"
)

// SourceRef names TMS's raw dd sweep, where the numbers rows carry come
// from.
const SourceRef = "TMS raw dd"

// tmsUnitNote is how the rows read TMS's MB/s: the report counts 1K as
// 1024, and its rates are taken to count the same way.
const tmsUnitNote = "TMS's MB taken as MiB (the report counts 1K=1024)"

// tmsPoint is a number the TMS text gives for one point of its grid.
type tmsPoint struct {
	device string
	dir    Direction
	qd     int
	bs     int64
	value  float64 // MB/s
	ref    string
}

// tmsPoints are the Sun T3's two numbers at a point of the grid. The text
// gives them in a passage on write rates. "Buffer sizes > 16MB" at depth 8
// is, in a doubling sweep that stops at 32 MB, the 32 MB buffer.
func tmsPoints() []tmsPoint {
	return []tmsPoint{
		{DiskDevice, Write, 8, 32 << 20, 80, SourceRef + ": T3 qd 8, bs > 16 MB"},
		{DiskDevice, Write, 16, 16 << 20, 81.9, SourceRef + ": T3 qd 16, bs 16 MB"},
	}
}

// tmsPeak is a device's highest rate in TMS, set beside the highest point
// of ours.
type tmsPeak struct {
	device string
	dir    Direction // "" for either direction
	value  float64
	ref    string
}

// tmsPeaks are the peaks TMS gives: the T3's (a direction the text does
// not name) and the RAM-SAN's read peak, which its 1 Gbit/s FC path bound.
func tmsPeaks() []tmsPeak {
	return []tmsPeak{
		{DiskDevice, "", 83.1, SourceRef + ": T3 peak"},
		{RAMDevice, Read, 80.3, SourceRef + ": RAM-SAN read peak (FC-path bound)"},
	}
}

// Rows are the points as bench rows (bench sweep, case write or read,
// target the device, params qd and bs, metric rate in MiB/s), each with
// fio's value as its cross-check, and with TMS's number where TMS gives
// one for the point or for the device's peak.
func Rows(points []Point) []bench.Row {
	rows := make([]bench.Row, len(points))
	for i, p := range points {
		r := bench.Row{
			Bench:  "sweep",
			Case:   string(p.Direction),
			Target: p.Device,
			Params: map[string]string{"qd": strconv.Itoa(p.QD), "bs": SizeLabel(p.BlockSize)},
			Metric: "rate",
			Unit:   "MiB/s",
			Value:  p.Rate(),
			Note:   p.Skip,
		}
		if p.Fio != nil {
			r.CrossCheck("fio", *p.Fio)
		}
		if p.Capped {
			r.Note = fmt.Sprintf("the %v cap ended it after %s", p.Limit, SizeLabel(p.Bytes))
		}
		if p.FioThreads != nil {
			addNote(&r, threadsNote(p))
		}
		for _, s := range tmsPoints() {
			if p.Skip == "" && s.device == p.Device && s.dir == p.Direction && s.qd == p.QD && s.bs == p.BlockSize {
				source(&r, s.ref, s.value)
			}
		}
		rows[i] = r
	}
	for _, s := range tmsPeaks() {
		if i := peak(points, s.device, s.dir); i >= 0 {
			source(&rows[i], s.ref, s.value)
		}
	}
	return rows
}

// source sets TMS's number beside the row. A row can match a point and be
// the peak too; it keeps the point's number, the nearer comparison.
func source(r *bench.Row, ref string, value float64) {
	if r.SourceValue != nil {
		return
	}
	r.Source(ref, value, "MB/s")
	addNote(r, tmsUnitNote)
}

func addNote(r *bench.Row, n string) {
	if r.Note != "" {
		r.Note += "; "
	}
	r.Note += n
}

// threadsNote explains a point whose fio check disagrees with the second
// fio run, made the sweep's way.
func threadsNote(p Point) string {
	verdict := "which disagrees too: the difference is not only in how the requests are kept in flight"
	if bench.Agrees(p.Rate(), *p.FioThreads) {
		verdict = "which agrees: the difference is in how the requests are kept in flight, not in the sweep's measure of the device"
	}
	return fmt.Sprintf("disagree: fio keeps the %d requests in flight from one thread (libaio), the sweep (as TMS's queue_depth) from %d threads of one synchronous request each; fio that way too (psync, %d jobs): %.1f MiB/s, %s",
		p.QD, p.QD, p.QD, *p.FioThreads, verdict)
}

// peak is the index of the highest measured point of the device in the
// direction (either, for ""), or -1 when none was measured.
func peak(points []Point, device string, dir Direction) int {
	best := -1
	for i, p := range points {
		if p.Device != device || dir != "" && p.Direction != dir || p.Skip != "" {
			continue
		}
		if best < 0 || p.Rate() > points[best].Rate() {
			best = i
		}
	}
	return best
}
