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
	"strings"
	"sync"
	"time"

	"github.com/rsa-hpc/rsa/internal/munge"
)

// Remote access: users on login nodes reach the daemon over TCP, each
// request carrying a MUNGE credential (the identity service a Slurm
// cluster runs anyway) instead of the Unix socket's SO_PEERCRED. Only what
// a user does with their own jobs is served there: status, a job, its
// log, waiting for it, cancelling it. Root, the scheduler's hooks and
// every administrator's action stay on the RSA host's socket. As with
// Slurm's own RPCs, requests are authenticated, not encrypted.

// authScheme is the Authorization header's scheme: "MUNGE <credential>".
const authScheme = "MUNGE"

// maxRemoteBody bounds a remote request's body (only cancel has one, and
// it is empty).
const maxRemoteBody = 64 << 10

// RequestPayload is what a remote request's credential must carry: the
// request itself, so that a credential read off the wire authorises
// nothing else (and munged decodes it only once anyway).
func RequestPayload(method, uri string, body []byte) []byte {
	return fmt.Appendf(nil, "rsa-request/1\n%s\n%s\n%x\n", method, uri, sha256.Sum256(body))
}

// Decoder checks a credential; munge.Munge is one.
type Decoder interface {
	Decode(ctx context.Context, cred string) (*munge.Cred, error)
}

// Encoder makes a credential; munge.Munge is one.
type Encoder interface {
	Encode(ctx context.Context, payload []byte) (string, error)
}

// NewRemoteServer serves the remote part of the API. lim bounds the
// connections of everyone (Total) and the requests in flight of one user
// (PerUser). The credentials of one source address are checked
// maxDecodingPerHost at a time, so that no login node takes every
// unmunge place.
func NewRemoteServer(svc Service, dec Decoder, lim Limits, log *slog.Logger) *http.Server {
	mux := http.NewServeMux()
	h := &handler{svc: svc, log: log}
	mux.HandleFunc("GET /v1/version", h.version)
	mux.HandleFunc("GET /v1/jobs", h.jobs)
	mux.HandleFunc("GET /v1/jobs/{id}", h.job)
	mux.HandleFunc("GET /v1/jobs/{id}/events", h.events)
	mux.HandleFunc("POST /v1/jobs/{id}/{verb}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("verb") != "cancel" {
			h.reply(w, nil, Forbidden("only cancel is served over the network; administrators act on the RSA host"))
			return
		}
		h.act(w, r)
	})
	a := &munged{next: mux, dec: dec, log: log, perUser: lim.PerUser, inFlight: map[uint32]int{},
		decoding: make(chan struct{}, maxDecoding), hostDecoding: map[string]*hostPlaces{}}
	return newHTTPServer(a, 16<<10)
}

// maxDecoding bounds the credentials checked at once (an unmunge process
// each), and maxDecodingPerHost those of one source address. A request
// waits for a place of its host before it waits for one of all: one host
// sending faster than munged answers (a busy login node, or any host
// sending garbage) queues behind itself, and the others' requests still
// find most places free.
const (
	maxDecoding        = 16
	maxDecodingPerHost = maxDecoding / 4
)

// ListenTCP listens on a TCP address, holding at most total connections
// open at once, and at most perHost of them from one address (0: no
// bound); the ones past either are closed at once. Connections are counted
// before anyone is authenticated: the per-host bound keeps one host from
// taking every place.
func ListenTCP(addr string, total, perHost int) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if total <= 0 && perHost <= 0 {
		return l, nil
	}
	return &boundedListener{Listener: l, slots: newSlots[string](total, perHost)}, nil
}

type boundedListener struct {
	net.Listener
	slots *slots[string] // by remote host
}

func (l *boundedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		if ok, _ := l.slots.take(host, false); ok {
			return &slotConn{Conn: c, free: func() { l.slots.give(host) }}, nil
		}
		c.Close()
	}
}

