package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

const day = 24 * time.Hour

// newCA makes a cluster CA in a fresh directory, valid from two years ago,
// so that certificates that have already expired can be issued from it.
func newCA(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ca")
	if _, err := Init(dir, InitOptions{Name: name, Now: time.Now().Add(-2 * 365 * day)}); err != nil {
		t.Fatalf("Init: %v", err)
	}
	return dir
}

// issue issues node's certificate into a fresh directory and returns its
// files.
func issue(t *testing.T, caDir, node string, role Role, opts IssueOptions) Files {
	t.Helper()
	out := filepath.Join(t.TempDir(), node)
	if _, err := Issue(caDir, out, node, role, opts); err != nil {
		t.Fatalf("Issue %s %s: %v", node, role, err)
	}
	return DirFiles(out)
}

func load(t *testing.T, f Files) *Identity {
	t.Helper()
	id, err := Load(f)
	if err != nil {
		t.Fatalf("Load %s: %v", f.Cert, err)
	}
	return id
}

func serverConfig(t *testing.T, id *Identity) *tls.Config {
	t.Helper()
	c, err := id.ServerConfig()
	if err != nil {
		t.Fatalf("ServerConfig: %v", err)
	}
	return c
}

func clientConfig(t *testing.T, id *Identity, node string, needs ...Kind) *tls.Config {
	t.Helper()
	c, err := id.ClientConfig(node, needs...)
	if err != nil {
		t.Fatalf("ClientConfig: %v", err)
	}
	return c
}

// keyPair reads a certificate and key the way another TLS program would,
// without Load's checks: what a misconfigured or hostile host presents.
func keyPair(t *testing.T, f Files) tls.Certificate {
	t.Helper()
	c, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func pool(t *testing.T, caFile string) *x509.CertPool {
	t.Helper()
	certs, err := parseCerts(caFile)
	if err != nil {
		t.Fatal(err)
	}
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p
}

// hostileClient presents f's certificate to any server, trusting trustCA
// (a CA certificate is public, so an attacker has ours) and expecting
// node.
func hostileClient(t *testing.T, f Files, trustCA, node string) *tls.Config {
	t.Helper()
	cert := keyPair(t, f)
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		RootCAs:    pool(t, trustCA),
		ServerName: node,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &cert, nil
		},
	}
}

// hostileServer serves f's certificate to any client that has one of
// trustCA's certificates.
func hostileServer(t *testing.T, f Files, trustCA string) *tls.Config {
	t.Helper()
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{keyPair(t, f)},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool(t, trustCA),
	}
}

// result is what each side of a handshake saw.
type result struct {
	serverErr, clientErr     error
	serverState, clientState tls.ConnectionState
}

