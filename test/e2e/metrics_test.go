package e2e

import (
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// rsa serve's Prometheus metrics move with a job: scraped while the job
// reads its input in RAM and after it, the job and node gauges follow it
// and the phase, staging and hook counters grow.
func TestMetrics(t *testing.T) {
	t.Parallel()
	e := setup(t, "[metrics]\nlisten = \"127.0.0.1:0\"\n")
	addr := e.metricsAddr()
	scrape := func() map[string]float64 {
		t.Helper()
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("scrape: %s\n%s", resp.Status, b)
		}
		m := map[string]float64{}
		for _, line := range strings.Split(string(b), "\n") {
			if line == "" || line[0] == '#' {
				continue
			}
			i := strings.LastIndexByte(line, ' ')
			if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
				m[line[:i]] = v
			}
		}
		return m
	}
	want := func(m map[string]float64, series string, ok func(float64) bool, what string) {
		t.Helper()
		v, found := m[series]
		if !found || !ok(v) {
			t.Errorf("%s = %v (present: %v), want %s", series, v, found, what)
		}
	}
	is := func(x float64) func(float64) bool { return func(v float64) bool { return v == x } }
	atLeast := func(x float64) func(float64) bool { return func(v float64) bool { return v >= x } }

	before := scrape()
	want(before, `rsa_node_capacity_bytes{node="local"}`, is(512<<20), "512M")
	want(before, `rsa_node_allocated_bytes{node="local"}`, is(0), "0 before any job")
	want(before, `rsa_failures_total{kind="stage-out-failed"}`, is(0), "0, present before any failure")

	in, out, ctl := e.mkdir("in"), e.mkdir("out"), e.mkdir("ctl")
	e.fill(in, 20, 4096)
	gate := filepath.Join(ctl, "go")
	job := e.script("job.sh", inRAM+`ram "$1" || exit 3
while [ ! -e `+gate+` ]; do sleep 0.05; done
waitram "$2"; echo result > "$2/result"
`)
	// The switch to output comes 10 s after the start: the window in which
	// this test, on a loaded box, must see the job in INUSE_IN and scrape.
	// The job, let go by the gate, then waits for its output RAMDISK.
	b := e.runBG("--in", in, "--out", out, "--capacity", "64M", "--delay", "10s", "--", job, in, out)
	testutil.WaitFor(t, "the job to read in RAM", step, poll, func() bool { j, ok := e.maybeJob(1); return ok && j.RSA == lifecycle.InUseIn })
	during := scrape()
	want(during, `rsa_jobs{job_state="RUNNING",rsa_state="INUSE_IN"}`, is(1), "1 while the job reads in RAM")
	want(during, `rsa_node_allocated_bytes{node="local"}`, is(64<<20), "the job's 64M")
	want(during, `rsa_node_used_bytes{node="local"}`, atLeast(20*4096), "at least the input's size")
	want(during, `rsa_staged_files_total{direction="in"}`, is(20), "the 20 input files")
	want(during, `rsa_staged_bytes_total{direction="in"}`, is(20*4096), "the input's bytes")
	want(during, `rsa_phase_duration_seconds_count{phase="stage-in"}`, is(1), "one stage-in")
	want(during, `rsa_phase_duration_seconds_count{phase="construct"}`, is(1), "one construct")
	want(during, `rsa_phase_duration_seconds_count{phase="mount"}`, is(1), "one mount")

	e.writeFile(gate, nil, 0o644)
	if code := b.wait(t); code != 0 {
		t.Fatalf("rsa run exit %d: %s", code, b.errb.String())
	}
	if _, stderr, err := e.rsa(false, "wait", "1"); err != nil {
		t.Fatal(err, stderr)
	}
	after := scrape()
	want(after, `rsa_node_allocated_bytes{node="local"}`, is(0), "0 once the job is released")
	want(after, `rsa_phase_duration_seconds_count{phase="stage-out"}`, is(1), "one stage-out")
	want(after, `rsa_phase_duration_seconds_count{phase="switch"}`, is(1), "one switch from input to output")
	want(after, `rsa_phase_duration_seconds_count{phase="teardown"}`, atLeast(2), "the input RAMDISK's and the output's")
	want(after, `rsa_staged_files_total{direction="out"}`, is(1), "the one output file")
	if _, ok := after[`rsa_jobs{job_state="RUNNING",rsa_state="INUSE_IN"}`]; ok {
		t.Errorf("a job still counted as running after it ended")
	}
	info := false
	for k, v := range after {
		info = info || strings.HasPrefix(k, `rsa_build_info{version="`) && v == 1
	}
	if !info {
		t.Errorf("no rsa_build_info with the daemon's version")
	}
	e.noLeaks()
}
