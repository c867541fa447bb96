package agent

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// serve runs the agent of node on ln until the test ends, logging to log,
// and returns its address.
func (e *env) serve(t *testing.T, node string, ln net.Listener, log io.Writer) string {
	t.Helper()
	s, err := New(Config{Identity: e.identity(t, node), BrickRoot: e.brickRoot, VolumeRoot: e.volumeRoot,
		Log: slog.New(slog.NewTextHandler(io.MultiWriter(log, t.Output()), nil)), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent %s: Serve: %v", node, err)
		}
	})
	return ln.Addr().String()
}

// sourceOf is the address the system gives a connection to addr that
// binds none, as the daemon's client does: the test's control host.
func sourceOf(t *testing.T, addr string) netip.Addr {
	t.Helper()
	c, err := net.Dial("udp", addr) // no packet is sent
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap()
}

// dialFrom opens a TCP connection to addr from the address from, closed
// when the test ends.
func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	c, err := tryDialFrom(t, from, addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tryDialFrom is dialFrom, failing: a connection the agent resets as it
// accepts it may be reset before the dial returns.
func tryDialFrom(t *testing.T, from, addr string) (net.Conn, error) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dialling %s from %s: %w", addr, from, err)
	}
	t.Cleanup(func() { c.Close() })
	return c, nil
}

// stranger opens a TCP connection to addr from the address from, which
// the agent does not serve: it is refused, when the dial returns or later.
func stranger(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	c, err := tryDialFrom(t, from, addr)
	if err != nil {
		if !closedByPeer(err) {
			t.Fatal(err)
		}
		return nil
	}
	return c
}

// closedByPeer reports whether err is what reading or writing a
// connection the other side has closed or reset gives.
func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// controlTLS is the client TLS configuration of the control daemon's
// certificate (ctl1), expecting node.
func (e *env) controlTLS(t *testing.T, node string) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(e.files["ctl1"].CA)
	if err != nil || !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("reading %s: %v", e.files["ctl1"].CA, err)
	}
	cert, err := tls.LoadX509KeyPair(e.files["ctl1"].Cert, e.files["ctl1"].Key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: pool, ServerName: node, Certificates: []tls.Certificate{cert}}
}

