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
		{Degraded{Nodes: []string{"rsa3"}}, Degraded{Nodes: []string{"rsa1", "rsa3"}, Lost: true}, Degraded{Nodes: []string{"rsa1", "rsa3"}, Lost: true}},
	} {
		got := tc.a.Merge(tc.b)
		if !slices.Equal(got.Nodes, tc.want.Nodes) || got.Lost != tc.want.Lost {
			t.Errorf("%+v.Merge(%+v) = %+v, want %+v", tc.a, tc.b, got, tc.want)
		}
	}
}
