package rsatest

import (
	"testing"
)

func TestJobID(t *testing.T) {
	for _, c := range []struct{ out, want string }{
		{"42\n", "42"},
		{"42;cluster\n", "42"},
		{"", ""},
	} {
		if got := JobID(c.out); got != c.want {
			t.Errorf("JobID(%q) = %q, want %q", c.out, got, c.want)
		}
	}
}

func TestEnded(t *testing.T) {
	for state, want := range map[string]bool{"COMPLETED": true, "CANCELLED": true, "NODE_FAIL": true, "RUNNING": false, "PENDING": false, "": false} {
		if got := Ended(state); got != want {
			t.Errorf("Ended(%q) = %v, want %v", state, got, want)
		}
	}
}
