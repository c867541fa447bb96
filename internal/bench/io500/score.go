package io500

import (
	"fmt"
	"math"

	"github.com/rsa-hpc/rsa/internal/bench"
)

// Result is what one phase measured.
type Result struct {
	Phase   string  `json:"phase"`
	Group   Group   `json:"group"`
	Value   float64 `json:"value"` // GiB/s (bandwidth) or kIOPS (metadata), as IO500 reports
	Unit    string  `json:"unit"`
	Seconds float64 `json:"seconds"` // the phase's own time, as its tool reports it
	// Find's counts: files it looked at (its rate's numerator) and files
	// that matched.
	Scanned int64 `json:"scanned,omitempty"`
	Matched int64 `json:"matched,omitempty"`
	// Retried is the error of a first attempt that failed, when the
	// phase ran a second time (Runner.Run says which may).
	Retried string `json:"retried,omitempty"`
}

// Unit is the unit IO500 reports a group's phases in.
func (g Group) Unit() string {
	if g == Bandwidth {
		return "GiB/s"
	}
	return "kIOPS"
}

// Score is IO500's score of a run: the geometric means of the bandwidth
// phases (GiB/s) and of the metadata phases with find (kIOPS), and the
// geometric mean of the two.
type Score struct {
	Bandwidth float64 `json:"bw"`
	Metadata  float64 `json:"md"`
	Total     float64 `json:"score"`
}

// ScoreOf scores results, which must hold every standard phase once,
// each above 0 (IO500 gives no score to a run missing one).
func ScoreOf(results []Result) (Score, error) {
	byPhase := make(map[string]Result, len(results))
	for _, r := range results {
		if _, dup := byPhase[r.Phase]; dup {
			return Score{}, fmt.Errorf("io500: phase %s twice in one run", r.Phase)
		}
		byPhase[r.Phase] = r
	}
	var bw, md []float64
	for _, p := range Phases {
		r, ok := byPhase[p.Name]
		if !ok {
			return Score{}, fmt.Errorf("io500: no result for phase %s: no score", p.Name)
		}
		if !(r.Value > 0) {
			return Score{}, fmt.Errorf("io500: phase %s measured %g %s: no score", p.Name, r.Value, r.Unit)
		}
		if p.Group == Bandwidth {
			bw = append(bw, r.Value)
		} else {
			md = append(md, r.Value)
		}
	}
	s := Score{Bandwidth: bench.GeoMean(bw), Metadata: bench.GeoMean(md)}
	s.Total = math.Sqrt(s.Bandwidth * s.Metadata)
	return s, nil
}