// handshake runs a TLS handshake over a real loopback TCP connection. The
// server answers one byte once its handshake succeeded; the client reads
// it, so that a client certificate refused by the server (which TLS 1.3
// reports to the client only after its own handshake is done) shows as
// the client's error too.
func handshake(t *testing.T, server, client *tls.Config) result {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var r result
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := l.Accept()
		if err != nil {
			r.serverErr = err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		tc := tls.Server(c, server)
		if r.serverErr = tc.Handshake(); r.serverErr != nil {
			return
		}
		r.serverState = tc.ConnectionState()
		if _, r.serverErr = tc.Write([]byte{1}); r.serverErr == nil {
			r.serverErr = tc.Close()
		}
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	tc := tls.Client(c, client)
	if r.clientErr = tc.Handshake(); r.clientErr == nil {
		r.clientState = tc.ConnectionState()
		_, r.clientErr = tc.Read(make([]byte, 1))
	}
	c.Close()
	<-done
	return r
}

// The handshakes between the daemon and the agents, good and bad, each
// refused by the side whose check it is, for the reason it is refused.
func TestPKIHandshake(t *testing.T) {
	now := time.Now()
	ca, other := newCA(t, "cluster A"), newCA(t, "cluster B")
	caFile := filepath.Join(ca, CAFile)

	ctlFiles := issue(t, ca, "ctl", RoleControl, IssueOptions{})
	rsa1Files := issue(t, ca, "rsa1", RoleStorage, IssueOptions{})
	c1Files := issue(t, ca, "c1", RoleCompute, IssueOptions{})
	ctl, rsa1, c1 := load(t, ctlFiles), load(t, rsa1Files), load(t, c1Files)
	rsa2 := load(t, issue(t, ca, "rsa2", RoleStorage, IssueOptions{}))
	both := load(t, issue(t, ca, "n1", RoleBoth, IssueOptions{}))
	byIP := load(t, issue(t, ca, "rsa3", RoleStorage, IssueOptions{IPs: []net.IP{net.ParseIP("127.0.0.1")}}))

	otherCtlFiles := issue(t, other, "ctl", RoleControl, IssueOptions{})
	otherCtl, otherRsa1 := load(t, otherCtlFiles), load(t, issue(t, other, "rsa1", RoleStorage, IssueOptions{}))

	expired := IssueOptions{Now: now.Add(-400 * day), Validity: 30 * day}
	expiredCtl := issue(t, ca, "ctl", RoleControl, expired)
	expiredRsa1 := issue(t, ca, "rsa1", RoleStorage, expired)
	noRole := signed(t, ca, &x509.Certificate{Subject: pkix.Name{CommonName: "ctl"}, DNSNames: []string{"ctl"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	// Certificates for client and server use, as a site PKI may issue
	// them: the role alone must keep these from calling an agent.
	anyUse := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	c2Files := signed(t, ca, &x509.Certificate{Subject: pkix.Name{CommonName: "c2"}, DNSNames: []string{"c2"},
		URIs: []*url.URL{roleURI(RoleCompute)}, ExtKeyUsage: anyUse})
	rsa4Files := signed(t, ca, &x509.Certificate{Subject: pkix.Name{CommonName: "rsa4"}, DNSNames: []string{"rsa4"},
		URIs: []*url.URL{roleURI(RoleStorage)}, ExtKeyUsage: anyUse})
	ctl2Files := signed(t, ca, &x509.Certificate{Subject: pkix.Name{CommonName: "ctl2"}, DNSNames: []string{"ctl2"},
		URIs: []*url.URL{roleURI(RoleControl)}, ExtKeyUsage: anyUse})

	tls12 := func(c *tls.Config) *tls.Config {
		c = c.Clone()
		c.MinVersion, c.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
		return c
	}

	for _, tc := range []struct {
		name           string
		server, client *tls.Config
		refusedBy      string // "agent", "daemon" or "" (accepted)
		want           string // in the refusing side's error
		role           Role   // the agent's role the daemon sees, when accepted
	}{
		{name: "control dials storage", server: serverConfig(t, rsa1), client: clientConfig(t, ctl, "rsa1", KindStorage), role: RoleStorage},
		{name: "control dials compute", server: serverConfig(t, c1), client: clientConfig(t, ctl, "c1", KindCompute), role: RoleCompute},
		{name: "control dials both", server: serverConfig(t, both), client: clientConfig(t, ctl, "n1", KindStorage, KindCompute, KindStatus), role: RoleBoth},
		{name: "control dials an agent by its address", server: serverConfig(t, byIP), client: clientConfig(t, ctl, "127.0.0.1"), role: RoleStorage},

		{name: "agent of another CA", server: serverConfig(t, otherRsa1), client: clientConfig(t, ctl, "rsa1"),
			refusedBy: "daemon", want: "unknown authority"},
		{name: "control of another CA", server: serverConfig(t, rsa1), client: hostileClient(t, otherCtlFiles, caFile, "rsa1"),
			refusedBy: "agent", want: "unknown authority"},
		{name: "control of another CA, trusting its own", server: serverConfig(t, rsa1), client: clientConfig(t, otherCtl, "rsa1"),
			refusedBy: "daemon", want: "unknown authority"},
		// rsa ca issue gives agents server-only certificates: refused
		// before their role is read.
		{name: "compute node calls a storage agent", server: serverConfig(t, rsa1), client: hostileClient(t, c1Files, caFile, "rsa1"),
			refusedBy: "agent", want: "incompatible key usage"},
		{name: "storage node calls another storage agent", server: serverConfig(t, rsa2), client: hostileClient(t, rsa1Files, caFile, "rsa2"),
			refusedBy: "agent", want: "incompatible key usage"},
		{name: "compute node with a client-capable certificate calls a storage agent", server: serverConfig(t, rsa1), client: hostileClient(t, c2Files, caFile, "rsa1"),
			refusedBy: "agent", want: "role compute: agents accept only the control daemon"},
		{name: "storage node with a client-capable certificate calls another storage agent", server: serverConfig(t, rsa2), client: hostileClient(t, rsa4Files, caFile, "rsa2"),
			refusedBy: "agent", want: "role storage: agents accept only the control daemon"},
		{name: "client certificate without a role", server: serverConfig(t, rsa1), client: hostileClient(t, noRole, caFile, "rsa1"),
			refusedBy: "agent", want: "carries no RSA role"},
		{name: "agent answers for another node", server: serverConfig(t, rsa2), client: clientConfig(t, ctl, "rsa1"),
			refusedBy: "daemon", want: "not rsa1"},
		{name: "compute agent dialled for storage", server: serverConfig(t, c1), client: clientConfig(t, ctl, "c1", KindStorage),
			refusedBy: "daemon", want: "role compute, which does not serve storage operations"},
		{name: "control certificate serving as an agent", server: hostileServer(t, ctlFiles, caFile), client: clientConfig(t, ctl, "ctl"),
			refusedBy: "daemon", want: "incompatible key usage"},
		{name: "server-capable control certificate serving as an agent", server: hostileServer(t, ctl2Files, caFile), client: clientConfig(t, ctl, "ctl2"),
			refusedBy: "daemon", want: "answered with role control, not an agent's"},
		{name: "TLS 1.2 client", server: serverConfig(t, rsa1), client: tls12(clientConfig(t, ctl, "rsa1")),
			refusedBy: "agent", want: "unsupported versions"},
		{name: "TLS 1.2 agent", server: tls12(serverConfig(t, rsa1)), client: clientConfig(t, ctl, "rsa1"),
			refusedBy: "daemon", want: "protocol version"},
		{name: "expired agent", server: hostileServer(t, expiredRsa1, caFile), client: clientConfig(t, ctl, "rsa1"),
			refusedBy: "daemon", want: "expired"},
		{name: "expired control", server: serverConfig(t, rsa1), client: hostileClient(t, expiredCtl, caFile, "rsa1"),
			refusedBy: "agent", want: "expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := handshake(t, tc.server, tc.client)
			switch tc.refusedBy {
			case "":
				if r.serverErr != nil || r.clientErr != nil {
					t.Fatalf("refused: agent: %v; daemon: %v", r.serverErr, r.clientErr)
				}
				if got, err := RoleOf(&r.clientState); got != tc.role || err != nil {
					t.Errorf("daemon sees the agent's role %q (%v), want %q", got, err, tc.role)
				}
				if got, err := RoleOf(&r.serverState); got != RoleControl || err != nil {
					t.Errorf("agent sees the caller's role %q (%v), want control", got, err)
				}
				if v := r.clientState.Version; v != tls.VersionTLS13 {
					t.Errorf("TLS version %x, want 1.3", v)
				}
			case "agent":
				if r.serverErr == nil || !strings.Contains(r.serverErr.Error(), tc.want) {
					t.Fatalf("agent's error %v, want one saying %q", r.serverErr, tc.want)
				}
				if r.clientErr == nil {
					t.Fatal("the caller saw no error though the agent refused it")
				}
			case "daemon":
				if r.clientErr == nil || !strings.Contains(r.clientErr.Error(), tc.want) {
					t.Fatalf("daemon's error %v, want one saying %q", r.clientErr, tc.want)
				}
				if r.serverErr == nil {
					t.Fatal("the agent completed a handshake the daemon refused")
				}
			}
		})
	}
}

// signed signs tmpl (given a serial, validity and key here) with the CA in
// caDir and writes it with its key into a fresh directory: certificates
// Issue would not make.
func signed(t *testing.T, caDir string, tmpl *x509.Certificate) Files {
	t.Helper()
	ca, caKey, caPEM, err := loadCA(caDir)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.SerialNumber, err = newSerial(); err != nil {
		t.Fatal(err)
	}
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(day)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		t.Fatal(err)
	}
	f := DirFiles(t.TempDir())
	for path, data := range map[string][]byte{f.CA: caPEM, f.Cert: encodeCert(der), f.Key: keyPEM} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func parseFile(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	certs, err := parseCerts(path)
	if err != nil {
		t.Fatal(err)
	}
	return certs[0]
}

// RoleOf reads the role of a verified peer only, and only a certificate
// with exactly one known role has one.
func TestPKIRoleOf(t *testing.T) {
	ca := newCA(t, "cluster")
	cert := func(role Role) *x509.Certificate {
		return parseFile(t, issue(t, ca, "h-"+string(role), role, IssueOptions{}).Cert)
	}
	uris := func(us ...string) *x509.Certificate {
		tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: "odd"}}
		for _, u := range us {
			p, err := url.Parse(u)
			if err != nil {
				t.Fatal(err)
			}
			tmpl.URIs = append(tmpl.URIs, p)
		}
		return parseFile(t, signed(t, ca, tmpl).Cert)
	}
	verified := func(c *x509.Certificate) *tls.ConnectionState {
		return &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}, VerifiedChains: [][]*x509.Certificate{{c}}}
	}
	for _, tc := range []struct {
		name string
		cs   *tls.ConnectionState
		want Role
		err  string
	}{
		{"control", verified(cert(RoleControl)), RoleControl, ""},
		{"storage", verified(cert(RoleStorage)), RoleStorage, ""},
		{"compute", verified(cert(RoleCompute)), RoleCompute, ""},
		{"both", verified(cert(RoleBoth)), RoleBoth, ""},
		{"upper-case scheme", verified(uris("RSA-ROLE:storage")), RoleStorage, ""},
		{"role beside other URIs", verified(uris("spiffe://site/host/rsa1", "rsa-role:compute")), RoleCompute, ""},
		{"not TLS", nil, "", "not a TLS connection"},
		{"unverified", &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert(RoleControl)}}, "", "not verified"},
		{"no role", verified(uris()), "", "carries no RSA role"},
		{"other URIs only", verified(uris("spiffe://site/host/rsa1")), "", "carries no RSA role"},
		{"unknown role", verified(uris("rsa-role:admin")), "", `unknown role "admin"`},
		{"two roles", verified(uris("rsa-role:storage", "rsa-role:compute")), "", "carries 2 RSA roles"},
		{"same role twice", verified(uris("rsa-role:storage", "rsa-role:storage")), "", "carries 2 RSA roles"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RoleOf(tc.cs)
			if tc.err == "" {
				if err != nil || got != tc.want {
					t.Fatalf("RoleOf = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) || got != "" {
				t.Fatalf("RoleOf = %q, %v; want an error saying %q", got, err, tc.err)
			}
		})
	}
}

