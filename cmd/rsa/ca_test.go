package main

import (
	"bytes"
	"cmp"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/pki"
)

// rsaCA runs rsa with args in this process and returns what it printed.
func rsaCA(args ...string) (string, error) {
	root := newRoot(&globals{})
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// rsa ca init and rsa ca issue write what the daemon and the agents load,
// and every bad input is refused with the problem and its fix.
func TestCACommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	out, err := rsaCA("ca", "init", "--dir", dir)
	if err != nil {
		t.Fatalf("rsa ca init: %v\n%s", err, out)
	}
	for _, want := range []string{filepath.Join(dir, pki.CAKeyFile), filepath.Join(dir, pki.CAFile), "rsa ca issue HOST --role"} {
		if !strings.Contains(out, want) {
			t.Errorf("rsa ca init does not say %q:\n%s", want, out)
		}
	}
	caBefore, err := os.ReadFile(filepath.Join(dir, pki.CAFile))
	if err != nil {
		t.Fatal(err)
	}

	out, err = rsaCA("ca", "issue", "rsa1", "--role", "storage", "--ip", "10.1.0.11", "--ip", "fd00::11", "--days", "30", "--dir", dir)
	if err != nil {
		t.Fatalf("rsa ca issue: %v\n%s", err, out)
	}
	node := filepath.Join(dir, "nodes", "rsa1")
	if !strings.Contains(out, filepath.Join(node, pki.KeyFile)) || !strings.Contains(out, "root@rsa1:/etc/rsa/pki/") {
		t.Errorf("rsa ca issue does not say where the files are and where they go:\n%s", out)
	}
	id, err := pki.Load(pki.DirFiles(node))
	if err != nil {
		t.Fatalf("loading what rsa ca issue wrote: %v", err)
	}
	c := id.Certificate()
	if id.Role() != pki.RoleStorage || len(c.DNSNames) != 1 || c.DNSNames[0] != "rsa1" || len(c.IPAddresses) != 2 ||
		!c.IPAddresses[1].Equal(net.ParseIP("fd00::11")) {
		t.Errorf("issued role %s, names %v %v", id.Role(), c.DNSNames, c.IPAddresses)
	}
	if v := time.Until(c.NotAfter); v < 29*24*time.Hour || v > 31*24*time.Hour {
		t.Errorf("--days 30 gave a certificate valid for %v", v)
	}

	// The control host's own certificate, next to the CA.
	if out, err := rsaCA("ca", "issue", "ctl1", "--role", "control", "--dir", dir, "--out", dir); err != nil {
		t.Fatalf("rsa ca issue --out DIR: %v\n%s", err, out)
	}
	if id, err := pki.Load(pki.DirFiles(dir)); err != nil || id.Role() != pki.RoleControl {
		t.Fatalf("control identity: %v", err)
	}

	for _, tc := range []struct {
		name string
		args []string
		want []string // all in the error
	}{
		{"second init", []string{"ca", "init", "--dir", dir}, []string{filepath.Join(dir, pki.CAKeyFile), "already exists", "move"}},
		{"init for no days", []string{"ca", "init", "--dir", t.TempDir(), "--days", "0"}, []string{"--days 0", "from 1 to"}},
		{"no node", []string{"ca", "issue", "--role", "storage", "--dir", dir}, []string{"give a NODE", "host list"}},
		{"no role", []string{"ca", "issue", "rsa2", "--dir", dir}, []string{"--role is required", "storage (an RSA node)"}},
		{"unknown role", []string{"ca", "issue", "rsa2", "--role", "admin", "--dir", dir}, []string{`unknown role "admin"`, "compute (a compute node)"}},
		{"bad address", []string{"ca", "issue", "rsa2", "--role", "storage", "--ip", "10.1.0.300", "--dir", dir}, []string{`--ip "10.1.0.300" is not an IP address`}},
		{"address as node", []string{"ca", "issue", "10.1.0.12", "--role", "storage", "--dir", dir}, []string{"an address, not a host name", "--ip 10.1.0.12"}},
		{"bad node name", []string{"ca", "issue", "rsa_2", "--role", "storage", "--dir", dir}, []string{`"rsa_2" is not a host name`}},
		{"negative days", []string{"ca", "issue", "rsa2", "--role", "storage", "--days", "-5", "--dir", dir}, []string{"--days -5", "from 1 to"}},
		{"beyond the CA", []string{"ca", "issue", "rsa2", "--role", "storage", "--days", "5000", "--dir", dir}, []string{"outlive the CA", "at most"}},
		{"again", []string{"ca", "issue", "rsa1", "--role", "storage", "--dir", dir}, []string{filepath.Join(node, pki.KeyFile), "already exists", "move it away"}},
		{"no CA", []string{"ca", "issue", "rsa2", "--role", "storage", "--dir", t.TempDir()}, []string{"no cluster CA", "rsa ca init"}},
		{"unknown subcommand", []string{"ca", "renew"}, []string{`no subcommand "renew"`, "issue, request, sign, revoke"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := rsaCA(tc.args...)
			if err == nil {
				t.Fatalf("rsa %s succeeded:\n%s", strings.Join(tc.args, " "), out)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("rsa %s: %v\nwant it to say %q", strings.Join(tc.args, " "), err, w)
				}
			}
		})
	}

	if after, err := os.ReadFile(filepath.Join(dir, pki.CAFile)); err != nil || !bytes.Equal(after, caBefore) {
		t.Errorf("the CA's certificate changed (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "nodes", "rsa2")); err == nil {
		t.Error("a refused rsa ca issue left a directory for rsa2")
	}
}

