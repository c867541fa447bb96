package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Default validities: a CA outlives the hardware it is made for, a host's
// certificate is renewed yearly, as a site's other host certificates are.
const (
	DefaultCAValidity   = 10 * 365 * 24 * time.Hour
	DefaultCertValidity = 365 * 24 * time.Hour
)

// clockSkew backdates every certificate, so that a host whose clock is a
// little behind the issuer's accepts a certificate issued a moment ago.
const clockSkew = 5 * time.Minute

// InitOptions are Init's choices; the zero value gives the defaults.
type InitOptions struct {
	Name     string        // the CA's common name (default "RSA cluster CA on HOST")
	Validity time.Duration // default DefaultCAValidity
	Now      time.Time     // when the validity starts (default: now)
}

// Init creates a cluster CA in dir (made 0700 if missing): its private key
// ca.key (mode 0600) and its certificate ca.crt (0644). It never replaces
// an existing CA: if either file exists it writes nothing and returns an
// error wrapping fs.ErrExist that names the file. It returns the CA's
// certificate.
func Init(dir string, opts InitOptions) (*x509.Certificate, error) {
	if opts.Validity == 0 {
		opts.Validity = DefaultCAValidity
	}
	if opts.Validity < 0 {
		return nil, fmt.Errorf("CA validity %v is negative", opts.Validity)
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	if opts.Name == "" {
		host, _ := os.Hostname()
		opts.Name = strings.TrimSpace("RSA cluster CA on " + host)
	}
	keyPath, certPath := filepath.Join(dir, CAKeyFile), filepath.Join(dir, CAFile)
	fix := "a cluster CA is already there: issue certificates from it with rsa ca issue, or, to start over, move " +
		keyPath + " and " + certPath + " away first (certificates the old CA issued are then no longer trusted)"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the CA directory: %w", err)
	}
	for _, p := range []string{keyPath, certPath} {
		if err := mustBeAbsent(p, fix); err != nil {
			return nil, err
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: opts.Name},
		NotBefore:             opts.Now.Add(-clockSkew),
		NotAfter:              opts.Now.Add(opts.Validity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		// It signs hosts' certificates only, never another CA's.
		MaxPathLenZero: true,
		KeyUsage:       x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("creating the CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("reading back the CA certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	if err := writeNew(keyPath, keyPEM, 0o600, fix); err != nil {
		return nil, err
	}
	if err := writeNew(certPath, encodeCert(der), 0o644, fix); err != nil {
		os.Remove(keyPath) // ours: written a moment ago, and useless without its certificate
		return nil, err
	}
	return cert, nil
}

// IssueOptions are Issue's choices; the zero value gives the defaults.
type IssueOptions struct {
	IPs      []net.IP      // addresses to name besides the host name, if the daemon dials addresses
	Validity time.Duration // default DefaultCertValidity
	Now      time.Time     // when the validity starts (default: now)
}

// Issue issues a certificate for host node with role role from the CA in
// caDir (ca.crt and ca.key, as Init wrote them) and writes outDir's
// node.key (0600), node.crt (0644) and a copy of ca.crt (0644): the three
// files the host loads (DirFiles). The certificate names node as its DNS
// name (and opts.IPs as its addresses), carries role as a URI SAN (see
// RoleURIScheme), has a random 128-bit serial number and may not outlive
// the CA; a line for it is appended to the CA's register (IssuedFile). It
// never replaces a file: an existing node.crt or node.key, or a ca.crt of
// another CA, is an error wrapping fs.ErrExist, and then nothing is
// written. It returns the issued certificate.
func Issue(caDir, outDir, node string, role Role, opts IssueOptions) (*x509.Certificate, error) {
	is, err := newIssuer(caDir, node, role, opts)
	if err != nil {
		return nil, err
	}
	keyPath, certPath := filepath.Join(outDir, KeyFile), filepath.Join(outDir, CertFile)
	fix := "move it away first, or issue into another directory"
	if err := os.MkdirAll(outDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the output directory: %w", err)
	}
	for _, p := range []string{keyPath, certPath} {
		if err := mustBeAbsent(p, fix); err != nil {
			return nil, err
		}
	}
	caPath, writeCA, err := is.caCopy(outDir, fix)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the key of %s: %w", is.node, err)
	}
	cert, err := is.sign(key.Public())
	if err != nil {
		return nil, err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	if err := writeNew(keyPath, keyPEM, 0o600, fix); err != nil {
		return nil, err
	}
	if err := writeNew(certPath, encodeCert(cert.Raw), 0o644, fix); err != nil {
		os.Remove(keyPath)
		return nil, err
	}
	if writeCA {
		if err := writeNew(caPath, is.caPEM, 0o644, fix); err != nil {
			os.Remove(keyPath)
			os.Remove(certPath)
			return nil, err
		}
	}
	return cert, nil
}

// Request makes host node's key and a certificate signing request for it,
// on the host itself, without the CA: outDir's node.key (0600), unless
// outDir holds one already, whose key it then uses (so a certificate is
// renewed for the key the host has), and node.csr (0644, replacing an
// older one), which names node as its common name and DNS name. The CA
// host signs node.csr with Sign, which sets the role, the addresses and
// the validity itself. It returns the request.
func Request(outDir, node string) (*x509.CertificateRequest, error) {
	node, err := CheckNodeName(node)
	if err != nil {
		return nil, err
	}
	keyPath, csrPath := filepath.Join(outDir, KeyFile), filepath.Join(outDir, CSRFile)
	if err := os.MkdirAll(outDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the output directory: %w", err)
	}
	var key crypto.Signer
	var keyPEM []byte
	if _, err := os.Lstat(keyPath); err == nil {
		b, err := readPrivate(keyPath)
		if err != nil {
			return nil, err
		}
		if key, err = parseKey(keyPath, b); err != nil {
			return nil, err
		}
	} else if errors.Is(err, fs.ErrNotExist) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("generating the key of %s: %w", node, err)
		}
		if keyPEM, err = encodeKey(k); err != nil {
			return nil, err
		}
		key = k
	} else {
		return nil, fmt.Errorf("checking %s: %w", keyPath, err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:  pkix.Name{CommonName: node},
		DNSNames: []string{node},
	}, key)
	if err != nil {
		return nil, fmt.Errorf("making the certificate request of %s: %w", node, err)
	}
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return nil, fmt.Errorf("reading back the certificate request of %s: %w", node, err)
	}
	if keyPEM != nil {
		if err := writeNew(keyPath, keyPEM, 0o600, "move it away first, or request into another directory"); err != nil {
			return nil, err
		}
	}
	if err := writeReplace(csrPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), 0o644); err != nil {
		if keyPEM != nil {
			os.Remove(keyPath) // ours: made a moment ago, useless without its request
		}
		return nil, err
	}
	return csr, nil
}

