package textsafe

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	cases := []struct {
		name, in, line, text string
	}{
		{"plain", "job 7: output staged out", "job 7: output staged out", "job 7: output staged out"},
		{"empty", "", "", ""},
		{"UTF-8 kept", "Größe 8 GiB → ok ✓ 日本", "Größe 8 GiB → ok ✓ 日本", "Größe 8 GiB → ok ✓ 日本"},
		{"U+FFFD itself kept", "a\ufffdb", "a\ufffdb", "a\ufffdb"},
		{"backslash kept", `C:\x1b`, `C:\x1b`, `C:\x1b`},
		{"clear screen", "\x1b[2J\x1b[Hok", `\u001b[2J\u001b[Hok`, `\u001b[2J\u001b[Hok`},
		{"OSC title, BEL", "\x1b]0;owned\x07", `\u001b]0;owned\u0007`, `\u001b]0;owned\u0007`},
		{"OSC 52 clipboard, ST", "\x1b]52;c;cm0gLXJmIC8=\x1b\\", `\u001b]52;c;cm0gLXJmIC8=\u001b\`, `\u001b]52;c;cm0gLXJmIC8=\u001b\`},
		{"carriage return overwrites", "fine\rERROR", `fine\rERROR`, `fine\rERROR`},
		{"newline and tab", "a\tb\nc", `a\tb\nc`, "a\tb\nc"},
		{"NUL and backspace", "a\x00b\bc", `a\u0000b\u0008c`, `a\u0000b\u0008c`},
		{"DEL", "a\x7fb", `a\u007fb`, `a\u007fb`},
		{"C1 CSI as UTF-8", "a\u009b2Jb", `a\u009b2Jb`, `a\u009b2Jb`},
		{"C1 NEL", "a\u0085b", `a\u0085b`, `a\u0085b`},
		{"raw C1 byte 0x9b is not UTF-8", "a\x9b2Jb", `a\x9b2Jb`, `a\x9b2Jb`},
		{"truncated UTF-8", "ab\xe2\x82", `ab\xe2\x82`, `ab\xe2\x82`},
		{"overlong slash", "\xc0\xaf", `\xc0\xaf`, `\xc0\xaf`},
		{"bidi override", "/home/u/\u202eexe.txt", `/home/u/\u202eexe.txt`, `/home/u/\u202eexe.txt`},
		{"bidi isolate", "a\u2066b\u2069", `a\u2066b\u2069`, `a\u2066b\u2069`},
		{"line separator", "a\u2028b", `a\u2028b`, `a\u2028b`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Line(c.in); got != c.line {
				t.Errorf("Line(%q) = %q, want %q", c.in, got, c.line)
			}
			if got := Text(c.in); got != c.text {
				t.Errorf("Text(%q) = %q, want %q", c.in, got, c.text)
			}
		})
	}
}

// TestJSON: Text leaves encoding/json's output the same JSON, so rsa can
// pass --json output through it (encoding/json leaves DEL, C1 and bidi
// controls raw).
func TestJSON(t *testing.T) {
	in := map[string]string{"error": "x\x1b[2J\u009b\x7f\u202e\n\ty", "path": "/ok"}
	b, err := json.MarshalIndent(in, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	safe := Text(string(b))
	if safe == string(b) {
		t.Fatalf("nothing escaped in %q", b)
	}
	var out map[string]string
	if err := json.Unmarshal([]byte(safe), &out); err != nil {
		t.Fatalf("Text broke the JSON: %v\n%s", err, safe)
	}
	if out["error"] != in["error"] || out["path"] != in["path"] {
		t.Errorf("Text changed the JSON's meaning: %q", out)
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "ok", "\x1b[2J", "a\nb\tc\r", "\x9b", "\u009b", "\u202e", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, fn := range []struct {
			name      string
			escape    func(string) string
			multiline bool
		}{{"Line", Line, false}, {"Text", Text, true}} {
			got := fn.escape(s)
			if !utf8.ValidString(got) {
				t.Fatalf("%s(%q) = %q: not UTF-8", fn.name, s, got)
			}
			for _, r := range got {
				if unsafe(r, fn.multiline) {
					t.Fatalf("%s(%q) = %q keeps %U", fn.name, s, got, r)
				}
			}
			if firstUnsafe(s, fn.multiline) < 0 && got != s {
				t.Fatalf("%s(%q) = %q changed a safe string", fn.name, s, got)
			}
			if !fn.multiline && strings.ContainsAny(got, "\n\t") {
				t.Fatalf("Line(%q) = %q is not one line", s, got)
			}
		}
	})
}
