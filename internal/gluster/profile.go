package gluster

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"time"
)

// FopStat is one file operation's count and mean latency over a volume's
// bricks, as their io-stats translators measured it.
type FopStat struct {
	Op    string        `json:"op"`    // Gluster's name of the operation: CREATE, WRITE, FSYNC...
	Calls int64         `json:"calls"` // how many the bricks served
	Mean  time.Duration `json:"mean"`  // their mean latency at the brick, weighted by calls
}

// ErrProfileOff is wrapped by Profile's error for a volume whose profile
// is not on.
var ErrProfileOff = errors.New("the volume's profile is off")

// ProfileOptions are the options that turn a volume's profile on (what
// gluster volume profile start sets): every brick counts and times each
// file operation it serves, for a little of its CPU.
func ProfileOptions() [][2]string {
	return [][2]string{{"diagnostics.latency-measurement", "on"}, {"diagnostics.count-fop-hits", "on"}}
}

// profileBrick is one brick of a profile's answer (volume profile NAME
// info cumulative or incremental): each operation's calls and mean
// latency since the profile was turned on (Cumulative) or since the read
// before (Interval). The CLI leaves out an operation no call made;
// GlusterFS 10 and 11 give latencies in nanoseconds.
type profileBrick struct {
	Name       string     `xml:"brickName"`
	Cumulative []brickFop `xml:"cumulativeStats>fopStats>fop"`
	Interval   []brickFop `xml:"intervalStats>fopStats>fop"`
}

// brickFop is one operation's line of a brick's table.
type brickFop struct {
	Name string  `xml:"name"`
	Hits int64   `xml:"hits"`
	Avg  float64 `xml:"avgLatency"`
}

// ProfileTable is which of a profile's tables to read.
type ProfileTable int

const (
	// Cumulative is since the profile was turned on (info cumulative).
	Cumulative ProfileTable = iota
	// Interval is since the read of an interval before, or since the
	// profile was turned on for the first (info incremental, which
	// starts the next interval).
	Interval
)

// ParseProfile reads the CLI's XML answer to volume profile NAME info
// cumulative or incremental (gluster --xml), table's figures summed over
// the bricks as Profile sums them. A refusal is an *Error, wrapping
// ErrProfileOff for a volume whose profile is off. For callers that run
// the CLI themselves (in another namespace).
func ParseProfile(out []byte, table ProfileTable) ([]FopStat, error) {
	o, err := parse([]string{"volume", "profile"}, out)
	if err != nil {
		return nil, profileError(err)
	}
	return o.profile(table), nil
}

// Profile is volume name's file operations since its profile was turned
// on (ProfileOptions), summed over its bricks, the most called first. A
// volume whose profile is off fails wrapping ErrProfileOff; an absent one,
// ErrNotFound. Read-only: the counts go on.
func (c *CLI) Profile(ctx context.Context, name string) ([]FopStat, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	o, err := c.run(ctx, "volume", "profile", name, "info", "cumulative")
	if err != nil {
		return nil, profileError(err)
	}
	return o.profile(Cumulative), nil
}

// profileError marks glusterd's refusal to read a profile that is off
// ("Profile on Volume NAME is not started") with ErrProfileOff.
func profileError(err error) error {
	if e := (*Error)(nil); errors.As(err, &e) && strings.Contains(e.Msg, "Profile on Volume") && strings.Contains(e.Msg, "not started") {
		return errors.Join(ErrProfileOff, err)
	}
	return err
}

// profile sums table over the bricks of a profile's answer.
func (o *cliOutput) profile(table ProfileTable) []FopStat {
	calls := map[string]int64{}
	ns := map[string]float64{}
	for _, b := range o.ProfileBricks {
		fops := b.Cumulative
		if table == Interval {
			fops = b.Interval
		}
		for _, f := range fops {
			if f.Hits <= 0 || f.Name == "" {
				continue
			}
			calls[f.Name] += f.Hits
			ns[f.Name] += f.Avg * float64(f.Hits)
		}
	}
	out := make([]FopStat, 0, len(calls))
	for op, n := range calls {
		out = append(out, FopStat{Op: op, Calls: n, Mean: time.Duration(math.Round(ns[op] / float64(n)))})
	}
	slices.SortFunc(out, func(a, b FopStat) int {
		return cmp.Or(cmp.Compare(b.Calls, a.Calls), strings.Compare(a.Op, b.Op))
	})
	return out
}
