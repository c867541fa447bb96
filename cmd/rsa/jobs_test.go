package main

import (
	"strings"
	"testing"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// confirmDiscard lets a user's discard through only when they type the
// job's number back on a terminal, asks nothing without one (and says to
// give --yes), and prints the daemon's error as one safe line.
func TestConfirmDiscard(t *testing.T) {
	j := &api.JobView{Job: job.Job{ID: 17, RSA: lifecycle.StageOutFailed, Error: "quota full\x1b[2J\nnext"}}
	cases := []struct {
		name     string
		input    string
		terminal bool
		want     string // "" lets it through
	}{
		{"the number typed back", "17\n", true, ""},
		{"the number without a newline", "17", true, ""},
		{"another number", "18\n", true, "not discarded"},
		{"yes typed", "yes\n", true, "not discarded"},
		{"nothing typed", "", true, "not discarded"},
		{"no terminal", "17\n", false, "--yes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out strings.Builder
			err := confirmDiscard(j, strings.NewReader(c.input), &out, c.terminal)
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("%v, want %q", err, c.want)
			}
			if strings.ContainsAny(out.String(), "\x1b") || strings.Count(out.String(), "\n") > 2 {
				t.Errorf("the prompt carries the daemon's text unchecked: %q", out.String())
			}
			if c.terminal && !strings.Contains(out.String(), "Type 17") {
				t.Errorf("the prompt does not say what to type: %q", out.String())
			}
		})
	}
}
