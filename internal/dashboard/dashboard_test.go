package dashboard

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// fakeSource is the daemon as a fixed set of jobs, nodes and events.
type fakeSource struct {
	jobs   []Job
	nodes  []Node
	events map[int64][]Event
	err    error // returned by every method when set
}

func (f fakeSource) Jobs(context.Context, int) ([]Job, error) { return f.jobs, f.err }

func (f fakeSource) Nodes(context.Context) ([]Node, error) { return f.nodes, f.err }

func (f fakeSource) Events(_ context.Context, id int64) ([]Event, error) {
	if f.err != nil {
		return nil, f.err
	}
	evs, ok := f.events[id]
	if !ok {
		return nil, fmt.Errorf("store: job %d: %w", id, ErrNotFound)
	}
	return evs, nil
}

// request is a request as a browser sends it to the dashboard at
// 127.0.0.1:9477, with the local address http.Server gives a handler.
func request(method, target string) *http.Request {
	return requestTo(method, target, "127.0.0.1:9477")
}

// requestTo is request with the Host header host.
func requestTo(method, target, host string) *http.Request {
	r := httptest.NewRequest(method, target, nil)
	r.Host = host
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9477}
	return r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, local))
}

// get serves one request and returns the status and body.
func get(t *testing.T, src Source, target string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	newHandler(src, func() time.Time { return at(30) }).ServeHTTP(rec, request(http.MethodGet, target))
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// ev is a shorthand for a list of events: offset in seconds, job-state,
// rsa-state, repeated.
func evs(args ...any) []Event {
	var out []Event
	for i := 0; i+2 < len(args); i += 3 {
		out = append(out, Event{At: at(float64(args[i].(int))), JobState: args[i+1].(string), RSAState: args[i+2].(string)})
	}
	return out
}

// idealPath is docs/lifecycle.md's ideal path, with times.
func idealPath() []Event {
	return evs(
		0, "ONDECK", "INITIAL", 1, "ONDECK", "ASSIGNED", 2, "ONDECK", "BOOTING", 3, "ONDECK", "BOOTED",
		4, "ONDECK", "STAGING_IN", 10, "ONDECK", "READY", 12, "RUNNING", "READY", 13, "RUNNING", "MOUNTING_IN",
		14, "RUNNING", "INUSE_IN", 20, "RUNNING", "UNMOUNT_NEEDED", 21, "RUNNING", "UNMOUNTING",
		22, "RUNNING", "UNMOUNTED", 23, "RUNNING", "TEARDOWN", 24, "RUNNING", "DESTROYED",
		25, "RUNNING", "BOOTING", 26, "RUNNING", "BOOTED", 27, "RUNNING", "MOUNTING", 28, "RUNNING", "INUSE_OUT",
		40, "FINISHED", "INUSE_OUT", 41, "FINISHED", "STAGING_OUT", 50, "FINISHED", "DONE_STAGING_OUT",
		51, "FINISHED", "TEARDOWN", 52, "FINISHED", "DESTROYED", 53, "FINISHED", "RELEASED",
	)
}

func sampleSource() fakeSource {
	return fakeSource{
		jobs: []Job{
			{ID: 3, User: "alice", JobState: "ONDECK", RSAState: "STAGING_IN", Phase: "stage-in",
				Files: 10, TotalFiles: 20, Bytes: 1 << 20, TotalBytes: 4 << 20, Rate: 2 << 20, ETA: 5 * time.Second,
				Capacity: 64 << 20, Used: 16 << 20, Modes: "input image, private output", Created: at(1)},
			{ID: 2, SlurmID: "4242", User: "bob", JobState: "ONDECK", RSAState: "INITIAL",
				Waiting: "capacity: 64M asked, 0B free", Created: at(0)},
			{ID: 1, User: "carol", JobState: "FINISHED", RSAState: "RELEASED", Done: true, Created: at(0), Started: at(12), Finished: at(40)},
		},
		nodes: []Node{
			{Name: "rsa1", Capacity: 512 << 20, Allocated: 128 << 20, Used: 64 << 20, State: "up"},
			{Name: "rsa2", Capacity: 0, State: "drained"},
		},
		events: map[int64][]Event{1: idealPath()},
	}
}

func TestIndex(t *testing.T) {
	tests := []struct {
		name, target string
		src          fakeSource
		status       int
		want, not    []string
	}{
		{
			name: "jobs and nodes", target: "/", src: sampleSource(), status: 200,
			want: []string{
				"<!doctype html>",
				`<tr id="job-3" data-rsa-state="STAGING_IN" data-job-state="ONDECK">`,
				`<progress max="100" value="25.0">`,
				"10/20 files, 1.0M/4.0M, 2.0M/s, ETA 5s",
				"16.0M of 64.0M", `<span class="modes detail">input image, private output</span>`,
				`<tr id="job-2" data-rsa-state="INITIAL"`, "4242", "capacity: 64M asked, 0B free",
				`<tr id="job-1" data-rsa-state="RELEASED" data-job-state="FINISHED" class="done">`,
				`href="jobs/1"`, "ended 12:00:40",
				`data-node="rsa1" data-state="up"`, `<rect class="alloc" width="80.0"`, `<rect class="used" y="5" width="40.0"`,
				"64.0M used, 128M allocated of 512M",
				`data-node="rsa2" data-state="drained"`,
				`fetch("?partial=1"`,
			},
		},
		{
			name: "partial is the content alone", target: "/?partial=1", src: sampleSource(), status: 200,
			want: []string{`<tr id="job-3"`, `data-node="rsa1"`},
			not:  []string{"<html", "<script", "<style"},
		},
		{
			name: "nothing yet", target: "/", src: fakeSource{}, status: 200,
			want: []string{"no active jobs", "no RSA nodes"},
			not:  []string{"recently ended"},
		},
		{
			name: "source fails", target: "/", src: fakeSource{err: errors.New("database is locked")}, status: 500,
			want: []string{"database is locked"},
		},
		{name: "unknown path", target: "/nope", src: sampleSource(), status: 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, body := get(t, tc.src, tc.target)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d\n%s", res.StatusCode, tc.status, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("body lacks %q\n%s", w, body)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(body, n) {
					t.Errorf("body has %q", n)
				}
			}
		})
	}
}

