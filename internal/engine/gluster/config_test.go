package gluster

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/engine/local"
)

// parseDoc is config.Parse with every engine's keys, as all.Engines gives
// them (package all imports this one).
func parseDoc(doc string) (*config.Config, error) {
	return config.Parse([]byte(doc), config.Engines{local.Keys(), Keys()})
}

func TestParseGluster(t *testing.T) {
	c, err := parseDoc(`
engine = "gluster"
[cluster]
pki = "/etc/rsa/pki"
address = "10.0.0.2"
replica = 2
ping_timeout = "5s"
heartbeat = "2s"
profile = true
[[nodes]]
name = "rsa1"
address = "10.0.0.11"
capacity = "64G"
[[nodes]]
name = "rsa2"
address = "rsa2.example.org"
capacity = "64G"
[[compute]]
name = "c1"
address = "10.0.1.1"
`)
	if err != nil {
		t.Fatal(err)
	}
	gc, err := ConfigOf(c)
	if err != nil {
		t.Fatal(err)
	}
	if c.Engine != Name || gc.Replica != 2 || !gc.Profile || gc.PingTimeout != 5*time.Second || gc.Heartbeat != 2*time.Second ||
		gc.Address != "10.0.0.2" || gc.AgentPort != 9477 || len(c.Nodes) != 2 || c.Nodes[1].Address != "rsa2.example.org" ||
		c.Nodes[0].Engine != Name || len(gc.Compute) != 1 || gc.AgentAddr(c.Nodes[0].Address) != "10.0.0.11:9477" {
		t.Fatalf("unexpected config: %+v, %+v", c, gc)
	}
	node := "[[nodes]]\nname = \"rsa1\"\naddress = \"10.0.0.11\"\ncapacity = \"1G\"\n"
	cluster := "[cluster]\naddress = \"10.0.0.2\"\n"
	for _, e := range []struct{ doc, want string }{
		{"engine = \"pvfs\"", `engine: "pvfs" is not an engine (use "local" for a tmpfs on this host or "gluster" across RSA nodes)`},
		{"engine = \"gluster\"\n" + cluster, "needs RSA nodes"},
		{"engine = \"gluster\"\n" + node, "cluster.address: missing"},
		{"engine = \"gluster\"\n" + node + "[cluster]\naddress = \"127.0.0.1\"", "loopback"},
		{"engine = \"gluster\"\n" + cluster + "[[nodes]]\nname = \"rsa1\"\ncapacity = \"1G\"", "nodes[0].address: missing"},
		{"engine = \"gluster\"\n" + cluster + "[[nodes]]\nname = \"rsa1\"\naddress = \"-o x\"\ncapacity = \"1G\"", "nodes[0].address"},
		{"engine = \"gluster\"\n" + cluster + "[[nodes]]\nname = \"rsa1\"\naddress = \"10.0.0.11\"\ncapacity = \"50%\"", "share of this host's RAM"},
		{"engine = \"gluster\"\n" + cluster + "[[nodes]]\nname = \"rsa1\"\nengine = \"local\"\naddress = \"10.0.0.11\"\ncapacity = \"1G\"", "every RSA node serves"},
		{"engine = \"gluster\"\n" + node + cluster + "replica = 3", "cluster.replica"},
		{"engine = \"gluster\"\n" + node + cluster + "replica = 2", "at least two RSA nodes"},
		{"engine = \"gluster\"\n" + node + cluster + "ping_timeout = \"42s\"", "cluster.ping_timeout"},
		{"engine = \"gluster\"\n" + node + cluster + "[[compute]]\nname = \"rsa1\"\naddress = \"10.0.1.1\"", "listed twice"},
		{"engine = \"gluster\"\n" + node + cluster + "[[compute]]\nname = \"c1\"\naddress = \"a,b\"", "compute[0].address"},
		{cluster, `[cluster] and [[compute]] configure engine "gluster"; set engine = "gluster" or remove them`},
		{"[[compute]]\nname = \"c1\"\naddress = \"10.0.1.1\"", `configure engine "gluster"`},
		{"[[nodes]]\nname = \"a\"\naddress = \"10.0.0.11\"\ncapacity = \"1G\"", `nodes[0].address: a node of engine "local" is this host; an address is for engine "gluster"`},
		// Typos in engine gluster's tables are unknown keys, as among
		// the core keys.
		{"engine = \"gluster\"\n" + node + cluster + "hartbeat = \"2s\"", "cluster.hartbeat: unknown key"},
		{"engine = \"gluster\"\n" + node + cluster + "[[compute]]\nname = \"c1\"\nadress = \"10.0.1.1\"", "compute.adress: unknown key"},
		{"engine = \"gluster\"\n" + node + cluster + "agent_port = \"9477\"", "not valid TOML"},
	} {
		if _, err := parseDoc(e.doc); err == nil || !strings.Contains(err.Error(), e.want) {
			t.Errorf("%q: got %v, want an error with %q", e.doc, err, e.want)
		}
	}
}