// serveControlled serves agent both1 on listenOn with --control the
// address this host dials listenOn from (the test's control host), and
// returns that address, the agent's address and its log.
func (e *env) serveControlled(t *testing.T, listenOn string) (control netip.Addr, addr string, log *testutil.SyncBuffer) {
	t.Helper()
	control = sourceOf(t, listenOn+":9")
	ctl, err := ParseControl([]string{control.String()})
	if err != nil {
		t.Fatal(err)
	}
	log = new(testutil.SyncBuffer)
	ln, err := Listen(listenOn+":0", ctl, slog.New(slog.NewTextHandler(log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return control, e.serve(t, "both1", ln, log), log
}

// A connection from an address not in --control is reset as it is
// accepted: no TLS handshake answer, even to the control daemon's own
// certificate; 100 of them from 10 addresses (more than the 64 places the
// agent had for everyone, 16 per address) leave the daemon's requests
// untouched; and each address is logged once, not once per connection.
func TestAgentRefusesOtherSources(t *testing.T) {
	e := newEnv(t)
	const listenOn = "127.0.0.2"
	control, addr, log := e.serveControlled(t, listenOn)
	if control.String() == "127.0.0.3" {
		t.Fatalf("the system dials %s from 127.0.0.3, the test's stranger", listenOn)
	}

	// Not a byte of TLS answers a stranger, not even one with the
	// daemon's certificate.
	if raw := stranger(t, "127.0.0.3", addr); raw != nil {
		raw.SetDeadline(time.Now().Add(5 * time.Second))
		err := tls.Client(raw, e.controlTLS(t, "both1")).Handshake()
		if ne := net.Error(nil); err == nil || errors.As(err, &ne) && ne.Timeout() || !closedByPeer(err) {
			t.Fatalf("TLS handshake from 127.0.0.3: %v, want the connection closed or reset", err)
		}
	}
	if raw := stranger(t, "127.0.0.3", addr); raw != nil {
		raw.SetDeadline(time.Now().Add(5 * time.Second))
		if n, err := raw.Read(make([]byte, 1)); n != 0 || !closedByPeer(err) {
			t.Fatalf("reading a silent connection from 127.0.0.3: %d bytes, %v; want it closed or reset at once", n, err)
		}
	}

	// 100 strangers' connections, kept open on their side.
	for i := range 100 {
		stranger(t, fmt.Sprintf("127.0.0.%d", 3+i%10), addr)
	}
	c := e.client(t, "both1", addr)
	for i := range 5 {
		if st, err := c.Status(context.Background()); err != nil || st.Node != "both1" {
			t.Fatalf("status #%d through 100 strangers' connections: %+v, %v", i, st, err)
		}
		c.Close() // each request on a connection of its own
	}

	// Every refused connection has been accepted and reset by now (the
	// daemon's came after them): one line per address.
	out := log.String()
	for i := range 10 {
		from := fmt.Sprintf("from=127.0.0.%d ", 3+i)
		if n := strings.Count(out, from); n != 1 {
			t.Errorf("%d log lines for %s, want 1:\n%s", n, from, out)
		}
	}
	if n := strings.Count(out, "not in --control"); n != 10 {
		t.Errorf("%d refusal lines for 10 addresses, want 10", n)
	}
}

// Connections from the control host's address that never begin their
// handshake are closed within handshakeDeadline, and meanwhile hold
// neither the places of the daemon's authenticated connections nor every
// place of handshakes: with 100 of them open, 20 authenticated connections
// made before still answer, and new ones from the same address get
// through.
func TestAgentHandshakeDeadline(t *testing.T) {
	e := newEnv(t)
	const listenOn = "127.0.0.2"
	control, addr, _ := e.serveControlled(t, listenOn)
	tc := e.controlTLS(t, "both1")

	// The daemon's connections, authenticated (more than the 16 places of
	// an address the agent had for everyone).
	var authed []*tls.Conn
	status := func(c *tls.Conn) error {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, "GET /v1/status HTTP/1.1\r\nHost: both1\r\n\r\n"); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %s", resp.Status)
		}
		return nil
	}
	for range 20 {
		c := tls.Client(dialFrom(t, control.String(), addr), tc)
		// An answer, not the client's end of the handshake (which in
		// TLS 1.3 comes before the agent's), says the agent has
		// authenticated it.
		if err := status(c); err != nil {
			t.Fatalf("the daemon's connection: %v", err)
		}
		authed = append(authed, c)
	}

	// 100 idle connections from the control host's address: a stolen
	// address, or a user of the control host.
	start := time.Now()
	type end struct {
		n    int
		err  error
		took time.Duration
	}
	ends := make(chan end, 100)
	for range 100 {
		c := dialFrom(t, control.String(), addr)
		c.SetReadDeadline(start.Add(handshakeDeadline + 5*time.Second))
		go func() {
			n, err := c.Read(make([]byte, 1))
			ends <- end{n, err, time.Since(start)}
		}()
	}

	for i, c := range authed {
		if err := status(c); err != nil {
			t.Errorf("authenticated connection #%d, with 100 idle ones open: %v", i, err)
		}
	}
	c := e.client(t, "both1", addr)
	for i := range 5 {
		if st, err := c.Status(context.Background()); err != nil || st.Node != "both1" {
			t.Fatalf("status #%d on a new connection, with 100 idle ones open: %+v, %v", i, st, err)
		}
		c.Close()
	}
	if took := time.Since(start); took >= handshakeDeadline {
		t.Fatalf("the requests took %v, past the handshake deadline: they proved nothing", took)
	}
	if n := len(ends); n == 100 {
		t.Fatalf("every idle connection was closed before the requests: they proved nothing")
	}

	var last time.Duration
	for range 100 {
		x := <-ends
		if x.n != 0 || !closedByPeer(x.err) {
			t.Fatalf("an idle connection read %d bytes, %v after %v; want it closed by the agent within %v", x.n, x.err, x.took, handshakeDeadline)
		}
		last = max(last, x.took)
	}
	if last > handshakeDeadline+2*time.Second {
		t.Errorf("the last idle connection was closed after %v, past the handshake deadline of %v", last, handshakeDeadline)
	}

	// The daemon's connections outlive the idle ones.
	for i, c := range authed {
		if err := status(c); err != nil {
			t.Errorf("authenticated connection #%d, after: %v", i, err)
		}
	}
}

// The places of handshakes under way never refuse a connection: the
// newest takes the place of its host's oldest once the host holds its
// share, else of the oldest of all once every place is held.
func TestHandshakePlaces(t *testing.T) {
	a, b, c := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")
	type step struct {
		host    netip.Addr
		done    int // >0: the handshake admitted at step done-1 ends instead
		evicted int // the step whose handshake gives up its place, -1 none
		held    bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"room", []step{{host: a, evicted: -1}, {host: b, evicted: -1}, {host: a, evicted: -1}}},
		{"host's share", []step{{host: a, evicted: -1}, {host: b, evicted: -1}, {host: a, evicted: -1}, {host: a, evicted: 0}, {host: a, evicted: 2}}},
		{"all places", []step{{host: a, evicted: -1}, {host: b, evicted: -1}, {host: c, evicted: -1}, {host: b, evicted: -1}, {host: c, evicted: 0}, {host: a, evicted: 1}}},
		{"ended", []step{{host: a, evicted: -1}, {host: a, evicted: -1}, {done: 1, held: true}, {host: a, evicted: -1}, {host: a, evicted: 1}}},
		{"ended after eviction", []step{{host: a, evicted: -1}, {host: a, evicted: -1}, {host: a, evicted: 0}, {done: 1, held: false}, {done: 2, held: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHandshakes(4, 2)
			admitted := make([]*handshake, len(tc.steps))
			for i, s := range tc.steps {
				if s.done > 0 {
					if held := hs.done(admitted[s.done-1]); held != s.held {
						t.Fatalf("step %d: done = %v, want %v", i, held, s.held)
					}
					continue
				}
				admitted[i] = &handshake{host: s.host}
				got := hs.admit(admitted[i])
				switch {
				case s.evicted < 0 && got != nil:
					t.Fatalf("step %d: evicted a handshake of %s, want none", i, got.host)
				case s.evicted >= 0 && got != admitted[s.evicted]:
					t.Fatalf("step %d: evicted %v, want step %d's", i, got, s.evicted)
				}
				if len(hs.queue) > hs.total {
					t.Fatalf("step %d: %d handshakes held, more than %d", i, len(hs.queue), hs.total)
				}
			}
		})
	}
}

// Refusals are logged once per address per refusalLogEvery, and beyond
// maxRefusalAddrs addresses together as "others".
func TestRefusalLog(t *testing.T) {
	for _, tc := range []struct {
		name  string
		addrs int // distinct addresses
		each  int // refusals of each
		lines int
	}{
		{"one address", 1, 100, 1},
		{"a few", 10, 10, 10},
		{"more than remembered", maxRefusalAddrs + 50, 2, maxRefusalAddrs + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out testutil.SyncBuffer
			r := newRefusalLog(slog.New(slog.NewTextHandler(&out, nil)), "refused")
			for range tc.each {
				for i := range tc.addrs {
					r.note(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}))
				}
			}
			if n := strings.Count(out.String(), "msg=refused"); n != tc.lines {
				t.Errorf("%d lines, want %d", n, tc.lines)
			}
		})
	}
}

