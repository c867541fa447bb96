package service

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/user"
	"strconv"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/dashboard"
	"github.com/rsa-hpc/rsa/internal/metrics"
	"github.com/rsa-hpc/rsa/internal/munge"
)

// Listeners are what rsa serve answers on: its socket, and, as configured,
// remote access for login nodes, the failover peer's forwarded requests
// and the metrics.
type Listeners struct {
	socket, remote net.Listener
	peers          *http.Server // serving already once made
	servers        []*http.Server
}

// Listen opens the socket, remote access and, for the active one of a
// failover pair, the standby's port. Not serving remote access is an
// error, not a warning: another process holding the port would answer the
// login nodes in the daemon's place.
func (s *Service) Listen() (*Listeners, error) {
	ls := &Listeners{}
	var err error
	if ls.socket, err = (api.ListenConfig{Limits: SocketLimits(s.cfg), Log: s.log}).Listen(s.cfg.Socket); err != nil {
		return nil, err
	}
	if addr := s.cfg.Remote.Listen; addr != "" {
		// A login node carries many users: a host may hold as many
		// connections as a user may, times a few.
		if ls.remote, err = api.ListenTCP(addr, s.cfg.Limits.MaxConnections, 4*s.cfg.Limits.MaxConnectionsPerUser); err != nil {
			ls.Close()
			return nil, fmt.Errorf("remote.listen: %w", err)
		}
	}
	if s.pair {
		if ls.peers, err = s.servePeers(); err != nil {
			ls.Close()
			return nil, err
		}
	}
	return ls, nil
}

// Close closes what Listen opened, for a daemon that does not serve after
// all.
func (ls *Listeners) Close() {
	ls.socket.Close()
	if ls.remote != nil {
		ls.remote.Close()
	}
	if ls.peers != nil {
		ls.peers.Close()
	}
}

// Serve serves s on the socket and remote access, and scrape (the
// metrics) with the dashboard on metrics.listen; the channel gets the socket server's end.
func (ls *Listeners) Serve(s *Service, scrape http.Handler) <-chan error {
	srv := api.NewServer(s, s.log)
	ls.servers = append(ls.servers, srv)
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Serve(ls.socket) }()
	if s.cfg.Metrics.Listen != "" {
		if m, err := s.serveMetrics(scrape); err != nil {
			s.log.Error("metrics not served", "err", err)
		} else {
			ls.servers = append(ls.servers, m)
		}
	}
	if ls.remote != nil {
		remote := api.NewRemoteServer(s, munge.Munge{Socket: s.cfg.Remote.MungeSocket},
			api.Limits{PerUser: s.cfg.Limits.MaxConnectionsPerUser, Total: s.cfg.Limits.MaxConnections}, s.log)
		ls.servers = append(ls.servers, remote)
		go func() {
			if err := remote.Serve(ls.remote); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("remote access stopped", "err", err)
			}
		}()
		s.log.Info("remote access for login nodes (MUNGE)", "listen", ls.remote.Addr().String())
	}
	if ls.peers != nil {
		ls.servers = append(ls.servers, ls.peers)
	}
	return srvErr
}

// Shutdown stops every server, giving requests in flight 5 s.
func (ls *Listeners) Shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range ls.servers {
		s.Shutdown(ctx)
	}
}

// servePeers serves the standby's forwarded requests on failover.listen
// until ctx ends. Not served is an error: the standby's callers would
// reach no one.
func (s *Service) servePeers() (*http.Server, error) {
	// Every request comes from the standby's host: it may hold all the
	// connections; the bound keeps anyone else from holding more.
	ln, err := api.ListenTCP(s.cfg.Failover.Listen, s.cfg.Limits.MaxConnections, s.cfg.Limits.MaxConnections)
	if err != nil {
		return nil, fmt.Errorf("failover.listen: %w", err)
	}
	srv := api.NewPeerServer(s, munge.Munge{Socket: s.cfg.Remote.MungeSocket}, []string{s.cfg.Failover.PeerAddress}, s.log)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("failover: the standby's requests are not served", "err", err)
		}
	}()
	return srv, nil
}

// serveMetrics serves /metrics and the read-only dashboard (/) on the
// configured address until ctx ends.
func (s *Service) serveMetrics(scrape http.Handler) (*http.Server, error) {
	// Anyone on the host may connect: connections are bounded in number
	// and in time, so that none can hold the root daemon's descriptors.
	ln, err := metrics.Listen(s.cfg.Metrics.Listen)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", scrape)
	mux.Handle("/", dashboard.Handler(s.Dashboard()))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: time.Minute, IdleTimeout: 30 * time.Second, MaxHeaderBytes: 16 << 10}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("metrics stopped", "err", err)
		}
	}()
	s.log.Info("metrics for Prometheus and the dashboard", "listen", ln.Addr().String())
	return srv, nil
}

// SocketLimits bounds the connections to the socket as cfg says. The
// scheduler's hooks wait on the daemon in many processes at once: its
// users are held to the total only.
func SocketLimits(cfg *config.Config) api.Limits {
	lim := api.Limits{PerUser: cfg.Limits.MaxConnectionsPerUser, Total: cfg.Limits.MaxConnections}
	for _, name := range cfg.Slurm.Users {
		if u, err := user.Lookup(name); err == nil {
			if uid, ok := parseUID(u.Uid); ok {
				lim.Trusted = append(lim.Trusted, uid)
			}
		}
	}
	return lim
}

func parseUID(s string) (uint32, bool) {
	n, err := strconv.ParseUint(s, 10, 32)
	return uint32(n), err == nil
}
