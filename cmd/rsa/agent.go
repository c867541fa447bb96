package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/rsa-hpc/rsa/internal/agent"
	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/gluster"
	"github.com/rsa-hpc/rsa/internal/pki"
)

// The agent's connection bounds: its only legitimate caller is rsa serve,
// which holds a few connections per kind of operation; the bounds keep
// anyone else who reaches the port from taking its file descriptors while
// they fail the handshake.
const (
	agentMaxConns        = 64
	agentMaxConnsPerHost = 16
)

// agentCmd is `rsa agent`, the node agent rsa serve dials on every RSA
// node and compute node.
func agentCmd() *cobra.Command {
	var listen, pkiDir, brickRoot, volumeRoot, glusterBin string
	var files pki.Files
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the node agent on an RSA node or compute node (root)",
		Long: `Run the agent that rsa serve drives on this node, in the foreground, until
SIGTERM or SIGINT. It serves HTTPS with mutual TLS 1.3 on --listen (default
port ` + strconv.Itoa(agent.DefaultPort) + `) and accepts only the control daemon's certificate.

What it does depends on the role in its certificate (rsa ca issue --role):
  storage   make and remove jobs' bricks: a tmpfs per job under --brick-root;
            make, seal and remove jobs' Gluster volumes through this
            node's glusterd (--gluster), a member of RSA's trusted pool
  compute   mount jobs' volumes at --volume-root/ID/ram (the job's RAMDISK
            path) and bind them at jobs' paths
  both      either
and every agent reports its status: RAM, bricks, mounts, boot id.

The agent keeps no state: it reads everything back from the kernel, so it
may be restarted at any time without losing anything.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if os.Geteuid() != 0 {
				return errors.New("rsa agent runs as root: it mounts jobs' bricks and volumes")
			}
			f := pki.DirFiles(pkiDir)
			if files.CA != "" {
				f.CA = files.CA
			}
			if files.Cert != "" {
				f.Cert = files.Cert
			}
			if files.Key != "" {
				f.Key = files.Key
			}
			id, err := pki.Load(f)
			if err != nil {
				return fmt.Errorf("loading the agent's certificate: %w", err)
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, nil))
			// Stages run this very binary (rsa copy) as the job's user.
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("finding the rsa binary to stage with: %w", err)
			}
			a, err := agent.New(agent.Config{Self: self, Identity: id, BrickRoot: brickRoot, VolumeRoot: volumeRoot, Log: log, Version: version, Gluster: glusterBin})
			if err != nil {
				return err
			}
			ln, err := api.ListenTCP(listen, agentMaxConns, agentMaxConnsPerHost)
			if err != nil {
				return fmt.Errorf("agent listening on %s: %w", listen, err)
			}
			log.Info("agent serving", "listen", ln.Addr().String(), "node", id.Certificate().Subject.CommonName,
				"role", id.Role(), "brick_root", brickRoot, "volume_root", volumeRoot, "version", version)
			err = a.Serve(cmd.Context(), ln)
			log.Info("agent stopped")
			return err
		},
	}
	cmd.Flags().StringVar(&listen, "listen", ":"+strconv.Itoa(agent.DefaultPort), "address to serve on, [HOST]:PORT")
	cmd.Flags().StringVar(&pkiDir, "pki", defaultPKIDir, "directory of ca.crt, node.crt and node.key")
	cmd.Flags().StringVar(&files.CA, "ca", "", "CA certificate(s) to trust (default DIR/ca.crt of --pki)")
	cmd.Flags().StringVar(&files.Cert, "cert", "", "this node's certificate (default DIR/node.crt of --pki)")
	cmd.Flags().StringVar(&files.Key, "key", "", "this node's private key, mode 0600 (default DIR/node.key of --pki)")
	cmd.Flags().StringVar(&brickRoot, "brick-root", agent.DefaultBrickRoot, "directory of the bricks' mount points (storage)")
	cmd.Flags().StringVar(&volumeRoot, "volume-root", agent.DefaultVolumeRoot, "directory where jobs' volumes are mounted (compute): the control host's ramdisk_root")
	cmd.Flags().StringVar(&glusterBin, "gluster", gluster.DefaultBin, "the gluster command (storage)")
	return cmd
}
