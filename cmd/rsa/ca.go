package main

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rsa-hpc/rsa/internal/gluster"
	"github.com/rsa-hpc/rsa/internal/pki"
)

// defaultPKIDir is where the CA lives on the host that issues certificates,
// and where every host keeps its own ca.crt, node.crt and node.key.
const defaultPKIDir = "/etc/rsa/pki"

// maxDays bounds --days: beyond it a validity is a mistake, and time.Duration
// overflows at about 292 years.
const maxDays = 100 * 365

// caCmd is `rsa ca`: the cluster CA that rsa serve and the agents trust.
func caCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ca",
		Short: "Create the cluster CA and issue each host its TLS certificate (root)",
		Long: `The control daemon (rsa serve) and the agents on RSA nodes and compute nodes
talk over mutual TLS 1.3. Each host proves who it is with a certificate of the
cluster CA that carries its role:

    control   the host running rsa serve: the only caller agents accept
    storage   an RSA node: its agent makes and removes bricks
    compute   a compute node: its agent mounts jobs' volumes
    both      a node that is both

Create the CA once with 'rsa ca init', then give every host a certificate with
'rsa ca issue HOST --role ROLE' and copy the three files it writes to
` + defaultPKIDir + ` on that host. A site with its own PKI may issue the
certificates there instead: each must name the host (DNS name) and carry its
role as the URI subject alternative name rsa-role:ROLE.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("rsa ca has no subcommand %q: use rsa ca init or rsa ca issue", args[0])
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(caInitCmd(), caIssueCmd(), caInstallGlusterCmd())
	return cmd
}

func caInitCmd() *cobra.Command {
	var dir string
	var days int
	cmd := &cobra.Command{
		Use:   "init [--dir DIR] [--days N]",
		Short: "Create the cluster CA: a private key and the certificate every host trusts (root)",
		Long: `Create the cluster CA in DIR (default ` + defaultPKIDir + `): ca.key, its private key
(mode 0600), and ca.crt, its certificate (valid 10 years unless --days says
otherwise). Run it once, as root, on the host where certificates will be
issued, usually the one running rsa serve. It never replaces a CA: if DIR
already holds ca.key or ca.crt it changes nothing and says so.

Keep ca.key on this host only, and a copy offline: whoever holds it can make
a certificate any host of the cluster accepts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			validity, err := daysFlag(days)
			if err != nil {
				return err
			}
			ca, err := pki.Init(dir, pki.InitOptions{Validity: validity})
			if err != nil {
				return withPermissionHint(err)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "Created the cluster CA %q in %s, valid until %s:\n", ca.Subject.CommonName, dir, ca.NotAfter.Format(time.DateOnly))
			fmt.Fprintf(w, "  %-*s  its private key (0600): keep it on this host, and a copy offline\n", len(dir)+7, filepath.Join(dir, pki.CAKeyFile))
			fmt.Fprintf(w, "  %-*s  its certificate: every host trusts it\n", len(dir)+7, filepath.Join(dir, pki.CAFile))
			fmt.Fprintln(w, "Next, a certificate for each host: rsa ca issue HOST --role control|storage|compute|both")
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", defaultPKIDir, "directory to create the CA in")
	cmd.Flags().IntVar(&days, "days", int(pki.DefaultCAValidity/(24*time.Hour)), "days the CA is valid; every certificate it issues expires before it")
	return cmd
}

