package config

import (
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
)

// EngineKeys are what one engine reads of the config file beside the core
// keys: the rules of its RSA nodes and the tables of its own. Package
// engine/all lists every engine's (all.Engines); Load and Parse take them
// as an argument, so that this package knows the meaning of the core keys
// and of no engine's.
type EngineKeys struct {
	// Name is the value of the engine key that picks the engine.
	Name string
	// About says in a few words what the engine builds, for the error
	// that lists the engines ("for a tmpfs on this host").
	About string
	// Node reads the keys of one entry of nodes[] that depend on the
	// engine, as the file writes them, into node.Capacity and
	// node.Address. key names the entry ("nodes[0]") for errors. Name
	// and Engine are read and checked before.
	Node func(key string, n NodeKeys, node *Node) error
	// Tables are the tables only this engine reads, as the file heads
	// them: "[cluster]", "[[compute]]". No two engines share a table.
	// Given while another engine is configured, they are an error.
	Tables []string
	// Parse reads Tables from s, with every core key and nodes[] already
	// read into c, and returns what the engine keeps of them: the
	// config's EngineConfig. nil: the engine has no tables.
	Parse func(s Section, c *Config) (any, error)
}

// Engines are the engines a config may name, in the order an error lists
// them.
type Engines []EngineKeys

// find is the engine called name.
func (es Engines) find(name string) (EngineKeys, bool) {
	for _, e := range es {
		if e.Name == name {
			return e, true
		}
	}
	return EngineKeys{}, false
}

// unknown is the error for an engine key that names none of es.
func (es Engines) unknown(name string) error {
	var use []string
	for _, e := range es {
		use = append(use, strings.TrimSpace(fmt.Sprintf("%q %s", e.Name, e.About)))
	}
	if len(use) == 0 {
		return fmt.Errorf("engine: %q is not an engine (this program knows none)", name)
	}
	return fmt.Errorf("engine: %q is not an engine (use %s)", name, joinAnd(use, "or"))
}

// owns reports whether es has an engine whose table top is, the first
// part of a key.
func (es Engines) owns(top string) bool {
	for _, e := range es {
		for _, t := range e.Tables {
			if tableName(t) == top {
				return true
			}
		}
	}
	return false
}

// tableName is the key of a table given as its header: "cluster" for
// "[cluster]" and for "[[cluster]]".
func tableName(header string) string { return strings.Trim(header, "[]") }

// joinAnd joins words as a sentence lists them: "a", "a or b", "a, b or c".
func joinAnd(words []string, conj string) string {
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + conj + " " + words[len(words)-1]
}

// NodeKeys are the keys of one entry of nodes[], as the file writes them.
type NodeKeys struct {
	Name     string `toml:"name"`
	Engine   string `toml:"engine"`
	Capacity string `toml:"capacity"`
	Address  string `toml:"address"`
}

// Section is the part of a config file that one engine reads: its tables,
// undecoded until the engine decodes them. A key in them that the engine
// did not decode is an unknown key, as one among the core keys is.
type Section struct {
	md     toml.MetaData
	tables map[string]toml.Primitive
}

// Decode decodes the table of the given name ("cluster", "compute") into
// v, as toml.Decode decodes a document; a table the file does not give
// leaves v as it is. As among the core keys, a value of the wrong type is
// an error that says the file is not valid TOML, and a key v has no field
// for is an unknown key.
func (s Section) Decode(table string, v any) error {
	p, ok := s.tables[table]
	if !ok {
		return nil
	}
	if err := s.md.PrimitiveDecode(p, v); err != nil {
		return fmt.Errorf("not valid TOML: %w", err)
	}
	for _, k := range s.md.Undecoded() {
		if k[0] == table {
			return unknownKey(k.String())
		}
	}
	return nil
}

// given reports whether the file gives a value under the name of table:
// a key in the table, an entry of an array, or a value that is no table
// at all. It decodes nothing the engine would: it is asked only of the
// tables of engines not configured.
func (s Section) given(table string) bool {
	p, ok := s.tables[table]
	if !ok {
		return false
	}
	switch s.md.Type(table) {
	case "Hash":
		for _, k := range s.md.Keys() {
			if len(k) > 1 && k[0] == table {
				return true
			}
		}
		return false
	case "Array":
		var v []any
		return s.md.PrimitiveDecode(p, &v) != nil || len(v) > 0
	}
	return true
}

// undecoded is the first key of the engine's tables that it did not
// decode, "" if none.
func (s Section) undecoded() string {
	for _, k := range s.md.Undecoded() {
		if _, ok := s.tables[k[0]]; ok {
			return k.String()
		}
	}
	return ""
}

// parseEngine reads the tables of the engine c names and refuses those
// of the others: they would be silently ignored.
func parseEngine(data []byte, eng EngineKeys, es Engines, c *Config) error {
	var raw map[string]toml.Primitive
	md, err := toml.Decode(string(data), &raw)
	if err != nil {
		return fmt.Errorf("not valid TOML: %w", err)
	}
	section := func(e EngineKeys) Section {
		s := Section{md: md, tables: map[string]toml.Primitive{}}
		for _, t := range e.Tables {
			if p, ok := raw[tableName(t)]; ok {
				s.tables[tableName(t)] = p
			}
		}
		return s
	}
	for _, other := range es {
		if other.Name == eng.Name {
			continue
		}
		s := section(other)
		for _, t := range other.Tables {
			if s.given(tableName(t)) {
				return fmt.Errorf("%s configure engine %q; set engine = %q or remove them", joinAnd(other.Tables, "and"), other.Name, other.Name)
			}
		}
	}
	s := section(eng)
	var ec any
	if eng.Parse != nil {
		if ec, err = eng.Parse(s, c); err != nil {
			return err
		}
	}
	if k := s.undecoded(); k != "" {
		return unknownKey(k)
	}
	c.EngineConfig = ec
	return nil
}

// unknownKey is the error for a key RSA does not read.
func unknownKey(key string) error {
	return fmt.Errorf("%s: unknown key (see docs/config.md for the keys RSA reads)", key)
}