// Sign signs the certificate signing request csrPEM (PEM, as Request
// writes it, or the site's tools) with the CA in caDir and writes the
// certificate to certFile (0644), and a copy of ca.crt (0644) next to it
// unless the CA's is there already: with the host's node.key, the files
// the host loads (DirFiles), once the two are copied there.
//
// Sign checks the request's signature (its maker holds the key) and its
// names: the common name (or, without one, the single DNS name) must be a
// host name (CheckNodeName), and any DNS name it lists must be that one;
// a request for addresses, e-mail addresses or URIs other than an
// rsa-role of role is refused (give addresses with opts.IPs). The
// certificate is the one Issue would make for the node and the request's
// key: the role is role, never the request's, and the key usages,
// validity and serial are Sign's; a line for it is appended to the CA's
// register. It never replaces a file: an existing certFile, or a ca.crt of
// another CA next to it, is an error wrapping fs.ErrExist, and then
// nothing is written. It returns the certificate.
func Sign(caDir string, csrPEM []byte, certFile string, role Role, opts IssueOptions) (*x509.Certificate, error) {
	csr, node, err := checkRequest(csrPEM, role)
	if err != nil {
		return nil, err
	}
	is, err := newIssuer(caDir, node, role, opts)
	if err != nil {
		return nil, err
	}
	fix := "move it away first, or sign into another file (--out)"
	outDir := filepath.Dir(certFile)
	if err := os.MkdirAll(outDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the output directory: %w", err)
	}
	if err := mustBeAbsent(certFile, fix); err != nil {
		return nil, err
	}
	caPath, writeCA, err := is.caCopy(outDir, fix)
	if err != nil {
		return nil, err
	}
	cert, err := is.sign(csr.PublicKey)
	if err != nil {
		return nil, err
	}
	if err := writeNew(certFile, encodeCert(cert.Raw), 0o644, fix); err != nil {
		return nil, err
	}
	if writeCA {
		if err := writeNew(caPath, is.caPEM, 0o644, fix); err != nil {
			os.Remove(certFile)
			return nil, err
		}
	}
	return cert, nil
}

