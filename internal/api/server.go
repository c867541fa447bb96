package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

type peerKey struct{}

// Listen opens the daemon's socket at path: its directory root-owned 0755,
// the socket itself 0666 (anyone may connect; every call is authorised by
// the peer's credentials). A stale socket from a crashed daemon is replaced;
// a live one is an error.
func Listen(path string) (net.Listener, error) {
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
	return l, nil
}

// NewServer serves svc over HTTP.
func NewServer(svc Service, log *slog.Logger) *http.Server {
	mux := http.NewServeMux()
	h := &handler{svc: svc, log: log}
	mux.HandleFunc("GET /v1/version", h.version)
	mux.HandleFunc("POST /v1/jobs", h.submit)
	mux.HandleFunc("GET /v1/jobs", h.jobs)
	mux.HandleFunc("GET /v1/jobs/{id}", h.job)
	mux.HandleFunc("GET /v1/jobs/{id}/events", h.events)
	mux.HandleFunc("POST /v1/jobs/{id}/{verb}", h.act)
	mux.HandleFunc("GET /v1/nodes", h.nodes)
	mux.HandleFunc("POST /v1/gc", h.gc)
	mux.HandleFunc("POST /v1/hooks", h.hook)
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			p, err := peerOf(c)
			if err != nil {
				log.Warn("cannot read peer credentials; closing", "err", err)
				c.Close()
				return ctx
			}
			return context.WithValue(ctx, peerKey{}, p)
		},
	}
}

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

func (h *handler) version(w http.ResponseWriter, r *http.Request) {
	h.reply(w, h.svc.Version(r.Context()), nil)
}

func (h *handler) submit(w http.ResponseWriter, r *http.Request) {
	h.with(w, r, func(p Peer) (any, error) {
		var req SubmitRequest
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			return nil, Invalid("bad request: %v", err)
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
		return h.svc.Job(r.Context(), p, id, after, min(wait, time.Minute))
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
		return h.svc.Act(r.Context(), p, id, r.PathValue("verb"), r.URL.Query().Get("attach") == "1")
	})
}

func (h *handler) nodes(w http.ResponseWriter, r *http.Request) {
	h.with(w, r, func(p Peer) (any, error) {
		ns, err := h.svc.Nodes(r.Context(), p)
		return map[string]any{"nodes": ns}, err
	})
}

func (h *handler) gc(w http.ResponseWriter, r *http.Request) {
	h.with(w, r, func(p Peer) (any, error) { return h.svc.GC(r.Context(), p) })
}

func (h *handler) hook(w http.ResponseWriter, r *http.Request) {
	h.with(w, r, func(p Peer) (any, error) {
		var req HookRequest
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			return nil, Invalid("bad request: %v", err)
		}
		req.Wait = min(req.Wait, time.Minute)
		return h.svc.Hook(r.Context(), p, req)
	})
}