// Which role serves which kind of operation: the rule that keeps a compute
// node from being sent a brick and control from serving anything.
func TestPKIRoleAllows(t *testing.T) {
	for _, tc := range []struct {
		role                     Role
		status, storage, compute bool
	}{
		{RoleControl, false, false, false},
		{RoleStorage, true, true, false},
		{RoleCompute, true, false, true},
		{RoleBoth, true, true, true},
		{"", false, false, false},
		{"admin", false, false, false},
	} {
		for op, want := range map[Kind]bool{KindStatus: tc.status, KindStorage: tc.storage, KindCompute: tc.compute, Kind(0): false, Kind(99): false} {
			if got := tc.role.Allows(op); got != want {
				t.Errorf("Role(%q).Allows(%v) = %v, want %v", tc.role, op, got, want)
			}
		}
	}
	for _, r := range Roles() {
		if got, err := ParseRole(string(r)); got != r || err != nil {
			t.Errorf("ParseRole(%q) = %q, %v", r, got, err)
		}
	}
	for _, s := range []string{"", "Storage", "admin", "storage,compute"} {
		if _, err := ParseRole(s); err == nil || !strings.Contains(err.Error(), "control (the host running rsa serve)") {
			t.Errorf("ParseRole(%q) = %v, want an error listing the roles", s, err)
		}
	}
}

