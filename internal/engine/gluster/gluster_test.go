package gluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rsa-hpc/rsa/internal/agent"
	"github.com/rsa-hpc/rsa/internal/engine"
	gcli "github.com/rsa-hpc/rsa/internal/gluster"
	"github.com/rsa-hpc/rsa/internal/job"
)

// fakeNodes resolves names to addresses, which is all spec asks of
// Nodes: any other method panics (the embedded Nodes is nil).
type fakeNodes struct {
	Nodes
	addrs map[string]string
}

func (f fakeNodes) Address(n string) (string, error) {
	if a, ok := f.addrs[n]; ok {
		return a, nil
	}
	return "", errors.New("unknown node " + n)
}
func (f fakeNodes) StorageNodes() []string { return []string{"rsa1", "rsa2"} }
func (f fakeNodes) Name() string           { return "ctl" }

// The volume admits the control host, the job's RSA nodes and the hosts
// named, each once, and nothing else.
func TestSpecAuthAllow(t *testing.T) {
	e := &Engine{Root: "/run/rsa/ramdisk", Control: "10.0.0.2", Replica: 2, Nodes: fakeNodes{addrs: map[string]string{
		"rsa1": "10.0.0.11", "rsa2": "10.0.0.12", "rsa3": "10.0.0.13", "c1": "10.0.1.1", "c2": "10.0.1.2"}}}
	r := engine.Ramdisk{Job: 7, Parts: []job.Part{{Node: "rsa1", Bytes: 1 << 30}, {Node: "rsa2", Bytes: 1 << 30}}}
	for _, c := range []struct {
		hosts []string
		want  []string
	}{
		{nil, []string{"10.0.0.2", "10.0.0.11", "10.0.0.12"}},
		{[]string{"c1", "c2", "c1"}, []string{"10.0.0.2", "10.0.0.11", "10.0.0.12", "10.0.1.1", "10.0.1.2"}},
	} {
		s, err := e.spec(r, []string{"10.0.0.11:/b", "10.0.0.12:/b"}, c.hosts)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(s.AuthAllow, c.want) || s.Replica != 2 || s.PingTimeout != 0 {
			t.Errorf("hosts %v: spec %+v, want auth.allow %v", c.hosts, s, c.want)
		}
	}
	if _, err := e.spec(r, nil, []string{"c9"}); err == nil {
		t.Error("an unknown host was admitted")
	}
}

func TestJobOfRamdisk(t *testing.T) {
	for _, c := range []struct {
		p  string
		id int64
		ok bool
	}{
		{"/run/rsa/ramdisk/17/ram", 17, true},
		{"/run/rsa/ramdisk/017/ram", 0, false},
		{"/run/rsa/ramdisk/17/ram/x", 0, false},
		{"/run/rsa/ramdisk/17", 0, false},
		{"/run/rsa/other/17/ram", 0, false},
		{"/run/rsa/ramdisk/-1/ram", 0, false},
	} {
		id, ok := jobOfRamdisk("/run/rsa/ramdisk", c.p)
		if ok != c.ok || ok && id != c.id {
			t.Errorf("%s: %d %v, want %d %v", c.p, id, ok, c.id, c.ok)
		}
	}
}

// The meta translator's dump of a protocol/client translator says whether
// it is connected; a dump without the line (its lock was taken) says
// nothing.
func TestConnection(t *testing.T) {
	for _, c := range []struct {
		priv string
		want reach
	}{
		{"[xlator.protocol.client.v-client-1.priv]\nconnected = 1\ntotal_bytes_read = 3488\n", reachUp},
		{"[xlator.protocol.client.v-client-1.priv]\nconnected = 0\nping_timeout = 5\n", reachDown},
		{"[xlator.protocol.client.v-client-1.priv]\n", reachUnknown},
		{"", reachUnknown},
		{"connected=0", reachDown},
	} {
		if got := connection(c.priv); got != c.want {
			t.Errorf("connection(%q) = %v, want %v", c.priv, got, c.want)
		}
	}
}

