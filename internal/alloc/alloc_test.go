package alloc

import (
	"slices"
	"strings"
	"testing"

	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
)

const G = 1 << 30

var nodes = []config.Node{{Name: "r1", Capacity: 32 * G}, {Name: "r2", Capacity: 32 * G}, {Name: "r3", Capacity: 16 * G}}

func pt(n string, b int64) job.Part { return job.Part{Node: n, Bytes: b} }

var thesis = Policy{Proportion: 128, MinJobNodes: 128}

func TestPlan(t *testing.T) {
	io := func(n int, c int64) Request {
		return Request{ComputeNodes: n, Capacity: c, HasInput: true, HasOutput: true}
	}
	for _, c := range []struct {
		name    string
		used    map[string]int64
		req     Request
		verdict Verdict
		parts   []job.Part
		reason  string
	}{
		{"too small (App. P l.12)", nil, io(127, 0), Ineligible, nil, "too small"},
		{"one node per 128", nil, io(128, 0), Assign, []job.Part{pt("r1", 32*G)}, ""},
		{"ceil of the proportion", nil, io(129, 0), Assign, []job.Part{pt("r1", 32*G), pt("r2", 32*G)}, ""},
		{"whole nodes only", map[string]int64{"r1": 1}, io(256, 0), Assign, []job.Part{pt("r2", 32*G), pt("r3", 16*G)}, ""},
		{"wait for nodes (§3.2.1)", map[string]int64{"r1": 1, "r2": 1}, io(256, 0), Wait, nil, "1 free now"},
		{"capped at the accelerator", nil, io(100000, 0), Assign, []job.Part{pt("r1", 32*G), pt("r2", 32*G), pt("r3", 16*G)}, ""},
		{"explicit capacity on a small job", nil, io(1, 4*G), Assign, []job.Part{pt("r3", 4*G)}, ""},
		{"best fit", map[string]int64{"r1": 30 * G}, io(1, 2*G), Assign, []job.Part{pt("r1", 2*G)}, ""},
		{"spread over nodes", nil, io(1, 40*G), Assign, []job.Part{pt("r2", 32*G), pt("r1", 8*G)}, ""},
		{"capacity waits", map[string]int64{"r1": 32 * G, "r2": 32 * G, "r3": 15 * G}, io(1, 2*G), Wait, nil, "free now"},
		{"capacity beyond the accelerator", nil, io(1, 100*G), Ineligible, nil, "more than the accelerator"},
		{"no directories (App. P l.23)", nil, Request{ComputeNodes: 512}, Ineligible, nil, "no input or output"},
		{"running without output (App. P l.24)", nil, Request{ComputeNodes: 512, Running: true, HasInput: true}, Ineligible, nil, "no output"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := Plan(thesis, nodes, c.used, c.req)
			if d.Verdict != c.verdict || len(d.Parts) != len(c.parts) || !strings.Contains(d.Reason, c.reason) {
				t.Fatalf("got %+v", d)
			}
			for i := range c.parts {
				if d.Parts[i] != c.parts[i] {
					t.Fatalf("parts %v, want %v", d.Parts, c.parts)
				}
			}
		})
	}
	limited := thesis
	limited.MaxJobCapacity = G
	if d := Plan(limited, nodes, nil, io(1, 2*G)); d.Verdict != Ineligible || !strings.Contains(d.Reason, "max_job_capacity") {
		t.Fatalf("site limit: %+v", d)
	}
	// A job sized by proportion is capped too.
	limited.MaxJobCapacity = 40 * G
	d := Plan(limited, nodes, nil, io(256, 0))
	var total int64
	for _, p := range d.Parts {
		total += p.Bytes
	}
	if d.Verdict != Assign || len(d.Parts) != 2 || total > 40*G || total < 39*G {
		t.Fatalf("proportion under max_job_capacity: %+v (total %d)", d, total)
	}
}

// TestPlanGluster: the gluster engine's rules, equal parts and copies on
// distinct nodes.
func TestPlanGluster(t *testing.T) {
	io := func(n int, c int64) Request {
		return Request{ComputeNodes: n, Capacity: c, HasInput: true, HasOutput: true}
	}
	even := Policy{Proportion: 1, MinJobNodes: 1, Even: true}
	rep := Policy{Proportion: 1, MinJobNodes: 1, Even: true, Replica: 2}
	for _, c := range []struct {
		name    string
		p       Policy
		nodes   []config.Node
		used    map[string]int64
		req     Request
		verdict Verdict
		parts   []job.Part
		reason  string
	}{
		{"one node holds it: the freest", even, nodes, map[string]int64{"r1": 8 * G}, io(1, 4*G), Assign, []job.Part{pt("r2", 4*G)}, ""},
		{"equal parts, not a tail", even, nodes, nil, io(1, 40*G), Assign, []job.Part{pt("r1", 20*G), pt("r2", 20*G)}, ""},
		{"three parts when two cannot", even, nodes, map[string]int64{"r2": 16 * G}, io(1, 40*G), Assign, []job.Part{pt("r1", 13654<<20), pt("r2", 13654<<20), pt("r3", 13654<<20)}, ""},
		{"scattered free RAM waits", even, nodes, map[string]int64{"r1": 20 * G, "r2": 24 * G, "r3": 4 * G}, io(1, 30*G), Wait, nil, "unevenly"},
		{"replica: twice, on two nodes", rep, nodes, nil, io(1, 4*G), Assign, []job.Part{pt("r1", 4*G), pt("r2", 4*G)}, ""},
		{"replica: charged twice", rep, nodes, map[string]int64{"r1": 30 * G, "r2": 30 * G}, io(1, 12*G), Wait, nil, "× 2 copies"},
		{"replica: whole nodes in pairs", rep, nodes, nil, io(1, 0), Assign, []job.Part{pt("r1", 32*G), pt("r2", 32*G)}, ""},
		{"replica: one node is not enough", rep, nodes[:1], nil, io(1, 1*G), Ineligible, nil, "need 2 RSA nodes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := Plan(c.p, c.nodes, c.used, c.req)
			if d.Verdict != c.verdict {
				t.Fatalf("verdict %v (%s), want %v", d.Verdict, d.Reason, c.verdict)
			}
			if c.parts != nil && !slices.Equal(d.Parts, c.parts) {
				t.Errorf("parts %v, want %v", d.Parts, c.parts)
			}
			if !strings.Contains(d.Reason, c.reason) {
				t.Errorf("reason %q lacks %q", d.Reason, c.reason)
			}
		})
	}
}

// PolicyFrom takes the proportions and the cap from the config and the
// rest from the engine's placement.
func TestPolicyFrom(t *testing.T) {
	c := &config.Config{Proportion: 64, MinJobNodes: 8, Limits: config.Limits{MaxJobCapacity: 1 << 30}}
	for _, tc := range []struct {
		name string
		pl   engine.Placement
		want Policy
	}{
		{"an engine without needs", engine.Placement{}, Policy{Proportion: 64, MinJobNodes: 8, MaxJobCapacity: 1 << 30}},
		{"even parts", engine.Placement{Even: true}, Policy{Proportion: 64, MinJobNodes: 8, MaxJobCapacity: 1 << 30, Even: true}},
		{"even parts, replicated", engine.Placement{Even: true, Replica: 2}, Policy{Proportion: 64, MinJobNodes: 8, MaxJobCapacity: 1 << 30, Even: true, Replica: 2}},
	} {
		if got := PolicyFrom(c, tc.pl); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