// An agent's handler authorises each operation on the real connection
// state: the caller must be control, and the agent's own role must serve
// the operation.
func TestPKIAuthorize(t *testing.T) {
	ca := newCA(t, "cluster")
	ctl := load(t, issue(t, ca, "ctl", RoleControl, IssueOptions{}))
	rsa1 := load(t, issue(t, ca, "rsa1", RoleStorage, IssueOptions{}))
	c1 := load(t, issue(t, ca, "c1", RoleCompute, IssueOptions{}))
	fromControl := handshake(t, serverConfig(t, rsa1), clientConfig(t, ctl, "rsa1"))
	if fromControl.serverErr != nil {
		t.Fatal(fromControl.serverErr)
	}
	// What an agent would see if a storage node's call got through: the
	// handshake refuses it, so the state is the daemon's side of a
	// handshake with rsa1, whose peer is rsa1.
	storagePeer := &fromControl.clientState

	for _, tc := range []struct {
		name  string
		agent *Identity
		cs    *tls.ConnectionState
		op    Kind
		err   string
	}{
		{"storage agent, brick", rsa1, &fromControl.serverState, KindStorage, ""},
		{"storage agent, status", rsa1, &fromControl.serverState, KindStatus, ""},
		{"storage agent, mount", rsa1, &fromControl.serverState, KindCompute, "this agent's role is storage"},
		{"compute agent, brick", c1, &fromControl.serverState, KindStorage, "this agent's role is compute"},
		{"compute agent, mount", c1, &fromControl.serverState, KindCompute, ""},
		{"caller is a storage node", rsa1, storagePeer, KindStatus, "the caller's role is storage"},
		{"not TLS", rsa1, nil, KindStatus, "not a TLS connection"},
		{"unverified", rsa1, &tls.ConnectionState{PeerCertificates: fromControl.serverState.PeerCertificates}, KindStatus, "not verified"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.agent.Authorize(tc.cs, tc.op)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("Authorize: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("Authorize = %v, want an error saying %q", err, tc.err)
			}
		})
	}

	// Each side's config is for its own role only.
	if _, err := ctl.ServerConfig(); err == nil {
		t.Error("ServerConfig with a control certificate: no error")
	}
	if _, err := rsa1.ClientConfig("rsa2"); err == nil {
		t.Error("ClientConfig with a storage certificate: no error")
	}
	if _, err := ctl.ClientConfig(""); err == nil {
		t.Error("ClientConfig without a node: no error")
	}
}

