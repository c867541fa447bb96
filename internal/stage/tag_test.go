package stage

import "testing"

func TestHasTag(t *testing.T) {
	cases := []struct {
		env  string
		want bool
	}{
		{"PATH=/bin\x00RSA_STAGE_JOB=3\x00RSA_STAGE_DAEMON=/var/lib/rsa\x00", true},
		{"RSA_STAGE_JOB=3\x00RSA_STAGE_DAEMON=/run/other\x00", false}, // another daemon's staging
		{"RSA_STAGE_DAEMON=/var/lib/rsa\x00", false},
		{"RSA_STAGE_JOB=3\x00RSA_STAGE_DAEMON=/var/lib/rsa/x\x00", false},
		{"", false},
	}
	for _, c := range cases {
		if got := hasTag([]byte(c.env), "/var/lib/rsa"); got != c.want {
			t.Errorf("hasTag(%q) = %v, want %v", c.env, got, c.want)
		}
	}
}
