package metrics

import (
	"context"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

type fakeSource struct{}

func (fakeSource) Jobs(context.Context) ([]JobCount, error) {
	return []JobCount{{JobState: "RUNNING", RSAState: "INUSE_IN", N: 2}}, nil
}
func (fakeSource) Nodes(context.Context) ([]NodeUse, error) {
	return []NodeUse{{Name: "rsa1", Capacity: 100, Allocated: 40, Used: 10, Drained: true}}, nil
}
func (fakeSource) Agents(context.Context) []AgentHealth {
	return []AgentHealth{{Node: "rsa1", Role: "storage", Up: true, State: "up", Seen: time.Unix(1700000000, 0)}, {Node: "rsa2", Role: "storage", State: "suspect", Rebooted: 1, Unpooled: true}}
}

func (fakeSource) Quarantined(context.Context) int { return 2 }

func (fakeSource) Debts(context.Context) []Debt {
	return []Debt{{Node: "rsa2", Bytes: 30, Since: time.Unix(1700000100, 0)}, {Node: "rsa2", Since: time.Unix(1700000000, 0)},
		{Node: "c1", Since: time.Unix(1700000500, 0)}}
}

func (fakeSource) Certificates(context.Context) []Certificate {
	return []Certificate{{Node: "ctl1", Role: "control", NotAfter: time.Unix(1800000000, 0)}, {Node: "rsa1", Role: "storage", NotAfter: time.Unix(1700000000, 0)}}
}

// Every series the Grafana dashboard, the runbook and the Prometheus alert
// rules (and their tests) name exists, so that none shows nothing, or
// never fires, for a renamed metric. process_* are the process
// collector's, which an alert watches for restarts.
func TestDashboardNamesExist(t *testing.T) {
	m := New(fakeSource{}, "v")
	m.ObservePhase(StageIn, time.Second)
	m.ObserveHook("data_in", "rsa", time.Millisecond)
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, mf := range mfs {
		name := mf.GetName()
		have[name] = true
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			have[name+suffix] = true
		}
	}
	// rsa health --textfile writes series of its own (rsa_health_*),
	// which its source names.
	health, err := os.ReadFile("../../cmd/rsa/health.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range regexp.MustCompile(`"(rsa_health_[a-z_]+)"`).FindAllStringSubmatch(string(health), -1) {
		have[n[1]] = true
	}
	names := regexp.MustCompile(`\b(?:rsa|process)_[a-z_]+`)
	// At least this many distinct series each file names (8, 16, 13 and
	// 16 when written, less a margin for an edit): a file restructured so
	// that the pattern finds none of them must not pass as all present.
	for _, c := range []struct {
		file string
		min  int
	}{
		{"../../contrib/grafana/rsa.json", 6},
		{"../../docs/operations.md", 12},
		{"../../" + alertRules, 11},
		{"../../" + alertTests, 14},
	} {
		b, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]bool{}
		for _, n := range names.FindAllString(string(b), -1) {
			// rsa_state is a label (and a JSON field of rsa status).
			if n == "rsa_state" || strings.HasSuffix(n, "_") {
				continue
			}
			found[n] = true
			if !have[n] {
				t.Errorf("%s names %s, which neither rsa serve nor rsa health --textfile exports", c.file, n)
			}
		}
		if len(found) < c.min {
			t.Errorf("%s names %d series (%v), want at least %d: has it moved its queries where this test does not look?", c.file, len(found), slices.Sorted(maps.Keys(found)), c.min)
		}
	}
}

// The gauges read at a scrape are the source's.
func TestGauges(t *testing.T) {
	m := New(fakeSource{}, "v")
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, mm := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range mm.GetLabel() {
				if l.GetName() == "state" {
					name += "{" + l.GetValue() + "}"
				}
			}
			if g := mm.GetGauge(); g != nil {
				got[name] += g.GetValue()
			}
			if c := mm.GetCounter(); c != nil {
				got[name] += c.GetValue()
			}
		}
	}
	for name, want := range map[string]float64{"rsa_jobs": 2, "rsa_node_capacity_bytes": 100, "rsa_node_allocated_bytes": 40,
		"rsa_node_used_bytes": 10, "rsa_node_drained": 1, "rsa_build_info": 1,
		"rsa_agent_up": 1, "rsa_agent_state{up}": 1, "rsa_agent_state{suspect}": 1, "rsa_agent_state{down}": 0, "rsa_agent_reboots_total": 1, "rsa_agent_unpooled": 1,
		"rsa_certificate_expiry_timestamp_seconds": 1800000000 + 1700000000,
		"rsa_debts": 3, "rsa_debt_bytes": 30, "rsa_debt_oldest_timestamp_seconds": 1700000000 + 1700000500, "rsa_quarantined_ramdisks": 2} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
	}
}
