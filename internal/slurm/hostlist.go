package slurm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds of an expanded host list. Slurm hands RSA the node list of a job
// (squeue, the prolog's SLURM_JOB_NODELIST), but its text is not trusted:
// "n[0-999999999]" is a few bytes that would expand to a billion names.
const (
	// maxHosts is above the node count of the largest machines Slurm
	// runs (Fugaku: 158,976 nodes).
	maxHosts = 1 << 18
	// maxHostName is the longest name of a DNS host (RFC 1035 allows
	// 253 characters; 255 bytes on the wire).
	maxHostName = 255
)

// ExpandHosts expands a Slurm host list such as "n[1-3,07],gpu2" into
// names. Ranges keep their zero padding ("n[01-03]" is n01 n02 n03). A list
// that would expand to more than maxHosts names, or to a name that is not
// a host name (longer than maxHostName bytes; empty, "." or ".."; with a
// '/', ',', bracket, space or control character) is refused before it is
// expanded.
func ExpandHosts(list string) ([]string, error) { return ExpandHostsMax(list, maxHosts) }

// ExpandHostsMax is ExpandHosts refusing a list of more than limit names
// (at most maxHosts), before it is expanded, with a *TooManyHostsError.
func ExpandHostsMax(list string, limit int) ([]string, error) {
	limit = min(limit, maxHosts)
	var out []string
	for _, item := range splitTop(list) {
		if item == "" {
			continue
		}
		if item == "." || item == ".." {
			return nil, fmt.Errorf("host list %s: %q is not a host name", quoteShort(list), item)
		}
		names, err := expand(item, limit-len(out), maxHostName)
		if errors.Is(err, errTooMany) {
			return nil, &TooManyHostsError{List: list, Limit: limit}
		}
		if err != nil {
			return nil, fmt.Errorf("host list %s: %w", quoteShort(list), err)
		}
		out = append(out, names...)
	}
	return out, nil
}

// TooManyHostsError is ExpandHostsMax's error for a list of more names
// than its bound.
type TooManyHostsError struct {
	List  string
	Limit int
}

func (e *TooManyHostsError) Error() string {
	return fmt.Sprintf("host list %s: more than %d host names", quoteShort(e.List), e.Limit)
}

// errTooMany is expand's error for more names than it has room for.
var errTooMany = errors.New("too many host names")

// expand expands one item of a host list ("n[1-3]x[2,4]") into at most
// room names of at most maxLen bytes each, checking both before it
// allocates.
func expand(item string, room, maxLen int) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if len(item) > maxLen {
			return nil, fmt.Errorf("a host name with %s would be longer than %d bytes", quoteShort(item), maxHostName)
		}
		if err := checkChars(item); err != nil {
			return nil, err
		}
		if room < 1 {
			return nil, errTooMany
		}
		return []string{item}, nil
	}
	closeAt := strings.IndexByte(item, ']')
	if closeAt < open {
		return nil, fmt.Errorf("unbalanced '['")
	}
	prefix, body, suffix := item[:open], item[open+1:closeAt], item[closeAt+1:]
	// A range adds at least one digit: the prefix must leave room for it
	// (which also bounds the recursion into the suffix).
	if len(prefix)+1 > maxLen {
		return nil, fmt.Errorf("a host name of %s would be longer than %d bytes", quoteShort(item), maxHostName)
	}
	if err := checkChars(prefix); err != nil {
		return nil, err
	}
	rest, restLen := []string{""}, 0
	if suffix != "" {
		var err error
		if rest, err = expand(suffix, room, maxLen-len(prefix)-1); err != nil {
			return nil, err
		}
		for _, s := range rest {
			restLen = max(restLen, len(s))
		}
	}
	type span struct{ a, b, pad int }
	var spans []span
	count := 0
	for _, r := range strings.Split(body, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := number(lo)
		b, err2 := number(hi)
		if err1 != nil || err2 != nil || b < a {
			return nil, fmt.Errorf("bad range %s", quoteShort(r))
		}
		// b-a+1 cannot overflow: a and b are at most 9 digits.
		n := b - a + 1
		if n > (room-count)/len(rest) {
			return nil, errTooMany
		}
		count += n * len(rest)
		if len(prefix)+max(len(lo), len(strconv.Itoa(b)))+restLen > maxLen {
			return nil, fmt.Errorf("a host name of %s would be longer than %d bytes", quoteShort(item), maxHostName)
		}
		spans = append(spans, span{a, b, len(lo)})
	}
	out := make([]string, 0, count)
	for _, s := range spans {
		for i := s.a; i <= s.b; i++ {
			for _, r := range rest {
				out = append(out, fmt.Sprintf("%s%0*d%s", prefix, s.pad, i, r))
			}
		}
	}
	return out, nil
}

// number reads the digits of one end of a range. Slurm writes at most a
// few; nine keep every count and sum in range of an int.
func number(s string) (int, error) {
	if s == "" || len(strings.TrimLeft(s, "0")) > 9 || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a node number", s)
	}
	return strconv.Atoi(s)
}

// checkChars refuses what cannot be part of a host name: RSA finds a
// node's mount namespace by a file named after the node, and joins names
// into lists with ','.
func checkChars(s string) error {
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return fmt.Errorf("%q is not UTF-8", s)
			}
		case r == '/', r == ',', r == '[', r == ']', unicode.IsSpace(r), unicode.IsControl(r):
			return fmt.Errorf("%q has %q, which no host name has", s, r)
		}
	}
	return nil
}

// quoteShort quotes a host list for an error message, cut short: a list
// can be long.
func quoteShort(s string) string {
	const n = 80
	if len(s) <= n {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:n]) + "…"
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