// signedRequest reads r's MUNGE credential ("Authorization: MUNGE
// <credential>"; without one, a 401 saying missing) and its body of at most
// limit bytes, which it leaves readable again.
func signedRequest(r *http.Request, limit int64, missing string) (cred string, body []byte, err error) {
	scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || scheme != authScheme {
		return "", nil, &Error{Status: http.StatusUnauthorized, Msg: missing}
	}
	body, err = io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil || int64(len(body)) > limit {
		return "", nil, Invalid("request body unreadable or too large")
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return cred, body, nil
}

// munged authenticates each request by its MUNGE credential.
type munged struct {
	next     http.Handler
	dec      Decoder
	log      *slog.Logger
	decoding chan struct{} // bounds the unmunge processes at once

	mu           sync.Mutex
	perUser      int
	inFlight     map[uint32]int
	hostDecoding map[string]*hostPlaces // by source address; an entry lives while a request uses it
}

// hostPlaces are one source address's places among the unmunge processes.
type hostPlaces struct {
	places chan struct{} // maxDecodingPerHost
	users  int           // requests holding or waiting for a place; guarded by munged.mu
}

func (m *munged) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := &handler{log: m.log}
	cred, body, err := signedRequest(r, maxRemoteBody, "remote requests need a MUNGE credential (use the rsa client with --server or RSA_SERVER)")
	if err != nil {
		h.reply(w, nil, err)
		return
	}
	c, err := m.decode(r, cred)
	switch {
	case errors.Is(err, munge.ErrInvalid):
		m.log.Warn("remote request refused", "from", r.RemoteAddr, "err", err)
		h.reply(w, nil, &Error{Status: http.StatusUnauthorized, Msg: err.Error()})
		return
	case err != nil && r.Context().Err() != nil:
		return // the caller went away while its credential waited: no one to answer
	case err != nil:
		h.reply(w, nil, err)
		return
	}
	if !bytes.Equal(c.Payload, RequestPayload(r.Method, r.URL.RequestURI(), body)) {
		m.log.Warn("remote request refused: its credential was made for another request", "from", r.RemoteAddr, "uid", c.UID)
		h.reply(w, nil, Forbidden("the MUNGE credential was made for another request"))
		return
	}
	if c.UID == 0 {
		h.reply(w, nil, Forbidden("root acts on the RSA host itself, not over the network"))
		return
	}
	if !m.enter(c.UID) {
		h.reply(w, nil, &Error{Status: http.StatusTooManyRequests, Msg: "too many requests of yours in flight; try again"})
		return
	}
	defer m.leave(c.UID)
	p := Peer{UID: c.UID, GID: c.GID, Remote: true}
	m.next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), peerKey{}, p)))
}

// decode checks cred once a place of r's source address and one of all
// are free (see maxDecodingPerHost), or fails with the request's context
// error if it ends first.
func (m *munged) decode(r *http.Request, cred string) (*munge.Cred, error) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	m.mu.Lock()
	hp := m.hostDecoding[host]
	if hp == nil {
		hp = &hostPlaces{places: make(chan struct{}, maxDecodingPerHost)}
		m.hostDecoding[host] = hp
	}
	hp.users++
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if hp.users--; hp.users == 0 {
			delete(m.hostDecoding, host)
		}
	}()
	ctx := r.Context()
	select {
	case hp.places <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-hp.places }()
	select {
	case m.decoding <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-m.decoding }()
	return m.dec.Decode(ctx, cred)
}

func (m *munged) enter(uid uint32) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.perUser > 0 && m.inFlight[uid] >= m.perUser {
		return false
	}
	m.inFlight[uid]++
	return true
}

func (m *munged) leave(uid uint32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.inFlight[uid]--; m.inFlight[uid] <= 0 {
		delete(m.inFlight, uid)
	}
}

// NewRemoteClient returns a client for the daemon's remote access at addr
// (host:port), signing each request with a credential from enc. addr may
// list the two control hosts of a failover pair, comma-separated: a
// request goes to the one that answered last, and to the other when that
// one cannot be reached (the standby serves no remote access).
func NewRemoteClient(addr string, enc Encoder) *Client {
	var bases []string
	for _, a := range strings.Split(addr, ",") {
		if a = strings.TrimSpace(a); a != "" {
			bases = append(bases, "http://"+a)
		}
	}
	if len(bases) == 0 {
		bases = []string{"http://" + addr}
	}
	return &Client{Socket: "tcp " + addr, base: bases[0], others: bases[1:], http: &http.Client{
		Transport: &signer{
			enc:  enc,
			next: &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext},
		},
		// A redirect would have the client sign a request the server
		// chose: whoever holds the port could collect a credential for
		// another of the user's requests and replay it to the daemon.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// signer adds a request's credential.
type signer struct {
	enc  Encoder
	next http.RoundTripper
}

func (s *signer) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	cred, err := s.enc.Encode(r.Context(), RequestPayload(r.Method, r.URL.RequestURI(), body))
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.Header.Set("Authorization", authScheme+" "+cred)
	return s.next.RoundTrip(r)
}
