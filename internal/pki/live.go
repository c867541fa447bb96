package pki

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sync"
	"syscall"
)

// Live is a host's identity as its files hold it now: each Current
// looks at the files (a stat of each) and, if one changed, loads them
// again, so that a renewed certificate, a new CA or revocation list is
// used from the next handshake on, without a restart.
//
// A new load that fails (the files copied one at a time, a key that does
// not match its certificate yet, a list another CA signed) leaves the
// identity as it was, and is not tried again until the files change once
// more. So is one whose certificate has another role or names another
// host: the daemon and the agents set themselves up for their role and
// name as they start, and a change of either takes a restart.
//
// A Live may be used concurrently.
type Live struct {
	files  Files
	report func(*Identity, error)

	mu    sync.Mutex
	cur   *Identity
	seen  [4]stamp // of the files cur was loaded from
	tried [4]stamp // of the files the last failed load read
}

// stamp is what tells a file changed: its identity, size and times; the
// change time too, which no copy can set back (scp -p keeps the mtime).
type stamp struct {
	exists       bool
	dev, ino     uint64
	size         int64
	mtime, ctime syscall.Timespec
}

// LoadLive loads the identity of f (Load) and keeps it up to date. report,
// if not nil, is called after each later load, from the Current that
// made it: with the new identity, or with the error that kept the old. It
// must not call Current itself.
func LoadLive(f Files, report func(*Identity, error)) (*Live, error) {
	st, err := stamps(f)
	if err != nil {
		return nil, err
	}
	id, err := Load(f)
	if err != nil {
		return nil, err
	}
	if report == nil {
		report = func(*Identity, error) {}
	}
	return &Live{files: f, report: report, cur: id, seen: st}, nil
}

// Files are the files the identity is loaded from.
func (l *Live) Files() Files { return l.files }

// Current returns the identity, loaded again first if a file changed
// since the last load (see Live).
func (l *Live) Current() *Identity {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, err := stamps(l.files)
	if err != nil || st == l.seen || st == l.tried {
		return l.cur
	}
	id, err := Load(l.files)
	if err == nil {
		err = sameHost(l.cur, id)
	}
	if err != nil {
		l.tried = st
		l.report(nil, err)
		return l.cur
	}
	l.cur, l.seen, l.tried = id, st, [4]stamp{}
	l.report(id, nil)
	return id
}

// sameHost refuses a new identity for another role or another host.
func sameHost(old, cur *Identity) error {
	if cur.role != old.role {
		return fmt.Errorf("the new certificate %s has role %s, not %s: the old one stays in use; restart to change a host's role", names(cur.cert.Leaf), cur.role, old.role)
	}
	a, b := old.cert.Leaf, cur.cert.Leaf
	if a.Subject.CommonName != b.Subject.CommonName || !slices.Equal(a.DNSNames, b.DNSNames) {
		return fmt.Errorf("the new certificate names %s, not %s: the old one stays in use; restart to change a host's name", names(b), names(a))
	}
	return nil
}

// stamps stats each of f's files; one that does not exist has a zero
// stamp (the revocation list may be absent).
func stamps(f Files) ([4]stamp, error) {
	var out [4]stamp
	for i, p := range []string{f.CA, f.Cert, f.Key, f.CRL} {
		if p == "" {
			continue
		}
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("checking %s: %w", p, err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return out, fmt.Errorf("checking %s: no file status", p)
		}
		out[i] = stamp{exists: true, dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}
	}
	return out, nil
}
