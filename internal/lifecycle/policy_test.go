package lifecycle

import (
	"math"
	"testing"
	"time"
)

func TestStageInSize(t *testing.T) {
	cases := []struct {
		name                   string
		capacity, nodeCapacity int64
		want                   int64
	}{
		{"explicit capacity", 6 << 30, 60 << 30, 6 << 30},
		{"explicit capacity above one node's", 100 << 30, 60 << 30, 100 << 30},
		{"by proportion: one node's share", 0, 60 << 30, 60 << 30},
		{"by proportion, no node known", 0, 0, 0},
	}
	for _, c := range cases {
		if got := StageInSize(c.capacity, c.nodeCapacity); got != c.want {
			t.Errorf("%s: StageInSize(%d, %d) = %d, want %d", c.name, c.capacity, c.nodeCapacity, got, c.want)
		}
	}
}

func TestStageInTime(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tomorrow := now.Add(24 * time.Hour)
	const lead, gib = 10 * time.Minute, 1 << 30
	cases := []struct {
		name  string
		start time.Time
		lead  time.Duration
		size  int64
		rate  float64
		want  time.Time // zero: at once
	}{
		{"start unknown", time.Time{}, lead, 60 * gib, gib, time.Time{}},
		{"due soon", now.Add(5 * time.Minute), lead, 60 * gib, gib, time.Time{}},
		{"due tomorrow, one node's share", tomorrow, lead, 60 * gib, gib, tomorrow.Add(-lead - 60*time.Second)},
		{"due tomorrow, explicit capacity", tomorrow, lead, 6 * gib, gib, tomorrow.Add(-lead - 6*time.Second)},
		{"nothing to copy", tomorrow, lead, 0, gib, tomorrow.Add(-lead)},
		{"no lead", tomorrow, 0, 60 * gib, gib, time.Time{}},
		{"negative lead", tomorrow, -time.Minute, 60 * gib, gib, time.Time{}},
		{"rate unknown", tomorrow, lead, 60 * gib, 0, time.Time{}},
		{"rate negative", tomorrow, lead, 60 * gib, -1, time.Time{}},
		{"rate not a number", tomorrow, lead, 60 * gib, math.NaN(), time.Time{}},
		{"begins exactly now", now.Add(lead + time.Second), lead, gib, gib, time.Time{}},
		{"begins a nanosecond after now", now.Add(lead + time.Second + 1), lead, gib, gib, now.Add(1)},
		// 1 byte at 3 B/s is 333,333,333.3 ns: rounded up, not down.
		{"fill time rounds up", tomorrow, lead, 1, 3, tomorrow.Add(-lead - 333333334)},
		// A fill longer than a Duration holds begins at once too.
		{"fill beyond a Duration", tomorrow, lead, math.MaxInt64, 1e-9, time.Time{}},
		{"start in the past", now.Add(-time.Hour), lead, 60 * gib, gib, time.Time{}},
	}
	for _, c := range cases {
		got := StageInTime(c.start, now, c.lead, c.size, c.rate)
		if !got.Equal(c.want) {
			t.Errorf("%s: stage-in at %v, want %v", c.name, got, c.want)
		}
		if !got.IsZero() && !got.After(now) {
			t.Errorf("%s: stage-in at %v, not after now (%v), yet not zero", c.name, got, now)
		}
	}
}
