package sweep

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rsa-hpc/rsa/internal/units"
)

// ParseQDs reads a list of queue depths such as "1,2,4,8,16".
func ParseQDs(s string) ([]int, error) {
	var qds []int
	var errs []error
	for _, f := range listFields(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > maxQD {
			errs = append(errs, fmt.Errorf("queue depth %q: use a whole number from 1 to %d, e.g. 1,4,16", f, maxQD))
			continue
		}
		qds = append(qds, n)
	}
	if len(qds) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("no queue depths: write e.g. 1,4,16"))
	}
	return uniqueSorted(qds), errors.Join(errs...)
}

// ParseBlockSizes reads a list of block sizes such as "4K,64K,1M",
// binary units as everywhere in rsa (1K = 1024, as TMS counted too). An
// item FROM..TO stands for FROM and its doublings up to TO: "1K..32M" is
// the source's 16 sizes.
func ParseBlockSizes(s string) ([]int64, error) {
	var sizes []int64
	var errs []error
	for _, f := range listFields(s) {
		from, to, isRange := strings.Cut(f, "..")
		lo, err := parseBlockSize(from)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !isRange {
			sizes = append(sizes, lo)
			continue
		}
		hi, err := parseBlockSize(to)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if hi < lo {
			errs = append(errs, fmt.Errorf("block sizes %q: the range runs from the smaller size up, e.g. 1K..32M", f))
			continue
		}
		sizes = append(sizes, doubling(lo, hi)...)
	}
	if len(sizes) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("no block sizes: write e.g. 4K,64K,1M or 1K..32M"))
	}
	return uniqueSorted(sizes), errors.Join(errs...)
}

func parseBlockSize(s string) (int64, error) {
	n, err := units.ParseSize(s)
	if err != nil {
		return 0, fmt.Errorf("block size: %w", err)
	}
	if n < 512 || n > 1<<30 {
		return 0, fmt.Errorf("block size %q: use 512 bytes to 1G, e.g. 4K or 1M", s)
	}
	return n, nil
}

// ParseDevices reads a list of device names such as "ram-dev,disk-dev".
func ParseDevices(s string) ([]string, error) {
	var devs []string
	var errs []error
	for _, f := range listFields(s) {
		if strings.HasPrefix(f, "/") {
			errs = append(errs, fmt.Errorf("device %q: the sweep makes its own devices and overwrites them, so it takes no path; use %s",
				f, strings.Join(DeviceNames(), ",")))
			continue
		}
		if !slices.Contains(DeviceNames(), f) {
			errs = append(errs, fmt.Errorf("device %q: use %s", f, strings.Join(DeviceNames(), " or ")))
			continue
		}
		if !slices.Contains(devs, f) {
			devs = append(devs, f)
		}
	}
	if len(devs) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("no devices: write e.g. %s", strings.Join(DeviceNames(), ",")))
	}
	// Sweep in DeviceNames' order, whatever the order typed.
	order := DeviceNames()
	slices.SortFunc(devs, func(a, b string) int { return slices.Index(order, a) - slices.Index(order, b) })
	return devs, errors.Join(errs...)
}

// SizeLabel prints a block size the way the sweep's tables and rows name
// it: "512", "4K", "16M".
func SizeLabel(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// listFields splits a comma-separated list, ignoring spaces and empty
// items.
func listFields(s string) []string {
	var fields []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			fields = append(fields, f)
		}
	}
	return fields
}

func uniqueSorted[T int | int64](s []T) []T {
	slices.Sort(s)
	return slices.Compact(s)
}
