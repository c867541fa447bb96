package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/rsa-hpc/rsa/internal/agent"
	"github.com/rsa-hpc/rsa/internal/gluster"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/pki"
	"github.com/rsa-hpc/rsa/internal/version"
)

// agentCmd is `rsa agent`, the node agent rsa serve dials on every RSA
// node and compute node.
func agentCmd() *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the node agent on an RSA node or compute node (root)",
		Long: `Run the agent that rsa serve drives on this node, in the foreground, until
SIGTERM or SIGINT. It serves HTTPS with mutual TLS 1.3 on --listen (default
port ` + strconv.Itoa(agent.DefaultPort) + ` on every address of the host: give --listen the node's address on the
cluster's network) and accepts only the control daemon's certificate.

--control names the control host(s), where rsa serve runs: IP addresses or
CIDR prefixes, repeated or separated by commas (rsa serve's [cluster]
address, or the address it reaches this node from if that differs). A
connection from any other address is reset as it is accepted, before it is
read or counted, so that no one else who reaches the port can take the
places the daemon's connections need. --control is required; --control any
accepts every address, and lets anyone who reaches the port lock the daemon
out (the agent warns of it at start). A connection from the control host
must finish its TLS handshake within seconds, in places of its own apart
from those of the daemon's authenticated connections.

Its certificate, key, CA and revocation list (--pki: node.crt, node.key,
ca.crt, ca.crl) are read again when one of them changes, and used from the
next connection on: install a renewed certificate, or a new revocation list,
without a restart. Files half installed leave the agent with those it had
until they are whole; a certificate for another role or host takes a
restart. The agent warns as it starts, and as it loads a new certificate,
when its certificate expires within 30 days.

What it does depends on the role in its certificate (rsa ca issue --role):
  storage   make and remove jobs' bricks: a tmpfs per job under --brick-root;
            make, seal and remove jobs' Gluster volumes through this
            node's glusterd (--gluster), a member of RSA's trusted pool
  compute   mount jobs' volumes at --volume-root/ID/ram (the job's RAMDISK
            path) and bind them at jobs' paths
  both      either
and every agent reports its status: RAM, bricks, mounts, boot id.

--metrics-listen HOST:PORT (off by default) serves the agent's own
Prometheus metrics at /metrics, plain HTTP without authentication: the
requests the daemon sent it, the bricks and mounts this node holds, the
stages it runs, when the daemon last reached it and when its certificate
expires; no user name, path or job id. Give a port of its own (` + strconv.Itoa(agent.MetricsPort) + ` by
convention), not the agent's (` + strconv.Itoa(agent.DefaultPort) + `) nor, on a host that runs rsa serve, its
metrics' (9478); keep it on loopback or an administrators' network. It
answers only requests that name this host in their Host header (its
address, localhost, its hostname or a name in its certificate): any other
name gets 421.

The agent keeps no state: it reads everything back from the kernel, so it
may be restarted at any time without losing anything.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd.Context()) },
	}
	f.add(cmd)
	return cmd
}

// agentFlags are rsa agent's flags.
type agentFlags struct {
	listen, metricsListen string
	control               []string
	pkiDir                string
	files                 pki.Files // each one given replaces its file in pkiDir
	brickRoot, volumeRoot string
	glusterBin            string
}

// add defines the flags on cmd.
func (f *agentFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.listen, "listen", ":"+strconv.Itoa(agent.DefaultPort), "address to serve on, [HOST]:PORT; without HOST every address of the host (give the node's address on the cluster's network)")
	cmd.Flags().StringVar(&f.metricsListen, "metrics-listen", "", "address to serve the agent's Prometheus metrics on, HOST:PORT, plain HTTP at /metrics (default off; e.g. 127.0.0.1:"+strconv.Itoa(agent.MetricsPort)+"; not the agent's port nor rsa serve's metrics port 9478)")
	cmd.Flags().StringSliceVar(&f.control, "control", nil, "IP address or CIDR prefix of the control host (rsa serve), repeated or comma-separated; only connections from there are served (required; \"any\" serves every address)")
	cmd.Flags().StringVar(&f.pkiDir, "pki", defaultPKIDir, "directory of ca.crt, node.crt and node.key")
	cmd.Flags().StringVar(&f.files.CA, "ca", "", "CA certificate(s) to trust (default DIR/ca.crt of --pki)")
	cmd.Flags().StringVar(&f.files.Cert, "cert", "", "this node's certificate (default DIR/node.crt of --pki)")
	cmd.Flags().StringVar(&f.files.Key, "key", "", "this node's private key, mode 0600 (default DIR/node.key of --pki)")
	cmd.Flags().StringVar(&f.files.CRL, "crl", "", "the CA's revocation list, which must exist (default DIR/ca.crl of --pki, if it exists)")
	cmd.Flags().StringVar(&f.brickRoot, "brick-root", agent.DefaultBrickRoot, "directory of the bricks' mount points (storage)")
	cmd.Flags().StringVar(&f.volumeRoot, "volume-root", agent.DefaultVolumeRoot, "directory where jobs' volumes are mounted (compute): the control host's ramdisk_root")
	cmd.Flags().StringVar(&f.glusterBin, "gluster", gluster.DefaultBin, "the gluster command (storage)")
}

// run runs the agent until ctx ends, or until it cannot serve on.
func (f *agentFlags) run(ctx context.Context) error {
	ctl, err := agent.ParseControl(f.control)
	if err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("rsa agent runs as root: it mounts jobs' bricks and volumes")
	}
	files, err := f.pkiFiles()
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	id, err := loadAgentIdentity(files, log)
	if err != nil {
		return fmt.Errorf("loading the agent's certificate: %w", err)
	}
	// Stages run this very binary (rsa copy) as the job's user.
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the rsa binary to stage with: %w", err)
	}
	a, err := agent.New(agent.Config{Self: self, Identity: id, BrickRoot: f.brickRoot, VolumeRoot: f.volumeRoot, Log: log, Version: version.String(), Gluster: f.glusterBin})
	if err != nil {
		return err
	}
	ln, err := agent.Listen(f.listen, ctl, log)
	if err != nil {
		return fmt.Errorf("agent listening on %s: %w; give --listen ADDR:PORT, a free port of one of this host's addresses", f.listen, err)
	}
	var mln net.Listener
	if f.metricsListen != "" {
		if mln, err = agent.ListenMetrics(f.metricsListen); err != nil {
			ln.Close()
			return err
		}
	}
	f.logStart(log, ln, ctl, id)
	return serveAgent(ctx, a, ln, mln, log)
}

// pkiFiles are the agent's certificate files: those of --pki, each
// replaced by the flag that names one. A revocation list named must exist.
func (f *agentFlags) pkiFiles() (pki.Files, error) {
	files := pki.DirFiles(f.pkiDir)
	if f.files.CA != "" {
		files.CA = f.files.CA
	}
	if f.files.Cert != "" {
		files.Cert = f.files.Cert
	}
	if f.files.Key != "" {
		files.Key = f.files.Key
	}
	if f.files.CRL != "" {
		// Named on purpose: a list missing would revoke nothing.
		if _, err := os.Stat(f.files.CRL); err != nil {
			return pki.Files{}, fmt.Errorf("--crl: %w; give the CA's revocation list (rsa ca revoke writes it), or leave --crl out", err)
		}
		files.CRL = f.files.CRL
	}
	return files, nil
}

// loadAgentIdentity loads the agent's certificate files, read again
// whenever they change; log tells of each new load, or of files that
// could not be loaded and leave the agent with those it had.
func loadAgentIdentity(f pki.Files, log *slog.Logger) (*pki.Live, error) {
	return pki.LoadLive(f, func(id *pki.Identity, err error) {
		if err != nil {
			log.Warn("the agent's certificate files changed and could not be loaded; it serves with those it had until they are whole", "cert", f.Cert, "err", err)
			return
		}
		c := id.Certificate()
		log.Info("the agent loaded its new certificate files", "cert", f.Cert, "serial", pki.FormatSerial(c.SerialNumber), "expires", c.NotAfter.UTC().Format(time.RFC3339))
		agent.WarnCertificate(log, id, time.Now())
	})
}

// logStart logs what the agent serves, as it starts, and warns of a
// control or listen address wider than the cluster's.
func (f *agentFlags) logStart(log *slog.Logger, ln net.Listener, ctl agent.Control, id *pki.Live) {
	log.Info("agent serving", "listen", ln.Addr().String(), "control", ctl.String(), "node", id.Current().Certificate().Subject.CommonName,
		"role", id.Current().Role(), "cert_expires", id.Current().Certificate().NotAfter.UTC().Format(time.RFC3339), "brick_root", f.brickRoot, "volume_root", f.volumeRoot, "version", version.String(),
		"kernel", mount.KernelRelease(), "mount_table", mount.Table().String())
	if ctl.Any() {
		log.Warn("agent accepts connections from every address (--control any): anyone who reaches its port can hold its connection places and lock rsa serve out of it; give the control host's address with --control")
	}
	if addrs, ok := wildcardAddrs(ln.Addr()); ok {
		log.Info("agent listening on every address of this host (--listen without HOST); give --listen ADDR:PORT to serve on the cluster's network alone",
			"addresses", addrs)
	}
}

// serveAgent serves a on ln, and its metrics on mln if not nil, until ctx
// ends or a stops serving; the metrics stop with it.
func serveAgent(ctx context.Context, a *agent.Server, ln, mln net.Listener, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	metricsDone := make(chan struct{})
	if mln != nil {
		log.Info("agent metrics for Prometheus", "listen", mln.Addr().String())
		go func() {
			defer close(metricsDone)
			// The agent goes on without them: its work is the
			// daemon's; Prometheus sees the target down.
			if err := a.ServeMetrics(ctx, mln); err != nil {
				log.Error("agent metrics stopped; the agent serves on without them", "err", err)
			}
		}()
	} else {
		close(metricsDone)
	}
	err := a.Serve(ctx, ln)
	// The metrics' listener goes with the agent.
	cancel()
	<-metricsDone
	log.Info("agent stopped")
	return err
}

// wildcardAddrs reports whether a, the address the agent listens on, is
// the unspecified address (every address of the host), and if so lists the
// host's addresses with a's port: what the agent can be reached at.
func wildcardAddrs(a net.Addr) ([]string, bool) {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil || !ap.Addr().IsUnspecified() {
		return nil, false
	}
	ifs, err := net.InterfaceAddrs()
	if err != nil {
		return []string{fmt.Sprintf("(the host's addresses are unknown: %v)", err)}, true
	}
	var out []string
	for _, ia := range ifs {
		p, err := netip.ParsePrefix(ia.String())
		// 0.0.0.0 is every IPv4 address alone; [::] every address.
		if err == nil && (ap.Addr().Is6() || p.Addr().Is4()) {
			out = append(out, netip.AddrPortFrom(p.Addr(), ap.Port()).String())
		}
	}
	return out, true
}