// ReadRequest returns the node a certificate signing request (PEM) is
// for, after Sign's checks of it for role: its signature and its names.
func ReadRequest(csrPEM []byte, role Role) (string, error) {
	_, node, err := checkRequest(csrPEM, role)
	return node, err
}

// checkRequest parses a PEM certificate request and checks it for Sign.
func checkRequest(csrPEM []byte, role Role) (*x509.CertificateRequest, string, error) {
	var block *pem.Block
	for rest := csrPEM; ; {
		block, rest = pem.Decode(rest)
		if block == nil || block.Type == "CERTIFICATE REQUEST" || block.Type == "NEW CERTIFICATE REQUEST" {
			break
		}
	}
	if block == nil {
		return nil, "", errors.New("no PEM certificate request (-----BEGIN CERTIFICATE REQUEST-----) found: give the node.csr that rsa ca request wrote")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, "", fmt.Errorf("parsing the certificate request: %w", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, "", fmt.Errorf("the certificate request's signature does not verify (%w): it is damaged or was not made with the key it carries; make it again with rsa ca request", err)
	}
	name := csr.Subject.CommonName
	if name == "" && len(csr.DNSNames) == 1 {
		name = csr.DNSNames[0]
	}
	node, err := CheckNodeName(name)
	if err != nil {
		return nil, "", fmt.Errorf("the certificate request's name: %w", err)
	}
	for _, d := range csr.DNSNames {
		if !strings.EqualFold(d, node) {
			return nil, "", fmt.Errorf("the certificate request for %s also asks for the name %q: a certificate names one host; make the request with rsa ca request %s", node, d, node)
		}
	}
	if len(csr.IPAddresses) > 0 {
		return nil, "", fmt.Errorf("the certificate request for %s asks for addresses (%v): the CA host names them, with --ip", node, csr.IPAddresses)
	}
	if len(csr.EmailAddresses) > 0 {
		return nil, "", fmt.Errorf("the certificate request for %s asks for e-mail addresses (%v): a host's certificate names none", node, csr.EmailAddresses)
	}
	for _, u := range csr.URIs {
		if !strings.EqualFold(u.Scheme, RoleURIScheme) {
			return nil, "", fmt.Errorf("the certificate request for %s asks for the URI %s: a host's certificate carries its role alone", node, u)
		}
		if u.Opaque != string(role) {
			return nil, "", fmt.Errorf("the certificate request for %s asks for role %s, and it is being signed for role %s: sign it with the role the host is (the role is the signer's, never the request's)", node, u.Opaque, role)
		}
	}
	if err := checkPublicKey(csr.PublicKey); err != nil {
		return nil, "", fmt.Errorf("the certificate request for %s: %w", node, err)
	}
	return csr, node, nil
}

// checkPublicKey refuses a key too weak, or of a kind TLS 1.3 cannot use.
func checkPublicKey(pub crypto.PublicKey) error {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256(), elliptic.P384(), elliptic.P521():
			return nil
		}
		return fmt.Errorf("its ECDSA key's curve %s is not one TLS 1.3 signs with (P-256, P-384, P-521)", k.Curve.Params().Name)
	case ed25519.PublicKey:
		return nil
	case *rsa.PublicKey:
		if n := k.N.BitLen(); n < 2048 {
			return fmt.Errorf("its RSA key has %d bits: give one of at least 2048 bits, or an ECDSA key (rsa ca request makes one)", n)
		}
		return nil
	}
	return fmt.Errorf("its key is of a kind a host's certificate cannot carry (%T): give an ECDSA, Ed25519 or RSA key", pub)
}

