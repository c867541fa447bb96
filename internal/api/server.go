package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

type peerKey struct{}

// Listen opens the daemon's socket at path with the default Limits (see
// ListenConfig.Listen).
func Listen(path string) (net.Listener, error) {
	return ListenConfig{}.Listen(path)
}

// ListenConfig says how the daemon's socket is opened.
type ListenConfig struct {
	Limits Limits
	// Log hears of refused connections; nil means slog.Default().
	Log *slog.Logger
}

// Listen opens the daemon's socket at path: its directory root-owned 0755,
// the socket itself 0666 (anyone may connect; every call is authorised by
// the peer's credentials). A stale socket from a crashed daemon is replaced;
// a live one is an error. The listener holds each caller to lc.Limits.
func (lc ListenConfig) Listen(path string) (net.Listener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating socket directory: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("another rsa daemon is serving %s; stop it first", path)
	}
	_ = os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		l.Close()
		return nil, err
	}
	return newLimitListener(l, lc.Limits, lc.Log, peerOf), nil
}

// Limits caps the connections the daemon holds open, so that no user can
// take all of its file descriptors: past a cap, a connection is closed as
// soon as it is accepted. Zero fields mean the defaults.
type Limits struct {
	// PerUser caps the open connections of one uid. Root and Trusted are
	// held to Total only.
	PerUser int
	// Total caps all open connections.
	Total int
	// Trusted are uids held to Total only, like root: the scheduler's
	// user, whose hooks wait on the daemon in many processes at once.
	Trusted []uint32
}

// The default Limits. An rsa client holds one connection at a time, each
// Slurm hook process one.
const (
	DefaultPerUser = 64
	DefaultTotal   = 1024
)

// limitListener counts open connections by peer uid and refuses those past
// its Limits.
type limitListener struct {
	net.Listener
	lim   Limits
	log   *slog.Logger
	peer  func(net.Conn) (Peer, error)
	slots *slots[uint32]

	mu     sync.Mutex
	logged map[uint32]time.Time // when a refusal of the uid was last logged
}

func newLimitListener(l net.Listener, lim Limits, log *slog.Logger, peer func(net.Conn) (Peer, error)) *limitListener {
	if lim.PerUser <= 0 {
		lim.PerUser = DefaultPerUser
	}
	if lim.Total <= 0 {
		lim.Total = DefaultTotal
	}
	if log == nil {
		log = slog.Default()
	}
	return &limitListener{Listener: l, lim: lim, log: log, peer: peer,
		slots: newSlots[uint32](lim.Total, lim.PerUser), logged: map[uint32]time.Time{}}
}

// Accept returns the next connection within the limits, as a *peerConn.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		p, err := l.peer(c)
		if err != nil {
			l.log.Warn("cannot read peer credentials; closing", "err", err)
			c.Close()
			continue
		}
		if !l.admit(p.UID) {
			c.Close()
			continue
		}
		return &peerConn{slotConn: slotConn{Conn: c, free: func() { l.slots.give(p.UID) }}, peer: p}, nil
	}
}

func (l *limitListener) admit(uid uint32) bool {
	ok, bound := l.slots.take(uid, uid == 0 || slices.Contains(l.lim.Trusted, uid))
	if ok {
		return true
	}
	why := map[string]string{"total": "the daemon holds Total open connections", "per key": "the uid holds PerUser open connections"}[bound]
	// Once per uid a minute: a client that retries must not flood the log.
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if now.Sub(l.logged[uid]) >= time.Minute {
		for u, t := range l.logged {
			if now.Sub(t) >= time.Minute {
				delete(l.logged, u)
			}
		}
		l.logged[uid] = now
		open, total := l.slots.counts(uid)
		l.log.Warn("refusing connections", "uid", uid, "reason", why,
			"open", open, "total", total, "per_user", l.lim.PerUser, "limit", l.lim.Total)
	}
	return false
}

// peerConn is an admitted connection with its peer, read once at accept.
type peerConn struct {
	slotConn
	peer Peer
}

// NewServer serves svc over HTTP.
func NewServer(svc Service, log *slog.Logger) *http.Server {
	srv := newHTTPServer(newMux(svc, log), 64<<10)
	srv.ConnContext = socketPeer(log)
	return srv
}

