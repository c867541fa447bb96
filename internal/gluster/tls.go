package gluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"syscall"
	"time"
)

// Gluster's TLS, keyed by RSA's CA. With it every connection of the data
// path is mutual TLS: a client's to glusterd (the volume's layout), a
// client's to each brick (the data), and glusterd's to its peers. A
// process that cannot read the host's private key, which is root's alone,
// cannot take part, whatever uid, gid or pid it would claim; and a brick
// admits only the certificate names in its volume's auth.ssl-allow.
//
// Gluster reads its TLS files from fixed paths, compiled in: its
// certificate, key and CA list as glusterfs.pem, glusterfs.key and
// glusterfs.ca in a directory of its release's choosing (SSLDir), and management TLS is
// on when SecureAccessFile exists, read by glusterd, the FUSE client and
// libgfapi as they start.

// SecureAccessFile turns on TLS for Gluster's management connections.
const SecureAccessFile = "/var/lib/glusterd/secure-access"

// DefaultSSLDir is OPENSSLDIR where `openssl version -d` does not answer:
// Debian's.
const DefaultSSLDir = "/usr/lib/ssl"

// TLSFiles names the files Gluster's TLS is read from.
type TLSFiles struct {
	Cert string // this host's certificate (chain), PEM
	Key  string // its private key, PEM: root's, mode 0600
	CA   string // the CA certificate(s) a peer's certificate must chain to
}

// TLSFilesIn are Gluster's files in OpenSSL directory dir.
func TLSFilesIn(dir string) TLSFiles {
	return TLSFiles{Cert: filepath.Join(dir, "glusterfs.pem"), Key: filepath.Join(dir, "glusterfs.key"), CA: filepath.Join(dir, "glusterfs.ca")}
}

var openSSLDir = regexp.MustCompile(`OPENSSLDIR: "([^"]+)"`)

// SSLDir is the directory Gluster reads its TLS files from. Gluster
// compiles it in, and releases differ: Debian's 10.3 takes OpenSSL's
// directory, 11.1 /etc/ssl. So the installed Gluster's socket transport
// is asked first (glusterTLSDir); without one, OpenSSL's directory, as
// `openssl version -d` says, else DefaultSSLDir.
func SSLDir(ctx context.Context) string {
	if dir, ok := glusterTLSDir(); ok {
		return dir
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "openssl", "version", "-d").Output()
	if m := openSSLDir.FindSubmatch(out); err == nil && m != nil && filepath.IsAbs(string(m[1])) {
		return string(m[1])
	}
	return DefaultSSLDir
}

// socketTransports are where distributions install Gluster's socket
// transport, which reads the TLS files.
var socketTransports = []string{
	"/usr/lib/*/glusterfs/*/rpc-transport/socket.so", // Debian, Ubuntu
	"/usr/lib64/glusterfs/*/rpc-transport/socket.so", // EL
	"/usr/lib/glusterfs/*/rpc-transport/socket.so",
}

// glusterCertPath is the certificate's path as Gluster's transport holds
// it, a C string.
var glusterCertPath = regexp.MustCompile(`(/[A-Za-z0-9._/-]+)/glusterfs\.pem\x00`)

// glusterTLSDir reads the directory of glusterfs.pem from the installed
// Gluster's socket transport (the newest release's, if several are).
func glusterTLSDir() (string, bool) {
	var found []string
	for _, pattern := range socketTransports {
		m, _ := filepath.Glob(pattern)
		found = append(found, m...)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(found)))
	for _, so := range found {
		b, err := os.ReadFile(so)
		if err != nil {
			continue
		}
		if m := glusterCertPath.FindSubmatch(b); m != nil {
			return string(m[1]), true
		}
	}
	return "", false
}

// InstallTLS makes this host's RSA identity (from, the files `rsa ca
// issue` wrote) Gluster's: it copies the certificate, key and CA into
// sslDir as Gluster names them (the key root's, mode 0600) and creates
// SecureAccessFile. Files already the same are left alone; it reports
// whether anything changed. glusterd, bricks and clients read the files as
// they start: after a change, restart glusterd on an RSA node (running
// bricks and mounts keep the identity they started with).
func InstallTLS(sslDir string, from TLSFiles) (changed bool, err error) {
	to := TLSFilesIn(sslDir)
	for _, f := range []struct {
		src, dst string
		perm     fs.FileMode
	}{{from.Cert, to.Cert, 0o644}, {from.Key, to.Key, 0o600}, {from.CA, to.CA, 0o644}} {
		data, err := os.ReadFile(f.src)
		if err != nil {
			return changed, fmt.Errorf("installing Gluster's TLS files: %w", err)
		}
		c, err := writeIfChanged(f.dst, data, f.perm)
		if err != nil {
			return changed, fmt.Errorf("installing Gluster's TLS files: %w", err)
		}
		changed = changed || c
	}
	if err := os.MkdirAll(filepath.Dir(SecureAccessFile), 0o755); err != nil {
		return changed, fmt.Errorf("turning on Gluster's management TLS: %w", err)
	}
	if _, err := os.Stat(SecureAccessFile); errors.Is(err, fs.ErrNotExist) {
		if err := os.WriteFile(SecureAccessFile, nil, 0o644); err != nil {
			return changed, fmt.Errorf("turning on Gluster's management TLS: %w", err)
		}
		changed = true
	} else if err != nil {
		return changed, fmt.Errorf("turning on Gluster's management TLS: %w", err)
	}
	return changed, nil
}

// writeIfChanged replaces path by data, atomically, unless it holds data
// with mode perm, root's, already.
func writeIfChanged(path string, data []byte, perm fs.FileMode) (bool, error) {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		if fi, err := os.Lstat(path); err == nil && fi.Mode() == perm && ownedByRoot(fi) {
			return false, nil
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*") // mode 0600
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Close(); err != nil {
		return false, err
	}
	return true, os.Rename(tmp.Name(), path)
}

func ownedByRoot(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == 0
}

// CheckTLS reports why Gluster's TLS is not in place on this host, or nil:
// management TLS on, and the certificate, key and CA in sslDir, the key a
// regular file only root reads or changes. Without them a client mount
// or a volume would be made without authentication, or fail later
// with a message that does not say why.
func CheckTLS(sslDir string) error {
	fix := fmt.Sprintf("run 'rsa ca install-gluster' on this host (it installs the host's RSA certificate as Gluster's, in %s), then restart glusterd if this is an RSA node", sslDir)
	if _, err := os.Stat(SecureAccessFile); err != nil {
		return fmt.Errorf("Gluster's management TLS is off (%v): %s", err, fix)
	}
	to := TLSFilesIn(sslDir)
	for _, p := range []string{to.Cert, to.CA} {
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("Gluster's TLS file %s is missing (%v): %s", p, err, fix)
		}
	}
	fi, err := os.Lstat(to.Key)
	switch {
	case err != nil:
		return fmt.Errorf("Gluster's TLS key %s is missing (%v): %s", to.Key, err, fix)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("Gluster's TLS key %s is not a regular file: %s", to.Key, fix)
	case fi.Mode().Perm()&0o077 != 0 || !ownedByRoot(fi):
		return fmt.Errorf("Gluster's TLS key %s may be read or changed by others than root (mode %04o): anyone who reads it can reach every job's RAMDISK; issue this host a new key with 'rsa ca issue', then %s", to.Key, fi.Mode().Perm(), fix)
	}
	return nil
}
