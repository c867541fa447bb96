package gluster

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A mounted volume's Gluster client shows its translator graph through
// the meta translator: a virtual tree .meta at the mount's root, which no
// user can create or replace. .meta/graphs/active/XL/private is the state
// translator XL dumps of itself ("key = value" lines); its options are
// files under .meta/graphs/active/XL/options. The client of brick i is
// VOL-client-i; the distribute translator, VOL-dht, has one subvolume per
// brick (distribute) or per pair of bricks (replica 2).

// MetaDump is the private dump of translator xl of the volume mounted at
// dir, or "" if there is none to be had: the translator is unknown, or
// its lock is taken (as for a while after a brick came back).
func MetaDump(dir, xl string) string {
	b, _ := os.ReadFile(filepath.Join(dir, ".meta", "graphs", "active", xl, "private"))
	return string(b)
}

// MetaOption is option key of translator xl of the volume mounted at
// dir ("" if unknown): remote-host and remote-subvolume of a client name
// its brick.
func MetaOption(dir, xl, key string) string {
	b, _ := os.ReadFile(filepath.Join(dir, ".meta", "graphs", "active", xl, "options", key))
	return strings.TrimSpace(string(b))
}

// DumpValue finds the first "key = value" in a translator's private dump.
func DumpValue(priv, key string) (string, bool) {
	for line := range strings.Lines(priv) {
		k, v, ok := strings.Cut(line, "=")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// Distribution is what the distribute translator of a mounted volume says
// of its subvolumes: only those Up take part in a listing, and a file on
// one that is not is left out of it without an error.
type Distribution struct {
	// Up[k]: subvolume k is up.
	Up []bool
	// Names[k] is subvolume k's translator: VOL-client-k, or for
	// replica 2 VOL-replicate-k.
	Names []string
	// Gen grows each time a subvolume comes (back) up: two reads that
	// differ in it saw a subvolume leave or come back in between.
	Gen uint64
}

// ReadDistribution reads the distribute translator of volume vol mounted
// at dir. It fails if the dump is not to be had or not understood.
func ReadDistribution(dir, vol string) (Distribution, error) {
	priv := MetaDump(dir, vol+"-dht")
	bad := func(what string) error {
		return fmt.Errorf("reading %s/.meta/graphs/active/%s-dht/private, the Gluster client's view of the volume: %s", dir, vol, what)
	}
	if priv == "" {
		return Distribution{}, bad("not to be had")
	}
	cnt, ok := DumpValue(priv, "subvol_cnt")
	n, err := strconv.Atoi(cnt)
	if !ok || err != nil || n <= 0 || n > 1024 {
		return Distribution{}, bad(fmt.Sprintf("subvol_cnt %q", cnt))
	}
	g, ok := DumpValue(priv, "gen")
	gen, err := strconv.ParseUint(g, 10, 64)
	if !ok || err != nil {
		return Distribution{}, bad(fmt.Sprintf("gen %q", g))
	}
	d := Distribution{Up: make([]bool, n), Names: make([]string, n), Gen: gen}
	for k := range n {
		st, _ := DumpValue(priv, fmt.Sprintf("subvolume_status[%d]", k))
		d.Up[k] = st == "1"
		// "protocol/client.VOL-client-0", "cluster/replicate.VOL-replicate-0"
		sub, _ := DumpValue(priv, fmt.Sprintf("subvolumes[%d]", k))
		// A translator's name is one path component below .meta.
		if _, name, _ := strings.Cut(sub, "."); name != "" && name != ".." && !strings.Contains(name, "/") {
			d.Names[k] = name
		}
	}
	return d, nil
}

// Whole says whether every subvolume is up: a listing then misses no
// file.
func (d Distribution) Whole() bool {
	for _, up := range d.Up {
		if !up {
			return false
		}
	}
	return len(d.Up) > 0
}

// Down names the subvolumes that are not up, with the bricks of their
// clients where the client names them ("VOL-client-1 (10.0.0.12:/b)").
func (d Distribution) Down(dir string) []string {
	var down []string
	for k, up := range d.Up {
		if up {
			continue
		}
		name := cmp.Or(d.Names[k], fmt.Sprintf("subvolume %d", k))
		if host := MetaOption(dir, d.Names[k], "remote-host"); d.Names[k] != "" && host != "" {
			name += fmt.Sprintf(" (%s:%s)", host, MetaOption(dir, d.Names[k], "remote-subvolume"))
		}
		down = append(down, name)
	}
	return down
}
