package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
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
// the CA. It never replaces a file: an existing node.crt or node.key, or a
// ca.crt of another CA, is an error wrapping fs.ErrExist, and then
// nothing is written. It returns the issued certificate.
func Issue(caDir, outDir, node string, role Role, opts IssueOptions) (*x509.Certificate, error) {
	node, err := checkNodeName(node)
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

	keyPath, certPath, caPath := filepath.Join(outDir, KeyFile), filepath.Join(outDir, CertFile), filepath.Join(outDir, CAFile)
	fix := "move it away first, or issue into another directory"
	if err := os.MkdirAll(outDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the output directory: %w", err)
	}
	for _, p := range []string{keyPath, certPath} {
		if err := mustBeAbsent(p, fix); err != nil {
			return nil, err
		}
	}
	writeCA := true
	if same, err := sameFile(caPath, caPEM); err == nil {
		if !same {
			return nil, errExists(caPath, "it is another CA's certificate: "+fix)
		}
		writeCA = false // the CA's own directory, or issued there before
	} else if err := mustBeAbsent(caPath, fix); err != nil {
		return nil, err
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the key of %s: %w", node, err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: node},
		NotBefore:    opts.Now.Add(-clockSkew),
		NotAfter:     notAfter,
		DNSNames:     []string{node},
		IPAddresses:  opts.IPs,
		URIs:         []*url.URL{roleURI(role)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		// The daemon is only ever a TLS client and agents only servers:
		// a control key cannot serve as an agent, and an agent's key
		// cannot be a client to anything that checks, besides the role.
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	if role == RoleControl {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("issuing the certificate of %s: %w", node, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("reading back the certificate of %s: %w", node, err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	if err := writeNew(keyPath, keyPEM, 0o600, fix); err != nil {
		return nil, err
	}
	if err := writeNew(certPath, encodeCert(der), 0o644, fix); err != nil {
		os.Remove(keyPath)
		return nil, err
	}
	if writeCA {
		if err := writeNew(caPath, caPEM, 0o644, fix); err != nil {
			os.Remove(keyPath)
			os.Remove(certPath)
			return nil, err
		}
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

// checkNodeName returns node, lower-cased, if it is a host name the daemon
// can dial and check a certificate against.
func checkNodeName(node string) (string, error) {
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