// A private key that group or others may read, or that another user owns,
// is refused with the command that fixes it.
func TestPKIKeyFileMode(t *testing.T) {
	ca := newCA(t, "cluster")
	f := issue(t, ca, "rsa1", RoleStorage, IssueOptions{})
	for _, tc := range []struct {
		mode fs.FileMode
		ok   bool
	}{
		{0o600, true}, {0o400, true},
		{0o644, false}, {0o640, false}, {0o604, false}, {0o660, false}, {0o620, false}, {0o602, false}, {0o700, true}, {0o610, false},
	} {
		if err := os.Chmod(f.Key, tc.mode); err != nil {
			t.Fatal(err)
		}
		_, err := Load(f)
		switch {
		case tc.ok && err != nil:
			t.Errorf("mode %04o: %v", tc.mode, err)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), "chmod 600 "+f.Key)):
			t.Errorf("mode %04o: %v, want an error saying chmod 600 %s", tc.mode, err, f.Key)
		}
	}
	if err := os.Chmod(f.Key, 0o600); err != nil {
		t.Fatal(err)
	}

	// The CA's key too: Issue refuses to use it.
	caKey := filepath.Join(ca, CAKeyFile)
	if err := os.Chmod(caKey, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Issue(ca, t.TempDir(), "rsa2", RoleStorage, IssueOptions{}); err == nil || !strings.Contains(err.Error(), "chmod 600 "+caKey) {
		t.Errorf("Issue with a CA key of mode 0644: %v, want an error saying chmod 600", err)
	}
	if err := os.Chmod(caKey, 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("owner", func(t *testing.T) {
		testutil.RequireRoot(t)
		if err := os.Chown(f.Key, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		defer os.Chown(f.Key, 0, 0)
		if _, err := Load(f); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") || !strings.Contains(err.Error(), "chown 0 "+f.Key) {
			t.Errorf("key owned by nobody: %v, want an error saying chown 0", err)
		}
	})
}

// Init never replaces a CA, even half of one, and writes the key private.
func TestCAInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	ca, err := Init(dir, InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !ca.IsCA || ca.MaxPathLen != 0 || !ca.MaxPathLenZero || ca.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("CA certificate: IsCA %v, MaxPathLen %d, KeyUsage %v", ca.IsCA, ca.MaxPathLen, ca.KeyUsage)
	}
	if v := ca.NotAfter.Sub(time.Now()); v < DefaultCAValidity-day || v > DefaultCAValidity+day {
		t.Errorf("CA valid for %v, want about %v", v, DefaultCAValidity)
	}
	if !strings.HasPrefix(ca.Subject.CommonName, "RSA cluster CA") {
		t.Errorf("CA named %q", ca.Subject.CommonName)
	}
	checkMode(t, dir, 0o700)
	checkMode(t, filepath.Join(dir, CAKeyFile), 0o600)
	checkMode(t, filepath.Join(dir, CAFile), 0o644)
	before := readAll(t, dir)

	if _, err := Init(dir, InitOptions{}); !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), filepath.Join(dir, CAKeyFile)) || !strings.Contains(err.Error(), "move") {
		t.Errorf("second Init: %v, want an error naming %s and the fix", err, CAKeyFile)
	}
	if err := os.Rename(filepath.Join(dir, CAKeyFile), filepath.Join(t.TempDir(), "saved.key")); err != nil {
		t.Fatal(err)
	}
	if _, err := Init(dir, InitOptions{}); !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), filepath.Join(dir, CAFile)) {
		t.Errorf("Init over a lone ca.crt: %v, want an error naming %s", err, CAFile)
	}
	after := readAll(t, dir)
	if !bytes.Equal(after[CAFile], before[CAFile]) || len(after) != 1 {
		t.Errorf("a refused Init changed the directory: %v", keys(after))
	}
	if _, err := Init(t.TempDir(), InitOptions{Validity: -day}); err == nil {
		t.Error("Init with a negative validity: no error")
	}
}

