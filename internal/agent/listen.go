package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
)

// The agent's listener. Its only legitimate caller is rsa serve, on the
// control host; everyone else who reaches the port (users of compute
// nodes, anyone on the network) must not be able to lock the daemon out of
// the agent by taking its connection places. So a connection passes three
// gates, each before it costs more than the last:
//
//  1. its source address is one of --control's (Listen), checked at
//     accept, before the connection takes a place or a byte of it is read;
//  2. its TLS handshake holds one of the places of unauthenticated
//     connections (maxHandshakes, maxHandshakesPerHost) for at most
//     handshakeDeadline, and a newer connection takes the oldest one's
//     place when they are all held;
//  3. once the handshake has proved the control daemon's certificate, the
//     connection moves to the places of authenticated ones (maxConns),
//     which nothing unauthenticated can hold.

// The bounds of the agent's connections.
const (
	// handshakeDeadline is how long a connection may take to prove its
	// certificate. The daemon's handshake takes one round trip on the
	// cluster's network and a signature check on each side: milliseconds,
	// even on a loaded host. Beyond this a peer is stuck or holding the
	// place on purpose. A legitimate handshake cut short fails as a
	// transient error the daemon retries.
	handshakeDeadline = 5 * time.Second
	// maxHandshakes bounds the connections whose handshake is under way,
	// and maxHandshakesPerHost those of one source address among them.
	// When either is reached a new connection is still admitted: it
	// takes the place of the oldest handshake (of its host if the host
	// holds its share, else of all), which is closed. A peer that opens
	// connections and never finishes a handshake thus holds a place only
	// until newer connections arrive, and never keeps out a daemon whose
	// handshake takes milliseconds; and one host at its share only
	// displaces its own.
	maxHandshakes        = 64
	maxHandshakesPerHost = 16
	// maxConns bounds the authenticated connections: rsa serve holds a
	// few per kind of operation, more during a burst of jobs.
	maxConns = 64
	// refusalLogEvery is how often one address's refusals are logged: a
	// line per refused connection would let anyone fill the log.
	refusalLogEvery = time.Minute
	// maxRefusalAddrs bounds the addresses whose last log line is
	// remembered; past it, the others share one line per refusalLogEvery.
	maxRefusalAddrs = 1024
)

// ControlAny is the --control value that admits every source address.
const ControlAny = "any"

// Control is the set of source addresses the agent accepts connections
// from: the control host's, where rsa serve runs, or every address
// (ControlAny). The zero Control admits no one.
type Control struct {
	any      bool
	prefixes []netip.Prefix
}

// ParseControl reads the values of --control: IP addresses and CIDR
// prefixes, each value possibly a comma-separated list of them, or the
// single word "any". Host names are refused rather than resolved: an answer
// from DNS must not decide who may reach the agent. Giving no address at
// all is an error that says what to give.
func ParseControl(values []string) (Control, error) {
	var items []string
	for _, v := range values {
		for item := range strings.SplitSeq(v, ",") {
			items = append(items, strings.TrimSpace(item))
		}
	}
	if len(items) == 0 {
		return Control{}, errors.New("rsa agent needs --control: give the IP address of the control host, where rsa serve runs " +
			"(its [cluster] address), e.g. --control 10.1.0.2; or --control any to accept connections from every address, " +
			"which lets anyone who reaches the agent's port lock rsa serve out")
	}
	var c Control
	for _, item := range items {
		switch {
		case item == "":
			return Control{}, errors.New("--control: an empty address (a stray comma?); give IP addresses or CIDR prefixes, separated by commas")
		case strings.EqualFold(item, ControlAny):
			if len(items) > 1 {
				return Control{}, fmt.Errorf("--control %s admits every address: give it alone, not with %s", ControlAny, strings.Join(slices.DeleteFunc(slices.Clone(items), func(s string) bool { return strings.EqualFold(s, ControlAny) }), ","))
			}
			return Control{any: true}, nil
		}
		p, err := parseControlItem(item)
		if err != nil {
			return Control{}, err
		}
		c.prefixes = append(c.prefixes, p)
	}
	return c, nil
}

