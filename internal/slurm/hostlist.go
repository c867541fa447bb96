package slurm

import (
	"fmt"
	"strconv"
	"strings"
)

// ExpandHosts expands a Slurm host list such as "n[1-3,07],gpu2" into
// names. Ranges keep their zero padding ("n[01-03]" is n01 n02 n03).
func ExpandHosts(list string) ([]string, error) {
	var out []string
	for _, item := range splitTop(list) {
		if item == "" {
			continue
		}
		open := strings.IndexByte(item, '[')
		if open < 0 {
			out = append(out, item)
			continue
		}
		closeAt := strings.IndexByte(item, ']')
		if closeAt < open {
			return nil, fmt.Errorf("host list %q: unbalanced '['", list)
		}
		prefix, body, suffix := item[:open], item[open+1:closeAt], item[closeAt+1:]
		rest := []string{""}
		if suffix != "" {
			var err error
			if rest, err = ExpandHosts(suffix); err != nil {
				return nil, err
			}
		}
		for _, r := range strings.Split(body, ",") {
			lo, hi, isRange := strings.Cut(r, "-")
			if !isRange {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil || b < a || b-a > 100000 {
				return nil, fmt.Errorf("host list %q: bad range %q", list, r)
			}
			for i := a; i <= b; i++ {
				for _, s := range rest {
					out = append(out, fmt.Sprintf("%s%0*d%s", prefix, len(lo), i, s))
				}
			}
		}
	}
	return out, nil
}

// splitTop splits at commas outside brackets.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
