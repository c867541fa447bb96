package main

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rsa-hpc/rsa/internal/gluster"
	"github.com/rsa-hpc/rsa/internal/pki"
	"github.com/rsa-hpc/rsa/internal/slurm"
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

Create the CA once with 'rsa ca init', then give every host a certificate:
either 'rsa ca issue HOST --role ROLE' (or a host list, 'node[001-200]') on
the CA host, and copy the three files it writes to ` + defaultPKIDir + ` on that
host; or 'rsa ca request HOST' on the host, which makes its key there, and
'rsa ca sign node.csr --role ROLE' on the CA host, whose certificate is copied
back. 'rsa ca revoke HOST|SERIAL' puts a certificate in the CA's revocation
list, ca.crl, which every host then refuses once it has a copy.

rsa serve and the agents read their files again when they change: a renewed
certificate or a new revocation list needs no restart. rsa health warns 30
days before a certificate expires.

A site with its own PKI may issue the certificates there instead: each must
name the host (DNS name) and carry its role as the URI subject alternative
name rsa-role:ROLE.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("rsa ca has no subcommand %q: use rsa ca init, issue, request, sign, revoke or install-gluster", args[0])
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(caInitCmd(), caIssueCmd(), caRequestCmd(), caSignCmd(), caRevokeCmd(), caInstallGlusterCmd())
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

// maxHosts bounds a host list: beyond it, a list is a mistake.
const maxHosts = 10000