// --control takes IP addresses and CIDR prefixes, or "any" alone; every
// other value, and none at all, fails saying what to give.
func TestParseControl(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   string // String(), or the error's text
		allows []string
		denies []string
	}{
		{[]string{"10.1.0.2"}, "10.1.0.2", []string{"10.1.0.2", "::ffff:10.1.0.2"}, []string{"10.1.0.3", "127.0.0.1"}},
		{[]string{"10.1.0.2,10.1.0.9"}, "10.1.0.2,10.1.0.9", []string{"10.1.0.2", "10.1.0.9"}, []string{"10.1.0.3"}},
		{[]string{"10.1.0.2", "fd00::2"}, "10.1.0.2,fd00::2", []string{"10.1.0.2", "fd00::2"}, []string{"fd00::3"}},
		{[]string{"10.1.0.2, 10.2.0.0/16"}, "10.1.0.2,10.2.0.0/16", []string{"10.2.255.1"}, []string{"10.3.0.1"}},
		{[]string{"::ffff:10.1.0.2"}, "10.1.0.2", []string{"10.1.0.2"}, nil},
		{[]string{"any"}, "any", []string{"10.1.0.2", "fd00::2"}, nil},
		{[]string{"ANY"}, "any", []string{"192.0.2.1"}, nil},

		{nil, "rsa agent needs --control: give the IP address of the control host", nil, nil},
		{[]string{}, "or --control any to accept connections from every address", nil, nil},
		{[]string{""}, "an empty address (a stray comma?)", nil, nil},
		{[]string{"10.1.0.2,"}, "an empty address (a stray comma?)", nil, nil},
		{[]string{"ctl1"}, `--control "ctl1": not an IP address or a CIDR prefix (such as 10.1.0.2 or 10.1.0.0/24); give the control host's address (names are not resolved)`, nil, nil},
		{[]string{"10.1.0.256"}, "not an IP address or a CIDR prefix", nil, nil},
		{[]string{"10.1.0.2:9477"}, "not an IP address or a CIDR prefix", nil, nil},
		{[]string{"10.1.0.0/33"}, `--control "10.1.0.0/33": not a CIDR prefix`, nil, nil},
		{[]string{"10.1.0.5/24"}, "give 10.1.0.0/24 for the network or 10.1.0.5 for the host", nil, nil},
		{[]string{"0.0.0.0/0"}, "admits every address: say --control any if that is meant", nil, nil},
		{[]string{"::/0"}, "admits every address: say --control any if that is meant", nil, nil},
		{[]string{"0.0.0.0"}, "the unspecified address is no host's", nil, nil},
		{[]string{"fe80::1%eth0"}, "without its zone", nil, nil},
		{[]string{"::ffff:10.1.0.0/120"}, "give an IPv4 prefix as such", nil, nil},
		{[]string{"any", "10.1.0.2"}, "--control any admits every address: give it alone, not with 10.1.0.2", nil, nil},
	} {
		t.Run(strings.Join(tc.values, " "), func(t *testing.T) {
			c, err := ParseControl(tc.values)
			if err != nil {
				if !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("ParseControl(%q): %v, want %q", tc.values, err, tc.want)
				}
				return
			}
			if c.String() != tc.want {
				t.Fatalf("ParseControl(%q) = %s, want %s", tc.values, c, tc.want)
			}
			for _, a := range tc.allows {
				if !c.Allows(netip.MustParseAddr(a)) {
					t.Errorf("%s refuses %s", c, a)
				}
			}
			for _, a := range tc.denies {
				if c.Allows(netip.MustParseAddr(a)) {
					t.Errorf("%s allows %s", c, a)
				}
			}
		})
	}
	if (Control{}).Allows(netip.MustParseAddr("127.0.0.1")) {
		t.Error("the zero Control allows a connection")
	}
}