// Active jobs come oldest first, ended ones newest first, below them.
func TestIndexOrder(t *testing.T) {
	src := sampleSource()
	src.jobs = append(src.jobs, Job{ID: 5, JobState: "FINISHED", RSAState: "RELEASED", Done: true})
	_, body := get(t, src, "/")
	order := []string{`id="job-2"`, `id="job-3"`, `id="job-5"`, `id="job-1"`}
	last := -1
	for _, o := range order {
		i := strings.Index(body, o)
		if i < last {
			t.Fatalf("%s out of order (want %v)", o, order)
		}
		last = i
	}
}

func TestHeaders(t *testing.T) {
	for _, target := range []string{"/", "/?partial=1", "/jobs/1", "/jobs/99", "/nope"} {
		res, _ := get(t, sampleSource(), target)
		if got := res.Header.Get("Content-Security-Policy"); got != csp {
			t.Errorf("%s: CSP %q", target, got)
		}
		if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q", target, got)
		}
	}
}

func TestMethods(t *testing.T) {
	h := Handler(sampleSource())
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, request(m, "/"))
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("%s /: %d, want 405: the dashboard is read-only", m, rec.Code)
		}
	}
}

// The dashboard answers only requests that name it: a page of another
// site, whose name the attacker's DNS points at this address (DNS
// rebinding), gets 421 and no job, and so does one naming a name not
// given.
func TestHostChecked(t *testing.T) {
	for _, tc := range []struct {
		host  string
		hosts []string // Handler's
		want  int
	}{
		{"127.0.0.1:9477", nil, http.StatusOK},
		{"localhost:9477", nil, http.StatusOK},
		{"rsa.example.org:9477", []string{"rsa.example.org"}, http.StatusOK},
		{"evil.example:9477", nil, http.StatusMisdirectedRequest},
		{"rsa.example.org:9477", nil, http.StatusMisdirectedRequest},
	} {
		for _, target := range []string{"/", "/?partial=1", "/jobs/1"} {
			rec := httptest.NewRecorder()
			Handler(sampleSource(), tc.hosts...).ServeHTTP(rec, requestTo(http.MethodGet, target, tc.host))
			if rec.Code != tc.want {
				t.Errorf("GET %s with Host %s (names %q): %d, want %d", target, tc.host, tc.hosts, rec.Code, tc.want)
			}
			if rec.Code != http.StatusOK && strings.ContainsAny(rec.Body.String(), "<") {
				t.Errorf("GET %s with Host %s: the refusal shows a page:\n%s", target, tc.host, rec.Body)
			}
			if got := rec.Header().Get("Content-Security-Policy"); got != csp {
				t.Errorf("GET %s with Host %s: CSP %q", target, tc.host, got)
			}
		}
	}
}

