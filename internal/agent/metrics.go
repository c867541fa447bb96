package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/rsa-hpc/rsa/internal/metrics"
	"github.com/rsa-hpc/rsa/internal/mount"
)

// The agent's own metrics (rsa agent --metrics-listen): plain HTTP, apart
// from the agent's port, for a Prometheus that scrapes the node itself.
// They say what the node holds and does, and when the daemon last reached
// it, which the daemon's own metrics cannot say of a node it lost.

// MetricsPort is the port the docs suggest for --metrics-listen: the one
// after the agent's (DefaultPort) and rsa serve's metrics (9478, which a
// node that is also the control host may use).
const MetricsPort = DefaultPort + 2

// ListenMetrics listens on addr (--metrics-listen, HOST:PORT) for
// ServeMetrics, with the connection bounds of rsa serve's metrics.
func ListenMetrics(addr string) (net.Listener, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("--metrics-listen %q: %w; give HOST:PORT, such as 127.0.0.1:%d", addr, err, MetricsPort)
	}
	ln, err := metrics.ListenAs("--metrics-listen", addr)
	if err != nil {
		return nil, fmt.Errorf("%w; not the agent's own port (--listen, %d) nor rsa serve's metrics port (9478) on a host that runs it: %d is free by convention",
			err, DefaultPort, MetricsPort)
	}
	return ln, nil
}

// ServeMetrics serves the agent's metrics at GET /metrics on ln, plain
// HTTP, until ctx is done, then closes ln and returns nil. A request must
// name this server in its Host header (metrics.CheckHost): by its
// address, localhost, the machine's hostname or a name in the agent's
// certificate; any other name is answered 421.
func (s *Server) ServeMetrics(ctx context.Context, ln net.Listener) error {
	cert := s.id.Current().Certificate()
	names := append([]string{cert.Subject.CommonName}, cert.DNSNames...)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metrics.Handler(names...))
	// Nothing else, to the same names.
	mux.Handle("/", metrics.CheckHost(http.NotFoundHandler(), names...))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: time.Minute, IdleTimeout: 30 * time.Second, MaxHeaderBytes: 16 << 10,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("agent metrics stopped serving: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("agent metrics stopped serving: %w", err)
	}
	return nil
}

// instrument counts and times each request mux serves by its operation:
// the name ops gives its route's pattern, metrics.OpOther for a request
// that matched no route (the mux's 404, 405 and redirects). Never by the
// request's path, which may name a volume (a job) or be anything a peer
// sends.
func (s *Server) instrument(mux *http.ServeMux, ops map[string]string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op, ok := ops[routeOf(mux, r)]
		if !ok {
			op = metrics.OpOther
		}
		sw := &statusWriter{ResponseWriter: w}
		start := time.Now()
		defer func() { s.metrics.ObserveRequest(op, sw.code(), time.Since(start)) }()
		mux.ServeHTTP(sw, r)
	})
}

// routeOf is the pattern of mux's route r goes to, "" for none (mux.Handler
// returns a path for its redirects, which no route's pattern is: those
// begin with a method).
func routeOf(mux *http.ServeMux, r *http.Request) string {
	_, pattern := mux.Handler(r)
	return pattern
}

// statusWriter remembers the status of the answer it writes.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer (a
// stage flushes each event and lifts its write deadline).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// code is the answer's status: 200 if nothing set another.
func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// metricsSource is the agent as its metrics see it at a scrape.
type metricsSource struct{ s *Server }

// Holdings reads the mount table once, as Status does, for the bricks and
// the volumes mounted.
func (m metricsSource) Holdings(context.Context) (metrics.AgentHoldings, error) {
	ms, err := mount.List()
	if err != nil {
		return metrics.AgentHoldings{}, fmt.Errorf("reading the mount table: %w", err)
	}
	bricks, err := m.s.bricks(ms)
	if err != nil {
		return metrics.AgentHoldings{}, err
	}
	mounts, err := m.s.mounts(ms)
	if err != nil {
		return metrics.AgentHoldings{}, err
	}
	var h metrics.AgentHoldings
	for _, b := range bricks {
		h.Bricks = append(h.Bricks, metrics.BrickUse{Size: b.Size, Used: b.Used, Inodes: b.Inodes, InodesUsed: b.InodesUsed, Problem: b.Problem != ""})
	}
	h.Mounts = len(mounts)
	for _, mt := range mounts {
		h.Binds += len(mt.Targets)
	}
	return h, nil
}

// Certificate is the agent's certificate now, named as rsa serve names it
// in its own series of it: the node's name, the certificate's role.
func (m metricsSource) Certificate(context.Context) metrics.Certificate {
	id := m.s.id.Current()
	return metrics.Certificate{Node: nodeName(id), Role: string(id.Role()), NotAfter: id.Certificate().NotAfter}
}
