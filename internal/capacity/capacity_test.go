package capacity

import (
	"strings"
	"testing"

	"github.com/rsa-hpc/rsa/internal/alloc"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
)

const gib = int64(1) << 30

func TestDecide(t *testing.T) {
	nodes := []config.Node{{Name: "rsa1", Capacity: 4 * gib}, {Name: "rsa2", Capacity: 4 * gib}}
	policy := alloc.Policy{Proportion: 2, MinJobNodes: 1}
	in := alloc.Request{ComputeNodes: 2, HasInput: true}
	for _, tc := range []struct {
		name     string
		job      Job
		snap     Snapshot
		verdict  alloc.Verdict
		personal bool
		reason   []string // substrings the reason must hold
	}{
		{name: "free node", job: Job{Request: in}, snap: Snapshot{Used: map[string]int64{}}, verdict: alloc.Assign},
		{name: "sized by input that does not fit", job: Job{Request: in, Sized: "input larger than a RAMDISK may be"},
			snap: Snapshot{Used: map[string]int64{}}, verdict: alloc.Ineligible, personal: true, reason: []string{"input larger"}},
		{name: "explicit capacity is not sized", job: Job{Request: alloc.Request{Capacity: gib, HasInput: true}, Sized: "ignored"},
			snap: Snapshot{Used: map[string]int64{}}, verdict: alloc.Assign},
		{name: "user limit", job: Job{Request: in, User: "alice"},
			snap: Snapshot{Used: map[string]int64{}, UserLimit: 5 * gib, UserHeld: 2 * gib}, verdict: alloc.Wait, personal: true,
			reason: []string{"alice's jobs hold 2.0G", "4.0G more", "limit of 5.0G", "max_user_capacity"}},
		{name: "user within limit", job: Job{Request: in, User: "alice"},
			snap: Snapshot{Used: map[string]int64{}, UserLimit: 8 * gib, UserHeld: 4 * gib}, verdict: alloc.Assign},
		{name: "drained and down nodes are named", job: Job{Request: in},
			snap:    Snapshot{Used: map[string]int64{"rsa1": 4 * gib, "rsa2": 4 * gib}, Drained: 1, Down: 1, DownWord: "silent"},
			verdict: alloc.Wait, reason: []string{"1 of 2 RSA nodes drained", "1 of 2 RSA nodes silent"}},
		{name: "nothing to stage", job: Job{Request: alloc.Request{ComputeNodes: 2}}, snap: Snapshot{Used: map[string]int64{}},
			verdict: alloc.Ineligible},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.snap.Policy, tc.snap.Nodes = policy, nodes
			got := Decide(tc.job, tc.snap)
			if got.Verdict != tc.verdict || got.Personal != tc.personal {
				t.Fatalf("Decide = %+v; want verdict %v, personal %v", got, tc.verdict, tc.personal)
			}
			for _, r := range tc.reason {
				if !strings.Contains(got.Reason, r) {
					t.Errorf("reason %q lacks %q", got.Reason, r)
				}
			}
		})
	}
}

func TestFits(t *testing.T) {
	nodes := []config.Node{{Name: "rsa1", Capacity: 4 * gib}}
	for _, tc := range []struct {
		name  string
		used  map[string]int64
		parts []job.Part
		want  bool
	}{
		{"room", map[string]int64{"rsa1": gib}, []job.Part{{Node: "rsa1", Bytes: 3 * gib}}, true},
		{"one byte over", map[string]int64{"rsa1": gib}, []job.Part{{Node: "rsa1", Bytes: 3*gib + 1}}, false},
		{"unknown node", nil, []job.Part{{Node: "rsa9", Bytes: 1}}, false},
	} {
		used := tc.used
		if got := Fits(nodes, used, tc.parts); got != tc.want {
			t.Errorf("%s: Fits = %v, want %v", tc.name, got, tc.want)
		}
		if tc.used != nil && tc.used["rsa1"] != gib {
			t.Errorf("%s: Fits changed its caller's map", tc.name)
		}
	}
}

func TestMemo(t *testing.T) {
	r := alloc.Request{ComputeNodes: 2, HasInput: true}
	wait := Decision{Decision: alloc.Decision{Verdict: alloc.Wait, Reason: "full"}}
	m := NewMemo(1)
	m.Remember(r, Decision{Decision: alloc.Decision{Verdict: alloc.Wait}, Personal: true})
	if _, ok := m.Lookup(1, r); ok {
		t.Fatal("a personal decision was remembered for everyone")
	}
	m.Remember(r, Decision{Decision: alloc.Decision{Verdict: alloc.Assign}})
	if _, ok := m.Lookup(1, r); ok {
		t.Fatal("an assignment was remembered")
	}
	m.Remember(r, wait)
	if got, ok := m.Lookup(1, r); !ok || got.Reason != "full" {
		t.Fatalf("Lookup = %+v, %v; want the wait", got, ok)
	}
	if _, ok := m.Lookup(2, r); ok {
		t.Fatal("a wait outlived a commit")
	}
	var none *Memo
	none.Remember(r, wait)
	if _, ok := none.Lookup(1, r); ok {
		t.Fatal("a nil memo remembered")
	}
}
