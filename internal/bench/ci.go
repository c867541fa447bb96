package bench

import (
	"math"
	"math/rand/v2"
	"slices"
)

// MinCIRuns is the fewest runs a confidence interval is given for: below
// it a bootstrap resamples too few distinct sets to mean anything.
const MinCIRuns = 5

// GeoMean is the geometric mean of xs, all above 0 (NaN otherwise): the
// mean of ratios, which an arithmetic mean would bias upwards.
func GeoMean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var sum float64
	for _, x := range xs {
		if x <= 0 {
			return math.NaN()
		}
		sum += math.Log(x)
	}
	return math.Exp(sum / float64(len(xs)))
}

// Bootstrap is the percentile bootstrap's 95% confidence interval of
// stat over xs: stat of iters resamples of xs (with replacement, drawn
// from seed, so that a page rewritten from the same rows gives the same
// interval), their 2.5th and 97.5th percentiles. With fewer than
// MinCIRuns values it gives nil. For paired runs pass each pair's own
// value (a ratio of the pair's two jobs): resampling pairs keeps what
// the two jobs of a pair shared (the machine's state at the time).
func Bootstrap(xs []float64, stat func([]float64) float64, iters int, seed uint64) *[2]float64 {
	if len(xs) < MinCIRuns || iters < 1 {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, 0x5253415f4349)) // "RSA_CI"
	stats := make([]float64, iters)
	sample := make([]float64, len(xs))
	for i := range stats {
		for j := range sample {
			sample[j] = xs[rng.IntN(len(xs))]
		}
		stats[i] = stat(sample)
	}
	slices.Sort(stats)
	at := func(q float64) float64 { return stats[min(int(q*float64(iters)), iters-1)] }
	return &[2]float64{at(0.025), at(0.975)}
}
