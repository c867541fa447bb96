package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/pki"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// An agent and the daemon's client, each on a pki.Live, take a renewed
// certificate and a revocation list while they run: the agent at its
// next connection, the client at its next connection and, for a list,
// its next answer. The daemon sees the agent's certificate as its
// handshake verified it.
func TestAgentCertificatesReloaded(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ca := filepath.Join(e.dir, "pki", "ca")
	live := func(node string) *pki.Live {
		l, err := pki.LoadLive(e.files[node], nil)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a := e.startWith(t, "rsa1", live("rsa1"), slog.New(slog.NewTextHandler(t.Output(), nil)))
	ctl := live("ctl1")
	c, err := NewClient(ctl, "rsa1", a.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	status := func() *Status {
		t.Helper()
		st, err := c.Status(ctx)
		if err != nil {
			t.Fatalf("Status: %v", err)
		}
		return st
	}
	st := status()
	first := st.Certificate
	if first == nil || first.Subject.CommonName != "rsa1" {
		t.Fatalf("the client reports the agent's certificate %v", first)
	}
	if onDisk, err := pki.Load(e.files["rsa1"]); err != nil || onDisk.Certificate().SerialNumber.Cmp(first.SerialNumber) != 0 {
		t.Fatalf("the handshake's certificate is not the agent's (%v)", err)
	}

	// Renewed in place: the next connection gets the new certificate.
	renewed := filepath.Join(e.dir, "pki", "rsa1-renewed")
	if _, err := pki.Issue(ca, renewed, "rsa1", pki.RoleStorage, pki.IssueOptions{Validity: 90 * 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{pki.KeyFile, pki.CertFile} {
		if err := os.Rename(filepath.Join(renewed, f), filepath.Join(filepath.Dir(e.files["rsa1"].Cert), f)); err != nil {
			t.Fatal(err)
		}
	}
	// The heartbeat keeps its connection busy: only its age ends it.
	if st := status(); st.Certificate.SerialNumber.Cmp(first.SerialNumber) != 0 {
		t.Fatal("a connection was not reused")
	}
	c.connAge = 0
	second := status().Certificate
	c.connAge = time.Hour
	if second.SerialNumber.Cmp(first.SerialNumber) == 0 {
		t.Fatal("the agent's old certificate is still seen after the new one was installed and the connections aged")
	}
	if v := time.Until(second.NotAfter); v > 91*24*time.Hour {
		t.Errorf("the daemon sees the agent's certificate valid for %v, want the renewed 90 days", v)
	}

	// The agent revokes the daemon's certificate: refused on the
	// connection made before (at the operation), and at the next one (in
	// the handshake).
	if _, _, err := pki.Revoke(ca, []*big.Int{ctl.Current().Certificate().SerialNumber}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	crl, err := os.ReadFile(filepath.Join(ca, pki.CRLFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.files["rsa1"].CRL, crl, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Status(ctx); !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), "is revoked") {
		t.Errorf("a revoked daemon's request on an old connection: %v", err)
	}
	c.Close()
	if _, err := c.Status(ctx); err == nil || Transient(err) {
		t.Errorf("a revoked daemon's new connection: %v, want a permanent refusal", err)
	}
	if err := os.Remove(e.files["rsa1"].CRL); err != nil {
		t.Fatal(err)
	}
	c.Close()
	status()

	// The daemon's certificate renewed in place, and the old one revoked
	// on the agent: the next connection presents the new one.
	ctlRenewed := filepath.Join(e.dir, "pki", "ctl1-renewed")
	if _, err := pki.Issue(ca, ctlRenewed, "ctl1", pki.RoleControl, pki.IssueOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{pki.KeyFile, pki.CertFile} {
		if err := os.Rename(filepath.Join(ctlRenewed, f), filepath.Join(filepath.Dir(e.files["ctl1"].Cert), f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(e.files["rsa1"].CRL, crl, 0o644); err != nil { // the old ctl1's
		t.Fatal(err)
	}
	c.Close()
	if _, err := c.Status(ctx); err != nil {
		t.Fatalf("the daemon's renewed certificate, its old one revoked: %v", err)
	}

	// The daemon revokes the agent's certificate: the next answer on the
	// pooled connection is refused, and so is the next handshake.
	if _, _, err := pki.Revoke(ca, []*big.Int{second.SerialNumber}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if crl, err = os.ReadFile(filepath.Join(ca, pki.CRLFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.files["ctl1"].CRL, crl, 0o644); err != nil {
		t.Fatal(err)
	}
	revoked := "serial " + pki.FormatSerial(second.SerialNumber) + ") is revoked"
	if _, err := c.Status(ctx); err == nil || !strings.Contains(err.Error(), revoked) || Transient(err) {
		t.Errorf("a revoked agent's answer on the old connection: %v", err)
	}
	c.Close()
	// Refused in the handshake: no request reaches it (the transport's
	// error, not one about an answer).
	_, err = c.Status(ctx)
	if ue := (*url.Error)(nil); !errors.As(err, &ue) || !strings.Contains(err.Error(), revoked) || Transient(err) {
		t.Errorf("a revoked agent on a new connection: %v, want the handshake refused", err)
	}
}

// An agent warns as it starts when its certificate expires within 30
// days, and not otherwise.
func TestAgentWarnsOfExpiry(t *testing.T) {
	e := newEnv(t)
	ca := filepath.Join(e.dir, "pki", "ca")
	for _, tc := range []struct {
		name string
		days int
		warn bool
	}{{"a year left", 365, false}, {"31 days left", 31, false}, {"29 days left", 29, true}, {"a day left", 1, true}} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "rsa1")
			if _, err := pki.Issue(ca, out, "rsa1", pki.RoleStorage, pki.IssueOptions{Validity: time.Duration(tc.days)*24*time.Hour + time.Hour}); err != nil {
				t.Fatal(err)
			}
			id, err := pki.Load(pki.DirFiles(out))
			if err != nil {
				t.Fatal(err)
			}
			var log testutil.SyncBuffer
			if _, err := New(Config{Identity: id, BrickRoot: e.brickRoot, VolumeRoot: e.volumeRoot, Log: slog.New(slog.NewTextHandler(io.MultiWriter(&log, t.Output()), nil))}); err != nil {
				t.Fatal(err)
			}
			warned := strings.Contains(log.String(), "level=WARN") && strings.Contains(log.String(), "expires on")
			if warned != tc.warn {
				t.Errorf("warned %v, want %v:\n%s", warned, tc.warn, log.String())
			}
			if tc.warn && !strings.Contains(log.String(), "renew it") {
				t.Errorf("the warning does not say what to do:\n%s", log.String())
			}
		})
	}
}
