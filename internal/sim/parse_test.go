package sim

import (
	"context"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want float64 // bytes/s; 0: an error
	}{
		{"943Mbit", 943e6 / 8},
		{"1GbE", 1e9 / 8},
		{"10Gbit/s", 10e9 / 8},
		{"41M", 41 * mib},
		{"112MiB/s", 112 * mib},
		{"1.5G", 1.5 * gib},
		{"fast", 0},
		{"-3M", 0},
		{"0", 0},
		{"Mbit", 0},
	}
	for _, tt := range tests {
		got, err := ParseRate(tt.in)
		switch {
		case tt.want == 0 && err == nil:
			t.Errorf("ParseRate(%q) = %g, want an error", tt.in, got)
		case tt.want != 0 && (err != nil || math.Abs(got-tt.want) > 1e-6):
			t.Errorf("ParseRate(%q) = %g, %v; want %g", tt.in, got, err, tt.want)
		}
	}
}

func TestParseDist(t *testing.T) {
	tests := []struct {
		in       string
		mean     float64
		lo, hi   float64 // every draw within
		wantErr  bool
		constant bool
	}{
		{in: "2M", mean: 2 * mib, lo: 2 * mib, hi: 2 * mib, constant: true},
		{in: "0", mean: 0, lo: 0, hi: 0, constant: true},
		{in: "uniform:1M-3M", mean: 2 * mib, lo: mib, hi: 3 * mib},
		{in: "exp:64M", mean: 64 * mib, lo: 0, hi: math.Inf(1)},
		{in: "uniform:3M-1M", wantErr: true},
		{in: "uniform:1M", wantErr: true},
		{in: "exp:0", wantErr: true},
		{in: "normal:1M", wantErr: true},
		{in: "lots", wantErr: true},
	}
	for _, tt := range tests {
		d, err := ParseDist(tt.in)
		if tt.wantErr {
			if err == nil {
				t.Errorf("ParseDist(%q) accepted", tt.in)
			}
			continue
		}
		if err != nil {
			t.Fatalf("ParseDist(%q): %v", tt.in, err)
		}
		if d.Mean() != tt.mean || d.random() == tt.constant {
			t.Errorf("%q: mean %g random %v; want %g, %v", tt.in, d.Mean(), d.random(), tt.mean, !tt.constant)
		}
		r := rand.New(rand.NewPCG(1, 2))
		sum := 0.0
		const n = 20000
		for range n {
			x := float64(d.draw(r))
			if x < tt.lo || x > tt.hi {
				t.Fatalf("%q drew %g, outside [%g, %g]", tt.in, x, tt.lo, tt.hi)
			}
			sum += x
		}
		if m := sum / n; math.Abs(m-tt.mean) > 0.03*tt.mean {
			t.Errorf("%q: sample mean %g, want about %g", tt.in, m, tt.mean)
		}
	}
}

func TestParseSweep(t *testing.T) {
	axes, err := ParseSweep([]string{"rsa-nodes=4,8,16", "ram=32G,64G", "link=943Mbit, 10Gbit", "proportion=64"})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, a := range axes {
		keys = append(keys, a.Key+"="+strings.Join(a.Values, ","))
	}
	if want := []string{"rsa-nodes=4,8,16", "ram=32G,64G", "link=943Mbit,10Gbit", "proportion=64"}; !slices.Equal(keys, want) {
		t.Errorf("axes %v, want %v", keys, want)
	}
	for _, bad := range [][]string{{"rsa-nodes"}, {"cpus=4"}, {"ram=lots"}, {"proportion=0"}, {"rsa-nodes=1", "rsa-nodes=2"}, {"link="}} {
		if _, err := ParseSweep(bad); err == nil {
			t.Errorf("ParseSweep(%q) accepted", bad)
		}
	}
}

// A sweep runs every combination, first axis slowest, and each point is
// the run its values describe.
func TestSweep(t *testing.T) {
	trace := lublinHead(t, 300)
	open := func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(trace)), nil }
	axes := []Axis{{Key: "rsa-nodes", Values: []string{"1", "4"}}, {Key: "proportion", Values: []string{"16", "128"}}}
	c := Defaults()
	runs, err := Sweep(t.Context(), func(ctx context.Context, c Config) (*Result, error) { return RunTrace(ctx, open, c) }, c, axes)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range runs {
		got = append(got, strings.Join(r.Values, "/"))
	}
	if want := []string{"1/16", "1/128", "4/16", "4/128"}; !slices.Equal(got, want) {
		t.Fatalf("points %v, want %v", got, want)
	}
	c.RSA.Nodes, c.RSA.Proportion = 4, 16
	direct := run(t, trace, c)
	if p := runs[2].Result; p.IONodeHours != direct.IONodeHours || p.RAMTotal != 4*c.RSA.RAM {
		t.Errorf("point 4/16: %g I/O node-hours, %d bytes of RAM; a direct run gives %g, %d",
			p.IONodeHours, p.RAMTotal, direct.IONodeHours, direct.RAMTotal)
	}
}

func TestSeries(t *testing.T) {
	s := newSeries()
	s.set(0, 2)
	s.set(secondsD(30), 4) // 2 for 30 s, then 4
	end := secondsD(90)
	if s.integrate(end); s.total != 2*30+4*60 {
		t.Errorf("integral %g, want %d", s.total, 2*30+4*60)
	}
	p := s.points(end)
	if len(p.Y) != 2 || p.Y[0] != 3 || p.Y[1] != 4 {
		t.Errorf("per-minute means %v, want [3 4]", p.Y)
	}
	// A long series stays within maxBins and keeps its integral.
	long := newSeries()
	for i := range 5000 {
		long.set(secondsD(i*600), float64(i%2))
	}
	last := secondsD(5000 * 600)
	if long.integrate(last); math.Abs(long.total/last.Seconds()-0.5) > 1e-3 {
		t.Errorf("long mean %g, want 0.5", long.total/last.Seconds())
	}
	if n := len(long.points(last).X); n > maxBins {
		t.Errorf("%d bins, want at most %d", n, maxBins)
	}
	if long.peak != 1 {
		t.Errorf("peak %g, want 1", long.peak)
	}
}
