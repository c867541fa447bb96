package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/rsa-hpc/rsa/internal/munge"
)

// Forwarding: the two rsa serve of a failover pair share one state, and
// one of them, the lease's holder, is active. The other, the standby,
// serves its host's socket all the same, so that the Slurm hooks, the
// prolog and the administrators' commands on either control host reach
// the active one: it forwards each request over TCP to the active one's
// failover.listen, with the caller its socket saw (SO_PEERCRED) in
// ForwardHeader and a MUNGE credential of root that binds that caller to
// the request. The active one takes a forwarded caller's word only from
// root on the other control host (the credential's uid 0, the connection
// from failover.peer_address): whoever is root there could act on the
// shared state directly. As with Slurm's RPCs and remote access, the
// requests are authenticated, not encrypted.

// ForwardHeader names the caller a standby forwards a request for:
// "uid=U gid=G".
const ForwardHeader = "X-Rsa-Forwarded-For"

// maxForwardBody bounds a forwarded request's body (a submission, a hook
// with its job script).
const maxForwardBody = 4 << 20

// ForwardPayload is what a forwarded request's credential must carry: the
// request and the caller it is forwarded for. Its first line differs
// from RequestPayload's, so that neither kind of credential passes for
// the other.
func ForwardPayload(method, uri, caller string, body []byte) []byte {
	return fmt.Appendf(nil, "rsa-forward/1\n%s\n%s\n%s\n%x\n", method, uri, caller, sha256.Sum256(body))
}

// callerHeader is ForwardHeader's value for p.
func callerHeader(p Peer) string { return fmt.Sprintf("uid=%d gid=%d", p.UID, p.GID) }

// parseCaller reads ForwardHeader's value.
func parseCaller(v string) (Peer, error) {
	var p Peer
	if _, err := fmt.Sscanf(v, "uid=%d gid=%d", &p.UID, &p.GID); err != nil || callerHeader(p) != v {
		return Peer{}, Invalid("%s %q is not \"uid=U gid=G\"", ForwardHeader, v)
	}
	return p, nil
}

// Active says where the active rsa serve takes forwarded requests
// (HOST:PORT), or why there is none to forward to.
type Active func() (string, error)

// NewForwarder serves a standby's socket: every request is forwarded to
// the active rsa serve that active names, for the caller SO_PEERCRED
// tells, signed by enc. With no active one, or one that does not answer,
// the caller gets 503 (Unreachable: the hooks wait, as for a restart).
func NewForwarder(active Active, enc Encoder, log *slog.Logger) *http.Server {
	f := &forwarder{active: active, enc: enc, log: log,
		client: &http.Client{
			Transport: &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext},
			// The active one never redirects; following would send the
			// caller's request where no one chose.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}}
	srv := newHTTPServer(f, 64<<10)
	srv.ConnContext = socketPeer(log)
	return srv
}

type forwarder struct {
	active Active
	enc    Encoder
	log    *slog.Logger
	client *http.Client
}

func (f *forwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := &handler{log: f.log}
	p, ok := peer(r)
	if !ok {
		h.reply(w, nil, Forbidden("caller's credentials unknown"))
		return
	}
	addr, err := f.active()
	if err != nil {
		h.reply(w, nil, &Error{Status: http.StatusServiceUnavailable, Msg: "this rsa serve is the standby of a failover pair: " + err.Error()})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxForwardBody+1))
	if err != nil || len(body) > maxForwardBody {
		h.reply(w, nil, Invalid("request body unreadable or too large"))
		return
	}
	caller := callerHeader(p)
	cred, err := f.enc.Encode(r.Context(), ForwardPayload(r.Method, r.URL.RequestURI(), caller, body))
	if err != nil {
		h.reply(w, nil, &Error{Status: http.StatusServiceUnavailable, Msg: "this rsa serve is the standby and cannot sign the request for the active one: " + err.Error()})
		return
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+addr+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		h.reply(w, nil, err)
		return
	}
	for _, k := range []string{"Content-Type", "Accept"} {
		if v := r.Header.Get(k); v != "" {
			out.Header.Set(k, v)
		}
	}
	out.Header.Set(ForwardHeader, caller)
	out.Header.Set("Authorization", authScheme+" "+cred)
	resp, err := f.client.Do(out)
	if err != nil {
		if r.Context().Err() != nil {
			return // the caller went away
		}
		h.reply(w, nil, &Error{Status: http.StatusServiceUnavailable,
			Msg: fmt.Sprintf("this rsa serve is the standby; the active one at %s did not answer (%v): the standby takes over once the lease is free", addr, err)})
		return
	}
	defer resp.Body.Close()
	for _, k := range []string{"Content-Type", "Retry-After"} {
		if v := resp.Header.Get(k); v != "" {
			w.Header().Set(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// NewPeerServer serves the requests a standby forwards (NewForwarder) to
// svc, as the socket serves its own callers: the caller is the one in
// ForwardHeader, believed only of a request that comes from one of peers
// (the other control host's addresses) and carries a MUNGE credential of
// root made for it. A forwarded caller has no pid here.
func NewPeerServer(svc Service, dec Decoder, peers []string, log *slog.Logger) *http.Server {
	return newHTTPServer(&peerAuth{next: newMux(svc, log), dec: dec, peers: peers, log: log}, 64<<10)
}

type peerAuth struct {
	next  http.Handler
	dec   Decoder
	peers []string
	log   *slog.Logger
}

func (a *peerAuth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := &handler{log: a.log}
	p, err := a.check(r)
	if err != nil {
		a.log.Warn("forwarded request refused", "from", r.RemoteAddr, "err", err)
		h.reply(w, nil, err)
		return
	}
	a.next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), peerKey{}, p)))
}

// check authenticates a forwarded request and returns its caller; it
// leaves the body readable again.
func (a *peerAuth) check(r *http.Request) (Peer, error) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil || !slices.Contains(a.peers, host) {
		return Peer{}, Forbidden("forwarded requests are taken from the other control host of the failover pair (failover.peer_address) alone")
	}
	cred, body, err := signedRequest(r, maxForwardBody, "a forwarded request needs a MUNGE credential")
	if err != nil {
		return Peer{}, err
	}
	c, err := a.dec.Decode(r.Context(), cred)
	if errors.Is(err, munge.ErrInvalid) {
		return Peer{}, &Error{Status: http.StatusUnauthorized, Msg: err.Error()}
	}
	if err != nil {
		return Peer{}, err
	}
	caller := r.Header.Get(ForwardHeader)
	if c.UID != 0 {
		return Peer{}, Forbidden("a forwarded request's credential must be root's (the standby's), not uid %d's", c.UID)
	}
	if !bytes.Equal(c.Payload, ForwardPayload(r.Method, r.URL.RequestURI(), caller, body)) {
		return Peer{}, Forbidden("the MUNGE credential was made for another request")
	}
	return parseCaller(caller)
}