// socketPeer is a ConnContext that puts the peer of a connection to the
// socket, as SO_PEERCRED tells it, in the connection's context; it closes
// a connection whose peer it cannot tell.
func socketPeer(log *slog.Logger) func(ctx context.Context, c net.Conn) context.Context {
	return func(ctx context.Context, c net.Conn) context.Context {
		if pc, ok := c.(*peerConn); ok {
			return context.WithValue(ctx, peerKey{}, pc.peer)
		}
		p, err := peerOf(c)
		if err != nil {
			log.Warn("cannot read peer credentials; closing", "err", err)
			c.Close()
			return ctx
		}
		return context.WithValue(ctx, peerKey{}, p)
	}
}

// newMux routes every request of the socket's API to svc; the caller's
// Peer must be in each request's context.
func newMux(svc Service, log *slog.Logger) *http.ServeMux {
	mux := http.NewServeMux()
	h := &handler{svc: svc, log: log}
	mux.HandleFunc("GET /v1/version", h.version)
	mux.HandleFunc("POST /v1/jobs", h.submit)
	mux.HandleFunc("GET /v1/jobs", h.jobs)
	mux.HandleFunc("GET /v1/jobs/{id}", h.job)
	mux.HandleFunc("GET /v1/jobs/{id}/events", h.events)
	mux.HandleFunc("POST /v1/jobs/{id}/{verb}", h.act)
	mux.HandleFunc("GET /v1/nodes", h.nodes)
	mux.HandleFunc("POST /v1/nodes/{name}/drain", h.drain)
	mux.HandleFunc("POST /v1/nodes/{name}/settle", h.settle)
	mux.HandleFunc("POST /v1/gc", h.gc)
	mux.HandleFunc("GET /v1/quarantined", h.quarantined)
	mux.HandleFunc("GET /v1/certificates", h.certificates)
	mux.HandleFunc("POST /v1/hooks", h.hook)
	return mux
}

// newHTTPServer is the daemon's HTTP server with its bounds. Requests are
// small: a caller that takes longer to send one is stuck or hostile, and
// holds a connection meanwhile. Long polls answer after up to maxWait; the
// answer must still get out.
func newHTTPServer(h http.Handler, maxHeader int) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		MaxHeaderBytes:    maxHeader,
		WriteTimeout:      maxWait + time.Minute,
		IdleTimeout:       30 * time.Second,
	}
}

// maxWait is the longest a long poll (a job's next version, a hook's
// verdict) waits before it answers.
const maxWait = time.Minute

func peerOf(c net.Conn) (Peer, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Peer{}, errors.New("not a unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Peer{}, err
	}
	if cerr != nil {
		return Peer{}, cerr
	}
	return Peer{PID: cred.Pid, UID: cred.Uid, GID: cred.Gid}, nil
}

type handler struct {
	svc Service
	log *slog.Logger
}

func peer(r *http.Request) (Peer, bool) {
	p, ok := r.Context().Value(peerKey{}).(Peer)
	return p, ok
}

func (h *handler) reply(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		st := StatusOf(err)
		if st == http.StatusInternalServerError {
			h.log.Error("request failed", "err", err)
		}
		w.WriteHeader(st)
		json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	json.NewEncoder(w).Encode(v)
}

// with runs fn for a request whose peer is known.
func (h *handler) with(w http.ResponseWriter, r *http.Request, fn func(Peer) (any, error)) {
	p, ok := peer(r)
	if !ok {
		h.reply(w, nil, Forbidden("caller's credentials unknown"))
		return
	}
	v, err := fn(p)
	h.reply(w, v, err)
}

func jobID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, Invalid("%q is not a job id", r.PathValue("id"))
	}
	return id, nil
}

// decode reads a request body of at most limit bytes into v, refusing
// keys v does not have: a client's typo is an error, never ignored.
func decode(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Invalid("bad request: %v", err)
	}
	return nil
}

func (h *handler) version(w http.ResponseWriter, r *http.Request) {
	h.reply(w, h.svc.Version(r.Context()), nil)
}

