package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/metrics"
	"github.com/rsa-hpc/rsa/internal/pki"
)

// routeOps are the op label's values, one per route of the agent's, and
// metrics.OpOther: the bounded set the metrics may name.
var routeOps = []string{"status", "make-brick", "remove-brick", "mount", "unmount", "release", "volumes", "peers",
	"make-volume", "remove-volume", "reconnect-peers", "brick-status", "volume-profile", "stage", "seal-volume", metrics.OpOther}

// metricsAgent is an agent serving its operations and its metrics, each
// on a loopback port, without root: no brick root or volume root is made
// (newServer, not New), and none is needed to answer status or refuse.
type metricsAgent struct {
	addr, metricsAddr string
	client            *Client   // the daemon's
	notAfter          time.Time // the agent's certificate's
	// stop stops the agent, its metrics' server with it, and returns
	// ServeMetrics' error.
	stop func() error
}

func startMetricsAgent(t *testing.T) *metricsAgent {
	t.Helper()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca")
	if _, err := pki.Init(ca, pki.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	for node, role := range map[string]pki.Role{"rsa1": pki.RoleStorage, "ctl1": pki.RoleControl} {
		if _, err := pki.Issue(ca, filepath.Join(dir, node), node, role, pki.IssueOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	load := func(node string) *pki.Identity {
		id, err := pki.Load(pki.DirFiles(filepath.Join(dir, node)))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	id := load("rsa1")
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	s, err := newServer(Config{Identity: id, BrickRoot: filepath.Join(dir, "bricks"), VolumeRoot: filepath.Join(dir, "volumes"), Log: log, Version: "v-test"})
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := ParseControl([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen("127.0.0.1:0", ctl, log)
	if err != nil {
		t.Fatal(err)
	}
	mln, err := ListenMetrics("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &metricsAgent{addr: ln.Addr().String(), metricsAddr: mln.Addr().String(), notAfter: id.Certificate().NotAfter}
	served, metricsServed := make(chan error, 1), make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	go func() { metricsServed <- s.ServeMetrics(ctx, mln) }()
	var once sync.Once
	var stopErr error
	m.stop = func() error {
		once.Do(func() {
			cancel()
			if err := <-served; err != nil {
				t.Errorf("Serve: %v", err)
			}
			stopErr = <-metricsServed
		})
		return stopErr
	}
	t.Cleanup(func() { m.stop() })
	if m.client, err = NewClient(load("ctl1"), "rsa1", m.addr); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.client.Close)
	return m
}

// sample is one line of Prometheus' text format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$`)
	labelPair  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?`)
)

// scrape GETs /metrics from addr with the Host header host ("": addr's)
// and returns the status and, for a 200, the samples.
func scrape(t *testing.T, addr, path, host string) (int, []sample) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}, Timeout: 30 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s (Host %q): %v", path, host, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	var out []sample
	for l := range strings.SplitSeq(string(body), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := sampleLine.FindStringSubmatch(l)
		if f == nil {
			t.Fatalf("not a sample line: %q", l)
		}
		v, err := strconv.ParseFloat(f[3], 64)
		if err != nil {
			t.Fatalf("sample line %q: %v", l, err)
		}
		s := sample{name: f[1], labels: map[string]string{}, value: v}
		for _, p := range labelPair.FindAllStringSubmatch(f[2], -1) {
			s.labels[p[1]] = strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\n`, "\n").Replace(p[2])
		}
		out = append(out, s)
	}
	return resp.StatusCode, out
}

// find returns the samples named name whose labels include want's.
func find(samples []sample, name string, want map[string]string) []sample {
	var out []sample
	for _, s := range samples {
		if s.name != name {
			continue
		}
		ok := true
		for k, v := range want {
			ok = ok && s.labels[k] == v
		}
		if ok {
			out = append(out, s)
		}
	}
	return out
}

// send sends a request over the daemon's own connections (its client's
// storage client: authenticated, authorised for status and storage) and
// returns the status.
func (m *metricsAgent) send(t *testing.T, method, path, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, m.client.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.client.storage.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// An agent's metrics name it (info, certificate), count each request the
// daemon sends under its route's name and never its path, whatever the
// path, say when the daemon last reached it and what its node holds, and
// carry no path or volume name in any label.
func TestAgentMetricsSeries(t *testing.T) {
	m := startMetricsAgent(t)
	before := time.Now()
	answered := map[[2]string]float64{} // by op and code
	for _, tc := range []struct {
		method, path, body string
		op                 string
		code               int
	}{
		{"GET", "/v1/status", "", "status", 200},
		{"GET", "/v1/status?where=/etc/passwd", "", "status", 200},
		{"PUT", "/v1/bricks/rsa-job-17", "{", "make-brick", 400},
		{"PUT", "/v1/bricks/etc-passwd", "{}", "make-brick", 400},
		{"PUT", "/v1/mounts/rsa-job-5", "{}", "mount", 403},     // a storage node mounts nothing for jobs
		{"DELETE", "/v1/clients/rsa-job-5", "", "release", 403}, // nor releases
		{"POST", "/v1/stage/rsa-job-3", "{", "stage", 400},      // refused before it runs
		{"POST", "/v1/volumes/rsa-job-3/seal", "[", "seal-volume", 400},
		{"GET", "/v1/nope", "", metrics.OpOther, 404},
		{"GET", "/v1/rsa-job-99/secret", "", metrics.OpOther, 404},
		{"POST", "/v1/bricks/rsa-job-17", "", metrics.OpOther, 405},
		{"GET", "/v1/bricks/../../etc/passwd", "", metrics.OpOther, 0}, // the mux's redirect to the clean path (0: any 3xx)
		{"GET", "/v1/volumes/rsa-job-17/bricks/extra", "", metrics.OpOther, 404},
		{"GET", "/", "", metrics.OpOther, 404},
	} {
		code := m.send(t, tc.method, tc.path, tc.body)
		if code != tc.code && (tc.code != 0 || code/100 != 3) {
			t.Fatalf("%s %s: %d, want %d", tc.method, tc.path, code, tc.code)
		}
		answered[[2]string{tc.op, strconv.Itoa(code)}]++
	}
	after := time.Now()

	code, samples := scrape(t, m.metricsAddr, "/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("scraping the agent's metrics: %d", code)
	}

	// The series, each checked by its labels and value.
	for _, tc := range []struct {
		name   string
		labels map[string]string
		check  func(v float64) bool
		want   string
	}{
		{"rsa_agent_info", map[string]string{"node": "rsa1", "role": "storage", "version": "v-test"}, func(v float64) bool { return v == 1 }, "1"},
		{"rsa_certificate_expiry_timestamp_seconds", map[string]string{"node": "rsa1", "role": "storage"},
			func(v float64) bool { return v == float64(m.notAfter.Unix()) }, fmt.Sprint(m.notAfter.Unix())},
		{"rsa_agent_last_daemon_request_timestamp_seconds", nil, func(v float64) bool {
			return v >= float64(before.Unix()) && v <= float64(after.Unix()+1)
		}, "the time of the requests"},
		{"rsa_agent_request_duration_seconds_count", map[string]string{"op": "status"}, func(v float64) bool { return v == 2 }, "2"},
		{"rsa_agent_request_duration_seconds_bucket", map[string]string{"op": "status", "le": "+Inf"}, func(v float64) bool { return v == 2 }, "2"},
		{"rsa_agent_bricks", nil, func(v float64) bool { return v == 0 }, "0"},
		{"rsa_agent_brick_problems", nil, func(v float64) bool { return v == 0 }, "0"},
		{"rsa_agent_bricks_size_bytes", nil, func(v float64) bool { return v == 0 }, "0"},
		{"rsa_agent_bricks_used_bytes", nil, func(v float64) bool { return v == 0 }, "0"},
		{"rsa_agent_bricks_inodes", nil, func(v float64) bool { return v == 0 }, "0"},
		{"rsa_agent_bricks_inodes_used", nil, func(v float64) bool { return v == 0 }, "0"},
		{"rsa_agent_mounts", nil, func(v float64) bool { return v == 0 }, "0"},
		{"rsa_agent_mount_binds", nil, func(v float64) bool { return v == 0 }, "0"},
		// The refused stage never ran.
		{"rsa_agent_stages_running", map[string]string{"phase": "stage-in"}, func(v float64) bool { return v == 0 }, "0"},
		{"rsa_agent_stages_running", map[string]string{"phase": "stage-out"}, func(v float64) bool { return v == 0 }, "0"},
		{"rsa_agent_stages_total", map[string]string{"phase": "stage-in", "result": "failed"}, func(v float64) bool { return v == 0 }, "0"},
		{"rsa_agent_stages_total", map[string]string{"phase": "stage-out", "result": "ok"}, func(v float64) bool { return v == 0 }, "0"},
		{"process_start_time_seconds", nil, func(v float64) bool { return v > 0 }, "the agent's start"},
	} {
		t.Run(tc.name+fmt.Sprint(tc.labels), func(t *testing.T) {
			got := find(samples, tc.name, tc.labels)
			if len(got) != 1 {
				t.Fatalf("%d series %s%v, want 1", len(got), tc.name, tc.labels)
			}
			if !tc.check(got[0].value) {
				t.Errorf("%s%v = %v, want %s", tc.name, tc.labels, got[0].value, tc.want)
			}
		})
	}

	// Each answer counted under its route's name and status, and nothing
	// else.
	requests := find(samples, "rsa_agent_requests_total", nil)
	for _, r := range requests {
		if want := answered[[2]string{r.labels["op"], r.labels["code"]}]; r.value != want {
			t.Errorf("rsa_agent_requests_total%v = %v, want %v", r.labels, r.value, want)
		}
	}
	if len(requests) != len(answered) {
		t.Errorf("%d series of rsa_agent_requests_total, want %d (%v)", len(requests), len(answered), answered)
	}

	// Bounded labels: op within the routes' names, and no label value a
	// path or a volume name (a job id), whatever was asked for.
	seen := map[string]bool{}
	for _, s := range samples {
		if strings.HasPrefix(s.name, "go_") {
			t.Errorf("%s: the Go collector is not the agent's", s.name)
		}
		for k, v := range s.labels {
			if strings.Contains(v, "/") || strings.Contains(v, "rsa-job") || strings.Contains(v, "passwd") || strings.Contains(v, "..") {
				t.Errorf("%s{%s=%q}: a path or volume name in a label", s.name, k, v)
			}
			if k == "op" {
				seen[v] = true
				if !slices.Contains(routeOps, v) {
					t.Errorf("%s{op=%q}: not a route's name", s.name, v)
				}
			}
		}
	}
	for _, op := range []string{"status", "make-brick", "mount", "release", "stage", "seal-volume", metrics.OpOther} {
		if !seen[op] {
			t.Errorf("no series of op %q", op)
		}
	}

	// The agent stops with the metrics' listener closed.
	if err := m.stop(); err != nil {
		t.Fatalf("ServeMetrics: %v", err)
	}
	if c, err := net.DialTimeout("tcp", m.metricsAddr, 5*time.Second); err == nil {
		c.Close()
		t.Errorf("the metrics' port %s still takes connections after the agent stopped", m.metricsAddr)
	}
}

// The metrics answer only requests that name this host: its address,
// localhost, 127.0.0.1 or ::1, its hostname or its certificate's name,
// with the port connected to or none. Any other name gets 421, so that a
// web page cannot read them by DNS rebinding.
func TestAgentMetricsHost(t *testing.T) {
	m := startMetricsAgent(t)
	_, port, err := net.SplitHostPort(m.metricsAddr)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, host string
		want       int
	}{
		{"/metrics", m.metricsAddr, 200},
		{"/metrics", "localhost", 200},
		{"/metrics", "localhost:" + port, 200},
		{"/metrics", "[::1]:" + port, 200},
		{"/metrics", "rsa1", 200}, // its certificate's name
		{"/metrics", "RSA1.:" + port, 200},
		{"/metrics", "evil.example", 421},
		{"/metrics", "evil.example:" + port, 421},
		{"/metrics", "rsa1.evil.example", 421},
		{"/metrics", "localhost:1", 421}, // another port
		{"/metrics", "127.0.0.2:" + port, 421},
		{"/", m.metricsAddr, 404},
		{"/v1/status", m.metricsAddr, 404},
		{"/", "evil.example", 421},
	} {
		t.Run(tc.path+" "+tc.host, func(t *testing.T) {
			if code, _ := scrape(t, m.metricsAddr, tc.path, tc.host); code != tc.want {
				t.Errorf("GET %s with Host %q: %d, want %d", tc.path, tc.host, code, tc.want)
			}
		})
	}
}

// --metrics-listen takes HOST:PORT, and says which ports not to take when
// its own is taken.
func TestListenMetrics(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct {
		addr, want string
	}{
		{"9479", "give HOST:PORT"},
		{"localhost", "give HOST:PORT"},
		{taken.Addr().String(), "not the agent's own port"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			ln, err := ListenMetrics(tc.addr)
			if err == nil {
				ln.Close()
				t.Fatalf("ListenMetrics(%q) listens", tc.addr)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--metrics-listen") {
				t.Errorf("ListenMetrics(%q): %v, want it to name --metrics-listen and say %q", tc.addr, err, tc.want)
			}
		})
	}
}

// A brick the agent makes shows in its metrics as its status has it,
// without its name (root: newEnv's agents mount their bricks).
func TestAgentMetricsBricks(t *testing.T) {
	e := newEnv(t)
	a := e.start(t, "rsa1")
	c := e.client(t, "rsa1", a.addr)
	ctx := context.Background()
	if _, err := c.MakeBrick(ctx, "rsa-job-7", BrickSpec{Size: 8 << 20}); err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(ctx)
	if err != nil || len(st.Bricks) != 1 {
		t.Fatalf("status: %+v, %v", st, err)
	}
	mln, err := ListenMetrics("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.srv.ServeMetrics(mctx, mln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeMetrics: %v", err)
		}
	}()
	code, samples := scrape(t, mln.Addr().String(), "/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("scraping: %d", code)
	}
	b := st.Bricks[0]
	for name, want := range map[string]int64{"rsa_agent_bricks": 1, "rsa_agent_brick_problems": 0, "rsa_agent_bricks_size_bytes": b.Size,
		"rsa_agent_bricks_inodes": b.Inodes, "rsa_agent_bricks_inodes_used": b.InodesUsed, "rsa_agent_mounts": 0} {
		got := find(samples, name, nil)
		if len(got) != 1 || got[0].value != float64(want) {
			t.Errorf("%s = %+v, want %d", name, got, want)
		}
	}
	if got := find(samples, "rsa_agent_bricks_used_bytes", nil); len(got) != 1 || got[0].value < 0 || got[0].value > float64(b.Size) {
		t.Errorf("rsa_agent_bricks_used_bytes = %+v, want 0 to %d", got, b.Size)
	}
	if err := c.RemoveBrick(ctx, "rsa-job-7"); err != nil {
		t.Fatal(err)
	}
	if _, samples = scrape(t, mln.Addr().String(), "/metrics", "localhost"); len(find(samples, "rsa_agent_bricks", nil)) != 1 || find(samples, "rsa_agent_bricks", nil)[0].value != 0 {
		t.Errorf("after the brick's removal: rsa_agent_bricks %+v, want 0", find(samples, "rsa_agent_bricks", nil))
	}
}