// parseControlItem reads one address or prefix of --control.
func parseControlItem(item string) (netip.Prefix, error) {
	if strings.Contains(item, "%") {
		return netip.Prefix{}, fmt.Errorf("--control %q: give the address without its zone (%%...)", item)
	}
	if !strings.Contains(item, "/") {
		a, err := netip.ParseAddr(item)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("--control %q: not an IP address or a CIDR prefix (such as 10.1.0.2 or 10.1.0.0/24); "+
				"give the control host's address (names are not resolved)", item)
		}
		a = a.Unmap()
		if a.IsUnspecified() {
			return netip.Prefix{}, fmt.Errorf("--control %q: the unspecified address is no host's; give the control host's address", item)
		}
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(item)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("--control %q: not a CIDR prefix (such as 10.1.0.0/24): %w", item, err)
	}
	if p.Addr().Is4In6() {
		return netip.Prefix{}, fmt.Errorf("--control %q: give an IPv4 prefix as such (10.1.0.0/24), not mapped into IPv6", item)
	}
	if p.Bits() == 0 {
		return netip.Prefix{}, fmt.Errorf("--control %q admits every address: say --control %s if that is meant", item, ControlAny)
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, fmt.Errorf("--control %q has bits set past its length: give %s for the network or %s for the host", item, m, p.Addr())
	}
	return p, nil
}

// Any reports whether c admits every address.
func (c Control) Any() bool { return c.any }

// Allows reports whether a connection from a may be served.
func (c Control) Allows(a netip.Addr) bool {
	if c.any {
		return true
	}
	a = a.Unmap().WithZone("")
	for _, p := range c.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// String is c as --control takes it.
func (c Control) String() string {
	if c.any {
		return ControlAny
	}
	s := make([]string, len(c.prefixes))
	for i, p := range c.prefixes {
		if p.IsSingleIP() {
			s[i] = p.Addr().String()
		} else {
			s[i] = p.String()
		}
	}
	return strings.Join(s, ",")
}

// Listen listens on addr (TCP, [HOST]:PORT) for Serve, admitting the
// connections from control's addresses alone: any other is reset as it is
// accepted, before it counts against any bound of Serve's and before a
// byte of it is read, and logged (each address at most once a minute).
func Listen(addr string, control Control, log *slog.Logger) (net.Listener, error) {
	if log == nil {
		log = slog.Default()
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &controlListener{Listener: ln, control: control,
		refused: newRefusalLog(log, "agent refused a connection from an address not in --control (if it is rsa serve's, add it there)")}, nil
}

// controlListener passes on the connections from its control's addresses.
type controlListener struct {
	net.Listener
	control Control
	refused *refusalLog
}

func (l *controlListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		a := remoteAddr(c)
		if l.control.Allows(a) {
			return c, nil
		}
		// Reset, not closed: nothing more is said to the peer, and no
		// TIME_WAIT is kept for it.
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		c.Close()
		l.refused.note(a, "control", l.control.String())
	}
}

// remoteAddr is c's peer address (IPv4 as such even on an IPv6 socket), or
// the zero Addr, which no Control but ControlAny allows, if c has none.
func remoteAddr(c net.Conn) netip.Addr {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return ta.AddrPort().Addr().Unmap()
	}
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// tlsListener hands on connections whose TLS handshake with config has
// completed, within handshakeDeadline, as *tls.Conn (which http.Server
// needs to give handlers the peer's certificate). It takes the place of
// tls.NewListener, whose connections do their handshake lazily in
// http.Server's goroutine, after the listener has handed them on: there a
// connection that never finishes its handshake counts as much as the
// daemon's, and only the server's read timeouts end it.
//
// Handshakes run in goroutines of their own, at most maxHandshakes at once
// (see handshakes); a connection past them holds one of maxConns places,
// given back when it is closed.
type tlsListener struct {
	inner  net.Listener
	config *tls.Config
	log    *slog.Logger

	ctx    context.Context // done when the listener is closed
	cancel context.CancelFunc
	closed sync.Once

	pending *handshakes
	authed  chan struct{}  // a token per authenticated connection open
	conns   chan *tls.Conn // authenticated, waiting for Accept

	stopped chan struct{} // closed when the accept loop has ended,
	err     error         // for this reason
	wg      sync.WaitGroup

	failed, full *refusalLog
}

func newTLSListener(inner net.Listener, config *tls.Config, log *slog.Logger) *tlsListener {
	ctx, cancel := context.WithCancel(context.Background())
	l := &tlsListener{
		inner: inner, config: config, log: log, ctx: ctx, cancel: cancel,
		pending: newHandshakes(maxHandshakes, maxHandshakesPerHost),
		authed:  make(chan struct{}, maxConns),
		conns:   make(chan *tls.Conn),
		stopped: make(chan struct{}),
		failed:  newRefusalLog(log, "agent refused a connection that failed its TLS handshake (not the control daemon's certificate, or too slow)"),
		full:    newRefusalLog(log, "agent refused the control daemon's connection: it holds every connection place"),
	}
	l.wg.Add(1)
	go l.acceptLoop()
	return l
}

// Accept returns the next authenticated connection.
func (l *tlsListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.stopped:
		return nil, l.err
	}
}