// rsa gen-docs writes a page for rsa ca and each of its subcommands.
func TestCAManPages(t *testing.T) {
	root, man, _ := genDocs(t)
	ca, _, err := root.Find([]string{"ca"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range append(ca.Commands(), ca) {
		if !c.IsAvailableCommand() {
			continue
		}
		page := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
		b, err := os.ReadFile(filepath.Join(man, page))
		if err != nil {
			t.Errorf("no man page for %s: %v", c.CommandPath(), err)
			continue
		}
		if text := unroff.Replace(string(b)); !strings.Contains(text, strings.TrimSuffix(page, ".1")+" - "+c.Short) {
			t.Errorf("%s: NAME is not %q", page, c.Short)
		}
	}
}

// rsa ca issue takes a host list: one directory per host, every name and
// directory checked before any is issued.
func TestCAIssueHostList(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	if out, err := rsaCA("ca", "init", "--dir", dir); err != nil {
		t.Fatalf("rsa ca init: %v\n%s", err, out)
	}
	out, err := rsaCA("ca", "issue", "node[001-003]", "node010", "--role", "compute", "--days", "30", "--dir", dir)
	if err != nil {
		t.Fatalf("rsa ca issue 'node[001-003]' node010: %v\n%s", err, out)
	}
	hosts := []string{"node001", "node002", "node003", "node010"}
	for _, h := range hosts {
		id, err := pki.Load(pki.DirFiles(filepath.Join(dir, "nodes", h)))
		if err != nil {
			t.Fatalf("loading %s: %v", h, err)
		}
		if c := id.Certificate(); id.Role() != pki.RoleCompute || c.Subject.CommonName != h || len(c.DNSNames) != 1 || c.DNSNames[0] != h {
			t.Errorf("%s: role %s, names %q %v", h, id.Role(), c.Subject.CommonName, c.DNSNames)
		}
		if !strings.Contains(out, filepath.Join(dir, "nodes", h)) {
			t.Errorf("the output does not name %s's directory:\n%s", h, out)
		}
	}
	if !strings.Contains(out, "Issued 4 hosts a certificate of role compute") || !strings.Contains(out, "for n in node001 node002 node003 node010; do") {
		t.Errorf("the output does not say what was issued and how to install it:\n%s", out)
	}
	if issued, err := pki.ReadIssued(dir); err != nil || len(issued) != 4 {
		t.Errorf("the CA's register holds %d certificates (%v), want 4", len(issued), err)
	}

	// --out is the directory of the hosts' directories; --ip goes with a
	// list of one host.
	parent := filepath.Join(t.TempDir(), "out")
	if out, err := rsaCA("ca", "issue", "rsa[1-2]", "--role", "storage", "--dir", dir, "--out", parent); err != nil {
		t.Fatalf("rsa ca issue 'rsa[1-2]' --out: %v\n%s", err, out)
	}
	if out, err := rsaCA("ca", "issue", "rsa[3]", "--role", "storage", "--ip", "10.1.0.13", "--dir", dir, "--out", parent); err != nil {
		t.Fatalf("rsa ca issue 'rsa[3]' --ip: %v\n%s", err, out)
	}
	for _, h := range []string{"rsa1", "rsa2", "rsa3"} {
		if _, err := pki.Load(pki.DirFiles(filepath.Join(parent, h))); err != nil {
			t.Errorf("loading %s: %v", h, err)
		}
	}

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"--ip with a list", []string{"rsa[4-5]", "--ip", "10.1.0.14"}, []string{"--ip names one host's addresses", "2 hosts"}},
		{"--ip with two hosts", []string{"rsa4", "rsa5", "--ip", "10.1.0.14"}, []string{"--ip names one host's addresses"}},
		{"too many", []string{"n[1-10001]"}, []string{"more than 10000 hosts"}},
		{"malformed", []string{"node[1-3"}, []string{"unbalanced '['", "as Slurm writes it"}},
		{"backwards", []string{"node[3-1]"}, []string{`bad range "3-1"`}},
		{"an empty argument", []string{"rsa1", ""}, []string{"an empty host"}},
		{"a bad name in the list", []string{"rsa[6-7]", "bad_name"}, []string{"1 of the 3 hosts have no valid name", "none was issued", `"bad_name" is not a host name`}},
		{"a host issued already", []string{"node[009-011]"}, []string{"1 of the 3 hosts have a certificate or key already", filepath.Join(dir, "nodes", "node010"), "none was issued"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := rsaCA(append(append([]string{"ca", "issue"}, tc.args...), "--role", "compute", "--dir", dir)...)
			if err == nil {
				t.Fatalf("rsa ca issue %s succeeded:\n%s", strings.Join(tc.args, " "), out)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("rsa ca issue %s: %v\nwant it to say %q", strings.Join(tc.args, " "), err, w)
				}
			}
		})
	}
	for _, h := range []string{"rsa4", "rsa6", "node009", "node011"} {
		if _, err := os.Stat(filepath.Join(dir, "nodes", h)); err == nil {
			t.Errorf("a refused rsa ca issue made %s's directory", h)
		}
	}
}

