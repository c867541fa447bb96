package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/rsa-hpc/rsa/internal/units"
)

// Dist is a size per compute node: fixed, or drawn per job.
type Dist struct {
	kind distKind
	a, b float64 // bytes: the value; the bounds; the mean
}

type distKind int

const (
	fixed distKind = iota
	uniform
	exponential
)

// Fixed is always n bytes.
func Fixed(n int64) Dist { return Dist{kind: fixed, a: float64(n)} }

// ParseDist reads a size ("2M"), "uniform:MIN-MAX" or "exp:MEAN".
func ParseDist(s string) (Dist, error) {
	kind, arg, ok := strings.Cut(s, ":")
	if !ok {
		n, err := units.ParseSize(s)
		if err != nil {
			return Dist{}, fmt.Errorf("size per node: %w; or write uniform:MIN-MAX or exp:MEAN", err)
		}
		return Fixed(n), nil
	}
	switch kind {
	case "uniform":
		lo, hi, ok := strings.Cut(arg, "-")
		a, err1 := units.ParseSize(lo)
		b, err2 := units.ParseSize(hi)
		if !ok || err1 != nil || err2 != nil || a > b {
			return Dist{}, fmt.Errorf("%q: write uniform:MIN-MAX with MIN <= MAX, e.g. uniform:1M-4G", s)
		}
		return Dist{kind: uniform, a: float64(a), b: float64(b)}, nil
	case "exp":
		m, err := units.ParseSize(arg)
		if err != nil || m <= 0 {
			return Dist{}, fmt.Errorf("%q: write exp:MEAN with a size above 0, e.g. exp:256M", s)
		}
		return Dist{kind: exponential, a: float64(m)}, nil
	}
	return Dist{}, fmt.Errorf("%q: write a size (2M), uniform:MIN-MAX or exp:MEAN", s)
}

// random reports whether drawing needs a random source.
func (d Dist) random() bool { return d.kind != fixed }

// draw picks one job's bytes per node.
func (d Dist) draw(r *rand.Rand) int64 {
	var x float64
	switch d.kind {
	case uniform:
		x = d.a + r.Float64()*(d.b-d.a)
	case exponential:
		x = r.ExpFloat64() * d.a
	default:
		x = d.a
	}
	return int64(math.Min(x, 1<<50))
}

// Mean is the distribution's mean in bytes.
func (d Dist) Mean() float64 {
	if d.kind == uniform {
		return (d.a + d.b) / 2
	}
	return d.a
}

func (d Dist) String() string {
	switch d.kind {
	case uniform:
		return fmt.Sprintf("uniform:%s-%s", units.FormatSize(int64(d.a)), units.FormatSize(int64(d.b)))
	case exponential:
		return "exp:" + units.FormatSize(int64(d.a))
	}
	return units.FormatSize(int64(d.a))
}
