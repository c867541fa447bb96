package pki

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
)

// Identity is a host's TLS identity: its certificate and key, its role,
// and the CA certificates it trusts in its peers. It is immutable; one
// Identity may make any number of configs, used concurrently.
type Identity struct {
	role  Role
	cert  tls.Certificate // the chain, with Leaf set
	roots *x509.CertPool
}

// Load reads a host's identity from f and checks it before any peer does:
// the key is private (mode 0600, owned by the user loading it: root for
// the daemon and the agents) and belongs to the certificate; the
// certificate is valid now, chains to f.CA (through any intermediates
// that follow it in f.Cert), carries exactly one role, and may be used the
// way that role uses it (client for control, server for the agents). The
// files may come from `rsa ca issue` or from the site's own PKI.
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
	var raw [][]byte
	for _, c := range chain {
		raw = append(raw, c.Raw)
	}
	return &Identity{role: role, roots: roots, cert: tls.Certificate{Certificate: raw, PrivateKey: key, Leaf: leaf}}, nil
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
			return nil
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
			return nil
		},
	}, nil
}

// Authorize is what an agent's handler calls before an operation of kind
// op, with the request's connection state (http.Request.TLS): it returns
// nil only if the caller's verified certificate has role control and this
// agent's own role serves op. The handshake already refused every caller
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
	return nil
}

// names describes a certificate by its DNS names, or its common name.
func names(c *x509.Certificate) string {
	if len(c.DNSNames) > 0 {
		return strings.Join(c.DNSNames, ",")
	}
	return fmt.Sprintf("%q", c.Subject.CommonName)
}