// The hosts a list of arguments names: Slurm's host lists, each host once.
func TestExpandHostArgs(t *testing.T) {
	seq := func(from, to int, format string) []string {
		var out []string
		for i := from; i <= to; i++ {
			out = append(out, fmt.Sprintf(format, i))
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		args  []string
		limit int
		want  []string
		err   string // in the error, when one is wanted
	}{
		{name: "plain name", args: []string{"rsa1"}, want: []string{"rsa1"}},
		{name: "plain names", args: []string{"ctl1", "rsa1.cluster.example.org"}, want: []string{"ctl1", "rsa1.cluster.example.org"}},
		{name: "range", args: []string{"rsa[1-4]"}, want: []string{"rsa1", "rsa2", "rsa3", "rsa4"}},
		{name: "padded range", args: []string{"node[001-200]"}, want: seq(1, 200, "node%03d")},
		{name: "numbers and ranges", args: []string{"node[001-003,010]"}, want: []string{"node001", "node002", "node003", "node010"}},
		{name: "padding past a power of ten", args: []string{"n[08-10]"}, want: []string{"n08", "n09", "n10"}},
		{name: "unpadded across a power of ten", args: []string{"n[9-11]"}, want: []string{"n9", "n10", "n11"}},
		{name: "suffix", args: []string{"rsa[1-2].cluster"}, want: []string{"rsa1.cluster", "rsa2.cluster"}},
		{name: "two groups", args: []string{"rack[1-2]-n[01-02]"}, want: []string{"rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"}},
		{name: "commas outside brackets", args: []string{"ctl1,rsa[1-2],node[01,03]"}, want: []string{"ctl1", "rsa1", "rsa2", "node01", "node03"}},
		{name: "several arguments", args: []string{"rsa[1-2]", "node1"}, want: []string{"rsa1", "rsa2", "node1"}},
		{name: "each once, in first order", args: []string{"rsa[2,1-3]", "rsa1"}, want: []string{"rsa2", "rsa1", "rsa3"}},
		{name: "exactly the limit", args: []string{"n[1-6]", "m[1-4]"}, limit: 10, want: append(seq(1, 6, "n%d"), seq(1, 4, "m%d")...)},

		{name: "nothing", args: nil, err: "no host given"},
		{name: "empty", args: []string{""}, err: "an empty host"},
		{name: "only commas", args: []string{",,"}, err: "no host given"},
		{name: "unclosed", args: []string{"node[1-3"}, err: "unbalanced '['"},
		{name: "unopened", args: []string{"node1-3]"}, err: "which no host name has"},
		{name: "empty brackets", args: []string{"node[]"}, err: "bad range"},
		{name: "letters", args: []string{"node[a-c]"}, err: `bad range "a-c"`},
		{name: "backwards", args: []string{"node[10-1]"}, err: `bad range "10-1"`},
		{name: "white space", args: []string{"rsa1 rsa2"}, err: "which no host name has"},
		{name: "over the limit", args: []string{"n[1-11]"}, limit: 10, err: "names more than 10 hosts"},
		{name: "over the limit over arguments", args: []string{"n[1-6]", "m[1-5]"}, limit: 10, err: "names more than 10 hosts"},
		{name: "over the limit by product", args: []string{"r[1-100]-n[1-101]"}, err: "names more than 10000 hosts"},
		{name: "huge", args: []string{"n[0-999999999]"}, err: "names more than 10000 hosts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limit := cmp.Or(tc.limit, maxHosts)
			got, err := expandHosts(tc.args, limit)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("expandHosts(%q) = %q, %v; want an error saying %q", tc.args, got, err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("expandHosts(%q) = %q, %v; want %q", tc.args, got, err, tc.want)
			}
		})
	}
}

