package thesis

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rsa-hpc/rsa/internal/bench"
)

// Calibration is what E4's model is calibrated from, measured in the same
// session before the jobs and never fitted to them.
type Calibration struct {
	// LinkBps is shared@1g's link, iperf3 to its server (bits/s).
	LinkBps float64
	// Create is one create of a file on shared@1g from one client, no
	// other contending, through the brick's shim: the model's Local plus
	// what Gluster itself costs.
	Create time.Duration
}

// measureCreate times n creates of empty files, one after the other, in a
// new directory under dir (a mount of shared@1g), and removes them.
func measureCreate(dir string, n int) (time.Duration, error) {
	d, err := os.MkdirTemp(dir, "e4-calibrate-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(d)
	start := time.Now()
	for i := range n {
		f, err := os.OpenFile(filepath.Join(d, strconv.Itoa(i)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return 0, err
		}
		if err := f.Close(); err != nil {
			return 0, err
		}
	}
	return time.Since(start) / time.Duration(n), nil
}

// predictions are the model's times for k hosts' cells, from cal and
// the shim's model alone: the direct job is bound by its creates, one at
// a time, each Create plus the contention of k hosts, or by the link,
// whichever is longer; one aggregated file and tmpfs+tar by the link;
// RSA's job by the compute hosts' links (k of them, each as fast as
// shared@1g's); RSA's output is verified after its stage-out, one mover
// creating one file at a time (uncontended) while the link carries the
// data, so the longer of the two.
func (t ClusterContention) predictions(k int, cal Calibration) []bench.Row {
	if cal.LinkBps <= 0 || cal.Create <= 0 {
		return nil
	}
	n := float64(t.Ranks)
	data := float64(int64(t.Ranks)*t.Size) * 8 / cal.LinkBps // seconds over one link
	create := cal.Create.Seconds()
	contended := create + (t.Model.Cost(k) - t.Model.Cost(1)).Seconds()
	direct := max(n*contended, data)
	rsaHold := data / float64(k)
	stageOut := max(n*create, data)
	params := map[string]string{"hosts": strconv.Itoa(k), "ranks": strconv.Itoa(t.Ranks), "size": strconv.FormatInt(t.Size, 10),
		"link_Mbit": strconv.FormatFloat(cal.LinkBps/1e6, 'f', 0, 64), "create_ms": strconv.FormatFloat(create*1e3, 'f', 1, 64)}
	row := func(target, metric string, v float64, note string) bench.Row {
		return bench.Row{Bench: "contention", Case: "E4 model", Target: target, Params: maps.Clone(params), Metric: metric, Unit: "s", Value: v, Runs: []float64{v}, Note: note}
	}
	why := fmt.Sprintf("the model, from iperf3 and %d timed creates before the jobs: ", calibrationCreates)
	return []bench.Row{
		row("shared@1g", "hold", direct, why+"max(files × (create + contention of k hosts), data / link)"),
		row("shared@1g aggregate", "hold", data, why+"data / link"),
		row("tmpfs+tar", "hold", data, why+"data / link (the tar's one create is nothing beside it)"),
		row("ram@1g", "hold", rsaHold, why+"data / (k links)"),
		row("ram@1g", "verified", rsaHold+stageOut, why+"RSA's hold + max(files × create, data / link): the stage-out, uncontended"),
	}
}

// calibrationCreates is how many creates the calibration times.
const calibrationCreates = 40
