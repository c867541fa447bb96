package metrics

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/pki"
)

// The Prometheus alert rules and their promtool tests (make lint runs
// promtool on them), from the module's root. TestDashboardNamesExist
// checks the series they name.
const (
	alertRules = "contrib/prometheus/rsa-alerts.yml"
	alertTests = "contrib/prometheus/rsa-alerts_test.yml"
)

// labelValues are the values rsa serve and rsa agent give the labels
// whose values are a fixed set, by label.
func labelValues(t *testing.T) map[string][]string {
	t.Helper()
	m := New(fakeSource{}, "v")
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{lifecycle.FailureExpired} // counted, though not there from the start
	for _, mf := range mfs {
		if mf.GetName() != "rsa_failures_total" {
			continue
		}
		for _, mm := range mf.GetMetric() {
			for _, l := range mm.GetLabel() {
				if l.GetName() == "kind" {
					kinds = append(kinds, l.GetValue())
				}
			}
		}
	}
	var rsaStates, jobStates []string
	for _, s := range lifecycle.AllRSAStates {
		rsaStates = append(rsaStates, string(s))
	}
	for _, s := range lifecycle.AllJobStates {
		jobStates = append(jobStates, string(s))
	}
	return map[string][]string{
		"kind":      kinds,
		"rsa_state": rsaStates,
		"job_state": jobStates,
		"state":     agentStates,
		// The agents' roles (storage, compute) and the certificates'.
		"role":  {string(pki.RoleControl), string(pki.RoleStorage), string(pki.RoleCompute), string(pki.RoleBoth)},
		"phase": {Construct, StageIn, Mount, Switch, StageOut, Teardown},
		// rsa_staged_*_total's, rsa_agent_stages_total's.
		"direction": {"in", "out"},
		"result":    {StageOK, StageFailed},
	}
}

// Every label value the alert rules match is one rsa serve exports: a
// matcher on a misspelt state or failure kind selects nothing, and its
// alert never fires, which promtool's tests (written with the same
// spelling) cannot see.
func TestAlertLabelValues(t *testing.T) {
	valid := labelValues(t)
	matcher := regexp.MustCompile(`\b(kind|rsa_state|job_state|state|role|phase)\s*(?:=~|!~|!=|=)\s*"([^"]*)"`)
	for _, file := range []string{alertRules, alertTests} {
		b, err := os.ReadFile(filepath.Join("../..", file))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, sm := range matcher.FindAllStringSubmatch(string(b), -1) {
			n++
			for _, v := range strings.Split(sm[2], "|") {
				if !slices.Contains(valid[sm[1]], v) {
					t.Errorf("%s matches %s=%q, which rsa serve never exports (it has %v)", file, sm[1], v, valid[sm[1]])
				}
			}
		}
		if n < 10 {
			t.Errorf("%s has %d label matchers this test reads, want at least 10: has its syntax changed?", file, n)
		}
	}
}

// Every alert has a severity a site routes on, the annotations the
// runbook promises, and a runbook that points at a section of the docs
// that exists.
func TestAlertAnnotations(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("../..", alertRules))
	if err != nil {
		t.Fatal(err)
	}
	// Each rule from its "- alert:" line to the next.
	rules := regexp.MustCompile(`(?m)^\s*- alert: `).Split(string(b), -1)[1:]
	if len(rules) < 15 {
		t.Fatalf("%s has %d alerts, want at least 15", alertRules, len(rules))
	}
	runbook := regexp.MustCompile(`(?m)^\s*runbook: "(docs/[a-z]+\.md)#([a-z0-9-]+)"$`)
	for _, r := range rules {
		name, _, _ := strings.Cut(r, "\n")
		if !regexp.MustCompile(`(?m)^\s*severity: (critical|warning)$`).MatchString(r) {
			t.Errorf("%s: no severity critical or warning", name)
		}
		for _, a := range []string{"summary", "description"} {
			if !regexp.MustCompile(`(?m)^\s*` + a + `: "`).MatchString(r) {
				t.Errorf("%s: no %s annotation", name, a)
			}
		}
		m := runbook.FindStringSubmatch(r)
		if m == nil {
			t.Errorf("%s: no runbook: \"docs/FILE.md#section\"", name)
			continue
		}
		doc, err := os.ReadFile(filepath.Join("../..", m[1]))
		if err != nil {
			t.Errorf("%s: runbook %s: %v", name, m[1], err)
			continue
		}
		if !slices.Contains(anchors(string(doc)), m[2]) {
			t.Errorf("%s: runbook %s#%s: %s has no such section (%v)", name, m[1], m[2], m[1], anchors(string(doc)))
		}
	}
}

// anchors are the anchors a Markdown renderer (GitHub's) gives the
// headings of doc: lower case, spaces made hyphens, other punctuation
// dropped.
func anchors(doc string) []string {
	var out []string
	for _, h := range regexp.MustCompile(`(?m)^#+ (.+)$`).FindAllStringSubmatch(doc, -1) {
		a := strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
				return r
			case r == ' ':
				return '-'
			}
			return -1
		}, strings.ToLower(h[1]))
		out = append(out, a)
	}
	return out
}
