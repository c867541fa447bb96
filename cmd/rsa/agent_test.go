package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/agent"
	"github.com/rsa-hpc/rsa/internal/mounttest"
	"github.com/rsa-hpc/rsa/internal/pki"
	"github.com/rsa-hpc/rsa/internal/testutil"
	"github.com/rsa-hpc/rsa/internal/version"
)

// rsa agent serves with the certificate its flags name, answers the
// daemon, stops on its context's end (SIGTERM, SIGINT), and refuses to
// start with a certificate an agent cannot serve with.
func TestAgentCommand(t *testing.T) {
	testutil.RequireRoot(t)
	dir := testutil.TempDir(t)
	t.Cleanup(func() { mounttest.UnmountBelow(dir) })
	ca := filepath.Join(dir, "ca")
	if _, err := pki.Init(ca, pki.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	for node, role := range map[string]pki.Role{"ctl1": pki.RoleControl, "rsa1": pki.RoleStorage} {
		if _, err := pki.Issue(ca, filepath.Join(dir, node), node, role, pki.IssueOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	roots := []string{"--brick-root", filepath.Join(dir, "bricks"), "--volume-root", filepath.Join(dir, "volumes")}
	good := []string{"--pki", filepath.Join(dir, "rsa1")}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"control certificate", []string{"--control", "127.0.0.1", "--pki", filepath.Join(dir, "ctl1")}, "not an agent's"},
		{"no certificate", []string{"--control", "127.0.0.1", "--pki", filepath.Join(dir, "none")}, filepath.Join(dir, "none", pki.CAFile)},
		{"bad brick root", []string{"--control", "127.0.0.1", "--pki", filepath.Join(dir, "rsa1"), "--brick-root", "bricks"}, "clean absolute path"},
		{"an argument", []string{"--control", "127.0.0.1", "--pki", filepath.Join(dir, "rsa1"), "now"}, "unknown command"},
		{"no --control", good, "rsa agent needs --control: give the IP address of the control host"},
		{"empty --control", append([]string{"--control", ""}, good...), "rsa agent needs --control"},
		{"a name in --control", append([]string{"--control", "ctl1"}, good...), `--control "ctl1": not an IP address or a CIDR prefix`},
		{"any with an address", append([]string{"--control", "any", "--control", "10.1.0.2"}, good...), "give it alone"},
		{"a port alone in --metrics-listen", append([]string{"--control", "127.0.0.1", "--metrics-listen", "9479"}, good...), "--metrics-listen \"9479\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := newRoot(&globals{})
			root.SetOut(&bytes.Buffer{})
			root.SetErr(&bytes.Buffer{})
			root.SetArgs(append(append([]string{"agent", "--listen", "127.0.0.1:0"}, roots...), tc.args...))
			// An agent that starts, as it must not, stops at once and
			// fails the case.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := root.ExecuteContext(ctx)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("rsa agent %s: %v, want an error saying %q", strings.Join(tc.args, " "), err, tc.want)
			}
		})
	}

	// Free ports for the agent and its metrics (listening on :0 would
	// hide them from the test).
	var addr, metricsAddr string
	for _, a := range []*string{&addr, &metricsAddr} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		*a = ln.Addr().String()
		ln.Close()
	}
	node := filepath.Join(dir, "rsa1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := newRoot(&globals{})
	root.SetArgs(append([]string{"agent", "--listen", addr, "--metrics-listen", metricsAddr, "--control", "127.0.0.1", "--pki", filepath.Join(dir, "elsewhere"),
		"--ca", filepath.Join(node, pki.CAFile), "--cert", filepath.Join(node, pki.CertFile), "--key", filepath.Join(node, pki.KeyFile)}, roots...))
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	id, err := pki.Load(pki.DirFiles(filepath.Join(dir, "ctl1")))
	if err != nil {
		t.Fatal(err)
	}
	c, err := agent.NewClient(id, "rsa1", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var st *agent.Status
	for deadline := time.Now().Add(20 * time.Second); ; {
		if st, err = c.Status(ctx); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("rsa agent stopped: %v", err)
		default:
		}
		if !agent.Transient(err) || time.Now().After(deadline) {
			t.Fatalf("rsa agent does not answer: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st.Node != "rsa1" || st.Role != pki.RoleStorage || st.Version != version.String() {
		t.Errorf("status %+v", st)
	}
	if _, err := c.MakeBrick(ctx, agent.VolumeName(1), agent.BrickSpec{Size: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveBrick(ctx, agent.VolumeName(1)); err != nil {
		t.Fatal(err)
	}
	// --metrics-listen: the agent's metrics, named as its certificate
	// names it, counting what the daemon asked.
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatalf("scraping the agent's metrics: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`rsa_agent_info{node="rsa1",role="storage",version="` + version.String() + `"} 1`,
		`rsa_agent_requests_total{code="200",op="make-brick"} 1`,
		`rsa_agent_requests_total{code="200",op="remove-brick"} 1`,
		`rsa_certificate_expiry_timestamp_seconds{node="rsa1",role="storage"} `,
		"rsa_agent_bricks 0\n",
	} {
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("the agent's metrics (%s) lack %s:\n%s", resp.Status, want, body)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("rsa agent, stopped: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("rsa agent did not stop when told to")
	}
	// The metrics' listener went with it.
	if conn, err := net.DialTimeout("tcp", metricsAddr, 5*time.Second); err == nil {
		conn.Close()
		t.Errorf("%s still takes connections after rsa agent stopped", metricsAddr)
	}
}

// An agent listening on every address says which: the host's addresses,
// with the port; one listening on an address says nothing more.
func TestWildcardAddrs(t *testing.T) {
	for _, tc := range []struct {
		listen string
		want   bool
		has    []string
		hasNot []string
	}{
		{"0.0.0.0:9477", true, []string{"127.0.0.1:9477"}, []string{"[::1]:9477"}},
		{"[::]:9477", true, []string{"127.0.0.1:9477"}, nil},
		{"127.0.0.1:9477", false, nil, nil},
		{"[::1]:9477", false, nil, nil},
	} {
		t.Run(tc.listen, func(t *testing.T) {
			a, err := net.ResolveTCPAddr("tcp", tc.listen)
			if err != nil {
				t.Fatal(err)
			}
			addrs, ok := wildcardAddrs(a)
			if ok != tc.want {
				t.Fatalf("wildcardAddrs(%s) = %v, %v; want %v", tc.listen, addrs, ok, tc.want)
			}
			for _, h := range tc.has {
				if !slices.Contains(addrs, h) {
					t.Errorf("wildcardAddrs(%s) = %v, without %s", tc.listen, addrs, h)
				}
			}
			for _, h := range tc.hasNot {
				if slices.Contains(addrs, h) {
					t.Errorf("wildcardAddrs(%s) = %v, with %s", tc.listen, addrs, h)
				}
			}
		})
	}
}
