package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseValid(t *testing.T) {
	c, err := parse([]byte(`
state_dir = "/srv/rsa/state"
socket = "/run/rsa2/rsa.sock"
ramdisk_root = "/run/rsa2/ramdisk"
proportion = 64
default_delay = "90"
[[nodes]]
name = "rsa1"
capacity = "30G"
[[nodes]]
name = "rsa2"
engine = "local"
capacity = "30G"
[limits]
max_active_jobs = 8
max_job_capacity = "40G"
[notify]
program = "/usr/bin/mail"
held_after = "12h"
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Notify != (Notify{Program: "/usr/bin/mail", HeldAfter: 12 * time.Hour, Timeout: 30 * time.Second}) {
		t.Fatalf("notify: %+v", c.Notify)
	}
	if c.Proportion != 64 || c.MinJobNodes != 64 || c.DefaultDelay != 90*time.Second || len(c.Nodes) != 2 ||
		c.Nodes[1].Capacity != 30<<30 || c.Limits.MaxActiveJobs != 8 || c.Limits.MaxJobCapacity != 40<<30 {
		t.Fatalf("unexpected config: %+v", c)
	}
}

func TestParseErrorsNameTheKey(t *testing.T) {
	for _, c := range []struct{ doc, key string }{
		{`proportion = 0`, "proportion"},
		{`propotion = 3`, "propotion: unknown key"},
		{`default_delay = "soon"`, "default_delay"},
		{`state_dir = "relative/dir"`, "state_dir"},
		{`scheduler = "pbs"`, "scheduler"},
		{"[[nodes]]\nname = \"a\"\ncapacity = \"12X\"", "nodes[0].capacity"},
		{"[[nodes]]\nname = \"a\"\ncapacity = \"1G\"\nengine = \"pvfs\"", "nodes[0].engine"},
		{"[[nodes]]\nname = \"a\"\ncapacity = \"1G\"\n[[nodes]]\nname = \"a\"\ncapacity = \"1G\"", "nodes[1].name"},
		{"[limits]\nmax_active_jobs = 0", "limits.max_active_jobs"},
		{`state_dir = "/run/rsa/ramdisk/x"`, "ramdisk_root"},
		{`tick = "1h"`, "tick"},
		{`this is not toml`, "not valid TOML"},
		{"[slurm]\nbin = \"usr/bin\"", "slurm.bin"},
		{"[slurm]\nnode_namespaces = \"/run/../ns\"", "slurm.node_namespaces"},
		{"[slurm]\npoll_interval = \"1ms\"", "slurm.poll_interval"},
		{"[slurm]\nprolog_grace = \"-1s\"", "slurm.prolog_grace"},
		{"[notify]\nprogram = \"mail\"", "notify.program"},
		{"[notify]\nheld_after = \"5m\"", "notify.held_after"},
		{"[notify]\ntimeout = \"1h\"", "notify.timeout"},
		// Found by FuzzParse: "/" contains every directory; a tiny share
		// of RAM was taken although the same bytes written as a size were
		// refused.
		{"state_dir = \"/\"\nramdisk_root = \"/ram\"", "must not contain each other"},
		{"ramdisk_root = \"/\"", "must not contain each other"},
		{"[[nodes]]\nname = \"a\"\ncapacity = \"0.0000001%\"", "nodes[0].capacity"},
		{"[failover]\nlisten = \"10.0.0.1:7711\"", "failover: give listen, peer and peer_address"},
		{"[failover]\npeer = \"ctl2\"\npeer_address = \"10.0.0.2\"", "failover: give listen"},
		{"[failover]\nlisten = \"10.0.0.1\"\npeer = \"ctl2\"\npeer_address = \"10.0.0.2\"", "failover.listen"},
		{"[failover]\nlisten = \"0.0.0.0:7711\"\npeer = \"ctl2\"\npeer_address = \"10.0.0.2\"", "failover.advertise: missing"},
		{"[failover]\nlisten = \"10.0.0.1:7711\"\npeer = \"ctl2\"\npeer_address = \"ctl2\"", "failover.peer_address"},
		{"[failover]\nlisten = \"10.0.0.1:7711\"\npeer = \"ctl2,rsa1\"\npeer_address = \"10.0.0.2\"", "failover.peer"},
		// The local engine's RAMDISKs live in this host's RAM.
		{"[failover]\nlisten = \"10.0.0.1:7711\"\npeer = \"ctl2\"\npeer_address = \"10.0.0.2\"", `failover needs engine "gluster"`},
	} {
		_, err := parse([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%q: error %v should name %q", c.doc, err, c.key)
		}
	}
}

func TestLoadDefaultAndMissing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.toml")
	c, err := Load(missing, false, testEngines())
	if err != nil {
		t.Fatal(err)
	}
	avail, _ := MemAvailable()
	if len(c.Nodes) != 1 || c.Nodes[0].Name != "local" || c.Nodes[0].Capacity < avail/4 || c.Nodes[0].Capacity > avail {
		t.Fatalf("embedded default should be one local node with half of free RAM (%d): %+v", avail, c.Nodes)
	}
	if c.Notify.Program != "" || c.Notify.HeldAfter != DefaultNotifyHeldAfter {
		t.Fatalf("embedded default notifies nobody, reminding after a day once given a program: %+v", c.Notify)
	}
	if c.Proportion != 128 || c.DefaultDelay != 300*time.Second || c.Socket != DefaultSocket {
		t.Fatalf("thesis defaults expected: %+v", c)
	}
	if _, err := Load(missing, true, testEngines()); err == nil {
		t.Fatal("an explicitly named missing file must be an error")
	}
	p := filepath.Join(t.TempDir(), "rsa.toml")
	if err := os.WriteFile(p, []byte("proportion = -3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p, true, testEngines()); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("error should name the file: %v", err)
	}
}

// TestEveryKeyDocumented keeps docs/config.md in step with the keys Parse
// reads.
func TestEveryKeyDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			key := f.Tag.Get("toml")
			if key != "" && !strings.Contains(string(doc), "`"+key+"`") && !strings.Contains(string(doc), "["+key+"]") {
				t.Errorf("key %q is not documented in docs/config.md", key)
			}
			ft := f.Type
			if ft.Kind() == reflect.Slice {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				walk(ft)
			}
		}
	}
	walk(reflect.TypeOf(file{}))
}

// TestCapacityShareOfRAM: "50%" is half of the RAM available when the
// config is read, and the same rule bounds it as a size.
func TestCapacityShareOfRAM(t *testing.T) {
	before, err := MemAvailable()
	if err != nil {
		t.Fatal(err)
	}
	c, err := parse([]byte("[[nodes]]\nname = \"a\"\ncapacity = \"50%\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	after, err := MemAvailable()
	if err != nil {
		t.Fatal(err)
	}
	// Other processes move MemAvailable between the reads: 256M of slack.
	lo, hi := min(before, after)/2-128<<20, max(before, after)/2+128<<20
	if got := c.Nodes[0].Capacity; got < lo || got > hi {
		t.Errorf("50%% of %d..%d bytes available: got %d", min(before, after), max(before, after), got)
	}
	for _, bad := range []string{"0%", "-5%", "91%", "half%", "%"} {
		if _, err := parse([]byte("[[nodes]]\nname = \"a\"\ncapacity = \"" + bad + "\"\n")); err == nil || !strings.Contains(err.Error(), "nodes[0].capacity") {
			t.Errorf("capacity %q: %v, want refused", bad, err)
		}
	}
}

// TestStageLimits: the limits each stage is held to (docs/security.md,
// "Staging cannot escape"): their defaults, the forms each key takes, "0"
// for no limit, and errors that name the key and say what it takes.
func TestStageLimits(t *testing.T) {
	c, err := parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if l := c.Limits; l.StageMemory != 4<<30 || l.StagePids != 1024 || l.StageCPU != 2000 || l.StageNetwork != "none" {
		t.Errorf("defaults: memory %d, pids %d, cpu %d, network %q; want 4G, 1024, 2 CPUs, none", l.StageMemory, l.StagePids, l.StageCPU, l.StageNetwork)
	}
	for _, c := range []struct {
		doc               string
		memory, pids, cpu int64
		network           string
	}{
		{`stage_memory = "64M"`, 64 << 20, 1024, 2000, "none"},
		{`stage_memory = "1.5G"`, 3 << 29, 1024, 2000, "none"},
		{`stage_memory = "0"`, 0, 1024, 2000, "none"},
		{`stage_pids = 100`, 4 << 30, 100, 2000, "none"},
		{`stage_pids = "100"`, 4 << 30, 100, 2000, "none"},
		{`stage_pids = 0`, 4 << 30, 0, 2000, "none"},
		{`stage_pids = "0"`, 4 << 30, 0, 2000, "none"},
		{`stage_cpu = 4`, 4 << 30, 1024, 4000, "none"},
		{`stage_cpu = 0.5`, 4 << 30, 1024, 500, "none"},
		{`stage_cpu = "1.25"`, 4 << 30, 1024, 1250, "none"},
		{`stage_cpu = 0.01`, 4 << 30, 1024, 10, "none"},
		{`stage_cpu = 0`, 4 << 30, 1024, 0, "none"},
		{`stage_cpu = "0"`, 4 << 30, 1024, 0, "none"},
		{`stage_network = "host"`, 4 << 30, 1024, 2000, "host"},
		{`stage_network = "none"`, 4 << 30, 1024, 2000, "none"},
	} {
		got, err := parse([]byte("[limits]\n" + c.doc + "\n"))
		if err != nil {
			t.Errorf("%s: %v", c.doc, err)
			continue
		}
		if l := got.Limits; l.StageMemory != c.memory || l.StagePids != c.pids || l.StageCPU != c.cpu || l.StageNetwork != c.network {
			t.Errorf("%s: memory %d, pids %d, cpu %d, network %q; want %d, %d, %d, %q", c.doc, l.StageMemory, l.StagePids, l.StageCPU, l.StageNetwork, c.memory, c.pids, c.cpu, c.network)
		}
	}
	for _, c := range []struct{ doc, want string }{
		{`stage_memory = "4X"`, `limits.stage_memory: "4X" must be a size of at least 16.0M, such as "4G", or "0" for no limit`},
		{`stage_memory = "4K"`, `limits.stage_memory: "4K" must be a size of at least 16.0M`},
		{`stage_memory = "-1G"`, `limits.stage_memory: "-1G" must be a size`},
		{`stage_memory = 64`, `not valid TOML`},
		{`stage_pids = 8`, `limits.stage_pids: 8 must be a whole number of processes from 16 to 4194304, such as 1024, or 0 for no limit`},
		{`stage_pids = -1`, `limits.stage_pids: -1 must be`},
		{`stage_pids = 1.5`, `limits.stage_pids: 1.5 must be`},
		{`stage_pids = "many"`, `limits.stage_pids: "many" must be`},
		{`stage_pids = 5000000`, `limits.stage_pids: 5000000 must be`},
		{`stage_pids = true`, `limits.stage_pids: true must be`},
		{`stage_cpu = 0.001`, `limits.stage_cpu: 0.001 must be a number of CPUs from 0.01 to 65536, such as 2 or 0.5, or 0 for no limit`},
		{`stage_cpu = -2`, `limits.stage_cpu: -2 must be`},
		{`stage_cpu = "two"`, `limits.stage_cpu: "two" must be`},
		{`stage_cpu = "nan"`, `limits.stage_cpu: "nan" must be`},
		{`stage_cpu = "inf"`, `limits.stage_cpu: "inf" must be`},
		{`stage_cpu = 100000`, `limits.stage_cpu: 100000 must be`},
		{`stage_network = "bridge"`, `limits.stage_network: "bridge" must be "none" (each stage in a network namespace of its own, with no network) or "host"`},
		{`stage_network = ""`, `limits.stage_network: "" must be`},
	} {
		_, err := parse([]byte("[limits]\n" + c.doc + "\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.doc, err, c.want)
		}
	}
}

// TestMarkersDir: the Slurm job markers are beside the socket, or, in a
// failover pair, beside the shared state directory, where the prolog of
// either control host finds the active one's.
func TestMarkersDir(t *testing.T) {
	c := &Config{Socket: "/run/rsa/rsa.sock", StateDir: "/shared/rsa/state"}
	if got := c.MarkersDir(); got != "/run/rsa/rsa.sock.slurm-jobs" {
		t.Errorf("alone: %s", got)
	}
	c.Failover = Failover{Listen: "10.0.0.1:7711", Advertise: "10.0.0.1:7711", Peer: "ctl2", PeerAddress: "10.0.0.2"}
	if got := c.MarkersDir(); got != "/shared/rsa/state.slurm-jobs" {
		t.Errorf("in a failover pair: %s", got)
	}
}
