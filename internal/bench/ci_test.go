package bench

import (
	"math"
	"testing"
)

func TestMedianGeoMean(t *testing.T) {
	for _, tc := range []struct {
		xs          []float64
		median, geo float64
	}{
		{[]float64{3, 1, 2}, 2, math.Cbrt(6)},
		{[]float64{4, 1}, 2.5, 2},
		{[]float64{2}, 2, 2},
	} {
		if got := Median(tc.xs); got != tc.median {
			t.Errorf("Median(%v) = %v, want %v", tc.xs, got, tc.median)
		}
		if got := GeoMean(tc.xs); math.Abs(got-tc.geo) > 1e-12 {
			t.Errorf("GeoMean(%v) = %v, want %v", tc.xs, got, tc.geo)
		}
	}
	if !math.IsNaN(GeoMean(nil)) || !math.IsNaN(GeoMean([]float64{1, 0})) {
		t.Error("no values, or a ratio of 0: want NaN")
	}
}

func TestBootstrap(t *testing.T) {
	xs := []float64{0.9, 1.1, 1.0, 0.95, 1.05, 1.0, 0.98, 1.02, 1.01, 0.99}
	ci := Bootstrap(xs, GeoMean, 2000, 1)
	if ci == nil {
		t.Fatal("10 runs: no interval")
	}
	g := GeoMean(xs)
	if !(ci[0] <= g && g <= ci[1]) || ci[0] >= ci[1] {
		t.Errorf("interval %v does not hold the geometric mean %v, or is empty", *ci, g)
	}
	// Within the values' range, and narrower than it: a mean varies less
	// than the values it is taken of.
	if ci[0] < 0.9 || ci[1] > 1.1 || ci[1]-ci[0] >= 0.2 {
		t.Errorf("interval %v: want one inside [0.9, 1.1] and narrower than it", *ci)
	}
	if again := Bootstrap(xs, GeoMean, 2000, 1); *again != *ci {
		t.Errorf("the same seed gave %v, then %v", *ci, *again)
	}
	// Wider values, a wider interval.
	wide := make([]float64, len(xs))
	for i, x := range xs {
		wide[i] = math.Pow(x, 4)
	}
	if w := Bootstrap(wide, GeoMean, 2000, 1); w[1]-w[0] <= ci[1]-ci[0] {
		t.Errorf("values spread 4x as far (in logs) gave %v, no wider than %v", *w, *ci)
	}
	if Bootstrap(xs[:MinCIRuns-1], GeoMean, 2000, 1) != nil {
		t.Errorf("%d runs: want no interval", MinCIRuns-1)
	}
}