func caIssueCmd() *cobra.Command {
	var dir, out, roleName string
	var ips []string
	var days int
	cmd := &cobra.Command{
		Use:   "issue NODE|HOSTLIST... --role ROLE [--ip IP]... [--dir DIR] [--out DIR] [--days N]",
		Short: "Issue hosts their certificate and key, for role control, storage, compute or both (root)",
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

Many hosts at once: give several NODEs, or a host list in Slurm's syntax, a
name with brackets of numbers and ranges that keep their zero padding:
'node[001-200]' is node001 to node200, 'rsa[1-4]' rsa1 to rsa4,
'node[001-003,010]' four hosts, 'ctl1,rsa[1-4]' five. Each host gets a
directory of its own below --out (default DIR/nodes): OUT/HOST. A list of no
host or of more than ` + strconv.Itoa(maxHosts) + ` hosts is refused, and so is --ip with more than
one host (an address names one host). Before any is issued, every name is
checked and every host's directory must hold no certificate or key; should
one fail after all, the hosts already issued are named.

The certificate is valid 365 days unless --days says otherwise, and never
beyond the CA. Nothing is replaced: to renew, issue into an empty --out. Each
certificate is recorded in the CA's register, DIR/` + pki.IssuedFile + `, by which
rsa ca revoke finds a host's certificates.

Then install the files as root in ` + defaultPKIDir + ` on NODE, node.key still
0600 and owned by root (the daemon and the agents refuse a key that others
may read), and remove them here. To keep each key on its host, use
rsa ca request and rsa ca sign instead.`,
		Example: `  rsa ca issue ctl1 --role control --out /etc/rsa/pki     # this host runs rsa serve
  rsa ca issue rsa1 --role storage --ip 10.1.0.11
  rsa ca issue 'rsa[1-4]' --role storage                    # /etc/rsa/pki/nodes/rsa1 ... rsa4
  rsa ca issue 'node[001-200]' --role compute --days 90`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("give a NODE, the host's name as rsa serve dials it, or a host list, e.g. rsa ca issue rsa1 --role storage, rsa ca issue 'node[001-200]' --role compute")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			role, addrs, validity, err := certFlags(roleName, ips, days)
			if err != nil {
				return err
			}
			opts := pki.IssueOptions{IPs: addrs, Validity: validity}
			if len(args) == 1 && !strings.ContainsAny(args[0], "[],") {
				// One host, laid out as ever: --out is its directory.
				node := args[0]
				if out == "" {
					out = filepath.Join(dir, "nodes", strings.ToLower(node))
				}
				cert, err := pki.Issue(dir, out, node, role, opts)
				if err != nil {
					return withPermissionHint(err)
				}
				printIssued(cmd.OutOrStdout(), cert, role, out)
				fmt.Fprintf(cmd.OutOrStdout(), "On %s, once they are installed: rsa ca install-gluster (Gluster's TLS, with this identity)\n", node)
				return nil
			}
			hosts, err := expandHosts(args, maxHosts)
			if err != nil {
				return err
			}
			if len(addrs) > 0 && len(hosts) > 1 {
				return fmt.Errorf("--ip names one host's addresses, and %s is %d hosts: issue a host the daemon dials by address on its own (rsa ca issue HOST --ip ADDR), the others as a list without --ip", strings.Join(args, " "), len(hosts))
			}
			if out == "" {
				out = filepath.Join(dir, "nodes")
			}
			return issueHosts(cmd.OutOrStdout(), dir, out, hosts, role, opts)
		},
	}
	cmd.Flags().StringVar(&roleName, "role", "", "what the hosts are: control, storage, compute or both (required)")
	cmd.Flags().StringArrayVar(&ips, "ip", nil, "an address of the host to name too (repeat for more; one host only)")
	cmd.Flags().StringVar(&dir, "dir", defaultPKIDir, "the CA's directory (ca.crt, ca.key)")
	cmd.Flags().StringVar(&out, "out", "", "directory to write node.key, node.crt and ca.crt into (default DIR/nodes/NODE); for a host list, the directory of the hosts' directories (default DIR/nodes)")
	cmd.Flags().IntVar(&days, "days", int(pki.DefaultCertValidity/(24*time.Hour)), "days the certificates are valid")
	cmd.RegisterFlagCompletionFunc("role", completeRoles)
	return cmd
}

// expandHosts returns the hosts that args name, in order and each once:
// each argument a host, or a host list in Slurm's syntax
// (slurm.ExpandHosts: 'node[001-003,010]' keeps its zero padding). It is
// an error for args to name no host, or more than limit, counted before
// they are expanded.
func expandHosts(args []string, limit int) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, a := range args {
		if strings.TrimSpace(a) == "" {
			return nil, errors.New("an empty host: give a host's name (rsa1) or a host list (node[001-200])")
		}
		hs, err := slurm.ExpandHostsMax(a, limit-len(out))
		if err != nil {
			if tm := (*slurm.TooManyHostsError)(nil); errors.As(err, &tm) {
				return nil, fmt.Errorf("%s names more than %d hosts: give at most %d at a time", strings.Join(args, " "), limit, limit)
			}
			return nil, fmt.Errorf("%w: give a host list as Slurm writes it, e.g. node[001-200] or rsa[1-4],ctl1", err)
		}
		for _, h := range hs {
			if !seen[h] {
				seen[h] = true
				out = append(out, h)
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no host given: give a host's name (rsa1) or a host list (node[001-200])")
	}
	return out, nil
}

// completeRoles completes --role.
func completeRoles(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	var names []string
	for _, r := range pki.Roles() {
		names = append(names, string(r))
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// parseIPs reads --ip's addresses.
func parseIPs(ips []string) ([]net.IP, error) {
	var addrs []net.IP
	for _, s := range ips {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, fmt.Errorf("--ip %q is not an IP address: give one address per --ip, e.g. --ip 10.1.0.11 --ip fd00::11", s)
		}
		addrs = append(addrs, ip)
	}
	return addrs, nil
}

// issueHosts issues each of hosts a certificate into out/HOST, after
// checking every name and that no host's directory holds a certificate or
// key already, and says what it wrote and how to install it.
func issueHosts(w io.Writer, caDir, out string, hosts []string, role pki.Role, opts pki.IssueOptions) error {
	var bad, taken []string
	for i, h := range hosts {
		n, err := pki.CheckNodeName(h)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		hosts[i] = n
		for _, f := range []string{pki.KeyFile, pki.CertFile} {
			if _, err := os.Lstat(filepath.Join(out, n, f)); err == nil {
				taken = append(taken, filepath.Join(out, n))
				break
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d of the %d hosts have no valid name, and none was issued: %s", len(bad), len(hosts), strings.Join(bad, "; "))
	}
	if len(taken) > 0 {
		return fmt.Errorf("%d of the %d hosts have a certificate or key already, and none was issued: %s; move them away first, or leave those hosts out of the list",
			len(taken), len(hosts), strings.Join(taken, ", "))
	}
	var issued []*x509.Certificate
	for _, h := range hosts {
		cert, err := pki.Issue(caDir, filepath.Join(out, h), h, role, opts)
		if err != nil {
			done := "none was issued"
			if len(issued) > 0 {
				done = fmt.Sprintf("the hosts before it were issued (%d: %s to %s, in %s), the rest were not", len(issued), hosts[0], hosts[len(issued)-1], out)
			}
			return fmt.Errorf("%s: %w; %s", h, withPermissionHint(err), done)
		}
		issued = append(issued, cert)
	}
	fmt.Fprintf(w, "Issued %d hosts a certificate of role %s, valid until %s, each in a directory of its own (node.key (0600), node.crt, ca.crt):\n",
		len(issued), role, issued[0].NotAfter.Format(time.DateOnly))
	for _, c := range issued {
		fmt.Fprintf(w, "  %-*s  serial %s  %s\n", maxLen(hosts), c.Subject.CommonName, pki.FormatSerial(c.SerialNumber), filepath.Join(out, c.Subject.CommonName))
	}
	fmt.Fprintf(w, "Install each host's files in %s on it, as root, node.key staying 0600, and remove them here, e.g. (bash)\n", defaultPKIDir)
	fmt.Fprintf(w, "  cd %s && for n in %s; do ssh root@$n install -d -m 700 %s && scp -p $n/* root@$n:%s/ && rm -r $n; done\n",
		out, strings.Join(hosts, " "), defaultPKIDir, defaultPKIDir)
	fmt.Fprintln(w, "then, on each, rsa ca install-gluster (Gluster's TLS, with this identity).")
	return nil
}

// maxLen is the length of the longest of ss.
func maxLen(ss []string) int {
	n := 0
	for _, s := range ss {
		n = max(n, len(s))
	}
	return n
}

func caRequestCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "request NODE [--out DIR]",
		Short: "Make this host's key and a certificate request, for the CA host to sign (root)",
		Long: `Make this host's private key and a certificate signing request for it, on
the host itself, without the CA: --out (default ` + defaultPKIDir + `) gets
node.key (mode 0600) and node.csr, which names NODE, the host's name as
rsa serve dials it. The key never leaves the host.

If --out holds a node.key already, its key is used (a renewal keeps the key;
to change the key, after a leak, move node.key away first). An older
node.csr is replaced; nothing else is.

Then copy node.csr to the CA host and sign it there, with the host's role:

    rsa ca sign node.csr --role compute

and copy the certificate and ca.crt it writes back into --out here (the
host's ` + defaultPKIDir + `). The agent, or rsa serve, reads them at its next
connection; started afresh, it finds ca.crt, node.crt and node.key there.`,
		Example: `  rsa ca request node017                     # /etc/rsa/pki/node.key and node.csr
  scp /etc/rsa/pki/node.csr root@ctl1:/tmp/node017.csr`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("give one NODE, this host's name as rsa serve dials it, e.g. rsa ca request node017 (got %d arguments)", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			f := pki.DirFiles(out)
			_, keyErr := os.Lstat(f.Key)
			csr, err := pki.Request(out, args[0])
			if err != nil {
				return withPermissionHint(err)
			}
			w := cmd.OutOrStdout()
			node := csr.Subject.CommonName
			csrPath := filepath.Join(out, pki.CSRFile)
			if keyErr == nil {
				fmt.Fprintf(w, "Made %s a certificate request, %s, for the key it has, %s\n", node, csrPath, f.Key)
			} else {
				fmt.Fprintf(w, "Made %s a key, %s (0600), and a certificate request for it, %s\n", node, f.Key, csrPath)
			}
			fmt.Fprintf(w, "Copy the request to the CA host and sign it there, e.g.\n")
			fmt.Fprintf(w, "  scp %s root@CAHOST:/tmp/%s.csr && ssh root@CAHOST rsa ca sign /tmp/%s.csr --role ROLE\n", csrPath, node, node)
			fmt.Fprintf(w, "then copy the node.crt and ca.crt it writes into %s here.\n", out)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", defaultPKIDir, "directory of this host's key, where node.key and node.csr go")
	return cmd
}

func caSignCmd() *cobra.Command {
	var dir, out, roleName string
	var ips []string
	var days int
	cmd := &cobra.Command{
		Use:   "sign CSR --role ROLE [--ip IP]... [--dir DIR] [--out FILE] [--days N]",
		Short: "Sign a host's certificate request (rsa ca request) with the cluster CA, for its role (root)",
		Long: `Sign the certificate signing request in the file CSR (the node.csr that
rsa ca request made on the host) with the cluster CA in --dir, and write the
host's certificate to --out (default DIR/nodes/NODE/node.crt) and a copy of
ca.crt next to it.

Before signing, the request is checked: its signature (it was made with the
key it carries), and its name, which must be a host name, the one its DNS
name gives if it has one; a request for other names, addresses, e-mail
addresses or URIs is refused. The certificate is the one rsa ca issue makes,
for the request's key: the role is --role's, never the request's (one asking
for another role is refused); the addresses are --ip's; the key usages,
validity (365 days unless --days says otherwise, never beyond the CA) and
serial number are the CA's. It is recorded in the CA's register. Nothing is
replaced.

Then copy the certificate and ca.crt to ` + defaultPKIDir + ` on the host, as
node.crt and ca.crt, next to the node.key that rsa ca request left there:

    scp -p DIR/nodes/NODE/ca.crt root@NODE:` + defaultPKIDir + `/ca.crt
    scp -p DIR/nodes/NODE/node.crt root@NODE:` + defaultPKIDir + `/node.crt

A running agent, or rsa serve, uses them from its next connection.`,
		Example: `  rsa ca sign /tmp/node017.csr --role compute
  rsa ca sign /tmp/rsa1.csr --role storage --ip 10.1.0.11 --days 90`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("give one CSR, the node.csr that rsa ca request made on the host, e.g. rsa ca sign /tmp/node017.csr --role compute (got %d arguments)", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			role, addrs, validity, err := certFlags(roleName, ips, days)
			if err != nil {
				return err
			}
			csrPEM, err := readSmall(args[0], 1<<20)
			if err != nil {
				return err
			}
			node, err := pki.ReadRequest(csrPEM, role)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			if out == "" {
				out = filepath.Join(dir, "nodes", node, pki.CertFile)
			}
			cert, err := pki.Sign(dir, csrPEM, out, role, pki.IssueOptions{IPs: addrs, Validity: validity})
			if err != nil {
				return withPermissionHint(err)
			}
			w := cmd.OutOrStdout()
			names := "DNS " + strings.Join(cert.DNSNames, ", ")
			for _, ip := range cert.IPAddresses {
				names += ", IP " + ip.String()
			}
			caCopy := filepath.Join(filepath.Dir(out), pki.CAFile)
			fmt.Fprintf(w, "Signed %s a certificate of role %s (%s), valid until %s, serial %s:\n  %s\n  %s\n",
				node, role, names, cert.NotAfter.Format(time.DateOnly), pki.FormatSerial(cert.SerialNumber), out, caCopy)
			fmt.Fprintf(w, "Install them in %s on %s, next to its node.key, e.g.\n", defaultPKIDir, node)
			fmt.Fprintf(w, "  scp -p %s root@%s:%s/%s && scp -p %s root@%s:%s/%s\n",
				caCopy, node, defaultPKIDir, pki.CAFile, out, node, defaultPKIDir, pki.CertFile)
			fmt.Fprintf(w, "A running agent or rsa serve there uses them from its next connection. Then remove %s here.\n", filepath.Dir(out))
			return nil
		},
	}
	cmd.Flags().StringVar(&roleName, "role", "", "what the host is: control, storage, compute or both (required)")
	cmd.Flags().StringArrayVar(&ips, "ip", nil, "an address of the host to name too (repeat for more)")
	cmd.Flags().StringVar(&dir, "dir", defaultPKIDir, "the CA's directory (ca.crt, ca.key)")
	cmd.Flags().StringVar(&out, "out", "", "file to write the certificate to; ca.crt goes next to it (default DIR/nodes/NODE/node.crt)")
	cmd.Flags().IntVar(&days, "days", int(pki.DefaultCertValidity/(24*time.Hour)), "days the certificate is valid")
	cmd.RegisterFlagCompletionFunc("role", completeRoles)
	return cmd
}

// readSmall reads a file of at most limit bytes.
func readSmall(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes: it is not a certificate request", path, limit)
	}
	return b, nil
}

func caRevokeCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "revoke NODE|HOSTLIST|SERIAL... [--dir DIR]",
		Short: "Revoke hosts' certificates: the CA's revocation list, which every host refuses (root)",
		Long: `Put certificates in the revocation list of the cluster CA in --dir,
DIR/` + pki.CRLFile + `, made if missing and signed by the CA: every certificate the CA's
register (DIR/` + pki.IssuedFile + `) lists for NODE (a host list, 'node[001-010]', names
several), or the one of serial number SERIAL (hex, as rsa ca issue printed it
or 'openssl x509 -noout -serial -in node.crt' shows it; an argument of 16 or
more hex digits, colons allowed, is a serial, anything else a host). A
certificate issued before the CA kept a register is revoked by its serial.

Revoking a host revokes every certificate issued to it so far, the one it
uses now included: issue it a new one afterwards, or revoke the old one by
its serial instead.

Then copy DIR/` + pki.CRLFile + ` to ` + defaultPKIDir + `/` + pki.CRLFile + ` on every host. rsa serve and the
agents read it at their next connection and refuse, from then on, a peer whose
certificate it lists, even on a connection made before (at its next
request). rsa serve on the CA host itself reads it where it is, when --dir is
its cluster.pki. A list is never stale: it holds until it is replaced.`,
		Example: `  rsa ca revoke node017
  rsa ca revoke 3f2a9c0e51d7b4a2e8f1c6d09b7a5e13
  for n in rsa1 rsa2 node001; do scp -p /etc/rsa/pki/ca.crl root@$n:/etc/rsa/pki/; done`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("give a NODE, a host list or a SERIAL to revoke, e.g. rsa ca revoke node017")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			serials, what, err := revokeTargets(dir, args)
			if err != nil {
				return err
			}
			crl, added, err := pki.Revoke(dir, serials, time.Time{})
			if err != nil {
				return withPermissionHint(err)
			}
			w := cmd.OutOrStdout()
			path := filepath.Join(dir, pki.CRLFile)
			fmt.Fprintf(w, "Revoked %s: %d added to %s (list number %s, %d certificates in all, %d listed already)\n",
				strings.Join(what, ", "), len(added), path, crl.Number, len(crl.RevokedCertificateEntries), len(serials)-len(added))
			fmt.Fprintf(w, "Copy it to %s/%s on every host, e.g.\n  for n in HOSTS; do scp -p %s root@$n:%s/%s; done\n", defaultPKIDir, pki.CRLFile, path, defaultPKIDir, pki.CRLFile)
			fmt.Fprintln(w, "rsa serve and the agents read it at their next connection.")
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", defaultPKIDir, "the CA's directory (ca.crt, ca.key, its register and its revocation list)")
	return cmd
}

// revokeTargets are the serial numbers args name: serials as they are,
// hosts by the CA's register; and how to say what they are.
func revokeTargets(caDir string, args []string) ([]*big.Int, []string, error) {
	var serials []*big.Int
	var what, hostArgs []string
	for _, a := range args {
		if looksLikeSerial(a) {
			n, err := pki.ParseSerial(a)
			if err != nil {
				return nil, nil, err
			}
			serials = append(serials, n)
			what = append(what, "serial "+pki.FormatSerial(n))
			continue
		}
		hostArgs = append(hostArgs, a)
	}
	if len(hostArgs) == 0 {
		return serials, what, nil
	}
	hosts, err := expandHosts(hostArgs, maxHosts)
	if err != nil {
		return nil, nil, err
	}
	if _, err := os.Stat(filepath.Join(caDir, pki.CAFile)); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("no cluster CA in %s (%s does not exist): give the directory that holds it (--dir)", caDir, filepath.Join(caDir, pki.CAFile))
	}
	issued, err := pki.ReadIssued(caDir)
	if err != nil {
		return nil, nil, err
	}
	for _, h := range hosts {
		node, err := pki.CheckNodeName(h)
		if err != nil {
			return nil, nil, err
		}
		var found []string
		for _, is := range issued {
			if is.Node == node {
				serials = append(serials, is.Serial)
				found = append(found, pki.FormatSerial(is.Serial))
			}
		}
		if len(found) == 0 {
			return nil, nil, fmt.Errorf("the CA's register (%s) lists no certificate of %s, and nothing was revoked: give the certificate's serial instead (openssl x509 -noout -serial -in node.crt, on %s)",
				filepath.Join(caDir, pki.IssuedFile), node, node)
		}
		what = append(what, fmt.Sprintf("%s (serial %s)", node, strings.Join(found, ", ")))
	}
	return serials, what, nil
}

// looksLikeSerial reports whether a revoke argument is a serial number:
// 16 or more hex digits, colons and a "serial=" before them allowed. A
// host's name that long and all hex is not one a site gives.
func looksLikeSerial(s string) bool {
	h := strings.ReplaceAll(strings.TrimPrefix(s, "serial="), ":", "")
	if len(h) < 16 {
		return false
	}
	for _, c := range strings.ToLower(h) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// printIssued says what Issue wrote and how to install it on its host.
func printIssued(w io.Writer, cert *x509.Certificate, role pki.Role, out string) {
	names := "DNS " + strings.Join(cert.DNSNames, ", ")
	for _, ip := range cert.IPAddresses {
		names += ", IP " + ip.String()
	}
	node := cert.Subject.CommonName
	fmt.Fprintf(w, "Issued %s a certificate of role %s (%s), valid until %s, serial %s:\n",
		node, role, names, cert.NotAfter.Format(time.DateOnly), pki.FormatSerial(cert.SerialNumber))
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
glusterfs.pem, glusterfs.key and glusterfs.ca in the directory the
installed Gluster reads them from (--ssl-dir; by default the one its socket
transport names: OpenSSL's directory for Debian's 10.3, /etc/ssl for 11),
and creates
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
	cmd.Flags().StringVar(&sslDir, "ssl-dir", "", "where Gluster reads glusterfs.pem, .key and .ca (default: the path its installed socket transport names, else openssl version -d)")
	return cmd
}

// certFlags reads the flags a certificate is made with, as rsa ca issue
// and rsa ca sign take them.
func certFlags(roleName string, ips []string, days int) (pki.Role, []net.IP, time.Duration, error) {
	if roleName == "" {
		return "", nil, 0, errors.New("--role is required: control (the host running rsa serve), storage (an RSA node), compute (a compute node) or both")
	}
	role, err := pki.ParseRole(roleName)
	if err != nil {
		return "", nil, 0, fmt.Errorf("--role: %w", err)
	}
	addrs, err := parseIPs(ips)
	if err != nil {
		return "", nil, 0, err
	}
	validity, err := daysFlag(days)
	if err != nil {
		return "", nil, 0, err
	}
	return role, addrs, validity, nil
}
