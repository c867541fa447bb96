package version

import "testing"

func TestCompatible(t *testing.T) {
	for _, c := range []struct {
		a, b string
		ok   bool
	}{
		{"0.1.0", "0.1.0", true},
		{"v0.1.0", "0.1.3+4.gabc1234", true},
		{"0.2.0", "0.1.0", true},
		{"0.1.0", "0.2.5-3-gabc1234", true},
		{"0.3.0", "0.1.0", false},
		{"0.1.0", "0.3.1", false},
		{"1.0.0", "0.9.0", false},
		{"dev", "0.1.0", true},
		{"0.1.0", "", true},
		{"0.1.0", "unknown (older than its version header)", true},
		{"0.x.0", "5.0.0", true},
	} {
		ok, why := Compatible(c.a, c.b)
		if ok != c.ok || ok != (why == "") {
			t.Errorf("Compatible(%q, %q) = %v, %q; want %v", c.a, c.b, ok, why, c.ok)
		}
	}
}
