package pki

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Identity is a host's TLS identity: its certificate and key, its role,
// the CA certificates it trusts in its peers, and the certificates of
// theirs it refuses (the revocation lists). It is immutable; one Identity
// may make any number of configs, used concurrently. A *Live holds the
// Identity its files hold now.
type Identity struct {
	role    Role
	cert    tls.Certificate // the chain, with Leaf set
	roots   *x509.CertPool
	revoked revocations // nil: none
}

// Source is where a host's identity comes from: an *Identity, the same
// for its whole life, or a *Live, loaded again when its files change.
type Source interface {
	// Current is the identity for the next handshake.
	Current() *Identity
}

// Current returns id itself: an Identity never changes.
func (id *Identity) Current() *Identity { return id }

// Load reads a host's identity from f and checks it before any peer does:
// the key is private (mode 0600, owned by the user loading it: root for
// the daemon and the agents) and belongs to the certificate; the
// certificate is valid now, chains to f.CA (through any intermediates
// that follow it in f.Cert), carries exactly one role, and may be used the
// way that role uses it (client for control, server for the agents). The
// files may come from `rsa ca issue` or from the site's own PKI. f.CRL,
// if it exists, must hold revocation lists signed by a CA of f.CA (or an
// intermediate of f.Cert); the peers they list are refused.
func Load(f Files) (*Identity, error) {
	rootCerts, err := parseCerts(f.CA)
	if err != nil {
		return nil, fmt.Errorf("loading the CA to trust: %w", err)
	}
	roots := x509.NewCertPool()
	for _, c := range rootCerts {
		roots.AddCert(c)
	}
	chain, err := parseCerts(f.Cert)
	if err != nil {
		return nil, err
	}
	leaf := chain[0]
	keyPEM, err := readPrivate(f.Key)
	if err != nil {
		return nil, err
	}
	key, err := parseKey(f.Key, keyPEM)
	if err != nil {
		return nil, err
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(leaf.PublicKey) {
		return nil, fmt.Errorf("%s is not the key of %s: give the key that was issued with the certificate", f.Key, f.Cert)
	}
	role, err := CertRole(leaf)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Cert, err)
	}
	usage := x509.ExtKeyUsageServerAuth
	if role == RoleControl {
		usage = x509.ExtKeyUsageClientAuth
	}
	intermediates := x509.NewCertPool()
	for _, c := range chain[1:] {
		intermediates.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: intermediates, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		return nil, fmt.Errorf("%s is not a valid certificate of the CA in %s for role %s (peers would refuse it): %w; issue a new one (rsa ca issue) or, with a site PKI, put the intermediate certificates after it in %s",
			f.Cert, f.CA, role, err, f.Cert)
	}
	revoked, err := loadRevocations(f.CRL, append(rootCerts, chain[1:]...))
	if err != nil {
		return nil, fmt.Errorf("%w; copy the CA's %s again, or remove %s to revoke nothing", err, CRLFile, f.CRL)
	}
	var raw [][]byte
	for _, c := range chain {
		raw = append(raw, c.Raw)
	}
	return &Identity{role: role, roots: roots, revoked: revoked, cert: tls.Certificate{Certificate: raw, PrivateKey: key, Leaf: leaf}}, nil
}

// Revoked returns an error if the identity's own certificate is in its
// revocation lists: its peers that read the same lists refuse it.
func (id *Identity) Revoked() error {
	chain := []*x509.Certificate{id.cert.Leaf}
	return id.revoked.check(chain)
}

// ExpiryWarning is how long before a host's certificate expires RSA warns
// of it: the agents and rsa serve as they start and as they load a new
// one, and rsa health.
const ExpiryWarning = 30 * 24 * time.Hour

// ExpiresSoon returns a warning, for a log or rsa health, if c expires
// within ExpiryWarning of now or has expired; "" otherwise.
func ExpiresSoon(c *x509.Certificate, now time.Time) string {
	left := c.NotAfter.Sub(now)
	if left >= ExpiryWarning {
		return ""
	}
	what := fmt.Sprintf("certificate %s (role %s) expires on %s, in %s", names(c), roleOrNone(c), c.NotAfter.UTC().Format(time.DateOnly), InDays(left))
	if left <= 0 {
		what = fmt.Sprintf("certificate %s (role %s) expired on %s: its peers refuse it", names(c), roleOrNone(c), c.NotAfter.UTC().Format(time.DateOnly))
	}
	return what + "; renew it (rsa ca issue, or rsa ca request and rsa ca sign) and install it: it is read again at the next connection"
}

// InDays says a duration in whole days ("1 day", "30 days").
func InDays(d time.Duration) string {
	switch n := int(d / (24 * time.Hour)); n {
	case 0:
		return "less than a day"
	case 1:
		return "1 day"
	default:
		return fmt.Sprintf("%d days", n)
	}
}

// roleOrNone is c's role, or "none".
func roleOrNone(c *x509.Certificate) Role {
	if r, err := CertRole(c); err == nil {
		return r
	}
	return "none"
}

// Role returns the role the identity's certificate carries.
func (id *Identity) Role() Role { return id.role }

// Certificate returns the identity's own certificate (its names, its
// expiry); the caller must not change it.
func (id *Identity) Certificate() *x509.Certificate { return id.cert.Leaf }

