// Package pki is RSA's trust between hosts: a cluster certificate
// authority, the certificates it issues to the control daemon and to the
// agents on RSA nodes and compute nodes, and mutual TLS 1.3 between them.
//
// The daemon dials the agents; never the other way round. Each side checks
// the other:
//
//   - an agent accepts a connection only from a certificate of the cluster
//     CA whose role is control (ServerConfig), so another node's
//     credentials, a compute node's above all, cannot drive any agent;
//   - the daemon accepts an agent only when its certificate comes from the
//     cluster CA, names the node it dialled and carries an agent role
//     (ClientConfig), and it sends an operation only to an agent whose role
//     serves it (Role.Allows): a compute node cannot pose as the node that
//     is to hold a job's brick.
//
// A certificate's role travels in the certificate, signed by the CA, as a
// URI subject alternative name (see RoleURIScheme), so a site may issue the
// certificates from its own PKI instead of `rsa ca`.
//
// The CA issues a host its key and certificate (Issue), or signs a
// request made on the host for a key that never leaves it (Request,
// Sign), and revokes certificates in a list signed by the CA (Revoke);
// each side refuses a peer in its list. A Live identity is loaded again
// when its files change, so that a renewed certificate or a new list is
// used without a restart.
package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Role is what a certificate's holder is in the cluster.
type Role string

// The roles. Control is the daemon's, the only role an agent accepts as a
// caller; the others are agents' and say which operations they serve.
const (
	RoleControl Role = "control" // rsa serve, the caller of every agent
	RoleStorage Role = "storage" // the agent of an RSA node: bricks
	RoleCompute Role = "compute" // the agent of a compute node: mounts
	RoleBoth    Role = "both"    // an agent that is both
)

// Roles lists every role, in the order they are documented.
func Roles() []Role { return []Role{RoleControl, RoleStorage, RoleCompute, RoleBoth} }

// ParseRole returns the role named s, or an error that lists the roles.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles() {
		if s == string(r) {
			return r, nil
		}
	}
	return "", fmt.Errorf("unknown role %q: give control (the host running rsa serve), storage (an RSA node), compute (a compute node) or both (a node that is an RSA node and a compute node)", s)
}

// agent reports whether r is an agent's role.
func (r Role) agent() bool {
	return r == RoleStorage || r == RoleCompute || r == RoleBoth
}

// Kind is a class of agent operation, by what it touches.
type Kind int

// The kinds of operation.
const (
	// KindStatus reads a node's state (RAM, bricks, mounts, health): every
	// agent serves it.
	KindStatus Kind = iota + 1
	// KindStorage changes an RSA node's bricks.
	KindStorage
	// KindCompute changes a compute node's mounts of jobs' volumes.
	KindCompute
)

func (k Kind) String() string {
	switch k {
	case KindStatus:
		return "status"
	case KindStorage:
		return "storage"
	case KindCompute:
		return "compute"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Allows reports whether an agent of role r serves operations of kind op:
// storage operations need storage or both, compute operations compute or
// both, status any agent role. Control serves nothing: it is the caller.
func (r Role) Allows(op Kind) bool {
	switch op {
	case KindStatus:
		return r.agent()
	case KindStorage:
		return r == RoleStorage || r == RoleBoth
	case KindCompute:
		return r == RoleCompute || r == RoleBoth
	}
	return false
}

// RoleURIScheme is the scheme of the URI subject alternative name that
// carries a certificate's role: "rsa-role:storage" and so on, exactly one
// per certificate.
//
// A URI SAN rather than a private extension: every PKI a site is likely to
// run can put one in a certificate (openssl's subjectAltName URI:, Vault's
// uri_sans, step-ca's --san, AD CS's URL name), while a custom extension
// needs an OID arc of our own and many CAs cannot add one at all. It is
// signed by the CA like the rest of the certificate, Go parses it into
// x509.Certificate.URIs, host name checks ignore it (they read only DNS
// and IP names), and `openssl x509 -text` shows it to an administrator.
// One limit: a CA with URI name constraints rejects it (the URI has no
// host to match), so such a CA cannot issue RSA certificates.
const RoleURIScheme = "rsa-role"

// roleURI is the URI SAN that gives a certificate role r.
func roleURI(r Role) *url.URL { return &url.URL{Scheme: RoleURIScheme, Opaque: string(r)} }

// CertRole returns the role that c carries. It does not verify c: read the
// role of a verified certificate only (RoleOf does). A certificate with no
// role URI, an unknown one or more than one has no role.
func CertRole(c *x509.Certificate) (Role, error) {
	var found []string
	for _, u := range c.URIs {
		if strings.EqualFold(u.Scheme, RoleURIScheme) {
			found = append(found, u.Opaque)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("certificate %q carries no RSA role: it needs one URI subject alternative name %s:ROLE (ROLE one of control, storage, compute, both)", c.Subject.CommonName, RoleURIScheme)
	case 1:
		r, err := ParseRole(found[0])
		if err != nil {
			return "", fmt.Errorf("certificate %q: %w", c.Subject.CommonName, err)
		}
		return r, nil
	}
	return "", fmt.Errorf("certificate %q carries %d RSA roles (%s): it must carry exactly one", c.Subject.CommonName, len(found), strings.Join(found, ", "))
}

// RoleOf returns the role of the peer of a TLS connection, read from its
// certificate as verified in the handshake (cs.VerifiedChains). A peer
// whose certificate was not verified against a CA has no role, whatever
// its certificate says. Agents' handlers read it from http.Request.TLS,
// the daemon from http.Response.TLS or tls.Conn.ConnectionState.
func RoleOf(cs *tls.ConnectionState) (Role, error) {
	if cs == nil {
		return "", errors.New("not a TLS connection: RSA's agents and daemon talk only over mutual TLS")
	}
	if len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return "", errors.New("the peer's certificate was not verified against the cluster CA")
	}
	return CertRole(cs.VerifiedChains[0][0])
}