// Issue writes what a host loads, with the names, role and validity asked
// for, and replaces nothing.
func TestCAIssue(t *testing.T) {
	ca := newCA(t, "cluster")
	out := filepath.Join(t.TempDir(), "nodes", "rsa1")
	ips := []net.IP{net.ParseIP("10.1.0.7"), net.ParseIP("fd00::7")}
	cert, err := Issue(ca, out, "RSA1", RoleStorage, IssueOptions{IPs: ips})
	if err != nil {
		t.Fatal(err)
	}
	if len(cert.DNSNames) != 1 || cert.DNSNames[0] != "rsa1" || cert.Subject.CommonName != "rsa1" {
		t.Errorf("names %v (%q), want rsa1", cert.DNSNames, cert.Subject.CommonName)
	}
	if len(cert.IPAddresses) != 2 || !cert.IPAddresses[0].Equal(ips[0]) || !cert.IPAddresses[1].Equal(ips[1]) {
		t.Errorf("addresses %v, want %v", cert.IPAddresses, ips)
	}
	if len(cert.URIs) != 1 || cert.URIs[0].String() != "rsa-role:storage" {
		t.Errorf("URIs %v, want rsa-role:storage", cert.URIs)
	}
	if v := cert.NotAfter.Sub(time.Now()); v < DefaultCertValidity-day || v > DefaultCertValidity+day {
		t.Errorf("valid for %v, want about %v", v, DefaultCertValidity)
	}
	if cert.NotBefore.After(time.Now().Add(-clockSkew + time.Minute)) {
		t.Errorf("valid from %v: not backdated for clock skew", cert.NotBefore)
	}
	if cert.IsCA || len(cert.ExtKeyUsage) != 1 || cert.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("agent certificate: IsCA %v, ExtKeyUsage %v", cert.IsCA, cert.ExtKeyUsage)
	}
	checkMode(t, filepath.Join(out, KeyFile), 0o600)
	checkMode(t, filepath.Join(out, CertFile), 0o644)
	checkMode(t, filepath.Join(out, CAFile), 0o644)
	if b, c := readAll(t, out)[CAFile], readAll(t, ca)[CAFile]; !bytes.Equal(b, c) {
		t.Error("the host's ca.crt is not the CA's")
	}
	if id := load(t, DirFiles(out)); id.Role() != RoleStorage || id.Certificate().SerialNumber.Cmp(cert.SerialNumber) != 0 {
		t.Errorf("loaded role %q, serial %v", id.Role(), id.Certificate().SerialNumber)
	}

	ctl, err := Issue(ca, ca, "ctl", RoleControl, IssueOptions{Validity: 30 * day})
	if err != nil {
		t.Fatalf("issuing into the CA's own directory: %v", err)
	}
	if len(ctl.ExtKeyUsage) != 1 || ctl.ExtKeyUsage[0] != x509.ExtKeyUsageClientAuth {
		t.Errorf("control certificate: ExtKeyUsage %v, want client only", ctl.ExtKeyUsage)
	}
	if v := ctl.NotAfter.Sub(time.Now()); v < 29*day || v > 31*day {
		t.Errorf("control certificate valid for %v, want 30 days", v)
	}
	if ctl.SerialNumber.Cmp(cert.SerialNumber) == 0 || ctl.SerialNumber.BitLen() > 128 || ctl.SerialNumber.Sign() <= 0 {
		t.Errorf("serials %v and %v: want distinct, positive, at most 128 bits", cert.SerialNumber, ctl.SerialNumber)
	}

	// Nothing is replaced, and a refused Issue writes nothing.
	before := readAll(t, out)
	if _, err := Issue(ca, out, "rsa1", RoleStorage, IssueOptions{}); !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), filepath.Join(out, KeyFile)) {
		t.Errorf("issuing over an existing key: %v, want an error naming %s", err, KeyFile)
	}
	if after := readAll(t, out); len(after) != len(before) || !bytes.Equal(after[KeyFile], before[KeyFile]) {
		t.Errorf("a refused Issue changed %s: %v", out, keys(after))
	}
	foreign := t.TempDir()
	if err := os.WriteFile(filepath.Join(foreign, CAFile), readAll(t, newCA(t, "other"))[CAFile], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Issue(ca, foreign, "rsa1", RoleStorage, IssueOptions{}); !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "another CA's certificate") {
		t.Errorf("issuing next to another CA's ca.crt: %v", err)
	}
	if got := keys(readAll(t, foreign)); len(got) != 1 {
		t.Errorf("a refused Issue wrote %v", got)
	}

	for _, tc := range []struct {
		name, caDir, node string
		role              Role
		opts              IssueOptions
		want              string
	}{
		{"empty name", ca, "", RoleStorage, IssueOptions{}, "is empty"},
		{"underscore", ca, "rsa_1", RoleStorage, IssueOptions{}, "not a host name"},
		{"wildcard", ca, "*.cluster", RoleStorage, IssueOptions{}, "not a host name"},
		{"empty label", ca, "rsa1..cluster", RoleStorage, IssueOptions{}, "empty label"},
		{"leading hyphen", ca, "-rsa1", RoleStorage, IssueOptions{}, "begins or ends with '-'"},
		{"long label", ca, strings.Repeat("a", 64), RoleStorage, IssueOptions{}, "longer than 63"},
		{"address as name", ca, "10.1.0.7", RoleStorage, IssueOptions{}, "--ip 10.1.0.7"},
		{"unknown role", ca, "rsa1", "admin", IssueOptions{}, "unknown role"},
		{"no role", ca, "rsa1", "", IssueOptions{}, "unknown role"},
		{"unspecified address", ca, "rsa1", RoleStorage, IssueOptions{IPs: []net.IP{net.IPv4zero}}, "cannot name a host"},
		{"outlives the CA", ca, "rsa1", RoleStorage, IssueOptions{Validity: 20 * 365 * day}, "would outlive the CA"},
		{"negative validity", ca, "rsa1", RoleStorage, IssueOptions{Validity: -day}, "negative"},
		{"no CA", t.TempDir(), "rsa1", RoleStorage, IssueOptions{}, "rsa ca init"},
		{"expired CA", ca, "rsa1", RoleStorage, IssueOptions{Now: time.Now().Add(20 * 365 * day)}, "expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			if _, err := Issue(tc.caDir, dir, tc.node, tc.role, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Issue: %v, want an error saying %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, KeyFile)); err == nil {
				t.Error("a refused Issue wrote a key")
			}
		})
	}
}