// ServerConfig returns the TLS configuration of an agent's server: TLS 1.3
// only, the agent's certificate, and a client certificate required,
// verified against the trusted CA, and accepted only if its role is
// control. Every other client, including other agents of the same CA,
// fails the handshake. It is an error for an identity whose role is
// control: the daemon serves no agent operations.
func (id *Identity) ServerConfig() (*tls.Config, error) {
	if !id.role.agent() {
		return nil, fmt.Errorf("certificate %s has role %s, not an agent's (storage, compute or both): an agent cannot serve with it", names(id.cert.Leaf), id.role)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{id.cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    id.roots,
		// Every connection proves its certificate afresh: a resumed
		// session would carry a verification made before the peer's
		// certificate expired or the CA file changed.
		SessionTicketsDisabled: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			r, err := RoleOf(&cs)
			if err != nil {
				return err
			}
			if r != RoleControl {
				return fmt.Errorf("client %s has role %s: agents accept only the control daemon (role control)", names(cs.VerifiedChains[0][0]), r)
			}
			return id.revoked.check(cs.VerifiedChains[0])
		},
	}, nil
}

// ServerConfigFrom returns the TLS configuration of an agent's server
// that serves each handshake with src's identity as it is when the
// handshake begins: its ServerConfig. With a *Live, a certificate, key,
// CA or revocation list installed while the agent runs is used from the
// next connection on. It is an error if src's identity cannot serve.
func ServerConfigFrom(src Source) (*tls.Config, error) {
	if _, err := src.Current().ServerConfig(); err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return src.Current().ServerConfig()
		},
	}, nil
}

// ClientConfig returns the TLS configuration with which the daemon dials
// the agent of node: TLS 1.3 only, the daemon's certificate, and an agent
// certificate accepted only if it chains to the trusted CA, names node (a
// DNS name, or an address given with --ip), and carries an agent role
// that allows every kind in needs. Dial the node's address with it: the
// check is against node, whatever address was dialled. After the
// handshake RoleOf tells the agent's role, which a caller checks with
// Allows before an operation it did not list in needs. It is an error for
// an identity whose role is not control.
func (id *Identity) ClientConfig(node string, needs ...Kind) (*tls.Config, error) {
	if id.role != RoleControl {
		return nil, fmt.Errorf("certificate %s has role %s: only the control daemon (role control) dials agents", names(id.cert.Leaf), id.role)
	}
	if node == "" {
		return nil, errors.New("no node to dial: the agent's certificate must be checked against the node's name")
	}
	cert := id.cert
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		RootCAs:    id.roots,
		ServerName: node,
		// Always present the certificate: Go's default sends it only if
		// its issuer is among the CAs the server lists, which a site
		// PKI's intermediates can hide, turning a good certificate into
		// "no certificate".
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil },
		VerifyConnection: func(cs tls.ConnectionState) error {
			r, err := RoleOf(&cs)
			if err != nil {
				return err
			}
			if !r.agent() {
				return fmt.Errorf("node %s answered with role %s, not an agent's (storage, compute or both)", node, r)
			}
			for _, k := range needs {
				if !r.Allows(k) {
					return fmt.Errorf("node %s is an agent of role %s, which does not serve %s operations", node, r, k)
				}
			}
			return id.revoked.check(cs.VerifiedChains[0])
		},
	}, nil
}

// CheckPeer returns an error if the verified certificate of the peer of
// cs is in the identity's revocation lists: for a connection made before
// the lists named it, which its handshake could not refuse.
func (id *Identity) CheckPeer(cs *tls.ConnectionState) error {
	if cs == nil || len(cs.VerifiedChains) == 0 {
		return errors.New("the peer's certificate was not verified against the cluster CA")
	}
	return id.revoked.check(cs.VerifiedChains[0])
}

// Authorize is what an agent's handler calls before an operation of kind
// op, with the request's connection state (http.Request.TLS): it returns
// nil only if the caller's verified certificate has role control, is not
// in the identity's revocation lists, and this agent's own role serves
// op. The handshake already refused every caller
// but the daemon; Authorize says so again where the operation is done, and
// refuses what this node is not for (a compute node makes no bricks).
func (id *Identity) Authorize(cs *tls.ConnectionState, op Kind) error {
	r, err := RoleOf(cs)
	if err != nil {
		return fmt.Errorf("refused %s operation: %w", op, err)
	}
	if r != RoleControl {
		return fmt.Errorf("refused %s operation: the caller's role is %s; only the control daemon may call an agent", op, r)
	}
	if !id.role.Allows(op) {
		return fmt.Errorf("refused %s operation: this agent's role is %s", op, id.role)
	}
	// A connection outlives its handshake: the caller's certificate may
	// have been revoked since.
	if err := id.revoked.check(cs.VerifiedChains[0]); err != nil {
		return fmt.Errorf("refused %s operation: %w", op, err)
	}
	return nil
}

// names describes a certificate by its DNS names, or its common name.
func names(c *x509.Certificate) string {
	if len(c.DNSNames) > 0 {
		return strings.Join(c.DNSNames, ",")
	}
	return fmt.Sprintf("%q", c.Subject.CommonName)
}
