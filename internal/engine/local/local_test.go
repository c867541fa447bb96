package local

import (
	"strings"
	"testing"

	"github.com/rsa-hpc/rsa/internal/config"
)

// Keys: a local node is this host, so it has no address, and its size may
// be a share of the RAM available here.
func TestKeys(t *testing.T) {
	engines := config.Engines{Keys()}
	for _, tc := range []struct {
		name, doc string
		err       string // "": accepted
	}{
		{"a size", "[[nodes]]\nname = \"a\"\ncapacity = \"1G\"\n", ""},
		{"a share", "[[nodes]]\nname = \"a\"\ncapacity = \"10%\"\n", ""},
		{"the engine named", "engine = \"local\"\n[[nodes]]\nname = \"a\"\nengine = \"local\"\ncapacity = \"1G\"\n", ""},
		{"an address", "[[nodes]]\nname = \"a\"\naddress = \"10.0.0.11\"\ncapacity = \"1G\"\n",
			`nodes[0].address: a node of engine "local" is this host; an address is for engine "gluster"`},
		{"no capacity", "[[nodes]]\nname = \"a\"\n", "nodes[0].capacity: missing"},
		{"a share too big", "[[nodes]]\nname = \"a\"\ncapacity = \"91%\"\n", "nodes[0].capacity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Parse([]byte(tc.doc), engines)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v; want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := c.Nodes[0]; n.Engine != Name || n.Capacity < 1<<20 || n.Address != "" || c.EngineConfig != nil {
				t.Errorf("node %+v, engine config %v; want a local node of at least 1M, no address, no engine config", n, c.EngineConfig)
			}
		})
	}
}