// TestClusterPeriods: the daemon's own periods and bounds of [cluster]
// keep today's values unless given, take any duration within their
// bounds, and refuse others with an error that names the key and the
// bounds.
func TestClusterPeriods(t *testing.T) {
	const gluster = "engine = \"gluster\"\n[[nodes]]\nname = \"rsa1\"\naddress = \"10.0.0.11\"\ncapacity = \"1G\"\n[cluster]\naddress = \"10.0.0.2\"\n"
	c, err := parseDoc(gluster)
	if err != nil {
		t.Fatal(err)
	}
	defaults := periodsOf(c)
	if want := (periods{pool: 10 * time.Second, poolTimeout: 8 * time.Second, leftover: 20 * time.Second, probe: 10 * time.Second,
		checkTimeout: 15 * time.Second, checkSettle: 15 * time.Second, wholeSettle: 10 * time.Second}); defaults != want {
		t.Errorf("defaults: %+v, want %+v", defaults, want)
	}
	for _, c := range []struct {
		doc  string
		want func(*periods) // sets the one period the doc gives
	}{
		{`pool_check = "2s"`, func(p *periods) { p.pool = 2 * time.Second }},
		{`pool_check = "1h"`, func(p *periods) { p.pool = time.Hour }},
		{`pool_timeout = "1s"`, func(p *periods) { p.poolTimeout = time.Second }},
		{`leftover_sweep = "4s"`, func(p *periods) { p.leftover = 4 * time.Second }},
		{`leftover_sweep = "30"`, func(p *periods) { p.leftover = 30 * time.Second }},
		{`probe_timeout = "5m"`, func(p *periods) { p.probe = 5 * time.Minute }},
		{`check_timeout = "1500ms"`, func(p *periods) { p.checkTimeout = 1500 * time.Millisecond }},
		{`check_settle = "3s"`, func(p *periods) { p.checkSettle = 3 * time.Second }},
		{`whole_settle = "6s"`, func(p *periods) { p.wholeSettle = 6 * time.Second }},
	} {
		got, err := parseDoc(gluster + c.doc + "\n")
		if err != nil {
			t.Errorf("%s: %v", c.doc, err)
			continue
		}
		want := defaults
		c.want(&want)
		if p := periodsOf(got); p != want {
			t.Errorf("%s: %+v, want %+v", c.doc, p, want)
		}
	}
	for _, c := range []struct{ doc, want string }{
		{`pool_check = "999ms"`, `cluster.pool_check: "999ms" must be a duration between 1s and 1h`},
		{`pool_check = "61m"`, `cluster.pool_check: "61m" must be a duration between 1s and 1h`},
		{`pool_timeout = "6m"`, `cluster.pool_timeout: "6m" must be a duration between 1s and 5m`},
		{`leftover_sweep = "0"`, `cluster.leftover_sweep: "0" must be a duration between 1s and 1h`},
		{`probe_timeout = "soon"`, `cluster.probe_timeout: "soon" must be a duration between 1s and 5m`},
		{`check_timeout = "-5s"`, `cluster.check_timeout: "-5s" must be a duration between 1s and 5m`},
		{`check_settle = "2s"`, `cluster.check_settle: "2s" must be a duration between 3s and 5m (a Gluster client tries again every 3s`},
		{`whole_settle = "2900ms"`, `cluster.whole_settle: "2900ms" must be a duration between 3s and 5m (a Gluster client tries again every 3s`},
		{`whole_settle = 3`, `not valid TOML`},
	} {
		_, err := parseDoc(gluster + c.doc + "\n")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.doc, err, c.want)
		}
	}
	// The periods are engine gluster's, as the rest of [cluster] is.
	if _, err := parseDoc("[cluster]\npool_check = \"2s\"\n"); err == nil || !strings.Contains(err.Error(), `configure engine "gluster"`) {
		t.Errorf("[cluster] pool_check with engine local: %v, want refused", err)
	}
}

// periods are the durations of a Config TestClusterPeriods looks at.
type periods struct {
	pool, poolTimeout, leftover, probe, checkTimeout, checkSettle, wholeSettle time.Duration
}

func periodsOf(c *config.Config) periods {
	gc := c.EngineConfig.(*Config)
	return periods{gc.PoolCheck, gc.PoolTimeout, gc.LeftoverSweep, gc.ProbeTimeout, gc.CheckTimeout, gc.CheckSettle, gc.WholeSettle}
}

// TestEveryKeyDocumented keeps docs/config.md in step with the keys of
// [cluster] and [[compute]] the engine reads.
func TestEveryKeyDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []reflect.Type{reflect.TypeOf(clusterFile{}), reflect.TypeOf(computeFile{})} {
		for i := range typ.NumField() {
			key := typ.Field(i).Tag.Get("toml")
			if !strings.Contains(string(doc), "`"+key+"`") {
				t.Errorf("key %q of %s is not documented in docs/config.md", key, typ.Name())
			}
		}
	}
	for _, table := range Keys().Tables {
		if !strings.Contains(string(doc), table) {
			t.Errorf("table %s is not documented in docs/config.md", table)
		}
	}
}

// ConfigOf refuses a config that was not read with the engine's keys:
// Open would otherwise run on zero periods and no address.
func TestConfigOf(t *testing.T) {
	if _, err := ConfigOf(&config.Config{Engine: Name}); err == nil {
		t.Error("a config without engine gluster's part: no error")
	}
}

// The engine asks for even parts and its replicas, and sets the daemon's
// periods to what it was given.
func TestPlacementAndPeriods(t *testing.T) {
	p := engine.Periods{Heartbeat: 2 * time.Second, LeftoverSweep: 4 * time.Second, ProbeTimeout: 6 * time.Second}
	for _, replica := range []int{0, 2} {
		e := &Engine{Replica: replica, DaemonPeriods: p}
		if got := e.Placement(); got != (engine.Placement{Even: true, Replica: replica}) {
			t.Errorf("replica %d: placement %+v", replica, got)
		}
		if got := e.Periods(); got != p {
			t.Errorf("periods %+v, want %+v", got, p)
		}
	}
}
