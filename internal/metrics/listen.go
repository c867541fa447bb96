package metrics

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"

	"github.com/rsa-hpc/rsa/internal/api"
)

// The address of [metrics] listen serves the metrics and the dashboard
// (and rsa agent's --metrics-listen the agent's metrics) to whoever
// reaches it, without authentication: nothing there changes anything, and
// nothing there is private to a user. Two things keep it from being used
// against the site: its connections are bounded, in all and per source
// address, so that no one host takes every place (Listen); and a request
// must name this server in its Host header (CheckHost), so that a page of
// another site cannot read it through DNS rebinding.

// maxConns bounds the open connections to the address: Prometheus and a
// few browsers. maxConnsPerHost bounds those of one source address: a
// Prometheus server and a few browser windows (a browser opens up to six
// to a site). On a loopback address every client is the one host
// 127.0.0.1, held to maxConnsPerHost.
const (
	maxConns        = 64
	maxConnsPerHost = maxConns / 4
)

// Listen listens on addr (metrics.listen, host:port) for the metrics and
// the dashboard, holding at most maxConns connections open and
// maxConnsPerHost from one source address; one past either bound is
// closed as soon as it is accepted.
func Listen(addr string) (net.Listener, error) { return ListenAs("metrics.listen", addr) }

// ListenAs is Listen for the setting named what (rsa agent's
// --metrics-listen), which its error names.
func ListenAs(what, addr string) (net.Listener, error) {
	l, err := api.ListenTCP(addr, maxConns, maxConnsPerHost)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w (free the port, or choose another address)", what, addr, err)
	}
	return l, nil
}

// CheckHost passes on the requests whose Host header names this server,
// and answers every other one 421 Misdirected Request. A Host names this
// server when its host part is
//
//   - the address the connection came to (the listen address; for one
//     such as 0.0.0.0, the address the client reached),
//   - localhost, 127.0.0.1 or ::1,
//   - the machine's hostname (os.Hostname, read once here) or one of
//     names, the site's other names for the host,
//
// and its port, if it has one, is the port the connection came to. Names
// are compared without case and without a trailing dot.
//
// No other name is taken because of DNS rebinding: a page of another site
// has its browser connect here under a name of the attacker's, which their
// DNS points at this address once the page is loaded; to the browser the
// answer is then the page's own, which it may read. The Host header is the
// one thing in such a request that says so. A request with no Host at all
// (HTTP/1.0) is passed on: browsers always send one. A request that came
// by no connection (no http.LocalAddrContextKey) is refused.
func CheckHost(next http.Handler, names ...string) http.Handler {
	ok := []string{"localhost"}
	if h, err := os.Hostname(); err == nil && h != "" {
		ok = append(ok, canonical(h))
	}
	for _, n := range names {
		ok = append(ok, canonical(n))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host == "" || namesServer(r, ok) {
			next.ServeHTTP(w, r)
			return
		}
		http.Error(w, fmt.Sprintf("misdirected request: Host %q is not a name of this server; "+
			"reach it by its address, localhost or its hostname (other names are refused: "+
			"through them a page of another site could read this one by DNS rebinding)", r.Host),
			http.StatusMisdirectedRequest)
	})
}

// namesServer reports whether r's Host names the server r came to,
// by its address or one of names (canonical).
func namesServer(r *http.Request, names []string) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	at, err := netip.ParseAddrPort(local.String())
	if err != nil {
		return false
	}
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		host, port = r.Host, "" // no port
	}
	if port != "" && port != fmt.Sprint(at.Port()) {
		return false
	}
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		ip = ip.Unmap().WithZone("")
		return ip == at.Addr().Unmap().WithZone("") || ip == netip.IPv6Loopback() || ip == netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	return slices.Contains(names, canonical(host))
}

// canonical is a host name as CheckHost compares it.
func canonical(name string) string {
	return strings.ToLower(strings.TrimSuffix(name, "."))
}
