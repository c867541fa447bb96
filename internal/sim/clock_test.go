package sim

import (
	"slices"
	"testing"
	"time"
)

func TestClockOrder(t *testing.T) {
	tests := []struct {
		name string
		at   []time.Duration // scheduling order
		want []int           // run order, as indexes into at
	}{
		{"by time", []time.Duration{30, 10, 20}, []int{1, 2, 0}},
		{"same time: first scheduled runs first", []time.Duration{5, 5, 5, 1}, []int{3, 0, 1, 2}},
		{"many", []time.Duration{9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 5}, []int{9, 8, 7, 6, 5, 4, 10, 3, 2, 1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c clock
			var got []int
			for i, at := range tt.at {
				c.at(at, event{fn: func() { got = append(got, i) }})
			}
			last := time.Duration(-1)
			for {
				e, ok := c.pop()
				if !ok {
					break
				}
				if c.now < last {
					t.Fatalf("clock went back from %v to %v", last, c.now)
				}
				last = c.now
				e.fn()
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("ran %v, want %v", got, tt.want)
			}
		})
	}
}

// An event scheduled in the past runs now, after what is already due now:
// the clock never goes back.
func TestClockPastIsNow(t *testing.T) {
	var c clock
	var got []string
	c.at(10, event{fn: func() {
		got = append(got, "a")
		c.at(3, event{fn: func() { got = append(got, "late@"+c.now.String()) }})
	}})
	c.at(10, event{fn: func() { got = append(got, "b") }})
	for e, ok := c.pop(); ok; e, ok = c.pop() {
		e.fn()
	}
	if want := []string{"a", "b", "late@10ns"}; !slices.Equal(got, want) {
		t.Errorf("ran %v, want %v", got, want)
	}
}

// Events scheduled while running keep time order with the rest.
func TestClockCascade(t *testing.T) {
	var c clock
	var got []time.Duration
	var tick func()
	tick = func() {
		got = append(got, c.now)
		if c.now < 40 {
			c.after(15, tick)
		}
	}
	c.at(0, event{fn: tick})
	c.at(20, event{fn: func() { got = append(got, -c.now) }})
	for e, ok := c.pop(); ok; e, ok = c.pop() {
		e.fn()
	}
	if want := []time.Duration{0, 15, -20, 30, 45}; !slices.Equal(got, want) {
		t.Errorf("ran at %v, want %v", got, want)
	}
}
