package munge

import (
	"errors"
	"testing"
)

// parse reads unmunge --numeric's output; anything but a clean success
// with a uid and a gid is an error.
func TestParse(t *testing.T) {
	ok := "STATUS:          0\nENCODE_HOST:     10.0.0.7 (login1)\nENCODE_TIME:     1795452132\nTTL:             300\nUID:             1001\nGID:             100\nLENGTH:          5\n\nhello"
	c, err := parse([]byte(ok))
	if err != nil || c.UID != 1001 || c.GID != 100 || string(c.Payload) != "hello" || c.Host != "10.0.0.7" {
		t.Fatalf("parse: %+v, %v", c, err)
	}
	// A payload may hold blank lines of its own.
	c, err = parse([]byte("STATUS: 0\nUID: 1\nGID: 1\n\na\n\nb"))
	if err != nil || string(c.Payload) != "a\n\nb" {
		t.Fatalf("payload with blank lines: %+v, %v", c, err)
	}
	for name, out := range map[string]string{
		"refused":      "STATUS: 17\nUID: 1\nGID: 1\n\nx",
		"no uid":       "STATUS: 0\nGID: 1\n\nx",
		"uid not num":  "STATUS: 0\nUID: alice (1000)\nGID: 1\n\nx",
		"no payload":   "STATUS: 0\nUID: 1\nGID: 1\n",
		"empty output": "",
	} {
		if c, err := parse([]byte(out)); err == nil {
			t.Errorf("%s: parsed as %+v", name, c)
		}
	}
	if _, err := parse([]byte("STATUS: 15\nUID: 1\nGID: 1\n\nx")); !errors.Is(err, ErrInvalid) {
		t.Errorf("a refused credential is not ErrInvalid: %v", err)
	}
}

// Decode refuses what is not a credential before running anything.
func TestDecodeRefusesNonCredentials(t *testing.T) {
	m := Munge{Bin: "/nonexistent"}
	for _, c := range []string{"", "MUNGE:", "MUNGE:abc def", "munge:abc", "MUNGE:abc\n--socket=/x"} {
		if _, err := m.Decode(t.Context(), c); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: %v, want ErrInvalid without running unmunge", c, err)
		}
	}
}
