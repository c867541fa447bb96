package gluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The testdata is what gluster 10.3's CLI answered on Debian 12.
func readXML(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseInfo(t *testing.T) {
	bricks := []string{"10.79.0.1:/var/tmp/rsatgl-exp/b1/brick", "10.79.0.1:/var/tmp/rsatgl-exp/b2/brick"}
	for _, tc := range []struct {
		file    string
		started bool
		options map[string]string
	}{
		{"info-created.xml", false, map[string]string{"nfs.disable": "on"}},
		{"info-started.xml", true, map[string]string{"auth.allow": "10.79.0.1,127.0.0.1", "performance.nl-cache": "off", "network.ping-timeout": "10"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			o, err := parse([]string{"volume", "info"}, readXML(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			vs := o.volumes()
			if len(vs) != 1 {
				t.Fatalf("%d volumes", len(vs))
			}
			v := vs[0]
			if v.Name != "rsa-job-7" || v.Started != tc.started || !slices.Equal(v.Bricks, bricks) || v.Replica != 1 {
				t.Errorf("volume %+v", v)
			}
			for k, want := range tc.options {
				if v.Options[k] != want {
					t.Errorf("option %s = %q, want %q", k, v.Options[k], want)
				}
			}
		})
	}
	o, err := parse(nil, readXML(t, "list.xml"))
	if err != nil || !slices.Equal(o.VolList, []string{"rsa-job-7"}) {
		t.Errorf("list: %v, %v", o, err)
	}
	if o, err := parse(nil, readXML(t, "info-all-none.xml")); err != nil || len(o.volumes()) != 0 {
		t.Errorf("info of no volumes: %v, %v", o, err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		file      string
		msg       string
		notFound  bool
		transient bool
	}{
		{"info-absent.xml", "Volume does not exist", true, false},
		{"stop-absent.xml", "Volume rsa-job-99 does not exist", true, false},
		{"delete-absent.xml", "Volume rsa-job-99 does not exist", true, false},
		{"create-exists.xml", "Volume rsa-job-7 already exists", false, false},
		{"start-started.xml", "Volume rsa-job-7 already started", false, false},
		{"set-badkey.xml", "no.such.key does not exist", false, false},
	} {
		t.Run(tc.file, func(t *testing.T) {
			_, err := parse([]string{"x"}, readXML(t, tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.msg) || errors.Is(err, ErrNotFound) != tc.notFound || Transient(err) != tc.transient {
				t.Errorf("parse: %v (not found %v, transient %v)", err, errors.Is(err, ErrNotFound), Transient(err))
			}
		})
	}
	for _, f := range []string{"create.xml", "start.xml", "stop.xml", "stop-stopped.xml", "delete.xml", "set.xml"} {
		if _, err := parse(nil, readXML(t, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// glusterd's refusals name their kind in their text alone; Error says it
// as errors.Is and FailedOn do.
func TestErrorKinds(t *testing.T) {
	for _, tc := range []struct {
		msg       string
		notFound  bool
		peersDown bool
		failedOn  string // "": none
	}{
		{"Volume rsa-job-99 does not exist", true, false, ""},
		{"Some of the peers are down", false, true, ""},
		{"Staging failed on rsa2. Error: Volume rsa-job-8 is not started", false, false, "rsa2"},
		{"Staging failed on 10.0.0.12. Error: x", false, false, "10.0.0.12"},
		{"Staging failed on . Error: x", false, false, ""},
		{"Staging failed on rsa2 without saying why", false, false, ""},
		{"Another transaction is in progress for rsa-job-7. Please try again after some time.", false, false, ""},
	} {
		err := fmt.Errorf("reading the bricks of volume v from glusterd: %w", &Error{Args: []string{"volume", "status", "v"}, Ret: -1, Msg: tc.msg})
		var ge *Error
		if !errors.As(err, &ge) {
			t.Fatalf("%q: no *Error in %v", tc.msg, err)
		}
		peer, ok := ge.FailedOn()
		if errors.Is(err, ErrNotFound) != tc.notFound || errors.Is(err, ErrPeersDown) != tc.peersDown || peer != tc.failedOn || ok != (tc.failedOn != "") {
			t.Errorf("%q: not found %v, peers down %v, failed on %q %v; want %v, %v, %q",
				tc.msg, errors.Is(err, ErrNotFound), errors.Is(err, ErrPeersDown), peer, ok, tc.notFound, tc.peersDown, tc.failedOn)
		}
	}
}

func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want bool
	}{
		{"Connection failed. Please check if gluster daemon is operational. (exit status 1)", true},
		{"Another transaction is in progress for rsa-job-7. Please try again after some time.", true},
		{"Locking failed on 10.0.0.2. Please check log file for details.", true},
		{"Volume rsa-job-7 already exists", false},
		{"Volume does not exist", false},
	} {
		if got := Transient(&Error{Msg: tc.msg}); got != tc.want {
			t.Errorf("Transient(%q) = %v", tc.msg, got)
		}
	}
	if Transient(errors.New("Locking failed")) {
		t.Error("an error not from gluster is transient")
	}
}

func TestArgs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bricks  []string
		replica int
		want    string // joined by spaces; "" for an error
	}{
		{"rsa-job-1", []string{"10.0.0.1:/b/1", "n2:/b/1"}, 0, "volume create rsa-job-1 10.0.0.1:/b/1 n2:/b/1 force"},
		{"rsa-job-1", []string{"a:/b", "b:/b"}, 2, "volume create rsa-job-1 replica 2 a:/b b:/b force"},
		{"rsa-job-1", []string{"a:/b", "b:/b", "c:/b"}, 2, ""},
		{"rsa-job-1", []string{"a:/b"}, 3, ""},
		{"rsa-job-1", nil, 0, ""},
		{"-rsa", []string{"a:/b"}, 0, ""},
		{"rsa-job-1", []string{"-o:/b"}, 0, ""},
		{"rsa-job-1", []string{"a:b"}, 0, ""},
		{"rsa-job-1", []string{"a:/b/../c"}, 0, ""},
		{"rsa-job-1", []string{"a:/b,c"}, 0, ""},
		{"rsa-job-1", []string{"a:/"}, 0, ""},
		{"rsa-job-1", []string{"::1:/b"}, 0, ""},
	} {
		args, err := CreateArgs(tc.name, tc.bricks, tc.replica)
		if got := strings.Join(args, " "); got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("CreateArgs(%q, %q, %d) = %q, %v; want %q", tc.name, tc.bricks, tc.replica, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		servers []string
		volume  string
		dir     string
		want    string
	}{
		{[]string{"10.0.0.1"}, "rsa-job-1", "/run/rsa/ramdisk/1/ram", "-t glusterfs -o nosuid,nodev 10.0.0.1:/rsa-job-1 /run/rsa/ramdisk/1/ram"},
		{[]string{"s1", "s2.example.org", "10.0.0.3"}, "rsa-job-1", "/m", "-t glusterfs -o nosuid,nodev,backup-volfile-servers=s2.example.org:10.0.0.3 s1:/rsa-job-1 /m"},
		{nil, "rsa-job-1", "/m", ""},
		{[]string{"-oexec"}, "rsa-job-1", "/m", ""},
		{[]string{"s1,exec"}, "rsa-job-1", "/m", ""},
		{[]string{"s1:/x"}, "rsa-job-1", "/m", ""},
		{[]string{"s1", "a/b"}, "rsa-job-1", "/m", ""},
		{[]string{"s1"}, "rsa-job-1,x", "/m", ""},
		{[]string{"s1"}, "rsa-job-1", "m", ""},
		{[]string{"s1"}, "rsa-job-1", "/m/", ""},
	} {
		args, err := MountArgs(tc.servers, tc.volume, tc.dir)
		if got := strings.Join(args, " "); got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("MountArgs(%q, %q, %q) = %q, %v; want %q", tc.servers, tc.volume, tc.dir, got, err, tc.want)
		}
	}
}

func TestParseStatus(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []BrickState
	}{
		{"status-online.xml", []BrickState{{"10.78.0.11:/run/bx/brick", true}, {"10.78.0.12:/run/bx/brick", true}}},
		{"status-brick-down.xml", []BrickState{{"10.78.0.11:/run/bx/brick", true}, {"10.78.0.12:/run/bx/brick", false}}},
	} {
		o, err := parse([]string{"volume", "status"}, readXML(t, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if got := o.bricks(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.file, got, tc.want)
		}
	}
}

func TestParsePeers(t *testing.T) {
	o, err := parse([]string{"peer", "status"}, readXML(t, "peer-status.xml"))
	if err != nil {
		t.Fatal(err)
	}
	ps := o.peers()
	if len(ps) != 2 {
		t.Fatalf("%d peers: %+v", len(ps), ps)
	}
	for i, name := range []string{"rsa2", "rsa3"} {
		if p := ps[i]; !slices.Equal(p.Hostnames, []string{name}) || !p.Connected || !p.InCluster() || p.UUID == "" {
			t.Errorf("peer %d: %+v", i, p)
		}
	}
	// Not what this pool answered: the states a CLI without names gives.
	for _, tc := range []struct {
		xml  string
		want string
	}{
		{"<state>3</state>", StateInCluster},
		{"<state>4</state>", "state 4"},
		{"<state>6</state><stateStr>Peer Rejected</stateStr>", "Peer Rejected"},
	} {
		o, err := parse(nil, []byte("<cliOutput><opRet>0</opRet><peerStatus><peer><hostname>h</hostname><connected>0</connected>"+tc.xml+"</peer></peerStatus></cliOutput>"))
		if err != nil {
			t.Fatal(err)
		}
		if ps := o.peers(); len(ps) != 1 || ps[0].State != tc.want || ps[0].Connected {
			t.Errorf("%s: %+v, want state %q, disconnected", tc.xml, ps, tc.want)
		}
	}
	if o, err := parse(nil, []byte("<cliOutput><opRet>0</opRet><peerStatus/></cliOutput>")); err != nil || len(o.peers()) != 0 || o.peers() == nil {
		t.Errorf("no peers: %v, %v", o, err)
	}
}

// ReadDistribution reads the distribute translator's dump as Gluster 10.3
// writes it (its subvolumes named twice: the translator, then for its
// disk usage) and refuses one it does not understand.
func TestReadDistribution(t *testing.T) {
	const vol = "rsa-job-7"
	dump := func(gen string, status ...string) string {
		s := fmt.Sprintf("[xlator.cluster.dht.%s-dht.priv]\nsubvol_cnt = %d\n", vol, len(status))
		for k, st := range status {
			s += fmt.Sprintf("subvolumes[%d] = protocol/client.%s-client-%d\nfile_layouts[%d].cnt = 1\nsubvolume_status[%d] = %s\n", k, vol, k, k, k, st)
		}
		s += "search_unhashed = 1\ngen = " + gen + "\nmin_free_disk = 10.000000\n"
		for k := range status {
			s += fmt.Sprintf("subvolumes[%d] = %s-client-%d\ndu_stats[%d].avail_space = 66424832\n", k, vol, k, k)
		}
		return s
	}
	for _, c := range []struct {
		name  string
		dump  string
		up    []bool
		gen   uint64
		whole bool
		err   bool
	}{
		{"all up", dump("3", "1", "1"), []bool{true, true}, 3, true, false},
		{"one down", dump("4", "1", "0"), []bool{true, false}, 4, false, false},
		{"no dump", "", nil, 0, false, true},
		{"no count", "[xlator.cluster.dht.priv]\ngen = 3\n", nil, 0, false, true},
		{"no generation", strings.Replace(dump("3", "1"), "gen = 3", "gen = ?", 1), nil, 0, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.dump != "" {
				d := filepath.Join(dir, ".meta", "graphs", "active", vol+"-dht")
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(d, "private"), []byte(c.dump), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			d, err := ReadDistribution(dir, vol)
			if (err != nil) != c.err || !slices.Equal(d.Up, c.up) || d.Gen != c.gen || d.Whole() != c.whole {
				t.Fatalf("ReadDistribution = %+v, whole %v, %v; want up %v, gen %d, whole %v, error %v", d, d.Whole(), err, c.up, c.gen, c.whole, c.err)
			}
			if err == nil && d.Names[len(d.Names)-1] != fmt.Sprintf("%s-client-%d", vol, len(d.Up)-1) {
				t.Errorf("names %q", d.Names)
			}
			if down := d.Down(dir); !c.whole && !c.err && !slices.Equal(down, []string{vol + "-client-1"}) {
				t.Errorf("Down = %q", down)
			}
		})
	}
}
