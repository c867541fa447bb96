package sim

import (
	"math"
	"testing"
	"time"
)

func TestPoolShare(t *testing.T) {
	tests := []struct {
		name     string
		capacity float64
		flows    []flow // weight and cap
		want     []float64
	}{
		{"equal", 90, []flow{{weight: 1}, {weight: 1}, {weight: 1}}, []float64{30, 30, 30}},
		{"by weight", 100, []flow{{weight: 1}, {weight: 3}}, []float64{25, 75}},
		{"a capped flow leaves the rest to others", 100, []flow{{weight: 1, cap: 10}, {weight: 1}, {weight: 1}}, []float64{10, 45, 45}},
		{"all capped below the pool", 100, []flow{{weight: 1, cap: 10}, {weight: 2, cap: 20}}, []float64{10, 20}},
		{"cap per weight decides the order", 100, []flow{{weight: 4, cap: 60}, {weight: 1, cap: 30}}, []float64{60, 30}},
		{"weighted with a cap", 100, []flow{{weight: 8, cap: 40}, {weight: 1}, {weight: 1}}, []float64{40, 30, 30}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &pool{capacity: tt.capacity}
			fs := make([]*flow, len(tt.flows))
			for i := range tt.flows {
				fs[i] = &tt.flows[i]
				p.flows = append(p.flows, fs[i])
			}
			p.share()
			sum := 0.0
			for i, f := range fs {
				if math.Abs(f.rate-tt.want[i]) > 1e-9 {
					t.Errorf("flow %d: rate %g, want %g", i, f.rate, tt.want[i])
				}
				sum += f.rate
			}
			if sum > tt.capacity+1e-9 {
				t.Errorf("rates sum to %g, more than the pool's %g", sum, tt.capacity)
			}
		})
	}
}

// Processor sharing with a known answer: A needs 100 units alone on a
// 10/s pool (10 s); B joins at 4 s needing 30. They share 5/s each: B is
// done at 4+6 = 10 s, A has 100-40-30 = 30 left and ends at 13 s.
func TestTransferSharing(t *testing.T) {
	s := &sim{}
	p := &pool{capacity: 10}
	ends := map[string]time.Duration{}
	s.start(&transfer{steps: []step{poolStep(p, 100, 1, 0)}, done: func() { ends["A"] = s.clock.now }})
	s.clock.after(4*time.Second, func() {
		s.start(&transfer{steps: []step{poolStep(p, 30, 1, 0)}, done: func() { ends["B"] = s.clock.now }})
	})
	// C is stopped halfway: it must stop taking a share.
	c := s.start(&transfer{steps: []step{delayStep(time.Second), poolStep(p, 1000, 1, 0)}, done: func() { ends["C"] = s.clock.now }})
	s.clock.after(time.Second, func() { s.stop(c) })
	for e, ok := s.clock.pop(); ok; e, ok = s.clock.pop() {
		e.fn()
	}
	for name, want := range map[string]time.Duration{"A": 13 * time.Second, "B": 10 * time.Second} {
		if d := ends[name] - want; d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("%s ended at %v, want %v", name, ends[name], want)
		}
	}
	if at, ok := ends["C"]; ok {
		t.Errorf("stopped transfer C ended at %v", at)
	}
	if len(p.flows) != 0 {
		t.Errorf("%d flows left in the pool", len(p.flows))
	}
}

// Steps run in order; a transfer with nothing to do still ends through
// the clock, never inside the call that started it.
func TestTransferSteps(t *testing.T) {
	s := &sim{}
	p := &pool{capacity: 2}
	var end time.Duration
	s.start(&transfer{steps: []step{delayStep(3 * time.Second), poolStep(p, 0, 1, 0), poolStep(p, 4, 1, 0), delayStep(time.Second)},
		done: func() { end = s.clock.now }})
	done := false
	s.start(&transfer{done: func() { done = true }})
	if done {
		t.Fatal("an empty transfer ended inside start")
	}
	for e, ok := s.clock.pop(); ok; e, ok = s.clock.pop() {
		e.fn()
	}
	if !done {
		t.Error("an empty transfer never ended")
	}
	if end != 6*time.Second {
		t.Errorf("3 s + 4 units at 2/s + 1 s ended at %v, want 6s", end)
	}
}