func (h *handler) submit(w http.ResponseWriter, r *http.Request) {
	h.with(w, r, func(p Peer) (any, error) {
		var req SubmitRequest
		if err := decode(w, r, 1<<20, &req); err != nil {
			return nil, err
		}
		return h.svc.Submit(r.Context(), p, req)
	})
}

func (h *handler) jobs(w http.ResponseWriter, r *http.Request) {
	h.with(w, r, func(p Peer) (any, error) {
		js, err := h.svc.Jobs(r.Context(), p, r.URL.Query().Get("all") == "1")
		return map[string]any{"jobs": js}, err
	})
}

func (h *handler) job(w http.ResponseWriter, r *http.Request) {
	h.with(w, r, func(p Peer) (any, error) {
		id, err := jobID(r)
		if err != nil {
			return nil, err
		}
		after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
		wait, _ := time.ParseDuration(r.URL.Query().Get("wait"))
		return h.svc.Job(r.Context(), p, id, after, min(wait, maxWait))
	})
}

func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	h.with(w, r, func(p Peer) (any, error) {
		id, err := jobID(r)
		if err != nil {
			return nil, err
		}
		evs, log, err := h.svc.Events(r.Context(), p, id)
		return map[string]any{"events": evs, "stage_log": log}, err
	})
}

func (h *handler) act(w http.ResponseWriter, r *http.Request) {
	h.with(w, r, func(p Peer) (any, error) {
		id, err := jobID(r)
		if err != nil {
			return nil, err
		}
		q := r.URL.Query()
		return h.svc.Act(r.Context(), p, id, r.PathValue("verb"), ActOptions{Attach: q.Get("attach") == "1", To: q.Get("to")})
	})
}

func (h *handler) nodes(w http.ResponseWriter, r *http.Request) {
	h.with(w, r, func(p Peer) (any, error) {
		ns, err := h.svc.Nodes(r.Context(), p)
		return map[string]any{"nodes": ns}, err
	})
}

func (h *handler) drain(w http.ResponseWriter, r *http.Request) {
	h.with(w, r, func(p Peer) (any, error) {
		var req DrainRequest
		if err := decode(w, r, 64<<10, &req); err != nil {
			return nil, err
		}
		return h.svc.Drain(r.Context(), p, r.PathValue("name"), req)
	})
}

func (h *handler) settle(w http.ResponseWriter, r *http.Request) {
	h.with(w, r, func(p Peer) (any, error) {
		var req SettleRequest
		if err := decode(w, r, 64<<10, &req); err != nil {
			return nil, err
		}
		return h.svc.Settle(r.Context(), p, r.PathValue("name"), req)
	})
}

func (h *handler) certificates(w http.ResponseWriter, r *http.Request) {
	h.with(w, r, func(p Peer) (any, error) {
		cs, err := h.svc.Certificates(r.Context(), p)
		return map[string]any{"certificates": cs}, err
	})
}

func (h *handler) gc(w http.ResponseWriter, r *http.Request) {
	h.with(w, r, func(p Peer) (any, error) {
		var req GCRequest
		if r.ContentLength != 0 {
			if err := decode(w, r, 4<<10, &req); err != nil {
				return nil, err
			}
		}
		return h.svc.GC(r.Context(), p, req)
	})
}

func (h *handler) quarantined(w http.ResponseWriter, r *http.Request) {
	h.with(w, r, func(p Peer) (any, error) {
		qs, err := h.svc.Quarantined(r.Context(), p)
		return map[string]any{"quarantined": qs}, err
	})
}

func (h *handler) hook(w http.ResponseWriter, r *http.Request) {
	p, ok := peer(r)
	if !ok {
		h.reply(w, nil, Forbidden("caller's credentials unknown"))
		return
	}
	var req HookRequest
	if err := decode(w, r, 4<<20, &req); err != nil {
		h.reply(w, nil, err)
		return
	}
	req.Wait = min(req.Wait, maxWait)
	rep, err := h.svc.Hook(r.Context(), p, req)
	if err == nil && r.Header.Get("Accept") == "text/plain" {
		// burst_buffer.lua, asking without a process. Any other
		// answer (an error's status) sends it to rsa slurm-bb.
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, HookText(rep))
		return
	}
	h.reply(w, rep, err)
}
