package metrics

import (
	"context"
	"errors"
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

// fakeAgent is an RSA node's agent with two bricks, one amiss, and a
// volume bound at two job directories.
type fakeAgent struct{ err error }

func (f fakeAgent) Holdings(context.Context) (AgentHoldings, error) {
	return AgentHoldings{Bricks: []BrickUse{{Size: 100, Used: 10, Inodes: 1024, InodesUsed: 3}, {Size: 50, Used: 5, Inodes: 2048, InodesUsed: 1, Problem: true}},
		Mounts: 1, Binds: 2}, f.err
}

func (fakeAgent) Certificate(context.Context) Certificate {
	return Certificate{Node: "rsa1", Role: "storage", NotAfter: time.Unix(1800000000, 0)}
}

// knownSeries are the series that rsa serve, rsa agent (--metrics-listen)
// and rsa health --textfile export, each with the names of its labels (le
// for a histogram's _bucket; a textfile's series have none). Prometheus
// adds job and instance to every one. process_* are the process
// collector's.
func knownSeries(t *testing.T) map[string]map[string]bool {
	t.Helper()
	m := New(fakeSource{}, "v")
	m.ObservePhase(StageIn, time.Second)
	m.ObserveHook("data_in", "rsa", time.Millisecond)
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	a := NewAgent(fakeAgent{}, AgentInfo{Version: "v", Node: "rsa1", Role: "storage"})
	a.ObserveRequest("status", 200, time.Millisecond)
	afs, err := a.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	mfs = append(mfs, afs...)
	have := map[string]map[string]bool{}
	add := func(name string, labels ...string) {
		if have[name] == nil {
			have[name] = map[string]bool{}
		}
		for _, l := range labels {
			have[name][l] = true
		}
	}
	for _, mf := range mfs {
		name := mf.GetName()
		var labels []string
		for _, mm := range mf.GetMetric() {
			for _, l := range mm.GetLabel() {
				labels = append(labels, l.GetName())
			}
		}
		add(name, labels...)
		add(name+"_count", labels...)
		add(name+"_sum", labels...)
		add(name+"_bucket", append(labels, "le")...)
	}
	// rsa health --textfile writes series of its own (rsa_health_*),
	// which its source names.
	health, err := os.ReadFile("../../cmd/rsa/health.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range regexp.MustCompile(`"(rsa_health_[a-z_]+)"`).FindAllStringSubmatch(string(health), -1) {
		add(n[1])
	}
	return have
}

// Every series the Grafana dashboard, the runbook and the Prometheus alert
// rules (and their tests) name exists, so that none shows nothing, or
// never fires, for a renamed metric: rsa serve's, rsa agent's
// (--metrics-listen) or rsa health --textfile's (knownSeries). process_*
// are the process collector's, which an alert and the dashboard watch for
// restarts. TestGrafanaDashboard reads the dashboard's queries closer.
func TestDashboardNamesExist(t *testing.T) {
	have := knownSeries(t)
	names := regexp.MustCompile(`\b(?:rsa|process)_[a-z_]+`)
	// At least this many distinct series each file names (35, 16, 13 and
	// 16 when written, less a margin for an edit): a file restructured so
	// that the pattern finds none of them must not pass as all present.
	for _, c := range []struct {
		file string
		min  int
	}{
		{"../../contrib/grafana/rsa.json", 30},
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
			if have[n] == nil {
				t.Errorf("%s names %s, which neither rsa serve, rsa agent nor rsa health --textfile exports", c.file, n)
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

// An agent's series: what it was told (requests, stages, the daemon's
// last request) and what its source reads at each scrape, summed over
// the bricks, which are never named; a source that cannot read the node
// leaves the rest whole.
func TestAgentGauges(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  fakeAgent
		want map[string]float64
	}{
		{"holdings read", fakeAgent{}, map[string]float64{
			"rsa_agent_info": 1, "rsa_agent_bricks": 2, "rsa_agent_brick_problems": 1, "rsa_agent_bricks_size_bytes": 150,
			"rsa_agent_bricks_used_bytes": 15, "rsa_agent_bricks_inodes": 3072, "rsa_agent_bricks_inodes_used": 4,
			"rsa_agent_mounts": 1, "rsa_agent_mount_binds": 2, "rsa_certificate_expiry_timestamp_seconds": 1800000000,
			"rsa_agent_requests_total{code=200,op=status}": 2, "rsa_agent_requests_total{code=404,op=other}": 1,
			"rsa_agent_request_duration_seconds{op=status}": 2,
			"rsa_agent_stages_running{phase=stage-in}":      1, "rsa_agent_stages_running{phase=stage-out}": 0,
			"rsa_agent_stages_total{phase=stage-in,result=ok}": 1, "rsa_agent_stages_total{phase=stage-in,result=failed}": 0,
			"rsa_agent_stages_total{phase=stage-out,result=failed}": 1, "rsa_agent_stages_total{phase=stage-out,result=ok}": 0,
		}},
		{"holdings unreadable", fakeAgent{err: errors.New("no mount table")}, map[string]float64{
			"rsa_agent_info": 1, "rsa_certificate_expiry_timestamp_seconds": 1800000000,
			"rsa_agent_stages_total{phase=stage-in,result=ok}": 1,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAgent(tc.src, AgentInfo{Version: "v1", Node: "rsa1", Role: "storage"})
			a.ObserveRequest("status", 200, time.Millisecond)
			a.ObserveRequest("status", 200, time.Second)
			a.ObserveRequest(OpOther, 404, time.Millisecond)
			a.StageStarted(StageIn)(true)
			a.StageStarted(StageOut)(false)
			a.StageStarted(StageIn)     // still running
			a.StageStarted("elsewhere") // no series of its own
			before := time.Now()
			a.DaemonRequest()
			mfs, err := a.reg.Gather()
			if tc.src.err != nil && err == nil {
				t.Errorf("Gather: no error from a source that failed")
			}
			got := map[string]float64{}
			for _, mf := range mfs {
				for _, mm := range mf.GetMetric() {
					name := mf.GetName()
					var labels []string
					for _, l := range mm.GetLabel() {
						if name == "rsa_agent_info" || name == "rsa_certificate_expiry_timestamp_seconds" {
							continue // checked below
						}
						labels = append(labels, l.GetName()+"="+l.GetValue())
					}
					if len(labels) > 0 {
						name += "{" + strings.Join(labels, ",") + "}"
					}
					switch {
					case mm.GetGauge() != nil:
						got[name] = mm.GetGauge().GetValue()
					case mm.GetCounter() != nil:
						got[name] = mm.GetCounter().GetValue()
					case mm.GetHistogram() != nil:
						got[name] = float64(mm.GetHistogram().GetSampleCount())
					}
					for _, l := range mm.GetLabel() {
						if l.GetName() == "phase" && l.GetValue() == "elsewhere" {
							t.Errorf("%s: a phase no stage has", mf.GetName())
						}
					}
					if mf.GetName() == "rsa_agent_info" {
						want := map[string]string{"version": "v1", "node": "rsa1", "role": "storage"}
						for _, l := range mm.GetLabel() {
							if want[l.GetName()] != l.GetValue() {
								t.Errorf("rsa_agent_info{%s=%q}, want %q", l.GetName(), l.GetValue(), want[l.GetName()])
							}
						}
					}
				}
			}
			for name, want := range tc.want {
				if v, ok := got[name]; !ok || v != want {
					t.Errorf("%s = %v (%v), want %v", name, v, ok, want)
				}
			}
			if tc.src.err != nil {
				if _, ok := got["rsa_agent_bricks"]; ok {
					t.Errorf("rsa_agent_bricks from a source that failed")
				}
			}
			if v := got["rsa_agent_last_daemon_request_timestamp_seconds"]; v < float64(before.Unix()) || v > float64(time.Now().Unix()+1) {
				t.Errorf("rsa_agent_last_daemon_request_timestamp_seconds = %v, want now", v)
			}
			for name := range got {
				if strings.HasPrefix(name, "go_") {
					t.Errorf("%s: no Go collector in the agent's metrics", name)
				}
			}
		})
	}
}
