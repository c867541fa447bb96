package metrics

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"
)

// A request is served when its Host names this server: the address the
// connection came to, loopback, the hostname or a name given, with the
// connection's port or none. Any other name, such as an attacker's under
// DNS rebinding, is answered 421.
func TestCheckHost(t *testing.T) {
	hostname, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	tcp := func(s string) net.Addr { return net.TCPAddrFromAddrPort(netip.MustParseAddrPort(s)) }
	for _, tc := range []struct {
		local net.Addr // nil: no connection
		host  string
		names []string
		ok    bool
	}{
		{tcp("127.0.0.1:9477"), "127.0.0.1:9477", nil, true},
		{tcp("127.0.0.1:9477"), "127.0.0.1", nil, true},
		{tcp("127.0.0.1:9477"), "localhost:9477", nil, true},
		{tcp("127.0.0.1:9477"), "LocalHost.:9477", nil, true},
		{tcp("127.0.0.1:9477"), "[::1]:9477", nil, true},
		{tcp("127.0.0.1:9477"), "", nil, true}, // HTTP/1.0: no browser's
		{tcp("127.0.0.1:9477"), "localhost:8080", nil, false},
		{tcp("127.0.0.1:9477"), "evil.example:9477", nil, false},
		{tcp("127.0.0.1:9477"), "evil.example", nil, false},
		{tcp("127.0.0.1:9477"), "evil.localhost:9477", nil, false},
		{tcp("127.0.0.1:9477"), "127.0.0.2:9477", nil, false},
		// Listening on 0.0.0.0: the address the client reached.
		{tcp("10.1.2.3:9477"), "10.1.2.3:9477", nil, true},
		{tcp("10.1.2.3:9477"), "10.1.2.4:9477", nil, false},
		{tcp("[::ffff:10.1.2.3]:9477"), "10.1.2.3:9477", nil, true},
		{tcp("[2001:db8::1]:9477"), "[2001:db8::1]:9477", nil, true},
		{tcp("[2001:db8::1]:9477"), "[2001:db8::1]", nil, true},
		{tcp("10.1.2.3:9477"), hostname + ":9477", nil, true},
		{tcp("10.1.2.3:9477"), strings.ToUpper(hostname), nil, true},
		{tcp("10.1.2.3:9477"), "rsa.example.org:9477", nil, false},
		{tcp("10.1.2.3:9477"), "rsa.example.org:9477", []string{"RSA.example.org."}, true},
		{tcp("10.1.2.3:9477"), "rsa.example.org:9478", []string{"rsa.example.org"}, false},
		{nil, "localhost:9477", nil, false},
	} {
		served := false
		h := CheckHost(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served = true }), tc.names...)
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		r.Host = tc.host
		if tc.local != nil {
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, tc.local))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if served != tc.ok {
			t.Errorf("Host %q to %v (names %q): served %v, want %v", tc.host, tc.local, tc.names, served, tc.ok)
		}
		if !served && rec.Code != http.StatusMisdirectedRequest {
			t.Errorf("Host %q to %v: refused with %d, want 421", tc.host, tc.local, rec.Code)
		}
	}
}

// The metrics, served on a real address, refuse a request under another
// name: a page of another site cannot scrape them by DNS rebinding.
func TestHandlerChecksHost(t *testing.T) {
	l, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: New(fakeSource{}, "v").Handler()}
	go srv.Serve(l)
	defer srv.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	for host, want := range map[string]int{
		"127.0.0.1:" + port:    http.StatusOK,
		"localhost:" + port:    http.StatusOK,
		"evil.example:" + port: http.StatusMisdirectedRequest,
	} {
		req, err := http.NewRequest(http.MethodGet, "http://"+l.Addr().String()+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %s, want %d", host, resp.Status, want)
		}
		if served := strings.Contains(string(b), "rsa_jobs"); served != (want == http.StatusOK) {
			t.Errorf("Host %s: metrics in the answer: %v", host, served)
		}
	}
}

// The address holds at most maxConnsPerHost connections from one source
// address: the one past it is closed at once, while another host still
// gets in.
func TestListenBoundsPerHost(t *testing.T) {
	l, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, maxConns)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	take := func(why string) {
		t.Helper()
		select {
		case c := <-accepted:
			t.Cleanup(func() { c.Close() })
		case <-time.After(5 * time.Second):
			t.Fatal(why)
		}
	}
	dial := func(from string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
		c, err := d.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	for range maxConnsPerHost {
		dial("127.0.0.2")
		take("a connection within the bound was not accepted")
	}
	over := dial("127.0.0.2")
	over.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := over.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("connection %d from one host was kept (%v); want it closed at once", maxConnsPerHost+1, err)
	}
	dial("127.0.0.3")
	take("another host's connection was not accepted while one host held its places")
}
