package target

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// FopStat is one file operation's count and mean latency at shared@1g's
// brick over an interval of its volume profile.
type FopStat struct {
	Calls int64
	Avg   time.Duration
}

// SharedProfile turns shared@1g's volume profile on (gluster volume
// profile start: the brick counts and times every file operation) and
// returns what reads its counts since the read before (profile info
// incremental; the first read, those since it was turned on) and what
// turns it off again.
func SharedProfile(ctx context.Context, c Config) (interval func(context.Context) (map[string]FopStat, error), stop func() error, err error) {
	c = c.withDefaults()
	l := c.shared()
	gl := func(ctx context.Context, args ...string) (string, error) {
		return l.inServer(ctx, append([]string{"gluster", "--mode=script", "volume", "profile", sharedVol}, args...)...)
	}
	if _, err := gl(ctx, "start"); err != nil {
		return nil, nil, fmt.Errorf("shared@1g's profile: %w", err)
	}
	stop = func() error {
		_, err := gl(context.WithoutCancel(ctx), "stop")
		return err
	}
	interval = func(ctx context.Context) (map[string]FopStat, error) {
		out, err := gl(ctx, "info", "incremental")
		if err != nil {
			return nil, fmt.Errorf("shared@1g's profile: %w", err)
		}
		return parseProfile(out)
	}
	return interval, stop, nil
}

// profileRow is a row of a profile's table: %-latency, average, minimum
// and maximum latency (in ns from GlusterFS 10, us before), calls, the
// operation.
var profileRow = regexp.MustCompile(`^\s*[\d.]+\s+([\d.]+) (ns|us)\s+[\d.]+ (?:ns|us)\s+[\d.]+ (?:ns|us)\s+(\d+)\s+([A-Z_]+)\s*$`)

// parseProfile reads the interval tables of gluster volume profile info
// incremental, every brick's summed (a mean latency weighted by calls).
// An interval with no operations has no table: no stats.
func parseProfile(out string) (map[string]FopStat, error) {
	stats := map[string]FopStat{}
	in := false
	for line := range strings.Lines(out) {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "Interval ") && strings.HasSuffix(t, "Stats:"):
			in = true
			continue
		case strings.HasPrefix(t, "Cumulative Stats:"), strings.HasPrefix(t, "Brick:"):
			in = false
			continue
		}
		m := profileRow.FindStringSubmatch(line)
		if !in || m == nil {
			continue
		}
		avg, err1 := strconv.ParseFloat(m[1], 64)
		calls, err2 := strconv.ParseInt(m[3], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("gluster's profile row %q: not latency and calls", t)
		}
		unit := time.Nanosecond
		if m[2] == "us" {
			unit = time.Microsecond
		}
		s := stats[m[4]]
		total := float64(s.Avg)*float64(s.Calls) + avg*float64(unit)*float64(calls)
		s.Calls += calls
		if s.Calls > 0 {
			s.Avg = time.Duration(total / float64(s.Calls))
		}
		stats[m[4]] = s
	}
	return stats, nil
}
