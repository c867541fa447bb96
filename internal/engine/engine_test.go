package engine

import (
	"slices"
	"testing"
)

func TestDegradedMerge(t *testing.T) {
	for _, tc := range []struct {
		a, b, want Degraded
	}{
		{Degraded{}, Degraded{}, Degraded{}},
		{Degraded{Nodes: []string{"rsa2"}}, Degraded{}, Degraded{Nodes: []string{"rsa2"}}},
		{Degraded{Nodes: []string{"rsa3"}}, Degraded{Nodes: []string{"rsa1", "rsa3"}, Missing: true}, Degraded{Nodes: []string{"rsa1", "rsa3"}, Missing: true}},
		{Degraded{Epoch: 3}, Degraded{Epoch: 5}, Degraded{Epoch: 5}},
	} {
		got := tc.a.Merge(tc.b)
		if !slices.Equal(got.Nodes, tc.want.Nodes) || got.Missing != tc.want.Missing || got.Epoch != tc.want.Epoch {
			t.Errorf("%+v.Merge(%+v) = %+v, want %+v", tc.a, tc.b, got, tc.want)
		}
	}
}

// Two Checks say the parts stayed in reach between them only if neither
// lost any and no part came back in between.
func TestDegradedSteady(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b Degraded
		want bool
	}{
		{"nothing out, same epoch", Degraded{Epoch: 4}, Degraded{Epoch: 4}, true},
		{"local: no epoch", Degraded{}, Degraded{}, true},
		{"a replica out, same epoch", Degraded{Nodes: []string{"rsa2"}, Epoch: 4}, Degraded{Nodes: []string{"rsa2"}, Epoch: 4}, true},
		{"a part came back in between", Degraded{Epoch: 4}, Degraded{Epoch: 5}, false},
		{"lost before", Degraded{Nodes: []string{"rsa2"}, Missing: true, Epoch: 4}, Degraded{Epoch: 4}, false},
		{"lost after", Degraded{Epoch: 4}, Degraded{Nodes: []string{"rsa2"}, Missing: true, Epoch: 4}, false},
	} {
		if got := tc.a.Steady(tc.b); got != tc.want {
			t.Errorf("%s: %+v.Steady(%+v) = %v, want %v", tc.name, tc.a, tc.b, got, tc.want)
		}
	}
}
