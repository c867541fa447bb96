package config

import (
	"fmt"
	"strings"
)

// parseNodes reads nodes[]: every node serves the one engine of the
// config, which reads what of a node depends on it (eng.Node: its
// capacity and address).
func parseNodes(f *file, eng EngineKeys, c *Config) error {
	seen := map[string]bool{}
	for i, n := range f.Nodes {
		key := fmt.Sprintf("nodes[%d]", i)
		if n.Name == "" || strings.ContainsAny(n.Name, " \t\n/,:") {
			return fmt.Errorf("%s.name: %q must be a non-empty host name", key, n.Name)
		}
		if seen[n.Name] {
			return fmt.Errorf("%s.name: %q is listed twice", key, n.Name)
		}
		seen[n.Name] = true
		if n.Engine != "" && n.Engine != c.Engine {
			return fmt.Errorf("%s.engine: %q differs from engine %q: every RSA node serves the config's one engine (drop nodes[].engine)", key, n.Engine, c.Engine)
		}
		node := Node{Name: n.Name, Engine: c.Engine}
		if eng.Node == nil {
			return fmt.Errorf("%s: engine %q has no RSA nodes of its own to list", key, c.Engine)
		}
		if err := eng.Node(key, n, &node); err != nil {
			return err
		}
		c.Nodes = append(c.Nodes, node)
	}
	return nil
}
