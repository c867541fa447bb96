package failover

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/munge"
)

// Standby is what the standby rsa serve of a pair serves while it waits
// for the lease: its own socket, by forwarding.
type Standby struct {
	StateDir    string     // the shared state directory, whose lease it waits for
	Socket      string     // its own socket
	Limits      api.Limits // the socket's connection bounds
	MungeSocket string     // MUNGE's socket, for the forwarded requests' credentials
	Retry       time.Duration
	Log         *slog.Logger
}

// Wait serves s.Socket by forwarding every request to the active rsa
// serve (api.NewForwarder) until it holds the lease, which it returns;
// with the lease free from the start it serves nothing. Requests on their
// way to the old active one end with it; their callers ask again, and the
// new one answers.
func (s Standby) Wait(ctx context.Context) (*Lease, error) {
	if err := os.MkdirAll(s.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating state dir: %w", err)
	}
	if l, ok, err := TryAcquire(s.StateDir); err != nil || ok {
		return l, err
	}
	ln, err := api.ListenConfig{Limits: s.Limits, Log: s.Log}.Listen(s.Socket)
	if err != nil {
		return nil, err
	}
	active := func() (string, error) {
		i, err := Active(s.StateDir)
		if err != nil {
			return "", err
		}
		return i.Addr, nil
	}
	srv := api.NewForwarder(active, munge.Munge{Socket: s.MungeSocket}, s.Log)
	go srv.Serve(ln)
	i, err := Active(s.StateDir)
	s.Log.Info("rsa serve is the standby of a failover pair: it forwards its socket's requests to the active one, and takes over when the active one's lease is free",
		"socket", s.Socket, "state", s.StateDir, "active", i.Host, "active_addr", i.Addr, "active_since", i.Since, "announcement_err", err)
	lease, err := Acquire(ctx, s.StateDir, s.Retry, nil)
	srv.Close()
	if err != nil {
		return nil, err
	}
	s.Log.Warn("the failover lease is free: taking the state over", "last_active", i.Host)
	return lease, nil
}
