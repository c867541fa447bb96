package pki

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Issued is one certificate in a CA's register (IssuedFile).
type Issued struct {
	Serial   *big.Int
	Node     string
	Role     Role
	NotAfter time.Time
}

// issuedHeader opens a new register.
const issuedHeader = "# The certificates this CA issued (rsa ca issue, rsa ca sign), one a line:\n" +
	"# serial (hex), node, role, expiry. rsa ca revoke NODE reads it.\n"

// appendIssued adds cert, of role, to the register of the CA in caDir,
// made (0644) if missing, and flushes it to disk.
func appendIssued(caDir string, cert *x509.Certificate, role Role) error {
	path := filepath.Join(caDir, IssuedFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("recording the certificate of %s in the CA's register: %w", cert.Subject.CommonName, err)
	}
	var line bytes.Buffer
	if fi, err := f.Stat(); err == nil && fi.Size() == 0 {
		line.WriteString(issuedHeader)
	}
	fmt.Fprintf(&line, "%s %s %s %s\n", FormatSerial(cert.SerialNumber), cert.Subject.CommonName, role, cert.NotAfter.UTC().Format(time.RFC3339))
	_, err = f.Write(line.Bytes())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("recording the certificate of %s in %s: %w", cert.Subject.CommonName, path, err)
	}
	return nil
}

// ReadIssued returns the register of the CA in caDir, oldest first; an
// empty one if the CA has issued nothing since it kept one.
func ReadIssued(caDir string) ([]Issued, error) {
	path := filepath.Join(caDir, IssuedFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the CA's register: %w", err)
	}
	var out []Issued
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 {
			return nil, fmt.Errorf("%s:%d: %q is not SERIAL NODE ROLE EXPIRY", path, n, line)
		}
		serial, err := ParseSerial(f[0])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		role, err := ParseRole(f[2])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		t, err := time.Parse(time.RFC3339, f[3])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, Issued{Serial: serial, Node: f[1], Role: role, NotAfter: t})
	}
	return out, nil
}

// FormatSerial writes a serial number as RSA prints it: lower-case hex.
func FormatSerial(n *big.Int) string { return n.Text(16) }

// ParseSerial reads a serial number in hex, as rsa ca prints it or as
// openssl does (upper case, "serial=" before it, colons between bytes).
func ParseSerial(s string) (*big.Int, error) {
	h := strings.ReplaceAll(strings.TrimPrefix(strings.TrimSpace(s), "serial="), ":", "")
	n, ok := new(big.Int).SetString(h, 16)
	if !ok || h == "" || n.Sign() <= 0 {
		return nil, fmt.Errorf("%q is not a certificate serial number: give it in hex, as rsa ca issue printed it or openssl x509 -noout -serial shows it", s)
	}
	return n, nil
}

