package config

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// testEngines stand in for all.Engines, which this package cannot import:
// "local" with engine local's node rules, and "remote", whose nodes are
// reached at an address and which reads tables of its own, [far] and
// [[hosts]].
func testEngines() Engines {
	return Engines{
		{Name: EngineLocal, About: "for a tmpfs on this host", Node: func(key string, n NodeKeys, node *Node) error {
			if n.Address != "" {
				return fmt.Errorf("%s.address: a local node is this host", key)
			}
			capacity, err := ParseCapacity(n.Capacity)
			if err != nil {
				return fmt.Errorf("%s.capacity: %w", key, err)
			}
			node.Capacity = capacity
			return nil
		}},
		{Name: "remote", About: "across test hosts", Tables: []string{"[far]", "[[hosts]]"}, Node: func(key string, n NodeKeys, node *Node) error {
			if n.Address == "" {
				return fmt.Errorf("%s.address: missing", key)
			}
			if strings.HasSuffix(n.Capacity, "%") {
				return fmt.Errorf("%s.capacity: a share of this host's RAM", key)
			}
			capacity, err := ParseCapacity(n.Capacity)
			if err != nil {
				return fmt.Errorf("%s.capacity: %w", key, err)
			}
			node.Capacity, node.Address = capacity, n.Address
			return nil
		}, Parse: parseRemote},
	}
}

// remote is what engine "remote" keeps of its tables.
type remote struct {
	Port  int
	Hosts []string
}

func parseRemote(s Section, c *Config) (any, error) {
	var far struct {
		Port *int `toml:"port"`
	}
	var hosts []struct {
		Name string `toml:"name"`
	}
	if err := s.Decode("far", &far); err != nil {
		return nil, err
	}
	if err := s.Decode("hosts", &hosts); err != nil {
		return nil, err
	}
	r := &remote{Port: 7}
	if far.Port != nil {
		if *far.Port < 1 || *far.Port > 65535 {
			return nil, fmt.Errorf("far.port: %d is not a TCP port", *far.Port)
		}
		r.Port = *far.Port
	}
	for i, h := range hosts {
		if h.Name == "" || strings.ContainsAny(h.Name, " \t\n/,:\"\\") {
			return nil, fmt.Errorf("hosts[%d].name: %q is not a host name", i, h.Name)
		}
		r.Hosts = append(r.Hosts, h.Name)
	}
	if len(c.Nodes) == 0 {
		return nil, fmt.Errorf("engine %q needs RSA nodes", c.Engine)
	}
	return r, nil
}

// parse is Parse with testEngines.
func parse(data []byte) (*Config, error) { return Parse(data, testEngines()) }

// TestEngines: the engine named reads its node rules and its own tables,
// whose result is EngineConfig; its tables are decoded as the core keys
// are (unknown keys and values of the wrong type refused); another
// engine's tables, and an engine not in the registry, are errors that say
// what to do.
func TestEngines(t *testing.T) {
	const node = "[[nodes]]\nname = \"n1\"\naddress = \"10.0.0.1\"\ncapacity = \"1G\"\n"
	for _, tc := range []struct {
		name, doc string
		want      any    // EngineConfig, when err is ""
		err       string // the error contains it
	}{
		{"local, no tables", "", nil, ""},
		{"remote at its defaults", "engine = \"remote\"\n" + node, &remote{Port: 7}, ""},
		{"remote, its tables given", "engine = \"remote\"\n" + node + "[far]\nport = 99\n[[hosts]]\nname = \"h1\"\n[[hosts]]\nname = \"h2\"\n",
			&remote{Port: 99, Hosts: []string{"h1", "h2"}}, ""},
		{"an empty table of another engine", "[far]\n", nil, ""},
		{"an engine not in the registry", `engine = "pvfs"`, nil,
			`engine: "pvfs" is not an engine (use "local" for a tmpfs on this host or "remote" across test hosts)`},
		{"the engine's node rules", "engine = \"remote\"\n[[nodes]]\nname = \"n1\"\ncapacity = \"1G\"\n", nil, "nodes[0].address: missing"},
		{"the local node rules", node, nil, "nodes[0].address: a local node is this host"},
		{"a node of another engine", "engine = \"remote\"\n" + node + "[[nodes]]\nname = \"n2\"\nengine = \"local\"\ncapacity = \"1G\"\n", nil,
			`nodes[1].engine: "local" differs from engine "remote"`},
		{"the engine's own error", "engine = \"remote\"\n", nil, `engine "remote" needs RSA nodes`},
		{"a typo in the engine's table", "engine = \"remote\"\n" + node + "[far]\nprot = 99\n", nil, "far.prot: unknown key"},
		{"a typo in the engine's array of tables", "engine = \"remote\"\n" + node + "[[hosts]]\nname = \"h1\"\nnmae = \"h2\"\n", nil, "hosts.nmae: unknown key"},
		{"a value of the wrong type in the engine's table", "engine = \"remote\"\n" + node + "[far]\nport = \"99\"\n", nil, "not valid TOML"},
		{"the table of another engine", "[far]\nport = 99\n", nil, `[far] and [[hosts]] configure engine "remote"; set engine = "remote" or remove them`},
		{"the array of tables of another engine", "[[hosts]]\n", nil, `configure engine "remote"`},
		{"an empty array of another engine's", "hosts = []\n", nil, ""},
		{"a value in place of another engine's table", "far = 5\n", nil, `configure engine "remote"`},
		{"a table no engine reads", "[near]\nport = 99\n", nil, "near: unknown key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse([]byte(tc.doc))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v; want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.EngineConfig, tc.want) {
				t.Errorf("EngineConfig %#v; want %#v", c.EngineConfig, tc.want)
			}
		})
	}
	if _, err := Parse(nil, nil); err == nil || !strings.Contains(err.Error(), `engine: "local" is not an engine`) {
		t.Errorf("no engines at all: %v; want the default engine refused", err)
	}
}