// rsa ca request makes a host's key and request there; rsa ca sign signs
// it on the CA host; what it writes, copied back, is the host's identity.
func TestCARequestSignCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	if out, err := rsaCA("ca", "init", "--dir", dir); err != nil {
		t.Fatalf("rsa ca init: %v\n%s", err, out)
	}
	host := filepath.Join(t.TempDir(), "etc-rsa-pki")
	out, err := rsaCA("ca", "request", "RSA1", "--out", host)
	if err != nil {
		t.Fatalf("rsa ca request: %v\n%s", err, out)
	}
	csr := filepath.Join(host, pki.CSRFile)
	for _, w := range []string{filepath.Join(host, pki.KeyFile) + " (0600)", csr, "rsa ca sign"} {
		if !strings.Contains(out, w) {
			t.Errorf("rsa ca request does not say %q:\n%s", w, out)
		}
	}
	if out, err = rsaCA("ca", "request", "rsa1", "--out", host); err != nil || !strings.Contains(out, "for the key it has") {
		t.Errorf("rsa ca request again: %v\n%s", err, out)
	}

	out, err = rsaCA("ca", "sign", csr, "--role", "storage", "--ip", "10.1.0.11", "--days", "60", "--dir", dir)
	if err != nil {
		t.Fatalf("rsa ca sign: %v\n%s", err, out)
	}
	signed := filepath.Join(dir, "nodes", "rsa1")
	for _, w := range []string{"Signed rsa1 a certificate of role storage (DNS rsa1, IP 10.1.0.11)", filepath.Join(signed, pki.CertFile),
		"scp -p " + filepath.Join(signed, pki.CAFile) + " root@rsa1:/etc/rsa/pki/ca.crt && scp -p " + filepath.Join(signed, pki.CertFile) + " root@rsa1:/etc/rsa/pki/node.crt"} {
		if !strings.Contains(out, w) {
			t.Errorf("rsa ca sign does not say %q:\n%s", w, out)
		}
	}
	if _, err := os.Stat(filepath.Join(signed, pki.KeyFile)); err == nil {
		t.Error("rsa ca sign wrote a key: the key stays on its host")
	}
	for _, f := range []string{pki.CertFile, pki.CAFile} {
		b, err := os.ReadFile(filepath.Join(signed, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(host, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	id, err := pki.Load(pki.DirFiles(host))
	if err != nil {
		t.Fatalf("loading the host's identity: %v", err)
	}
	if c := id.Certificate(); id.Role() != pki.RoleStorage || c.DNSNames[0] != "rsa1" || time.Until(c.NotAfter) > 61*24*time.Hour {
		t.Errorf("role %s, names %v, until %v", id.Role(), c.DNSNames, c.NotAfter)
	}

	notCSR := filepath.Join(t.TempDir(), "x.csr")
	os.WriteFile(notCSR, []byte("hello"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no role", []string{"sign", csr, "--dir", dir}, []string{"--role is required"}},
		{"again", []string{"sign", csr, "--role", "storage", "--dir", dir}, []string{filepath.Join(signed, pki.CertFile), "already exists"}},
		{"not a request", []string{"sign", notCSR, "--role", "storage", "--dir", dir}, []string{notCSR, "no PEM certificate request"}},
		{"no file", []string{"sign", filepath.Join(t.TempDir(), "none.csr"), "--role", "storage", "--dir", dir}, []string{"no such file"}},
		{"no CSR", []string{"sign", "--role", "storage", "--dir", dir}, []string{"give one CSR"}},
		{"request without a node", []string{"request", "--out", t.TempDir()}, []string{"give one NODE"}},
		{"request for an address", []string{"request", "10.1.0.7", "--out", t.TempDir()}, []string{"an address, not a host name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := rsaCA(append([]string{"ca"}, tc.args...)...)
			if err == nil {
				t.Fatalf("rsa ca %s succeeded:\n%s", strings.Join(tc.args, " "), out)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("rsa ca %s: %v\nwant it to say %q", strings.Join(tc.args, " "), err, w)
				}
			}
		})
	}
}

// rsa ca revoke puts a host's certificates, by the CA's register, or one
// by its serial, in the CA's revocation list.
func TestCARevokeCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	if out, err := rsaCA("ca", "init", "--dir", dir); err != nil {
		t.Fatalf("rsa ca init: %v\n%s", err, out)
	}
	serials := map[string]*big.Int{}
	for _, h := range []string{"rsa1", "rsa2", "node001"} {
		c, err := pki.Issue(dir, filepath.Join(dir, "nodes", h), h, pki.RoleStorage, pki.IssueOptions{})
		if err != nil {
			t.Fatal(err)
		}
		serials[h] = c.SerialNumber
	}
	listed := func() []string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, pki.CRLFile))
		if err != nil {
			t.Fatal(err)
		}
		p, _ := pem.Decode(b)
		crl, err := x509.ParseRevocationList(p.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range crl.RevokedCertificateEntries {
			for h, s := range serials {
				if s.Cmp(e.SerialNumber) == 0 {
					out = append(out, h)
				}
			}
		}
		slices.Sort(out)
		return out
	}

	out, err := rsaCA("ca", "revoke", "rsa1", "--dir", dir)
	if err != nil {
		t.Fatalf("rsa ca revoke rsa1: %v\n%s", err, out)
	}
	if !strings.Contains(out, "rsa1 (serial "+pki.FormatSerial(serials["rsa1"])+")") || !strings.Contains(out, "/etc/rsa/pki/ca.crl on every host") {
		t.Errorf("rsa ca revoke does not say what it revoked and where the list goes:\n%s", out)
	}
	if got := listed(); !slices.Equal(got, []string{"rsa1"}) {
		t.Errorf("listed %v, want rsa1", got)
	}
	// By serial, as openssl shows it; and a host list.
	openssl := "serial=" + strings.ToUpper(pki.FormatSerial(serials["rsa2"]))
	if out, err := rsaCA("ca", "revoke", openssl, "node[001]", "--dir", dir); err != nil {
		t.Fatalf("rsa ca revoke %s: %v\n%s", openssl, err, out)
	}
	if got := listed(); !slices.Equal(got, []string{"node001", "rsa1", "rsa2"}) {
		t.Errorf("listed %v, want node001, rsa1, rsa2", got)
	}

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"nothing", nil, []string{"give a NODE"}},
		{"a host the CA never issued", []string{"rsa9"}, []string{"lists no certificate of rsa9", "serial"}},
		{"a bad name", []string{"rsa_9"}, []string{"not a host name"}},
		{"no CA", []string{"rsa1", "--dir", t.TempDir()}, []string{"no cluster CA"}},
		{"no CA, by serial", []string{pki.FormatSerial(serials["rsa1"]), "--dir", t.TempDir()}, []string{"no cluster CA", "rsa ca init"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"ca", "revoke"}, tc.args...)
			if !slices.Contains(tc.args, "--dir") {
				args = append(args, "--dir", dir)
			}
			out, err := rsaCA(args...)
			if err == nil {
				t.Fatalf("rsa %s succeeded:\n%s", strings.Join(args, " "), out)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("rsa %s: %v\nwant it to say %q", strings.Join(args, " "), err, w)
				}
			}
		})
	}
}
