package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// The files of a directory as Init, Issue, Request, Sign and Revoke write
// it, and as DirFiles names them.
const (
	CAFile    = "ca.crt"   // the cluster CA's certificate: public, on every host
	CAKeyFile = "ca.key"   // the cluster CA's private key: only where certificates are issued
	CertFile  = "node.crt" // a host's certificate
	KeyFile   = "node.key" // a host's private key
	CSRFile   = "node.csr" // a host's certificate signing request (Request), for the CA host to Sign
	// CRLFile is the CA's certificate revocation list (Revoke): written
	// next to ca.key, copied next to ca.crt on every host.
	CRLFile = "ca.crl"
	// IssuedFile is the CA's register of the certificates it issued, one
	// a line (Issue and Sign append to it): what Revoke finds a host's
	// serial numbers in.
	IssuedFile = "issued.txt"
)

// Files names the PEM files a host's TLS identity is loaded from. A site
// with its own PKI points them wherever its tools put the files.
type Files struct {
	CA   string // the CA certificate(s) to trust; nothing else is trusted
	Cert string // this host's certificate, then any intermediate certificates
	Key  string // this host's private key: mode 0600, owned by the user loading it
	// CRL is the revocation list(s) of the CAs trusted: a peer whose
	// certificate is listed is refused. "" or a file that does not exist
	// revokes nothing.
	CRL string
}

// DirFiles returns the files as Issue writes them into dir: ca.crt,
// node.crt and node.key, and ca.crl, the revocation list, if it is there.
func DirFiles(dir string) Files {
	return Files{CA: filepath.Join(dir, CAFile), Cert: filepath.Join(dir, CertFile), Key: filepath.Join(dir, KeyFile),
		CRL: filepath.Join(dir, CRLFile)}
}

// readPrivate reads a private key file, refusing one that others could
// read or replace: a key is only as secret as its file. The checks are made
// on the open file, so the file checked is the file read.
func readPrivate(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading private key: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading private key: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("private key %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("private key %s has mode %04o: group or others may read or change it; run chmod 600 %s (and, since others could read it, consider issuing a new key)", path, perm, path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("private key %s is owned by uid %d, not by uid %d that uses it; run chown %d %s", path, st.Uid, os.Geteuid(), os.Geteuid(), path)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("reading private key %s: %w", path, err)
	}
	return b, nil
}

// parseKey reads the first private key in PEM data: PKCS #8 (what Init
// and Issue write), SEC 1 or PKCS #1 (what other tools often write).
func parseKey(path string, data []byte) (crypto.Signer, error) {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil, fmt.Errorf("%s holds no PEM private key", path)
		}
		var k any
		var err error
		switch b.Type {
		case "PRIVATE KEY":
			k, err = x509.ParsePKCS8PrivateKey(b.Bytes)
		case "EC PRIVATE KEY":
			k, err = x509.ParseECPrivateKey(b.Bytes)
		case "RSA PRIVATE KEY":
			k, err = x509.ParsePKCS1PrivateKey(b.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("parsing private key %s: %w", path, err)
		}
		switch k := k.(type) {
		case *ecdsa.PrivateKey:
			return k, nil
		case ed25519.PrivateKey:
			return k, nil
		case *rsa.PrivateKey:
			return k, nil
		}
		return nil, fmt.Errorf("private key %s is of a type that cannot sign (%T)", path, k)
	}
}

// parseCerts reads every certificate in a PEM file.
func parseCerts(path string) ([]*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading certificate: %w", err)
	}
	var certs []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parsing certificate %d of %s: %w", len(certs)+1, path, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return certs, nil
}

// encodeKey is key as a PKCS #8 PEM block.
func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// encodeCert is a DER certificate as a PEM block.
func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// errExists is the error for a file Init or Issue will not replace.
func errExists(path, fix string) error {
	return &existsError{fmt.Sprintf("%s already exists; %s", path, fix)}
}

// existsError is fs.ErrExist (for errors.Is) with a message that says what
// to do about it.
type existsError struct{ msg string }

func (e *existsError) Error() string        { return e.msg }
func (e *existsError) Is(target error) bool { return target == fs.ErrExist }

// mustBeAbsent returns errExists(path, fix) if path exists (even as a
// dangling symlink), and any other error reaching it.
func mustBeAbsent(path, fix string) error {
	_, err := os.Lstat(path)
	switch {
	case err == nil:
		return errExists(path, fix)
	case errors.Is(err, fs.ErrNotExist):
		return nil
	}
	return fmt.Errorf("checking %s: %w", path, err)
}

// writeNew writes data to path with mode perm, never replacing a file: it
// writes a temporary file in the same directory, flushes it to disk, and
// hard-links it to path, which fails if path exists. A crash leaves either
// no file at path or the whole file, never a partial key or certificate.
func writeNew(path string, data []byte, perm fs.FileMode, fix string) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*") // mode 0600
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return errExists(path, fix)
		}
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return syncDir(dir)
}

// writeReplace writes data to path with mode perm, replacing what is
// there: a temporary file in the same directory, flushed to disk and
// renamed over path. A reader sees the old file or the new one, whole.
func writeReplace(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // fails once renamed
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return syncDir(dir)
}

// syncDir makes a directory's new entries durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

// sameFile reports whether path holds exactly data.
func sameFile(path string, data []byte) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	return bytes.Equal(b, data), nil
}
