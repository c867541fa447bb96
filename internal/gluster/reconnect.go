package gluster

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// ManagementPort is glusterd's TCP port: peers' glusterds talk to each
// other there, and clients fetch their volume files from it.
const ManagementPort = 24007

// Reconnect closes every TCP connection between the local glusterd and
// the glusterd of each of peers (port ManagementPort on either end), with
// ss -K (SOCK_DESTROY). Both sides see the peer go and, within seconds,
// connect again and shake hands anew, as after a restart of glusterd, but
// with every brick and client left running. A handshake is how glusterd
// reconciles the pool's volumes: a member that lacks a volume a peer has
// takes it from that peer. Transactions under way through either side
// fail (their callers may retry them).
//
// It returns how many connections it closed. Not idempotent in effect
// (each call makes a new handshake), but harmless to repeat. The
// connections of local brick processes and of clients on other hosts
// are left alone: only the peers' addresses are matched.
func Reconnect(ctx context.Context, peers []Peer) (int, error) {
	var addrs []string
	for _, p := range peers {
		for _, h := range p.Hostnames {
			ips, err := resolve(ctx, h)
			if err != nil {
				return 0, fmt.Errorf("reconnecting to peer %s: %w", h, err)
			}
			for _, ip := range ips {
				if !slices.Contains(addrs, ip) {
					addrs = append(addrs, ip)
				}
			}
		}
	}
	closed := 0
	for _, a := range addrs {
		n, err := closeConnections(ctx, a)
		if err != nil {
			return closed, err
		}
		closed += n
	}
	return closed, nil
}

// resolve is host's addresses: host itself if it is one.
func resolve(ctx context.Context, host string) ([]string, error) {
	if ip := net.ParseIP(host); ip != nil {
		return []string{ip.String()}, nil
	}
	if err := CheckHost(host); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", host, err)
	}
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out, nil
}

// closeConnections destroys the established TCP connections to or from
// glusterd's port whose other end is addr, and counts them.
func closeConnections(ctx context.Context, addr string) (int, error) {
	port := fmt.Sprintf(":%d", ManagementPort)
	// ss joins its arguments into one filter expression; none comes
	// from a shell.
	args := []string{"-K", "-H", "-tn", "state", "established", "dst", addr, "(", "sport", "=", port, "or", "dport", "=", port, ")"}
	cmd := exec.CommandContext(ctx, "ss", args...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("closing glusterd's connections with %s: ss %s: %w: %s", addr, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	// ss -K lists the sockets it destroyed, one a line.
	n := 0
	for _, l := range strings.Split(stdout.String(), "\n") {
		if strings.TrimSpace(l) != "" {
			n++
		}
	}
	return n, nil
}
