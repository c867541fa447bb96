package engine

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A RAMDISK's profile, as the daemon writes it into its job's log at the
// teardown: ProfileHead on a line of its own, then a line an operation
// (OpStat.LogLine); or ProfileUnread with the reason. The job's log is
// the record a user and a benchmark read, so its form is kept here, once,
// for the writer and the reader (ParseProfile) alike.
const (
	ProfileHead   = "RAMDISK profile: the file operations its parts served, from its start to its teardown"
	ProfileUnread = "RAMDISK profile: not read"
)

// LogLine is o as a line of a job's log under ProfileHead: indented, its
// name, its calls and its mean in milliseconds to the microsecond.
func (o OpStat) LogLine() string {
	return fmt.Sprintf("  %-12s %10d calls, mean %.3f ms", o.Op, o.Calls, float64(o.Mean)/float64(time.Millisecond))
}

var opStatLine = regexp.MustCompile(`^\s+([A-Z_]+)\s+(\d+) calls, mean (\d+\.\d{3}) ms$`)

// ErrNoProfile is ParseProfile's error for a log that holds no profile.
var ErrNoProfile = errors.New("the job's log has no RAMDISK profile")

// ParseProfile reads the first RAMDISK profile in a job's log (its lines,
// each as rsa log prints it, a time before the text): the operations
// under the first ProfileHead, in their order, each to the microsecond
// its line gives. A teardown tried again writes another profile; the
// first is the RAMDISK's whole life. A log that says the profile was not
// read gives that line as the error; one with neither wraps ErrNoProfile.
func ParseProfile(lines []string) ([]OpStat, error) {
	for i, l := range lines {
		if strings.Contains(l, ProfileUnread) {
			return nil, fmt.Errorf("the job's log: %s", strings.TrimSpace(l))
		}
		if !strings.HasSuffix(l, ProfileHead) {
			continue
		}
		var ops []OpStat
		for _, op := range lines[i+1:] {
			m := opStatLine.FindStringSubmatch(op)
			if m == nil {
				break
			}
			n, err := strconv.ParseInt(m[2], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("the job's log: RAMDISK profile line %q: %w", op, err)
			}
			ms, err := strconv.ParseFloat(m[3], 64)
			if err != nil {
				return nil, fmt.Errorf("the job's log: RAMDISK profile line %q: %w", op, err)
			}
			ops = append(ops, OpStat{Op: m[1], Calls: n, Mean: time.Duration(math.Round(ms*1e3)) * time.Microsecond})
		}
		return ops, nil
	}
	return nil, ErrNoProfile
}
