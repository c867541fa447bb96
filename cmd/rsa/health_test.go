package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// rsa health warns of a certificate that expires within --cert-within
// (30 days) or has expired, the daemon's own or an agent's, one line
// each, and exits 1; otherwise it stays OK.
func TestHealthCertificates(t *testing.T) {
	now := time.Now()
	cert := func(node, role string, left time.Duration) api.CertificateView {
		return api.CertificateView{Node: node, Role: role, NotAfter: now.Add(left), Serial: "1f"}
	}
	const day = 24 * time.Hour
	fine := []api.CertificateView{cert("ctl1", "control", 300*day), cert("rsa1", "storage", 200*day), cert("node017", "compute", 31*day)}
	for _, tc := range []struct {
		name     string
		certs    []api.CertificateView
		certsErr error
		args     []string
		status   int
		want     []string // in stdout
		dontWant []string
	}{
		{name: "all far from expiry", certs: fine, status: healthOK, want: []string{"OK: rsa serve 1.0 answers"}, dontWant: []string{"certificate"}},
		{name: "no agents", certs: []api.CertificateView{}, status: healthOK, want: []string{"OK: "}},
		{name: "an agent's within 30 days", certs: append(fine, cert("node018", "compute", 10*day+time.Hour)), status: healthWarning,
			want: []string{"WARNING: 1 TLS certificates expire within 30 days or have expired (renew them:",
				"  agent of node018: certificate (role compute, serial 1f) expires on " + now.Add(10*day+time.Hour).UTC().Format(time.DateOnly) + ", in 10 days"},
			dontWant: []string{"node017", "rsa1"}},
		{name: "the daemon's expired", certs: []api.CertificateView{cert("ctl1", "control", -day)}, status: healthWarning,
			want: []string{"WARNING: 1 TLS certificates", "  rsa serve on ctl1: certificate (role control, serial 1f) expired on " + now.Add(-day).UTC().Format(time.DateOnly) + ": its peers refuse it"}},
		{name: "a shorter --cert-within", certs: append(fine, cert("node018", "compute", 20*day)), args: []string{"--cert-within", "240h"}, status: healthOK,
			dontWant: []string{"node018"}},
		{name: "a longer --cert-within", certs: fine, args: []string{"--cert-within", "9600h"}, status: healthWarning,
			want: []string{"3 TLS certificates expire within 400 days", "rsa serve on ctl1", "agent of rsa1", "agent of node017"}},
		{name: "a daemon that does not say", certsErr: api.Errorf(http.StatusNotFound, "404 page not found"), status: healthOK, want: []string{"OK: "}},
		{name: "a daemon that fails to say", certsErr: api.Errorf(http.StatusInternalServerError, "broken"), status: healthCritical, want: []string{"CRITICAL: rsa serve does not answer: broken"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := (&fakeDaemon{version: api.VersionInfo{Version: "1.0"}, certs: tc.certs, certsErr: tc.certsErr,
				job: api.JobView{Job: job.Job{ID: 1, State: lifecycle.Finished, RSA: lifecycle.Released}}}).serve(t)
			out, errOut, status := runRSA(t, nil, append([]string{"--socket", d.sock, "health"}, tc.args...)...)
			if status != tc.status {
				t.Errorf("exit status %d, want %d\n%s%s", status, tc.status, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("rsa health does not say %q:\n%s", w, out)
				}
			}
			for _, w := range tc.dontWant {
				if strings.Contains(out, w) {
					t.Errorf("rsa health says %q:\n%s", w, out)
				}
			}
		})
	}

	// --json lists them too.
	d := (&fakeDaemon{version: api.VersionInfo{Version: "1.0"}, certs: []api.CertificateView{cert("rsa2", "storage", 2*day)},
		job: api.JobView{Job: job.Job{ID: 1, State: lifecycle.Finished, RSA: lifecycle.Released}}}).serve(t)
	out, _, status := runRSA(t, nil, "--socket", d.sock, "health", "--json")
	var rep healthReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || status != healthWarning || rep.Status != "WARNING" ||
		len(rep.Certificates) != 1 || !strings.Contains(rep.Certificates[0], "agent of rsa2") {
		t.Errorf("rsa --json health: %v, status %d, %+v", err, status, rep)
	}
}

// --textfile writes the result as Prometheus series for node_exporter's
// textfile collector: every status as its number, the counts, no user's
// text; whole, by a rename, and readable by the collector.
func TestHealthTextfile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rsa.prom")
	now := time.Unix(1796000000, 500e6)
	line := regexp.MustCompile(`^(# (HELP|TYPE) rsa_health_[a-z_]+ .+|rsa_health_[a-z_]+ [0-9.]+)$`)
	for _, c := range []struct {
		rep  healthReport
		want []string
	}{
		{healthReport{Status: "OK"}, []string{"rsa_health_status 0\n", "rsa_health_jobs 0\n", "rsa_health_timestamp_seconds 1796000000.5\n"}},
		{healthReport{Status: "WARNING", Jobs: []string{"job 3 of alice: STAGE_OUT_FAILED: \x1b[2J quota"}, Nodes: []string{"a", "b"}},
			[]string{"rsa_health_status 1\n", "rsa_health_jobs 1\n", "rsa_health_nodes 2\n", "rsa_health_certificates 0\n"}},
		{healthReport{Status: "CRITICAL", Summary: "rsa serve does not answer"}, []string{"rsa_health_status 2\n"}},
	} {
		if err := writeTextfile(path, c.rep, now); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s: the file lacks %q:\n%s", c.rep.Status, w, b)
			}
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if !line.MatchString(l) {
				t.Errorf("%s: not a line of the text exposition format: %q", c.rep.Status, l)
			}
		}
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
			t.Errorf("the file's mode: %v, %v; want 0644 for the collector", st.Mode(), err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("files left beside it: %v", ents)
	}
	if err := writeTextfile(filepath.Join(dir, "none", "rsa.prom"), healthReport{Status: "OK"}, now); err == nil || !strings.Contains(err.Error(), "none/rsa.prom") {
		t.Errorf("a file in a missing directory: %v, want an error naming it", err)
	}
}
