package sim

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rsa-hpc/rsa/internal/units"
)

// ParseRate reads a speed in bytes per second: a size per second in RSA's
// binary units ("41M", "112MiB/s"), or a link speed in decimal bits as
// networks are sold ("943Mbit", "10Gbit", "1GbE" = 1 Gbit/s of line rate).
func ParseRate(s string) (float64, error) {
	t := strings.TrimSuffix(strings.TrimSpace(s), "/s")
	low := strings.ToLower(t)
	for _, u := range []struct {
		suffix string
		bits   float64
	}{{"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"gbe", 1e9}} {
		if strings.HasSuffix(low, u.suffix) {
			f, err := strconv.ParseFloat(strings.TrimSpace(t[:len(t)-len(u.suffix)]), 64)
			if err != nil || f <= 0 {
				break
			}
			return f * u.bits / 8, nil
		}
	}
	n, err := units.ParseSize(t)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a speed: write bytes per second (41M, 112MiB/s) or bits (943Mbit, 10Gbit, 1GbE)", s)
	}
	return float64(n), nil
}

// FormatRate prints bytes per second in MiB/s, the unit of the thesis' tables.
func FormatRate(r float64) string {
	if r >= 10*gib {
		return fmt.Sprintf("%.1f GiB/s", r/gib)
	}
	return fmt.Sprintf("%.1f MiB/s", r/mib)
}