// Everything a user controls is escaped, wherever it lands: text, an
// attribute, an SVG title.
func TestEscaping(t *testing.T) {
	evil := `<script>alert(1)</script>`
	attr := `"><img src=x onerror=alert(1)>`
	src := fakeSource{
		jobs:  []Job{{ID: 1, User: evil, SlurmID: attr, JobState: "RUNNING", RSAState: attr, Waiting: evil, Phase: evil}},
		nodes: []Node{{Name: evil, State: attr, Capacity: 1}},
		events: map[int64][]Event{1: {
			{At: at(0), JobState: "RUNNING", RSAState: evil},
			{At: at(1), JobState: attr, RSAState: "INUSE_IN"},
		}},
	}
	for _, target := range []string{"/", "/?partial=1", "/jobs/1", "/jobs/1?partial=1"} {
		res, body := get(t, src, target)
		if res.StatusCode != 200 {
			t.Fatalf("%s: %d\n%s", target, res.StatusCode, body)
		}
		for _, bad := range []string{"<script>alert", "<img"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s: unescaped %q in\n%s", target, bad, body)
			}
		}
		if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s: the user's name is not shown escaped\n%s", target, body)
		}
	}
}

func TestBars(t *testing.T) {
	type want struct {
		phase    string
		from, to float64
	}
	tests := []struct {
		name string
		evs  []Event
		now  float64
		want []want
	}{
		{
			name: "ideal path, done", evs: idealPath(), now: 100,
			want: []want{
				{"job-run", 12, 40},
				{"build", 2, 4}, {"stage-in", 4, 10}, {"ready", 10, 13}, {"inuse-in", 13, 20},
				{"switch", 20, 28}, {"inuse-out", 28, 41}, {"stage-out", 41, 51}, {"teardown", 51, 53},
			},
		},
		{
			name: "running: the last interval ends now", evs: idealPath()[:18], now: 30,
			want: []want{
				{"job-run", 12, 30},
				{"build", 2, 4}, {"stage-in", 4, 10}, {"ready", 10, 13}, {"inuse-in", 13, 20},
				{"switch", 20, 28}, {"inuse-out", 28, 30},
			},
		},
		{
			name: "finished during stage-in", now: 100,
			evs: evs(0, "ONDECK", "BOOTING", 1, "ONDECK", "BOOTED", 2, "ONDECK", "STAGING_IN",
				6, "FINISHED", "STOPPING_STAGING_IN", 7, "FINISHED", "ABORTED", 8, "FINISHED", "TEARDOWN",
				9, "FINISHED", "DESTROYED", 10, "FINISHED", "RELEASED"),
			want: []want{{"build", 0, 2}, {"stage-in", 2, 7}, {"teardown", 8, 10}},
		},
		{
			name: "input busy at the switch", now: 100,
			evs: evs(0, "RUNNING", "INUSE_IN", 5, "RUNNING", "UNMOUNT_NEEDED", 6, "RUNNING", "UNMOUNTING",
				7, "RUNNING", "UNMOUNT_BUSY", 9, "FINISHED", "UNMOUNT_BUSY", 10, "FINISHED", "TEARDOWN",
				11, "FINISHED", "DESTROYED", 12, "FINISHED", "RELEASED"),
			want: []want{{"job-run", 0, 9}, {"inuse-in", 0, 5}, {"switch", 5, 7}, {"inuse-in", 7, 10}, {"teardown", 10, 12}},
		},
		{
			name: "job ended mid-switch: the teardown is its own", now: 100,
			evs: evs(0, "RUNNING", "INUSE_IN", 5, "RUNNING", "UNMOUNT_NEEDED", 6, "FINISHED", "UNMOUNTING",
				7, "FINISHED", "TEARDOWN", 8, "FINISHED", "DESTROYED", 9, "FINISHED", "RELEASED"),
			want: []want{{"job-run", 0, 6}, {"inuse-in", 0, 5}, {"switch", 5, 7}, {"teardown", 7, 9}},
		},
		{
			name: "a clock step back draws nothing negative", now: 100,
			evs:  evs(10, "ONDECK", "STAGING_IN", 8, "ONDECK", "READY", 12, "RUNNING", "READY"),
			want: []want{{"job-run", 12, 100}, {"stage-in", 10, 10}, {"ready", 8, 100}},
		},
		{
			name: "the rebuild for output failed: giving RSA up is a teardown, not the switch", now: 100,
			evs: evs(0, "RUNNING", "INUSE_IN", 5, "RUNNING", "UNMOUNT_NEEDED", 6, "RUNNING", "UNMOUNTING",
				7, "RUNNING", "UNMOUNTED", 8, "RUNNING", "TEARDOWN", 9, "RUNNING", "DESTROYED", 10, "RUNNING", "BOOTING",
				11, "RUNNING", "ABANDONING", 12, "RUNNING", "INELIGIBLE", 20, "FINISHED", "INELIGIBLE", 21, "FINISHED", "RELEASED"),
			want: []want{{"job-run", 0, 20}, {"inuse-in", 0, 5}, {"switch", 5, 11}, {"teardown", 11, 12}},
		},
		{
			name: "a teardown that failed mid-switch is a teardown", now: 100,
			evs:  evs(0, "RUNNING", "UNMOUNTED", 1, "RUNNING", "TEARDOWN", 2, "RUNNING", "TEARDOWN_FAILED"),
			want: []want{{"job-run", 0, 100}, {"switch", 0, 2}, {"teardown", 2, 100}},
		},
		{name: "one event, waiting", evs: evs(0, "ONDECK", "INITIAL"), now: 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := bars(intervals(tc.evs, at(tc.now)))
			var g []want
			for _, b := range got {
				g = append(g, want{b.Phase, b.From.Sub(t0).Seconds(), b.To.Sub(t0).Seconds()})
			}
			if fmt.Sprint(g) != fmt.Sprint(tc.want) {
				t.Errorf("bars\n got %v\nwant %v", g, tc.want)
			}
		})
	}
}

