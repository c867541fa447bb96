package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/munge"
)

// listeners are what rsa serve answers on: its socket, and, as configured,
// remote access for login nodes, the failover peer's forwarded requests
// and the metrics.
type listeners struct {
	socket, remote net.Listener
	peers          *http.Server // serving already once made
	servers        []*http.Server
}

// listen opens the socket, remote access and the failover peer's port.
// Not serving remote access is an error, not a warning: another process
// holding the port would answer the login nodes in the daemon's place.
func (d *Daemon) listen() (*listeners, error) {
	ls := &listeners{}
	var err error
	if ls.socket, err = (api.ListenConfig{Limits: socketLimits(d.cfg), Log: d.log}).Listen(d.cfg.Socket); err != nil {
		return nil, err
	}
	if addr := d.cfg.Remote.Listen; addr != "" {
		// A login node carries many users: a host may hold as many
		// connections as a user may, times a few.
		if ls.remote, err = api.ListenTCP(addr, d.cfg.Limits.MaxConnections, 4*d.cfg.Limits.MaxConnectionsPerUser); err != nil {
			ls.close()
			return nil, fmt.Errorf("remote.listen: %w", err)
		}
	}
	if d.lease != nil {
		if ls.peers, err = d.servePeers(); err != nil {
			ls.close()
			return nil, err
		}
	}
	return ls, nil
}

// close closes what listen opened, for a daemon that does not serve after
// all.
func (ls *listeners) close() {
	ls.socket.Close()
	if ls.remote != nil {
		ls.remote.Close()
	}
	if ls.peers != nil {
		ls.peers.Close()
	}
}

// serve serves the socket, remote access and the metrics; the channel
// gets the socket server's end.
func (ls *listeners) serve(ctx context.Context, d *Daemon) <-chan error {
	srv := api.NewServer(d.api, d.log)
	ls.servers = append(ls.servers, srv)
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Serve(ls.socket) }()
	if d.cfg.Metrics.Listen != "" {
		if m, err := d.serveMetrics(ctx); err != nil {
			d.log.Error("metrics not served", "err", err)
		} else {
			ls.servers = append(ls.servers, m)
		}
	}
	if ls.remote != nil {
		remote := api.NewRemoteServer(d.api, munge.Munge{Socket: d.cfg.Remote.MungeSocket},
			api.Limits{PerUser: d.cfg.Limits.MaxConnectionsPerUser, Total: d.cfg.Limits.MaxConnections}, d.log)
		ls.servers = append(ls.servers, remote)
		go func() {
			if err := remote.Serve(ls.remote); err != nil && !errors.Is(err, http.ErrServerClosed) {
				d.log.Error("remote access stopped", "err", err)
			}
		}()
		d.log.Info("remote access for login nodes (MUNGE)", "listen", ls.remote.Addr().String())
	}
	if ls.peers != nil {
		ls.servers = append(ls.servers, ls.peers)
	}
	return srvErr
}

// shutdown stops every server, giving requests in flight 5 s.
func (ls *listeners) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range ls.servers {
		s.Shutdown(ctx)
	}
}