// issuer is a CA ready to sign one host's certificate: the inputs
// checked, the CA loaded, the validity within the CA's.
type issuer struct {
	caDir    string
	ca       *x509.Certificate
	caKey    crypto.Signer
	caPEM    []byte // ca.crt's certificates, for the hosts' copies
	node     string // lower-cased
	role     Role
	opts     IssueOptions // defaults filled in
	notAfter time.Time
}

// newIssuer checks what Issue and Sign are asked and loads the CA.
func newIssuer(caDir, node string, role Role, opts IssueOptions) (*issuer, error) {
	node, err := CheckNodeName(node)
	if err != nil {
		return nil, err
	}
	if _, err := ParseRole(string(role)); err != nil {
		return nil, err
	}
	for _, ip := range opts.IPs {
		if ip == nil || ip.IsUnspecified() {
			return nil, fmt.Errorf("address %v cannot name a host: give the host's own address", ip)
		}
	}
	if opts.Validity == 0 {
		opts.Validity = DefaultCertValidity
	}
	if opts.Validity < 0 {
		return nil, fmt.Errorf("certificate validity %v is negative", opts.Validity)
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	ca, caKey, caPEM, err := loadCA(caDir)
	if err != nil {
		return nil, err
	}
	if opts.Now.After(ca.NotAfter) {
		return nil, fmt.Errorf("the CA in %s expired on %s: it can issue nothing; make a new CA (rsa ca init into another directory) and issue every host a certificate from it", caDir, ca.NotAfter.Format(time.DateOnly))
	}
	notAfter := opts.Now.Add(opts.Validity)
	if notAfter.After(ca.NotAfter) {
		return nil, fmt.Errorf("a certificate valid until %s would outlive the CA in %s, which expires on %s: ask for at most %d days, or make a new CA",
			notAfter.Format(time.DateOnly), caDir, ca.NotAfter.Format(time.DateOnly), int(ca.NotAfter.Sub(opts.Now)/(24*time.Hour)))
	}
	return &issuer{caDir: caDir, ca: ca, caKey: caKey, caPEM: caPEM, node: node, role: role, opts: opts, notAfter: notAfter}, nil
}

// caCopy says where the host's copy of ca.crt goes in dir, and whether it
// is to be written: not if the CA's is there already (the CA's own
// directory, or issued there before); an error wrapping fs.ErrExist if
// another CA's is.
func (is *issuer) caCopy(dir, fix string) (string, bool, error) {
	caPath := filepath.Join(dir, CAFile)
	if same, err := sameFile(caPath, is.caPEM); err == nil {
		if !same {
			return "", false, errExists(caPath, "it is another CA's certificate: "+fix)
		}
		return caPath, false, nil
	}
	if err := mustBeAbsent(caPath, fix); err != nil {
		return "", false, err
	}
	return caPath, true, nil
}

// sign makes the host's certificate for public key pub and records it in
// the CA's register.
func (is *issuer) sign(pub crypto.PublicKey) (*x509.Certificate, error) {
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: is.node},
		NotBefore:    is.opts.Now.Add(-clockSkew),
		NotAfter:     is.notAfter,
		DNSNames:     []string{is.node},
		IPAddresses:  is.opts.IPs,
		URIs:         []*url.URL{roleURI(is.role)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		// The daemon is only ever a TLS client and agents only servers:
		// a control key cannot serve as an agent, and an agent's key
		// cannot be a client to anything that checks, besides the role.
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	if is.role == RoleControl {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, is.ca, pub, is.caKey)
	if err != nil {
		return nil, fmt.Errorf("issuing the certificate of %s: %w", is.node, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("reading back the certificate of %s: %w", is.node, err)
	}
	// Recorded before the certificate is written: a line for one never
	// delivered is harmless, a certificate out there without one could
	// not be revoked by its node's name.
	if err := appendIssued(is.caDir, cert, is.role); err != nil {
		return nil, err
	}
	return cert, nil
}

// loadCA reads the CA of caDir: its certificate (the first in ca.crt), its
// key, and ca.crt's bytes for the hosts' copies.
func loadCA(caDir string) (*x509.Certificate, crypto.Signer, []byte, error) {
	certPath, keyPath := filepath.Join(caDir, CAFile), filepath.Join(caDir, CAKeyFile)
	if _, err := os.Stat(certPath); errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil, fmt.Errorf("no cluster CA in %s (%s does not exist): create one with rsa ca init, or give the directory that holds it (--dir)", caDir, certPath)
	}
	certs, err := parseCerts(certPath)
	if err != nil {
		return nil, nil, nil, err
	}
	ca := certs[0]
	if !ca.IsCA || ca.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, nil, nil, fmt.Errorf("%s is not a CA certificate (it may not sign certificates)", certPath)
	}
	keyPEM, err := readPrivate(keyPath)
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := parseKey(keyPath, keyPEM)
	if err != nil {
		return nil, nil, nil, err
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(ca.PublicKey) {
		return nil, nil, nil, fmt.Errorf("%s is not the key of %s: the two files belong to different CAs", keyPath, certPath)
	}
	var caPEM []byte
	for _, c := range certs {
		caPEM = append(caPEM, encodeCert(c.Raw)...)
	}
	return ca, key, caPEM, nil
}

// newSerial is a random positive 128-bit serial number: unique without a
// register of issued serials, and unguessable (RFC 5280 allows 20 octets).
func newSerial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 128)
	for {
		n, err := rand.Int(rand.Reader, limit)
		if err != nil {
			return nil, fmt.Errorf("drawing a serial number: %w", err)
		}
		if n.Sign() > 0 {
			return n, nil
		}
	}
}

// CheckNodeName returns node, lower-cased, if it is a host name the
// daemon can dial and check a certificate against: what Issue and Sign
// accept as a host's name.
func CheckNodeName(node string) (string, error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("%q is not a host name (%s): give the node's name as the daemon dials it, e.g. rsa1 or rsa1.cluster.example.org", node, why)
	}
	if node == "" {
		return bad("it is empty")
	}
	if net.ParseIP(node) != nil {
		return "", fmt.Errorf("%q is an address, not a host name: give the node's name, and its address with --ip %s", node, node)
	}
	if len(node) > 253 {
		return bad("longer than 253 characters")
	}
	for _, label := range strings.Split(strings.ToLower(node), ".") {
		switch {
		case label == "":
			return bad("an empty label")
		case len(label) > 63:
			return bad("a label longer than 63 characters")
		case label[0] == '-' || label[len(label)-1] == '-':
			return bad("a label that begins or ends with '-'")
		}
		for _, c := range label {
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return bad(fmt.Sprintf("%q is not a letter, digit, '-' or '.'", c))
			}
		}
	}
	return strings.ToLower(node), nil
}
