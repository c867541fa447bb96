// Package units parses and prints the sizes and durations users type: RAM
// capacities ("64G", "512MiB") and delays ("300", "5m"). It owns no state.
package units

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

var sizeSuffixes = []struct {
	suffix string
	mult   int64
}{
	{"TIB", 1 << 40}, {"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10},
	{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10},
	{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1},
}

// ParseSize reads a byte count such as "64G", "1.5TiB", "4096". Units are
// binary (G = 2^30), as RAM is sold and as tmpfs counts.
func ParseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	if t == "" {
		return 0, fmt.Errorf("empty size")
	}
	mult := int64(1)
	for _, u := range sizeSuffixes {
		if strings.HasSuffix(t, u.suffix) {
			mult = u.mult
			t = strings.TrimSpace(strings.TrimSuffix(t, u.suffix))
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || f*float64(mult) > float64(1<<62) {
		return 0, fmt.Errorf("%q is not a size (write e.g. 512M, 64G or 1.5T)", s)
	}
	return int64(f * float64(mult)), nil
}

// FormatSize prints n bytes the way ParseSize reads them back.
func FormatSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	units := "KMGTPE"
	v, i := float64(n)/unit, 0
	for v >= unit && i < len(units)-1 {
		v /= unit
		i++
	}
	if v >= 100 {
		return fmt.Sprintf("%.0f%c", v, units[i])
	}
	return fmt.Sprintf("%.1f%c", v, units[i])
}

// ParseDuration reads a delay: a Go duration ("5m", "90s") or a plain number
// of seconds, as the thesis' RSA_DELAY is written.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if n, err := strconv.ParseUint(t, 10, 32); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	// Days, which Go's durations lack: retention periods are given in them.
	if days, ok := strings.CutSuffix(t, "d"); ok {
		if n, err := strconv.ParseUint(days, 10, 16); err == nil {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(t)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration (write seconds, e.g. 300, or 5m, 90s, 30d)", s)
	}
	return d, nil
}