// judge: a witness that says a part is gone for certain is believed at
// once; where glusterd and the client disagree, Check waits, and asks
// glusterd again when it is glusterd that may be behind (restarted).
// TestJudge checks judge on every combination of its witnesses (2 down
// states x 3 words of glusterd x 3 reaches of the client) against the rule
// stated apart, in judgeRule; the named cases are the situations behind the
// rule, each checked against its own verdict too.
func TestJudge(t *testing.T) {
	downs := []bool{false, true}
	says := []glusterdSays{glusterdUnlisted, glusterdOnline, glusterdOffline}
	reaches := []reach{reachUnknown, reachUp, reachDown}
	n := 0
	for _, down := range downs {
		for _, gd := range says {
			for _, client := range reaches {
				n++
				if got, want := judge(down, gd, client), judgeRule(down, gd, client); got != want {
					t.Errorf("judge(down %v, glusterd %v, client %v) = %+v, the rule says %+v", down, gd, client, got, want)
				}
			}
		}
	}
	if n != 18 {
		t.Errorf("checked %d combinations, want all 18", n)
	}
	for _, c := range []struct {
		name   string
		down   bool
		gd     glusterdSays
		client reach
		want   verdict
	}{
		{"all in reach", false, glusterdOnline, reachUp, verdict{}},
		{"glusterd not listing it, the client connected", false, glusterdUnlisted, reachUp, verdict{}},
		{"lost to the heartbeat", true, glusterdOnline, reachUp, verdict{out: true}},
		{"lost to the heartbeat, not asked", true, glusterdUnlisted, reachUnknown, verdict{out: true}},
		{"brick killed", false, glusterdOffline, reachDown, verdict{out: true}},
		{"brick restarted, the client not yet back", false, glusterdOnline, reachDown, verdict{out: true, pending: true}},
		{"glusterd restarted, its brick running on", false, glusterdOffline, reachUp, verdict{out: true, pending: true, reask: true}},
		{"glusterd offline, the client unsure", false, glusterdOffline, reachUnknown, verdict{out: true, pending: true, reask: true}},
		{"the client unsure", false, glusterdOnline, reachUnknown, verdict{pending: true}},
		{"glusterd not listing it, the client down", false, glusterdUnlisted, reachDown, verdict{out: true}},
	} {
		if got := judge(c.down, c.gd, c.client); got != c.want {
			t.Errorf("%s: judge(%v, %v, %v) = %+v, want %+v", c.name, c.down, c.gd, c.client, got, c.want)
		}
		if rule := judgeRule(c.down, c.gd, c.client); rule != c.want {
			t.Errorf("%s: the rule says %+v, the case %+v", c.name, rule, c.want)
		}
	}
}

// judgeRule is judge's rule, stated by witness rather than by case:
//   - A node lost to the heartbeat is out, for certain: nothing to wait for.
//   - Otherwise a part is out when either witness says so: the client has
//     lost its connection, or glusterd has the brick offline.
//   - The verdict waits (pending) while the client is not sure, or while
//     glusterd, listing the brick, disagrees with the client.
//   - glusterd is asked again (reask) when it alone says out: a brick
//     that died resets the client's connection, so glusterd is behind.
func judgeRule(down bool, gd glusterdSays, client reach) verdict {
	if down {
		return verdict{out: true}
	}
	clientOut := client == reachDown
	glusterdOut := gd == glusterdOffline
	listed := gd != glusterdUnlisted
	return verdict{
		out:     clientOut || glusterdOut,
		pending: client == reachUnknown || listed && glusterdOut != clientOut,
		reask:   glusterdOut && !clientOut,
	}
}

