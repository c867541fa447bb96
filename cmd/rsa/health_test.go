package main

import (
	"encoding/json"
	"net/http"
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