// svgRect is a bar as the browser would read it.
type svgRect struct {
	Phase   string  `xml:"data-phase,attr"`
	Start   float64 `xml:"data-start,attr"`
	Seconds float64 `xml:"data-seconds,attr"`
	X       float64 `xml:"x,attr"`
	Width   float64 `xml:"width,attr"`
	Title   string  `xml:"title"`
}

// timeline cuts the SVG out of a job page and parses it as XML: it must be
// well-formed on its own.
func timeline(t *testing.T, body string) []svgRect {
	t.Helper()
	i, j := strings.Index(body, `<svg id="timeline"`), strings.Index(body, "</svg>")
	if i < 0 || j < i {
		t.Fatalf("no timeline in\n%s", body)
	}
	var svg struct {
		Rects []svgRect `xml:"rect"`
	}
	if err := xml.Unmarshal([]byte(body[i:j+len("</svg>")]), &svg); err != nil {
		t.Fatalf("the timeline is not well-formed SVG: %v\n%s", err, body[i:j])
	}
	return svg.Rects
}

func TestJobPage(t *testing.T) {
	res, body := get(t, sampleSource(), "/jobs/1")
	if res.StatusCode != 200 {
		t.Fatalf("status %d\n%s", res.StatusCode, body)
	}
	for _, w := range []string{"Job 1 of carol", "FINISHED / RELEASED", " data-final>", `href="../"`, "seconds since the first event", ">0s</text>", ">50s</text>"} {
		if !strings.Contains(body, w) {
			t.Errorf("job page lacks %q", w)
		}
	}
	byPhase := map[string]svgRect{}
	for _, r := range timeline(t, body) {
		byPhase[r.Phase] = r
	}
	fmtSecs := secs
	for phase, secs := range map[string]float64{"job-run": 28, "stage-in": 6, "switch": 8, "stage-out": 10, "teardown": 2} {
		r, ok := byPhase[phase]
		if !ok {
			t.Errorf("no %s bar", phase)
			continue
		}
		if r.Seconds != secs || r.Width <= 0 {
			t.Errorf("%s bar: %+v, want %v s and a positive width", phase, r, secs)
		}
		if !strings.Contains(r.Title, "for "+fmtSecs(secs)) || !strings.Contains(r.Title, "from ") {
			t.Errorf("%s bar's title %q lacks its start and duration", phase, r.Title)
		}
	}
	// 53 s drawn over the plot's width, starting after the labels.
	if r := byPhase["stage-in"]; math.Abs(r.X-(labelW+4.0/53*plotW)) > 0.1 {
		t.Errorf("stage-in starts at x=%v", r.X)
	}
}

