package config

import (
	"strings"
	"testing"
)

func TestCheckLocalCapacity(t *testing.T) {
	total, err := MemTotal()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		nodes []Node
		bad   bool
	}{
		{"half the RAM", []Node{{Name: "a", Capacity: total / 2}}, false},
		{"all of it, in two", []Node{{Name: "a", Capacity: total / 2}, {Name: "b", Engine: "local", Capacity: total - total/2}}, false},
		{"more than the host has", []Node{{Name: "a", Capacity: total / 2}, {Name: "b", Capacity: total/2 + 4096}}, true},
		{"another engine's nodes are not this host's", []Node{{Name: "a", Engine: "gluster", Capacity: 2 * total}}, false},
	} {
		err := CheckLocalCapacity(c.nodes)
		if c.bad != (err != nil) || (err != nil && !strings.Contains(err.Error(), "lower nodes[].capacity")) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