// Load checks a host's files before any peer does, with errors that say
// what is wrong.
func TestPKILoad(t *testing.T) {
	ca, other := newCA(t, "cluster"), newCA(t, "other")
	good := issue(t, ca, "rsa1", RoleStorage, IssueOptions{})
	otherFiles := issue(t, other, "rsa1", RoleStorage, IssueOptions{})
	expired := issue(t, ca, "rsa1", RoleStorage, IssueOptions{Now: time.Now().Add(-400 * day), Validity: 30 * day})
	noRole := signed(t, ca, &x509.Certificate{Subject: pkix.Name{CommonName: "rsa1"}, DNSNames: []string{"rsa1"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	clientOnly := signed(t, ca, &x509.Certificate{Subject: pkix.Name{CommonName: "rsa1"}, DNSNames: []string{"rsa1"},
		URIs: []*url.URL{roleURI(RoleStorage)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	for _, tc := range []struct {
		name string
		f    Files
		want string
	}{
		{"another CA's certificate", Files{CA: good.CA, Cert: otherFiles.Cert, Key: otherFiles.Key}, "unknown authority"},
		{"key of another certificate", Files{CA: good.CA, Cert: good.Cert, Key: otherFiles.Key}, "is not the key of"},
		{"expired", expired, "expired"},
		{"no role", noRole, "carries no RSA role"},
		{"agent certificate for clients only", clientOnly, "incompatible key usage"},
		{"no CA file", Files{CA: filepath.Join(t.TempDir(), CAFile), Cert: good.Cert, Key: good.Key}, "no such file"},
		{"key in the certificate's place", Files{CA: good.CA, Cert: good.Key, Key: good.Key}, "holds no PEM certificate"},
		{"certificate in the key's place", Files{CA: good.CA, Cert: good.Cert, Key: good.CA}, "mode 0644"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Load(tc.f); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// A site's own PKI: a root, an intermediate that issues the hosts'
// certificates with the role URI, files named as the site names them, a
// SEC 1 key. The hosts' chains carry the intermediate; each side trusts
// the root only.
func TestPKISitePKI(t *testing.T) {
	dir := t.TempDir()
	root, rootKey := siteCA(t, "Site Root CA", nil, nil)
	inter, interKey := siteCA(t, "Site Issuing CA", root, rootKey)
	writePEM(t, filepath.Join(dir, "site-root.pem"), 0o644, "CERTIFICATE", root.Raw)

	host := func(name string, role Role) Files {
		key, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		serial, _ := newSerial()
		tmpl := &x509.Certificate{
			SerialNumber: serial, Subject: pkix.Name{CommonName: name + ".cluster.example.org", Organization: []string{"Site"}},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(90 * day),
			DNSNames:    []string{name + ".cluster.example.org", name},
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		}
		if role != "" {
			tmpl.URIs = []*url.URL{roleURI(role)}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, inter, key.Public(), interKey)
		if err != nil {
			t.Fatal(err)
		}
		f := Files{CA: filepath.Join(dir, "site-root.pem"), Cert: filepath.Join(dir, name+".pem"), Key: filepath.Join(dir, name+"-key.pem")}
		chain := append(encodeCert(der), encodeCert(inter.Raw)...)
		if err := os.WriteFile(f.Cert, chain, 0o644); err != nil {
			t.Fatal(err)
		}
		sec1, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		writePEM(t, f.Key, 0o600, "EC PRIVATE KEY", sec1)
		return f
	}
	ctl := load(t, host("ctl", RoleControl))
	rsa1 := load(t, host("rsa1", RoleStorage))
	r := handshake(t, serverConfig(t, rsa1), clientConfig(t, ctl, "rsa1.cluster.example.org", KindStorage))
	if r.serverErr != nil || r.clientErr != nil {
		t.Fatalf("site PKI handshake: agent %v, daemon %v", r.serverErr, r.clientErr)
	}
	if got, _ := RoleOf(&r.clientState); got != RoleStorage {
		t.Errorf("agent's role %q, want storage", got)
	}

	// A site certificate without the role is refused at once.
	if _, err := Load(host("plain", "")); err == nil || !strings.Contains(err.Error(), "rsa-role:ROLE") {
		t.Errorf("site certificate without a role: %v, want an error naming the URI it needs", err)
	}
	// Without its intermediate the chain does not reach the root.
	f := host("lone", RoleStorage)
	leaf, err := parseCerts(f.Cert)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.Cert, encodeCert(leaf[0].Raw), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(f); err == nil || !strings.Contains(err.Error(), "intermediate") {
		t.Errorf("site certificate without its intermediate: %v, want an error saying to add it", err)
	}
}

// siteCA makes a CA certificate signed by parent (self-signed without one).
func siteCA(t *testing.T, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := newSerial()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(365 * day),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

func writePEM(t *testing.T, path string, mode fs.FileMode, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode); err != nil {
		t.Fatal(err)
	}
}

func checkMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s: mode %04o, want %04o", path, got, want)
	}
}

// readAll returns the files of dir by name.
func readAll(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, e := range es {
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
			m[e.Name()] = b
		}
	}
	return m
}

func keys(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
