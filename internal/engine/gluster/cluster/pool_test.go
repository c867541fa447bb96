package cluster

import (
	"maps"
	"slices"
	"testing"

	"github.com/rsa-hpc/rsa/internal/gluster"
)

func peer(addr, state string, connected bool) gluster.Peer {
	return gluster.Peer{Hostnames: []string{addr}, State: state, Connected: connected}
}

func TestRifts(t *testing.T) {
	addrs := map[string]string{"rsa1": "10.0.0.1", "rsa2": "10.0.0.2", "rsa3": "10.0.0.3"}
	const in = gluster.StateInCluster
	// Known by address, by name, or by a domain name of the node's name;
	// 10.9.9.9 and rsa22.example are no RSA node of this pool.
	views := map[string][]gluster.Peer{
		"rsa1": {peer("10.0.0.2", "Accepted peer request", true), peer("rsa3", in, true), peer("10.9.9.9", "Peer Rejected", true)},
		"rsa2": {peer("10.0.0.1", in, true), {Hostnames: []string{"rsa3.example", "10.0.0.3"}, State: in, Connected: false}, peer("rsa22.example", "Peer Rejected", true)},
		"rsa3": {peer("rsa1.example", "Peer Rejected", true), peer("10.0.0.2", in, true)},
	}
	var got []string
	for _, r := range rifts(addrs, views) {
		got = append(got, r.String())
	}
	want := []string{
		`rsa1's glusterd sees rsa2 as "Accepted peer request" (connected)`,
		"rsa2's glusterd sees rsa3 disconnected",
		`rsa3's glusterd sees rsa1 as "Peer Rejected" (connected)`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("rifts:\n got %q\nwant %q", got, want)
	}
}

func TestEstranged(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rifts []rift
		want  []string // the nodes kept out
	}{
		{"none", nil, nil},
		{"one way", []rift{{"rsa1", "rsa2", ""}}, []string{"rsa2"}},
		{"both ways: the last by name", []rift{{"rsa1", "rsa2", ""}, {"rsa2", "rsa1", ""}}, []string{"rsa2"}},
		{"a rejected node goes alone", []rift{{"rsa1", "rsa3", ""}, {"rsa2", "rsa3", ""}, {"rsa3", "rsa1", ""}, {"rsa3", "rsa2", ""}}, []string{"rsa3"}},
		{"named by every other", []rift{{"rsa2", "rsa1", ""}, {"rsa3", "rsa1", ""}}, []string{"rsa1"}},
		{"two rifts apart", []rift{{"rsa1", "rsa2", ""}, {"rsa3", "rsa4", ""}}, []string{"rsa2", "rsa4"}},
		{"a chain loses its middle", []rift{{"rsa1", "rsa2", ""}, {"rsa3", "rsa2", ""}, {"rsa3", "rsa4", ""}}, []string{"rsa2", "rsa4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := estranged(tc.rifts)
			if got := slices.Sorted(maps.Keys(out)); !slices.Equal(got, tc.want) {
				t.Errorf("kept out %v, want %v", got, tc.want)
			}
			n := 0
			for node, rs := range out {
				for _, r := range rs {
					if r.from != node && r.to != node {
						t.Errorf("%s is kept out for %v, a rift it is not in", node, r)
					}
				}
				n += len(rs)
			}
			if n != len(tc.rifts) {
				t.Errorf("%d rifts given as reasons, of %d", n, len(tc.rifts))
			}
		})
	}
}
