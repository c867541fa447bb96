package cluster

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/agent"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/pki"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// The daemon knows its own certificate's expiry, reloaded as its files
// change, and each agent's as the heartbeat's handshake saw it, kept
// while the agent is silent; it warns of its own within 30 days.
func TestClusterCertificates(t *testing.T) {
	dir := t.TempDir()
	ca, ctlDir := filepath.Join(dir, "ca"), filepath.Join(dir, "ctl")
	if _, err := pki.Init(ca, pki.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	const day = 24 * time.Hour
	ctlCert, err := pki.Issue(ca, ctlDir, "ctl1", pki.RoleControl, pki.IssueOptions{Validity: 10 * day})
	if err != nil {
		t.Fatal(err)
	}
	rsa1Cert, err := pki.Issue(ca, filepath.Join(dir, "rsa1"), "rsa1", pki.RoleStorage, pki.IssueOptions{Validity: 100 * day})
	if err != nil {
		t.Fatal(err)
	}
	var log testutil.SyncBuffer
	c, err := New(Options{PKI: ctlDir, AgentPort: 9477, Heartbeat: time.Second, DownAfter: time.Minute,
		Storage: []Host{{Name: "rsa1", Address: "10.0.0.1"}, {Name: "rsa2", Address: "10.0.0.2"}}}, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "the daemon's certificate ctl1 (role control) expires on") {
		t.Errorf("no warning of the daemon's certificate expiring in 10 days:\n%s", log.String())
	}

	c.record("rsa1", &agent.Status{Node: "rsa1", BootID: "b", Incarnation: "b/1", Certificate: rsa1Cert}, nil)
	c.record("rsa1", nil, errors.New("connection refused")) // silent: what it showed last stays
	c.record("rsa2", nil, errors.New("connection refused")) // never answered: unknown
	want := []engine.Certificate{
		{Node: "ctl1", Role: "control", NotAfter: ctlCert.NotAfter, Serial: pki.FormatSerial(ctlCert.SerialNumber)},
		{Node: "rsa1", Role: "storage", NotAfter: rsa1Cert.NotAfter, Serial: pki.FormatSerial(rsa1Cert.SerialNumber)},
	}
	if got := c.Certificates(); !equalCerts(got, want) {
		t.Errorf("Certificates = %+v, want %+v", got, want)
	}

	// Renewed on the control host: the next look sees the new one.
	renewed := filepath.Join(dir, "ctl-renewed")
	newCert, err := pki.Issue(ca, renewed, "ctl1", pki.RoleControl, pki.IssueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{pki.KeyFile, pki.CertFile} {
		if err := os.Rename(filepath.Join(renewed, f), filepath.Join(ctlDir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.Certificates(); len(got) == 0 || got[0].Serial != pki.FormatSerial(newCert.SerialNumber) {
		t.Errorf("after renewal, the daemon's certificate is %+v, want serial %s", got, pki.FormatSerial(newCert.SerialNumber))
	}
	if !strings.Contains(log.String(), "loaded the daemon's new certificate files") {
		t.Errorf("the reload is not logged:\n%s", log.String())
	}
}

func equalCerts(a, b []engine.Certificate) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Node != b[i].Node || a[i].Role != b[i].Role || !a[i].NotAfter.Equal(b[i].NotAfter) || a[i].Serial != b[i].Serial {
			return false
		}
	}
	return true
}