func caIssueCmd() *cobra.Command {
	var dir, out, roleName string
	var ips []string
	var days int
	cmd := &cobra.Command{
		Use:   "issue NODE --role ROLE [--ip IP]... [--dir DIR] [--out DIR] [--days N]",
		Short: "Issue a host its certificate and key, for role control, storage, compute or both (root)",
		Long: `Issue host NODE a certificate of the cluster CA in --dir, with a new private
key, and write the three files the host loads into --out (default
DIR/nodes/NODE): node.key (mode 0600), node.crt and a copy of ca.crt.

NODE is the host's name as rsa serve dials it (its name in rsa.toml, or the
name Slurm knows it by); the agent's certificate must name the node dialled,
or the daemon refuses it. --ip adds addresses, if the daemon dials those.
--role says what the host is:

    control   the host running rsa serve: the only caller agents accept
    storage   an RSA node: its agent makes and removes bricks
    compute   a compute node: its agent mounts jobs' volumes
    both      a node that is both an RSA node and a compute node

The certificate is valid 365 days unless --days says otherwise, and never
beyond the CA. Nothing is replaced: to renew, issue into an empty --out.

Then install the files as root in ` + defaultPKIDir + ` on NODE, node.key still
0600 and owned by root (the daemon and the agents refuse a key that others
may read), and remove them here.`,
		Example: `  rsa ca issue ctl1 --role control --out /etc/rsa/pki     # this host runs rsa serve
  rsa ca issue rsa1 --role storage --ip 10.1.0.11
  rsa ca issue node017 --role compute --days 90`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("give one NODE, the host's name as rsa serve dials it, e.g. rsa ca issue rsa1 --role storage (got %d arguments)", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			node := args[0]
			if roleName == "" {
				return errors.New("--role is required: control (the host running rsa serve), storage (an RSA node), compute (a compute node) or both")
			}
			role, err := pki.ParseRole(roleName)
			if err != nil {
				return fmt.Errorf("--role: %w", err)
			}
			var addrs []net.IP
			for _, s := range ips {
				ip := net.ParseIP(s)
				if ip == nil {
					return fmt.Errorf("--ip %q is not an IP address: give one address per --ip, e.g. --ip 10.1.0.11 --ip fd00::11", s)
				}
				addrs = append(addrs, ip)
			}
			validity, err := daysFlag(days)
			if err != nil {
				return err
			}
			if out == "" {
				out = filepath.Join(dir, "nodes", strings.ToLower(node))
			}
			cert, err := pki.Issue(dir, out, node, role, pki.IssueOptions{IPs: addrs, Validity: validity})
			if err != nil {
				return withPermissionHint(err)
			}
			printIssued(cmd.OutOrStdout(), cert, role, out)
			fmt.Fprintf(cmd.OutOrStdout(), "On %s, once they are installed: rsa ca install-gluster (Gluster's TLS, with this identity)\n", node)
			return nil
		},
	}
	cmd.Flags().StringVar(&roleName, "role", "", "what the host is: control, storage, compute or both (required)")
	cmd.Flags().StringArrayVar(&ips, "ip", nil, "an address of the host to name too (repeat for more)")
	cmd.Flags().StringVar(&dir, "dir", defaultPKIDir, "the CA's directory (ca.crt, ca.key)")
	cmd.Flags().StringVar(&out, "out", "", "directory to write node.key, node.crt and ca.crt into (default DIR/nodes/NODE)")
	cmd.Flags().IntVar(&days, "days", int(pki.DefaultCertValidity/(24*time.Hour)), "days the certificate is valid")
	cmd.RegisterFlagCompletionFunc("role", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		var names []string
		for _, r := range pki.Roles() {
			names = append(names, string(r))
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// printIssued says what Issue wrote and how to install it on its host.
func printIssued(w io.Writer, cert *x509.Certificate, role pki.Role, out string) {
	names := "DNS " + strings.Join(cert.DNSNames, ", ")
	for _, ip := range cert.IPAddresses {
		names += ", IP " + ip.String()
	}
	node := cert.Subject.CommonName
	fmt.Fprintf(w, "Issued %s a certificate of role %s (%s), valid until %s, serial %x:\n",
		node, role, names, cert.NotAfter.Format(time.DateOnly), cert.SerialNumber)
	f := pki.DirFiles(out)
	fmt.Fprintf(w, "  %s  its private key (0600)\n  %s\n  %s\n", f.Key, f.Cert, f.CA)
	if filepath.Clean(out) == defaultPKIDir {
		return // where a host loads them: this host's own
	}
	fmt.Fprintf(w, "Install them in %s on %s, as root, node.key staying 0600, e.g.\n", defaultPKIDir, node)
	fmt.Fprintf(w, "  ssh root@%s install -d -m 700 %s && scp -p %s %s %s root@%s:%s/\n",
		node, defaultPKIDir, f.Key, f.Cert, f.CA, node, defaultPKIDir)
	fmt.Fprintf(w, "then remove %s here.\n", out)
}

// daysFlag is --days as a validity.
func daysFlag(days int) (time.Duration, error) {
	if days < 1 || days > maxDays {
		return 0, fmt.Errorf("--days %d is out of range: give a number of days from 1 to %d", days, maxDays)
	}
	return time.Duration(days) * 24 * time.Hour, nil
}

// withPermissionHint adds the usual fix to a permission error.
func withPermissionHint(err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("%w (run it as root, or give --dir and --out directories of yours)", err)
	}
	return err
}

func caInstallGlusterCmd() *cobra.Command {
	var dir, sslDir string
	cmd := &cobra.Command{
		Use:   "install-gluster [--pki DIR] [--ssl-dir DIR]",
		Short: "Make this host's RSA certificate Gluster's, and turn on Gluster's TLS (root)",
		Long: `Every connection of a RAMDISK's data path is mutual TLS keyed by the cluster
CA: the Gluster client's to glusterd and to each brick, and glusterd's to its
peers. A process that cannot read this host's private key cannot take part,
whatever user it claims to be.

Gluster reads its TLS files from fixed paths: this copies the host's
node.crt, node.key (mode 0600, root's) and ca.crt from --pki to
glusterfs.pem, glusterfs.key and glusterfs.ca in OpenSSL's directory
(--ssl-dir, default what 'openssl version -d' says), and creates
` + gluster.SecureAccessFile + `, which turns on TLS for Gluster's
management connections. Files already the same are left alone.

Run it on every host of the cluster (the control host, every RSA node and
every compute node) after installing its certificate, before glusterd
starts; after a change on an RSA node, restart glusterd there. rsa serve and
the agents refuse to make or mount a volume until it has run. After issuing
a host a new certificate, run it again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if sslDir == "" {
				sslDir = gluster.SSLDir(cmd.Context())
			}
			if _, err := pki.Load(pki.DirFiles(dir)); err != nil {
				return fmt.Errorf("this host's RSA identity in %s: %w", dir, err)
			}
			f := pki.DirFiles(dir)
			changed, err := gluster.InstallTLS(sslDir, gluster.TLSFiles{Cert: f.Cert, Key: f.Key, CA: f.CA})
			if err != nil {
				return withPermissionHint(err)
			}
			if err := gluster.CheckTLS(sslDir); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			to := gluster.TLSFilesIn(sslDir)
			if !changed {
				fmt.Fprintf(w, "Gluster's TLS is in place already (%s, %s, %s, %s)\n", to.Cert, to.Key, to.CA, gluster.SecureAccessFile)
				return nil
			}
			fmt.Fprintf(w, "Installed this host's RSA identity as Gluster's: %s, %s (0600), %s; management TLS on (%s)\n", to.Cert, to.Key, to.CA, gluster.SecureAccessFile)
			fmt.Fprintln(w, "On an RSA node, restart glusterd now (systemctl restart glusterd): it reads them as it starts.")
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "pki", defaultPKIDir, "this host's RSA identity: ca.crt, node.crt and node.key")
	cmd.Flags().StringVar(&sslDir, "ssl-dir", "", "OpenSSL's directory, where Gluster reads glusterfs.pem, .key and .ca (default: openssl version -d)")
	return cmd
}
