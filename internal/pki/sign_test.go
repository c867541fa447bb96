package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io/fs"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// requestPEM makes a certificate request from tmpl with key, as a site's
// tools might.
func requestPEM(t *testing.T, tmpl *x509.CertificateRequest, key crypto.Signer) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// install copies what Sign wrote next to certFile (the certificate and
// ca.crt) into a host's directory, as an administrator's scp does.
func install(t *testing.T, certFile, hostDir string) {
	t.Helper()
	for from, to := range map[string]string{certFile: CertFile, filepath.Join(filepath.Dir(certFile), CAFile): CAFile} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(hostDir, to), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A host makes its key and request; the CA host signs the request; the
// host loads what it got back, and the daemon and the agent so made shake
// hands.
func TestCARequestSign(t *testing.T) {
	ca := newCA(t, "cluster")
	signed := t.TempDir()
	host := func(node string, role Role, opts IssueOptions) (string, *x509.Certificate) {
		dir := filepath.Join(t.TempDir(), node)
		csr, err := Request(dir, node)
		if err != nil {
			t.Fatalf("Request %s: %v", node, err)
		}
		if csr.Subject.CommonName != strings.ToLower(node) {
			t.Errorf("request names %q", csr.Subject.CommonName)
		}
		checkMode(t, filepath.Join(dir, KeyFile), 0o600)
		checkMode(t, filepath.Join(dir, CSRFile), 0o644)
		b, err := os.ReadFile(filepath.Join(dir, CSRFile))
		if err != nil {
			t.Fatal(err)
		}
		certFile := filepath.Join(signed, strings.ToLower(node), CertFile)
		cert, err := Sign(ca, b, certFile, role, opts)
		if err != nil {
			t.Fatalf("Sign %s: %v", node, err)
		}
		install(t, certFile, dir)
		return dir, cert
	}
	agentDir, cert := host("RSA1", RoleStorage, IssueOptions{IPs: []net.IP{net.ParseIP("10.1.0.11")}, Validity: 90 * day})
	ctlDir, ctlCert := host("ctl1", RoleControl, IssueOptions{})

	// The certificate is Issue's: names, role, usages, validity, serial.
	if cert.Subject.CommonName != "rsa1" || len(cert.DNSNames) != 1 || cert.DNSNames[0] != "rsa1" ||
		len(cert.IPAddresses) != 1 || !cert.IPAddresses[0].Equal(net.ParseIP("10.1.0.11")) {
		t.Errorf("names %q %v %v", cert.Subject.CommonName, cert.DNSNames, cert.IPAddresses)
	}
	if len(cert.URIs) != 1 || cert.URIs[0].String() != "rsa-role:storage" {
		t.Errorf("URIs %v, want rsa-role:storage", cert.URIs)
	}
	if cert.IsCA || cert.KeyUsage != x509.KeyUsageDigitalSignature || len(cert.ExtKeyUsage) != 1 || cert.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("agent certificate: IsCA %v, KeyUsage %v, ExtKeyUsage %v", cert.IsCA, cert.KeyUsage, cert.ExtKeyUsage)
	}
	if len(ctlCert.ExtKeyUsage) != 1 || ctlCert.ExtKeyUsage[0] != x509.ExtKeyUsageClientAuth {
		t.Errorf("control certificate: ExtKeyUsage %v, want client only", ctlCert.ExtKeyUsage)
	}
	if v := time.Until(cert.NotAfter); v < 89*day || v > 91*day {
		t.Errorf("valid for %v, want 90 days", v)
	}
	if cert.SerialNumber.Sign() <= 0 || cert.SerialNumber.BitLen() > 128 || cert.SerialNumber.Cmp(ctlCert.SerialNumber) == 0 {
		t.Errorf("serials %v, %v", cert.SerialNumber, ctlCert.SerialNumber)
	}

	agent, ctl := load(t, DirFiles(agentDir)), load(t, DirFiles(ctlDir))
	if agent.Role() != RoleStorage || ctl.Role() != RoleControl {
		t.Errorf("roles %s, %s", agent.Role(), ctl.Role())
	}
	r := handshake(t, serverConfig(t, agent), clientConfig(t, ctl, "rsa1", KindStorage))
	if r.serverErr != nil || r.clientErr != nil {
		t.Fatalf("handshake: agent %v, daemon %v", r.serverErr, r.clientErr)
	}
	if got, _ := RoleOf(&r.clientState); got != RoleStorage {
		t.Errorf("the daemon sees role %q", got)
	}

	// Both are in the register, for rsa ca revoke NODE.
	issued, err := ReadIssued(ca)
	if err != nil {
		t.Fatal(err)
	}
	if len(issued) != 2 || issued[0].Node != "rsa1" || issued[0].Role != RoleStorage || issued[0].Serial.Cmp(cert.SerialNumber) != 0 ||
		!issued[0].NotAfter.Equal(cert.NotAfter) || issued[1].Node != "ctl1" {
		t.Errorf("register %+v", issued)
	}

	// A second request renews for the key the host has.
	keyBefore := readAll(t, agentDir)[KeyFile]
	csr, err := Request(agentDir, "rsa1")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readAll(t, agentDir)[KeyFile], keyBefore) {
		t.Error("a second Request replaced the host's key")
	}
	if pub, ok := csr.PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(agent.Certificate().PublicKey) {
		t.Error("a second Request is not for the host's key")
	}
	// ... and refuses a key others may read.
	if err := os.Chmod(filepath.Join(agentDir, KeyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Request(agentDir, "rsa1"); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("Request with a key of mode 0644: %v", err)
	}
}