// Close stops accepting and ends the handshakes under way. The connections
// already handed on are their holder's to close.
func (l *tlsListener) Close() error {
	err := net.ErrClosed
	l.closed.Do(func() {
		l.cancel()
		err = l.inner.Close()
	})
	return err
}

func (l *tlsListener) Addr() net.Addr { return l.inner.Addr() }

// wait waits, after Close, for the listener's goroutines to end.
func (l *tlsListener) wait() { l.wg.Wait() }

// acceptLoop admits connections to their handshake until the inner
// listener fails for good. A transient failure (out of file descriptors)
// is retried after a pause, as http.Server does.
func (l *tlsListener) acceptLoop() {
	defer l.wg.Done()
	defer close(l.stopped)
	var pause time.Duration
	for {
		c, err := l.inner.Accept()
		if err != nil {
			if l.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				l.err = err
				return
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			l.log.Warn("agent accepting a connection", "err", err, "retry_in", pause)
			select {
			case <-time.After(pause):
				continue
			case <-l.ctx.Done():
				l.err = err
				return
			}
		}
		pause = 0
		h := &handshake{conn: c, host: remoteAddr(c)}
		if old := l.pending.admit(h); old != nil {
			old.conn.Close()
		}
		l.wg.Add(1)
		go l.handshake(h)
	}
}

// handshake completes h's TLS handshake within handshakeDeadline and
// hands the connection on, or closes it.
func (l *tlsListener) handshake(h *handshake) {
	defer l.wg.Done()
	pc := &placedConn{Conn: h.conn}
	tc := tls.Server(pc, l.config)
	h.conn.SetDeadline(time.Now().Add(handshakeDeadline))
	err := tc.HandshakeContext(l.ctx)
	if !l.pending.done(h) && err == nil {
		// It finished as a newer connection took its place.
		err = errors.New("its handshake place was given to a newer connection")
	}
	if err != nil {
		h.conn.Close()
		if l.ctx.Err() == nil {
			l.failed.note(h.host, "err", err)
		}
		return
	}
	select {
	case l.authed <- struct{}{}:
	default:
		tc.Close()
		l.full.note(h.host, "connections", maxConns)
		return
	}
	pc.release = func() { <-l.authed }
	// From here on the deadlines are http.Server's.
	h.conn.SetDeadline(time.Time{})
	select {
	case l.conns <- tc:
	case <-l.ctx.Done():
		tc.Close()
	}
}

// placedConn gives back its authenticated connection place, if it holds
// one, when it is first closed.
type placedConn struct {
	net.Conn
	once sync.Once
	// release gives the place back; set, once the connection holds one,
	// by the handshake's goroutine before it hands the connection on.
	release func()
}