// A job still running is drawn up to now and keeps refreshing.
func TestJobPageRunning(t *testing.T) {
	src := sampleSource()
	src.events[7] = idealPath()[:18] // INUSE_OUT since 28 s; now is 30 s
	_, body := get(t, src, "/jobs/7")
	if strings.Contains(body, " data-final>") {
		t.Errorf("a running job's page says it is final")
	}
	for _, r := range timeline(t, body) {
		if r.Phase == "inuse-out" && r.Seconds != 2 {
			t.Errorf("inuse-out lasts %v s, want 2 (until now)", r.Seconds)
		}
	}
}

func TestJobPageErrors(t *testing.T) {
	tests := []struct {
		target string
		src    fakeSource
		status int
	}{
		{"/jobs/99", sampleSource(), 404},
		{"/jobs/abc", sampleSource(), 404},
		{"/jobs/0", sampleSource(), 404},
		{"/jobs/-1", sampleSource(), 404},
		{"/jobs/1/x", sampleSource(), 404},
		{"/jobs/1", fakeSource{events: map[int64][]Event{1: nil}}, 404},
		{"/jobs/1", fakeSource{err: errors.New("disk I/O error")}, 500},
	}
	for _, tc := range tests {
		t.Run(tc.target+"/"+strconv.Itoa(tc.status), func(t *testing.T) {
			res, body := get(t, tc.src, tc.target)
			if res.StatusCode != tc.status {
				t.Errorf("status %d, want %d\n%s", res.StatusCode, tc.status, body)
			}
		})
	}
}

func TestTickStep(t *testing.T) {
	for _, tc := range []struct{ span, step float64 }{
		{1, 0.1}, {5, 0.5}, {10, 1}, {11, 2}, {53, 10}, {100, 10}, {101, 20}, {3600, 500},
	} {
		if got := tickStep(tc.span); got < tc.step*0.999 || got > tc.step*1.001 {
			t.Errorf("tickStep(%v) = %v, want %v", tc.span, got, tc.step)
		}
	}
}
