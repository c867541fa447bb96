// Package textsafe makes strings that others control safe to print on a
// terminal. A job's error, log, paths and names come from users and the
// programs they run; printed raw, an escape sequence among them would reach
// the terminal of whoever reads them (an administrator, as root) and could
// rewrite the screen, retitle the window or, on some terminals, answer
// back as typed input.
//
// Escaped are every C0 control, DEL and C1 control, the Unicode controls
// that reorder or break what follows (bidirectional overrides and
// isolates, line and paragraph separators), and bytes that are not UTF-8.
// A code point is shown as \uNNNN, except \n, \r and \t, and a byte that is
// not UTF-8 as \xNN. A backslash is left as it is: the result is for
// reading, not for decoding. The escapes are those of JSON strings, so Text
// of encoding/json's output is still the same JSON.
package textsafe

import (
	"encoding/json"
	"io"
	"unicode/utf8"
)

// Line returns s fit to print as (part of) one line: every control
// character, newlines and tabs included, escaped.
func Line(s string) string { return escape(s, false) }

// Text returns s fit to print as lines of text: newlines and tabs are kept,
// every other control character escaped.
func Text(s string) string { return escape(s, true) }

func escape(s string, multiline bool) string {
	i := firstUnsafe(s, multiline)
	if i < 0 {
		return s // the usual case: nothing to escape, nothing to copy
	}
	b := make([]byte, 0, len(s)+16)
	b = append(b, s[:i]...)
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, '\\', 'x', hex[s[i]>>4], hex[s[i]&0xf])
		case !unsafe(r, multiline):
			b = append(b, s[i:i+n]...)
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r == '\t':
			b = append(b, `\t`...)
		default:
			b = append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
		}
		i += n
	}
	return string(b)
}

const hex = "0123456789abcdef"

// firstUnsafe is the index of the first byte of s to escape, or -1.
func firstUnsafe(s string, multiline bool) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return i
			}
		}
		if unsafe(r, multiline) {
			return i
		}
	}
	return -1
}

func unsafe(r rune, multiline bool) bool {
	switch {
	case multiline && (r == '\n' || r == '\t'):
		return false
	case r < 0x20, 0x7f <= r && r <= 0x9f: // C0, DEL, C1: terminal controls
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, 0x202a <= r && r <= 0x202e, 0x2066 <= r && r <= 0x2069:
		// Bidirectional controls make a terminal show text in another
		// order than it has: a path could read as another path.
		return true
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	}
	return false
}

// WriteJSON writes v as indented JSON and a newline. encoding/json leaves
// DEL, C1 and bidirectional controls raw; Text escapes them the JSON way,
// so that the JSON of a user's values is safe on a terminal too.
func WriteJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, Text(string(b))+"\n")
	return err
}
