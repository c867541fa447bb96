package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
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
		{"no node", []string{"ca", "issue", "--role", "storage", "--dir", dir}, []string{"give one NODE"}},
		{"two nodes", []string{"ca", "issue", "rsa1", "rsa2", "--role", "storage", "--dir", dir}, []string{"give one NODE"}},
		{"no role", []string{"ca", "issue", "rsa2", "--dir", dir}, []string{"--role is required", "storage (an RSA node)"}},
		{"unknown role", []string{"ca", "issue", "rsa2", "--role", "admin", "--dir", dir}, []string{`unknown role "admin"`, "compute (a compute node)"}},
		{"bad address", []string{"ca", "issue", "rsa2", "--role", "storage", "--ip", "10.1.0.300", "--dir", dir}, []string{`--ip "10.1.0.300" is not an IP address`}},
		{"address as node", []string{"ca", "issue", "10.1.0.12", "--role", "storage", "--dir", dir}, []string{"an address, not a host name", "--ip 10.1.0.12"}},
		{"bad node name", []string{"ca", "issue", "rsa_2", "--role", "storage", "--dir", dir}, []string{`"rsa_2" is not a host name`}},
		{"negative days", []string{"ca", "issue", "rsa2", "--role", "storage", "--days", "-5", "--dir", dir}, []string{"--days -5", "from 1 to"}},
		{"beyond the CA", []string{"ca", "issue", "rsa2", "--role", "storage", "--days", "5000", "--dir", dir}, []string{"outlive the CA", "at most"}},
		{"again", []string{"ca", "issue", "rsa1", "--role", "storage", "--dir", dir}, []string{filepath.Join(node, pki.KeyFile), "already exists", "move it away"}},
		{"no CA", []string{"ca", "issue", "rsa2", "--role", "storage", "--dir", t.TempDir()}, []string{"no cluster CA", "rsa ca init"}},
		{"unknown subcommand", []string{"ca", "renew"}, []string{`no subcommand "renew"`, "rsa ca issue"}},
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