// Sign checks the request and signs only what names one host, with the
// role it is given.
func TestCASignRefuses(t *testing.T) {
	ca := newCA(t, "cluster")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	req := func(cn string, mod func(*x509.CertificateRequest)) []byte {
		tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn}, DNSNames: []string{cn}}
		if mod != nil {
			mod(tmpl)
		}
		return requestPEM(t, tmpl, key)
	}
	uri := func(s string) *url.URL {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	tampered := func() []byte {
		b, _ := pem.Decode(req("rsa1", nil))
		der := bytes.Clone(b.Bytes)
		der[len(der)-3] ^= 0xff // inside the signature
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	}
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p224, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		csr  []byte
		role Role
		want string // "" signs
	}{
		{"rsa ca request's", req("rsa1", nil), RoleStorage, ""},
		{"common name only", req("rsa2", func(r *x509.CertificateRequest) { r.DNSNames = nil }), RoleStorage, ""},
		{"DNS name only", req("", func(r *x509.CertificateRequest) { r.DNSNames = []string{"rsa3"} }), RoleStorage, ""},
		{"its role, as a site's tools ask", req("rsa4", func(r *x509.CertificateRequest) { r.URIs = []*url.URL{roleURI(RoleStorage)} }), RoleStorage, ""},
		{"an Ed25519 key", requestPEM(t, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "rsa5"}}, edKey), RoleStorage, ""},

		{"not PEM", []byte("rsa1"), RoleStorage, "no PEM certificate request"},
		{"a certificate", readAll(t, ca)[CAFile], RoleStorage, "no PEM certificate request"},
		{"tampered", tampered(), RoleStorage, "signature does not verify"},
		{"bad name", req("rsa_1", nil), RoleStorage, `"rsa_1" is not a host name`},
		{"no name", req("", func(r *x509.CertificateRequest) { r.DNSNames = nil }), RoleStorage, "is empty"},
		{"an address as its name", req("10.1.0.7", func(r *x509.CertificateRequest) { r.DNSNames = nil }), RoleStorage, "an address, not a host name"},
		{"another host's name too", req("rsa1", func(r *x509.CertificateRequest) { r.DNSNames = append(r.DNSNames, "ctl1") }), RoleStorage, `also asks for the name "ctl1"`},
		{"a wildcard", req("rsa1", func(r *x509.CertificateRequest) { r.DNSNames = append(r.DNSNames, "*.cluster") }), RoleStorage, "also asks for the name"},
		{"an address", req("rsa1", func(r *x509.CertificateRequest) { r.IPAddresses = []net.IP{net.ParseIP("10.1.0.7")} }), RoleStorage, "--ip"},
		{"an e-mail address", req("rsa1", func(r *x509.CertificateRequest) { r.EmailAddresses = []string{"root@rsa1"} }), RoleStorage, "e-mail"},
		{"another URI", req("rsa1", func(r *x509.CertificateRequest) { r.URIs = []*url.URL{uri("spiffe://site/rsa1")} }), RoleStorage, "asks for the URI spiffe://site/rsa1"},
		{"the control role", req("rsa1", func(r *x509.CertificateRequest) { r.URIs = []*url.URL{roleURI(RoleControl)} }), RoleStorage, "asks for role control, and it is being signed for role storage"},
		{"a weak key", requestPEM(t, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "rsa1"}}, weak), RoleStorage, "1024 bits"},
		{"a curve TLS 1.3 does not sign with", requestPEM(t, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "rsa1"}}, p224), RoleStorage, "P-224"},
		{"no role", req("rsa1", nil), "", "unknown role"},
		{"an unknown role", req("rsa1", nil), "admin", `unknown role "admin"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			certFile := filepath.Join(t.TempDir(), "out", CertFile)
			cert, err := Sign(ca, tc.csr, certFile, tc.role, IssueOptions{})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Sign: %v", err)
				}
				if r, err := CertRole(cert); r != tc.role || err != nil {
					t.Errorf("role %q (%v), want %s", r, err, tc.role)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Sign: %v, want an error saying %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Dir(certFile)); err == nil {
				t.Error("a refused Sign made the output directory")
			}
		})
	}

	// Nothing is replaced: not a certificate, not another CA's ca.crt.
	out := filepath.Join(t.TempDir(), CertFile)
	if _, err := Sign(ca, req("rsa1", nil), out, RoleStorage, IssueOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Sign(ca, req("rsa1", nil), out, RoleStorage, IssueOptions{}); !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), out) {
		t.Errorf("signing over a certificate: %v, want an error naming %s", err, out)
	}
	foreign := t.TempDir()
	if err := os.WriteFile(filepath.Join(foreign, CAFile), readAll(t, newCA(t, "other"))[CAFile], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Sign(ca, req("rsa1", nil), filepath.Join(foreign, CertFile), RoleStorage, IssueOptions{}); !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "another CA's certificate") {
		t.Errorf("signing next to another CA's ca.crt: %v", err)
	}
	if got := keys(readAll(t, foreign)); len(got) != 1 {
		t.Errorf("a refused Sign wrote %v", got)
	}
}

// A revoked certificate is refused by the side that reads the list, in the
// handshake and, on a connection made before, at the next operation.
func TestCARevoke(t *testing.T) {
	ca, other := newCA(t, "cluster"), newCA(t, "other")
	ctlFiles := issue(t, ca, "ctl", RoleControl, IssueOptions{})
	ctl2Files := issue(t, ca, "ctl2", RoleControl, IssueOptions{})
	rsa1Files := issue(t, ca, "rsa1", RoleStorage, IssueOptions{})
	rsa2Files := issue(t, ca, "rsa2", RoleStorage, IssueOptions{})
	ctl, ctl2, rsa2 := load(t, ctlFiles), load(t, ctl2Files), load(t, rsa2Files)
	before := handshake(t, serverConfig(t, load(t, rsa1Files)), clientConfig(t, ctl2, "rsa1"))
	if before.serverErr != nil {
		t.Fatal(before.serverErr)
	}

	serial := func(id *Identity) string { return FormatSerial(id.Certificate().SerialNumber) }
	crl, added, err := Revoke(ca, []*big.Int{ctl2.Certificate().SerialNumber, rsa2.Certificate().SerialNumber}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(added) != 2 || len(crl.RevokedCertificateEntries) != 2 || crl.Number.Int64() != 1 {
		t.Errorf("first list: number %v, %d entries, %d added", crl.Number, len(crl.RevokedCertificateEntries), len(added))
	}
	checkMode(t, filepath.Join(ca, CRLFile), 0o644)
	// Revoking again adds nothing, and numbers the list anew.
	crl, added, err = Revoke(ca, []*big.Int{ctl2.Certificate().SerialNumber}, time.Time{})
	if err != nil || len(added) != 0 || len(crl.RevokedCertificateEntries) != 2 || crl.Number.Int64() != 2 {
		t.Errorf("second list: %v, number %v, %d entries, %d added", err, crl.Number, len(crl.RevokedCertificateEntries), len(added))
	}

	// Every host gets the list.
	for _, f := range []Files{ctlFiles, rsa1Files} {
		if err := os.WriteFile(f.CRL, readAll(t, ca)[CRLFile], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctl, rsa1 := load(t, ctlFiles), load(t, rsa1Files)

	for _, tc := range []struct {
		name           string
		server, client *tls.Config
		refusedBy      string // "agent", "daemon" or "" (accepted)
		want           string
	}{
		{name: "control dials an agent", server: serverConfig(t, rsa1), client: clientConfig(t, ctl, "rsa1")},
		{name: "revoked control", server: serverConfig(t, rsa1), client: clientConfig(t, ctl2, "rsa1"),
			refusedBy: "agent", want: "serial " + serial(ctl2) + ") is revoked"},
		{name: "revoked agent", server: serverConfig(t, rsa2), client: clientConfig(t, ctl, "rsa2"),
			refusedBy: "daemon", want: "serial " + serial(rsa2) + ") is revoked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := handshake(t, tc.server, tc.client)
			switch tc.refusedBy {
			case "":
				if r.serverErr != nil || r.clientErr != nil {
					t.Fatalf("refused: agent %v, daemon %v", r.serverErr, r.clientErr)
				}
			case "agent":
				if r.serverErr == nil || !strings.Contains(r.serverErr.Error(), tc.want) {
					t.Fatalf("agent's error %v, want one saying %q", r.serverErr, tc.want)
				}
			case "daemon":
				if r.clientErr == nil || !strings.Contains(r.clientErr.Error(), tc.want) {
					t.Fatalf("daemon's error %v, want one saying %q", r.clientErr, tc.want)
				}
			}
		})
	}

	// A connection made before the list: its next operation is refused.
	if err := rsa1.Authorize(&before.serverState, KindStorage); err == nil || !strings.Contains(err.Error(), "is revoked") {
		t.Errorf("Authorize a revoked caller: %v", err)
	}
	if err := ctl.CheckPeer(&before.clientState); err != nil {
		t.Errorf("CheckPeer of an agent not revoked: %v", err)
	}
	if err := rsa2.Revoked(); err != nil {
		t.Errorf("rsa2 loaded before the list: %v", err)
	}
	rsa2Files.CRL = filepath.Join(ca, CRLFile)
	if err := load(t, rsa2Files).Revoked(); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("Revoked of a host whose own certificate is listed: %v", err)
	}

	// A list the host's CA did not sign is refused as the host loads it.
	if _, _, err := Revoke(other, []*big.Int{big.NewInt(7)}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	bad := rsa1Files
	bad.CRL = filepath.Join(other, CRLFile)
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "not signed by a CA this host trusts") {
		t.Errorf("Load with another CA's list: %v", err)
	}
	garbage := filepath.Join(t.TempDir(), CRLFile)
	os.WriteFile(garbage, []byte("nothing"), 0o644)
	bad.CRL = garbage
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "holds no revocation list") {
		t.Errorf("Load with a list that is none: %v", err)
	}
	// The CA refuses to extend a list it did not sign.
	if err := os.WriteFile(filepath.Join(ca, CRLFile), readAll(t, other)[CRLFile], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Revoke(ca, []*big.Int{big.NewInt(7)}, time.Time{}); err == nil || !strings.Contains(err.Error(), "move it away") {
		t.Errorf("Revoke over another CA's list: %v", err)
	}
}

// Serial numbers read as rsa ca prints them and as openssl does.
func TestParseSerial(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64 // 0: an error
	}{
		{"1f", 31}, {"1F", 31}, {"serial=1F", 31}, {"01:1f", 287}, {" 0a ", 10},
		{"", 0}, {"0", 0}, {"xyz", 0}, {"-1", 0}, {"serial=", 0},
	} {
		n, err := ParseSerial(tc.in)
		switch {
		case tc.want == 0 && err == nil:
			t.Errorf("ParseSerial(%q) = %v, want an error", tc.in, n)
		case tc.want != 0 && (err != nil || n.Int64() != tc.want):
			t.Errorf("ParseSerial(%q) = %v, %v; want %d", tc.in, n, err, tc.want)
		}
	}
}

// A host hears of its certificate's expiry from 30 days before.
func TestExpiresSoon(t *testing.T) {
	ca := newCA(t, "cluster")
	now := time.Now()
	for _, tc := range []struct {
		name     string
		validity time.Duration
		at       time.Time
		want     string // "" no warning
	}{
		{"a year left", 365 * day, now, ""},
		{"31 days left", 31*day + time.Hour, now, ""},
		{"29 days left", 29*day + time.Hour, now, "in 29 days"},
		{"hours left", 12 * time.Hour, now, "in less than a day"},
		{"expired", 10 * day, now.Add(11 * day), "expired on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := parseFile(t, issue(t, ca, "rsa1", RoleStorage, IssueOptions{Validity: tc.validity}).Cert)
			got := ExpiresSoon(c, tc.at)
			if tc.want == "" {
				if got != "" {
					t.Fatalf("ExpiresSoon = %q, want nothing", got)
				}
				return
			}
			for _, w := range []string{tc.want, "rsa1", "role storage", "renew it"} {
				if !strings.Contains(got, w) {
					t.Errorf("ExpiresSoon = %q, want it to say %q", got, w)
				}
			}
		})
	}
}
