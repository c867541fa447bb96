package thesis

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/rsa-hpc/rsa/internal/bench"
	"github.com/rsa-hpc/rsa/internal/sim"
)

// AgainstE4 sets E4's predictions beside its measurements: each run's
// two-term rows ("E4 model", from that run's own iperf3 and timed creates)
// get the measured median of the cell that follows them in rows as their
// source, and after them come the simulator's ("E4 sim"), set from the
// same calibration and the shim's local and revoke, with what E4 did not
// measure (the RAMDISK's cost per file and the stage-out's line) from
// E2's calibration at 1 Gbit/s (E4's links' rate). Without E2's rows at
// 1 Gbit/s there are no simulator rows.
func AgainstE4(ctx context.Context, rows []bench.Row) ([]bench.Row, error) {
	e2, haveE2 := e2At(rows, "1gbit")
	var out []bench.Row
	for i := 0; i < len(rows); i++ {
		r := rows[i]
		if r.Bench != "contention" || r.Case != "E4 model" {
			out = append(out, r)
			continue
		}
		hosts := r.Params["hosts"]
		j := i
		for j < len(rows) && rows[j].Bench == "contention" && rows[j].Case == "E4 model" && rows[j].Params["hosts"] == hosts {
			j++
		}
		group := slices.Clone(rows[i:j])
		measured := e4Measured(rows[j:], hosts)
		for k, m := range group {
			if v, ok := measured[m.Target+"|"+m.Metric]; ok {
				group[k].Source("E4, measured median", v.Value, m.Unit)
			}
		}
		out = append(out, group...)
		if haveE2 {
			s, err := e4Sim(ctx, r, e2, measured)
			if err != nil {
				return nil, err
			}
			out = append(out, s...)
		}
		i = j - 1
	}
	return out, nil
}

// e4Measured is E4's measured medians of the cells at hosts that follow a
// model group in rows, by target|metric: the rows up to the next model
// group.
func e4Measured(rows []bench.Row, hosts string) map[string]bench.Row {
	m := map[string]bench.Row{}
	for _, r := range rows {
		if r.Bench == "contention" && r.Case == "E4 model" {
			break
		}
		if r.Bench == "contention" && r.Case == "E4" && r.Params["hosts"] == hosts {
			m[r.Target+"|"+r.Metric] = r
		}
	}
	return m
}

// e2At is E2's calibration at rate from its rows (the medians and the
// stage-out's fit), and whether rows have it whole.
func e2At(rows []bench.Row, rate string) (ModelCalibration, bool) {
	cal := ModelCalibration{Rate: rate}
	got := map[string]float64{}
	for _, r := range rows {
		if r.Bench == "model" && r.Case == "E2 calibration" && r.Params["link"] == rate {
			key := r.Target + "|" + r.Metric
			if r.Target == "stage-out" && r.Params["probe"] != "fit" {
				continue
			}
			if _, dup := got[key]; !dup {
				got[key] = r.Value
			}
		}
	}
	for _, k := range []string{"rsa1 → shared@1g|iperf3", "ram@1g|write", "shared@1g|per file", "ram@1g|per file", "stage-out|fixed", "stage-out|per file", "stage-out|rate"} {
		if _, ok := got[k]; !ok {
			return cal, false
		}
	}
	cal.SharedLink = got["rsa1 → shared@1g|iperf3"] * 1e6
	cal.RSAWrite = got["ram@1g|write"] * (1 << 20)
	cal.DirectCreate = got["shared@1g|per file"] / 1e3
	cal.RSACreate = got["ram@1g|per file"] / 1e3
	cal.StageFixed = got["stage-out|fixed"]
	cal.StagePerFile = got["stage-out|per file"] / 1e3
	cal.StageRate = got["stage-out|rate"] * (1 << 20)
	return cal, true
}

// e4Sim is the simulator's prediction of one E4 host count, model its
// two-term row (whose params carry the run's calibration), e2 the rest.
func e4Sim(ctx context.Context, model bench.Row, e2 ModelCalibration, measured map[string]bench.Row) ([]bench.Row, error) {
	p := model.Params
	hosts, err1 := strconv.Atoi(p["hosts"])
	ranks, err2 := strconv.Atoi(p["ranks"])
	size, err3 := strconv.ParseInt(p["size"], 10, 64)
	createMs, err4 := strconv.ParseFloat(p["create_ms"], 64)
	linkMbit, err5 := strconv.ParseFloat(p["link_Mbit"], 64)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return nil, fmt.Errorf("E4's model row %v: %w", p, err)
	}
	var revoke time.Duration
	for _, m := range measured {
		if d, err := time.ParseDuration(m.Params["revoke"]); err == nil {
			revoke = d
			break
		}
	}
	if revoke == 0 {
		return nil, nil // no measured cell to read the shim's revoke from
	}
	create := createMs / 1e3
	link := linkMbit * 1e6 / 8
	// RSA as E2 measured it; the shared file system as this run did,
	// contended.
	cfg := SimConfig(e2, ModelCell{Ranks: ranks, Size: size})
	cfg.FS = sim.SharedFS{Bandwidth: link, NodeBandwidth: link, CreateRate: 1 / create, HostContention: revoke.Seconds() / create}
	pr, err := sim.Predict(ctx, cfg, sim.Probe{Nodes: hosts, Files: ranks, Bytes: int64(ranks) * size})
	if err != nil {
		return nil, fmt.Errorf("E4's simulator at %d hosts: %w", hosts, err)
	}
	params := maps.Clone(p)
	params["revoke"] = revoke.String()
	why := "rsa-lab sim, set from this run's iperf3 and timed creates and the shim's revoke, and E2's RAMDISK and stage-out at 1 Gbit/s: "
	row := func(target, metric string, v float64, note string) bench.Row {
		r := bench.Row{Bench: "contention", Case: "E4 sim", Target: target, Params: maps.Clone(params), Metric: metric, Unit: "s", Value: v, Runs: []float64{v}, Note: why + note}
		if m, ok := measured[target+"|"+metric]; ok {
			r.Source("E4, measured median", m.Value, "s")
		}
		return r
	}
	return []bench.Row{
		row("shared@1g", "hold", pr.FSOutput, "the creates, each dearer by revoke × (1 − 1/k), then the bytes over the link"),
		row("ram@1g", "hold", pr.RSAOutput, "the RAMDISK's creates, then the bytes over k links"),
		row("ram@1g", "verified", pr.Verified, "RSA's hold, then the stage-out: its fixed cost, its files (an uncontended create each), its bytes"),
	}, nil
}