func (c *placedConn) Close() error {
	c.once.Do(func() {
		if c.release != nil {
			c.release()
		}
	})
	return c.Conn.Close()
}

// handshake is a connection whose TLS handshake is under way.
type handshake struct {
	conn net.Conn // the raw connection: closing it ends the handshake
	host netip.Addr
}

// handshakes are the connections whose TLS handshake is under way, in the
// order they arrived, within a total and a per-host bound. The bounds never
// refuse a connection: they make the newest take the oldest one's place.
type handshakes struct {
	total, perHost int

	mu     sync.Mutex
	queue  []*handshake // oldest first
	byHost map[netip.Addr]int
}

func newHandshakes(total, perHost int) *handshakes {
	return &handshakes{total: total, perHost: perHost, byHost: map[netip.Addr]int{}}
}

// admit adds h. If h's host holds perHost handshakes already, its oldest
// one gives up its place; else if all places are held, the oldest of all
// does. admit returns the handshake that gave up its place, for the caller
// to close, or nil.
func (hs *handshakes) admit(h *handshake) (evicted *handshake) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	i := -1
	switch {
	case hs.byHost[h.host] >= hs.perHost:
		i = slices.IndexFunc(hs.queue, func(o *handshake) bool { return o.host == h.host })
	case len(hs.queue) >= hs.total:
		i = 0
	}
	if i >= 0 {
		evicted = hs.queue[i]
		hs.remove(i)
	}
	hs.queue = append(hs.queue, h)
	hs.byHost[h.host]++
	return evicted
}

// done removes h, whose handshake has ended, and reports whether it still
// held its place (false: a newer connection took it, and closed it).
func (hs *handshakes) done(h *handshake) bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	i := slices.Index(hs.queue, h)
	if i < 0 {
		return false
	}
	hs.remove(i)
	return true
}

// remove drops the i-th handshake; hs.mu is held.
func (hs *handshakes) remove(i int) {
	h := hs.queue[i]
	hs.queue = slices.Delete(hs.queue, i, i+1)
	if hs.byHost[h.host]--; hs.byHost[h.host] <= 0 {
		delete(hs.byHost, h.host)
	}
}

// refusalLog logs refused connections, each address at most once per
// refusalLogEvery: the next line after a quiet spell says how many were
// refused in between. It remembers at most maxRefusalAddrs addresses; the
// refusals of addresses past them are logged together, as from "others".
type refusalLog struct {
	log *slog.Logger
	msg string

	mu     sync.Mutex
	byAddr map[netip.Addr]*refusals
	others refusals
}

// refusals are one address's refusals since its last log line.
type refusals struct {
	logged time.Time // when its last line was written
	since  int       // refused since then, unlogged
}

func newRefusalLog(log *slog.Logger, msg string) *refusalLog {
	return &refusalLog{log: log, msg: msg, byAddr: map[netip.Addr]*refusals{}}
}

// note counts a refusal of a connection from a, and logs it with attrs
// unless a's last line is less than refusalLogEvery old.
func (r *refusalLog) note(a netip.Addr, attrs ...any) {
	now := time.Now()
	r.mu.Lock()
	e, from := r.byAddr[a], any(a)
	if e == nil {
		if len(r.byAddr) >= maxRefusalAddrs {
			maps.DeleteFunc(r.byAddr, func(_ netip.Addr, e *refusals) bool { return now.Sub(e.logged) >= refusalLogEvery })
		}
		if len(r.byAddr) < maxRefusalAddrs {
			e = &refusals{}
			r.byAddr[a] = e
		} else {
			e, from = &r.others, "others"
		}
	}
	if !e.logged.IsZero() && now.Sub(e.logged) < refusalLogEvery {
		e.since++
		r.mu.Unlock()
		return
	}
	since := e.since
	e.logged, e.since = now, 0
	r.mu.Unlock()
	r.log.Warn(r.msg, append([]any{"from", from, "refused_unlogged", since, "next_line_in", refusalLogEvery}, attrs...)...)
}