// Revoke adds serials to the revocation list of the CA in caDir (CRLFile,
// next to ca.key), made if missing, and writes it anew, signed by the CA,
// with a number one above the last and an expiry the CA's own (a host
// never treats RSA's list as stale: it changes only when an administrator
// revokes a certificate). Serials revoked already keep their revocation
// time. It returns the list written and the serials that it did not hold
// before.
func Revoke(caDir string, serials []*big.Int, now time.Time) (*x509.RevocationList, []*big.Int, error) {
	if len(serials) == 0 {
		return nil, nil, errors.New("no certificate to revoke: give a node's name or a serial number")
	}
	if now.IsZero() {
		now = time.Now()
	}
	ca, caKey, _, err := loadCA(caDir)
	if err != nil {
		return nil, nil, err
	}
	path := filepath.Join(caDir, CRLFile)
	tmpl := &x509.RevocationList{Number: big.NewInt(1)}
	switch b, err := os.ReadFile(path); {
	case err == nil:
		crls, err := parseCRLs(path, b, []*x509.Certificate{ca})
		if err != nil {
			return nil, nil, fmt.Errorf("%w; move it away to start a new list (and revoke again what it held)", err)
		}
		old := crls[0]
		tmpl.RevokedCertificateEntries = old.RevokedCertificateEntries
		if old.Number != nil {
			tmpl.Number = new(big.Int).Add(old.Number, big.NewInt(1))
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, nil, fmt.Errorf("reading the CA's revocation list: %w", err)
	}
	var added []*big.Int
	for _, s := range serials {
		if slices.ContainsFunc(tmpl.RevokedCertificateEntries, func(e x509.RevocationListEntry) bool { return e.SerialNumber.Cmp(s) == 0 }) {
			continue
		}
		tmpl.RevokedCertificateEntries = append(tmpl.RevokedCertificateEntries, x509.RevocationListEntry{SerialNumber: s, RevocationTime: now.UTC()})
		added = append(added, s)
	}
	tmpl.ThisUpdate = now.Add(-clockSkew)
	tmpl.NextUpdate = ca.NotAfter
	der, err := x509.CreateRevocationList(rand.Reader, tmpl, ca, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the revocation list: %w", err)
	}
	crl, err := x509.ParseRevocationList(der)
	if err != nil {
		return nil, nil, fmt.Errorf("reading back the revocation list: %w", err)
	}
	if err := writeReplace(path, pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der}), 0o644); err != nil {
		return nil, nil, err
	}
	return crl, added, nil
}

// parseCRLs reads every revocation list in data (PEM, or one in DER),
// each signed by one of issuers.
func parseCRLs(path string, data []byte, issuers []*x509.Certificate) ([]*x509.RevocationList, error) {
	var ders [][]byte
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type == "X509 CRL" {
			ders = append(ders, b.Bytes)
		}
	}
	if len(ders) == 0 && len(data) > 0 && data[0] == 0x30 { // DER: a SEQUENCE
		ders = append(ders, data)
	}
	if len(ders) == 0 {
		return nil, fmt.Errorf("%s holds no revocation list (-----BEGIN X509 CRL-----)", path)
	}
	var out []*x509.RevocationList
	for i, der := range ders {
		crl, err := x509.ParseRevocationList(der)
		if err != nil {
			return nil, fmt.Errorf("parsing revocation list %d of %s: %w", i+1, path, err)
		}
		signed := false
		for _, is := range issuers {
			if bytes.Equal(is.RawSubject, crl.RawIssuer) && crl.CheckSignatureFrom(is) == nil {
				signed = true
				break
			}
		}
		if !signed {
			return nil, fmt.Errorf("revocation list %d of %s is not signed by a CA this host trusts (%s): copy the CA's own %s", i+1, path, crl.Issuer, CRLFile)
		}
		out = append(out, crl)
	}
	return out, nil
}

// revocations is the set of certificates revoked, by issuer and serial.
type revocations map[string]bool

func revocationKey(rawIssuer []byte, serial *big.Int) string {
	return string(rawIssuer) + "\x00" + serial.String()
}

// loadRevocations reads the revocation lists in path, each signed by one
// of issuers; a path that is "" or does not exist revokes nothing.
func loadRevocations(path string, issuers []*x509.Certificate) (revocations, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the revocation list: %w", err)
	}
	crls, err := parseCRLs(path, b, issuers)
	if err != nil {
		return nil, err
	}
	r := revocations{}
	for _, crl := range crls {
		for _, e := range crl.RevokedCertificateEntries {
			r[revocationKey(crl.RawIssuer, e.SerialNumber)] = true
		}
	}
	return r, nil
}

// check returns an error if a certificate of chain is revoked.
func (r revocations) check(chain []*x509.Certificate) error {
	for _, c := range chain {
		if r[revocationKey(c.RawIssuer, c.SerialNumber)] {
			return fmt.Errorf("certificate %s (serial %s) is revoked: it is in the CA's revocation list", names(c), FormatSerial(c.SerialNumber))
		}
	}
	return nil
}