// clientView reads a part as up only when its client is connected and,
// distribute, the distribute translator has it up; the generation is the
// distribute translator's.
func TestClientView(t *testing.T) {
	const vol = "rsa-job-7"
	client := func(c string) string {
		if c == "" {
			return "[xlator.protocol.client.priv]\n"
		}
		return "[xlator.protocol.client.priv]\nconnected = " + c + "\n"
	}
	dht := func(gen string, status ...string) string {
		if gen == "" {
			return ""
		}
		s := "[xlator.cluster.dht.priv]\nsubvol_cnt = 2\n"
		for i, st := range status {
			s += fmt.Sprintf("subvolumes[%d] = protocol/client.x\nsubvolume_status[%d] = %s\n", i, i, st)
		}
		return s + "search_unhashed = 0\ngen = " + gen + "\n"
	}
	for _, c := range []struct {
		name    string
		replica int
		clients []string // "connected" of each part's client; "": no line
		dht     string
		want    []reach
		epoch   uint64
	}{
		{"all up", 0, []string{"1", "1"}, dht("4", "1", "1"), []reach{reachUp, reachUp}, 4},
		{"a client down", 0, []string{"1", "0"}, dht("4", "1", "0"), []reach{reachUp, reachDown}, 4},
		{"a client reconnecting", 0, []string{"1", ""}, dht("4", "1", "0"), []reach{reachUp, reachUnknown}, 4},
		// The client connects before it tells the distribute translator.
		{"connected, not yet told", 0, []string{"1", "1"}, dht("4", "1", "0"), []reach{reachUp, reachUnknown}, 4},
		{"no distribute dump", 0, []string{"1", "1"}, dht(""), []reach{reachUnknown, reachUnknown}, 0},
		// One pair: its status is up when either part is.
		{"replica, a part down", 2, []string{"0", "1"}, dht("3", "1"), []reach{reachDown, reachUp}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write := func(xl, text string) {
				d := filepath.Join(dir, ".meta", "graphs", "active", xl)
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(d, "private"), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := engine.Ramdisk{Job: 7, Dir: dir}
			for i, cl := range c.clients {
				write(fmt.Sprintf("%s-client-%d", vol, i), client(cl))
				r.Parts = append(r.Parts, job.Part{Node: fmt.Sprintf("rsa%d", i+1)})
			}
			write(vol+"-dht", c.dht)
			e := &Engine{Replica: c.replica}
			v := e.clientView(r, vol)
			if !slices.Equal(v.parts, c.want) || v.epoch != c.epoch {
				t.Errorf("clientView = %v, epoch %d; want %v, epoch %d", v.parts, v.epoch, c.want, c.epoch)
			}
		})
	}
}

// A status question one peer fails names that peer, as the gluster
// command's failure an agent's answer carries says; the text of an error
// names nothing.
func TestFailedOn(t *testing.T) {
	const refusal = "Staging failed on rsa2. Error: Volume rsa-job-8 is not started"
	for _, c := range []struct {
		name string
		err  error
		host string
		ok   bool
	}{
		{"through an agent", &agent.Error{Node: "rsa1", Code: "internal", Msg: "reading the bricks of volume rsa-job-8 from glusterd: gluster volume status rsa-job-8: " + refusal,
			Gluster: &gcli.Error{Args: []string{"volume", "status", "rsa-job-8"}, Ret: -1, Msg: refusal}}, "rsa2", true},
		{"wrapped", fmt.Errorf("asking: %w", &gcli.Error{Msg: "Staging failed on 10.0.0.12. Error: x"}), "10.0.0.12", true},
		{"another refusal", &gcli.Error{Msg: "Another transaction is in progress"}, "", false},
		{"text alone", errors.New("agent on rsa1: gluster volume status rsa-job-8: " + refusal), "", false},
	} {
		host, ok := failedOn(c.err)
		if host != c.host || ok != c.ok {
			t.Errorf("%s: failedOn(%v) = %q, %v; want %q, %v", c.name, c.err, host, ok, c.host, c.ok)
		}
	}
}
