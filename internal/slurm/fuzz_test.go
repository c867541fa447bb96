package slurm

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/stage"
	"github.com/rsa-hpc/rsa/internal/textsafe"
)

// envLine is the daemon's check of what its paths hook hands to Slurm for
// the job's environment (internal/slurm/adapter): a job script that parses must
// pass it.
var envLine = regexp.MustCompile(`^RSA_[A-Z_]+=[^\x00-\x1f\x7f]*$`)

// FuzzParse: whatever a user writes in a job script, Parse returns either a
// request the daemon can act on, with printable, clean, absolute paths that
// survive the job record's JSON, or an error that names a line and is safe
// to print. The seeds are in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, script []byte) {
		r, ok, err := Parse(script)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line < 1 || !strings.Contains(err.Error(), fmt.Sprintf("line %d ", pe.Line)) {
				t.Fatalf("error %q names no line", err)
			}
			if lines := strings.Count(string(script), "\n") + 1; pe.Line > lines {
				t.Fatalf("error %q names line %d of a script of %d lines", err, pe.Line, lines)
			}
			if msg := err.Error(); textsafe.Line(msg) != msg {
				t.Fatalf("error %q is not safe to print", msg)
			}
			return
		}
		if !ok {
			return
		}
		s := r.Spec
		checkText := func(what, v string) {
			t.Helper()
			if !utf8.ValidString(v) {
				t.Fatalf("%s %q is not UTF-8", what, v)
			}
			for _, c := range v {
				if c < 0x20 || 0x7f <= c && c <= 0x9f {
					t.Fatalf("%s %q has the control character %U", what, v, c)
				}
			}
		}
		checkPath := func(what, p string, builtIn bool) {
			t.Helper()
			if p == "" || builtIn && stage.BuiltIn(p) {
				return
			}
			if !filepath.IsAbs(p) || filepath.Clean(p) != p {
				t.Fatalf("%s %q is not a clean absolute path", what, p)
			}
			checkText(what, p)
		}
		checkPath("input", s.Input, false)
		checkPath("output", s.Output, false)
		checkPath("stage_in", s.StageIn, true)
		checkPath("stage_out", s.StageOut, true)
		checkText("pool", r.Pool)
		if s.Input == "" && s.Output == "" && s.StageIn == "" {
			t.Fatalf("accepted a request with nothing to do: %+v", r)
		}
		if (s.Capacity > 0) != (r.Pool != "") {
			t.Fatalf("capacity %d and pool %q do not go together", s.Capacity, r.Pool)
		}
		for _, l := range EnvLines("/run/rsa/ramdisk/1", s) {
			if !envLine.MatchString(l) {
				t.Fatalf("environment line %q would be refused", l)
			}
		}
		// The daemon keeps the spec as JSON, which would replace bad UTF-8.
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back job.Spec
		if err := json.Unmarshal(b, &back); err != nil || back != s {
			t.Fatalf("the spec changes through JSON: %+v became %+v (%v)", s, back, err)
		}
	})
}

// FuzzExpandHosts: a host list from Slurm expands to a bounded number of
// names, none of which can be mistaken for a path or a list, or is refused.
// The seeds are in testdata/fuzz/FuzzExpandHosts.
func FuzzExpandHosts(f *testing.F) {
	f.Fuzz(func(t *testing.T, list string) {
		hosts, err := ExpandHosts(list)
		if err != nil {
			if hosts != nil {
				t.Fatalf("error %v with %d names", err, len(hosts))
			}
			return
		}
		if len(hosts) > maxHosts {
			t.Fatalf("%d names, more than %d", len(hosts), maxHosts)
		}
		for _, h := range hosts {
			if h == "" || h == "." || h == ".." || len(h) > maxHostName || !utf8.ValidString(h) {
				t.Fatalf("bad name %q from %q", h, list)
			}
			for _, r := range h {
				if r == '/' || r == ',' || r == '[' || r == ']' || unicode.IsSpace(r) || unicode.IsControl(r) {
					t.Fatalf("name %q from %q has %U", h, list, r)
				}
			}
		}
	})
}
