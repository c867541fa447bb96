package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/gluster"
	"github.com/rsa-hpc/rsa/internal/pki"
	"github.com/rsa-hpc/rsa/internal/version"
)

// Client is the daemon's connection to the agent of one node.
//
// Every operation is idempotent: after any failure the daemon may send
// the same request again, and gets the result one success would have
// given. The client itself never retries; wrap it for that, retrying
// while Transient(err) holds and the daemon's deadline allows.
//
// Each kind of operation is sent over connections whose handshake checked
// that the agent's certificate names the node and carries a role that
// serves that kind (pki.Identity.ClientConfig): a storage operation never
// reaches a compute node's agent, even one that answers at the address
// dialled. Each connection is made with the daemon's identity as it is
// when the connection is dialled (a *pki.Live's: renewed certificates and
// new revocation lists apply from the next connection), and every answer
// is checked against the identity's revocation lists again, so that a
// connection made before an agent was revoked serves no more answers.
// Connections are made anew every 10 minutes, so that a certificate
// renewed on either side is used, and an expired one refused, within that
// time. A Client may be used concurrently.
type Client struct {
	// Epoch is the lease epoch of the active rsa serve of a failover
	// pair, sent with every request (EpochHeader); 0 sends none. Set it
	// before the first request.
	Epoch int64

	id   pki.Source
	node string
	base string
	// connAge is how long the client keeps using connections: then it
	// closes its idle ones, so that the next request shakes hands anew
	// and sees the agent's certificate as it is now (renewed, or
	// expired).
	connAge time.Duration
	// answerWait bounds one request from its sending to the end of its
	// answer (answerTimeout).
	answerWait time.Duration
	mu         sync.Mutex
	renewed    time.Time // when the idle connections were last closed for age
	// One HTTP client per kind of operation, each pooling its own
	// connections, checked for that kind in the handshake.
	status, storage, compute *http.Client
}

// Client-side bounds: reaching a node and proving who it is take a moment
// on a live network; beyond these the node is as good as down.
const (
	dialTimeout      = 10 * time.Second
	handshakeTimeout = 10 * time.Second
	// userTimeout (TCP_USER_TIMEOUT) aborts a connection whose sent data
	// stays unacknowledged that long: a request written into a pooled
	// connection to a node that went silent (its link cut) fails then,
	// instead of waiting out TCP's retransmissions (about 15 minutes)
	// and holding the operation, a teardown say, until the node is back.
	// An answer that takes long (a stage) is not affected: what was sent
	// is acknowledged.
	userTimeout = 10 * time.Second
	// clientIdle closes pooled connections before the agent does
	// (idleTimeout), so that a request is never sent on a connection the
	// agent is closing.
	clientIdle      = idleTimeout / 2
	maxResponseBody = 16 << 20
	// maxConnAge bounds how long the client uses a connection, which a
	// heartbeat would otherwise keep open for ever.
	maxConnAge = 10 * time.Minute
	// answerTimeout bounds a request (not a stage's stream) from its
	// sending to the end of its answer. The agent cannot write an answer
	// later than writeTimeout after it read the request, so waiting
	// longer waits for nothing: a connection whose answer never comes
	// (the agent's host stalled with the connection acknowledged, a
	// corrupted stream the TLS layer has not reported yet) fails then,
	// transient, instead of holding the operation for as long as the
	// connection lives.
	answerTimeout = writeTimeout + 30*time.Second
)

// NewClient returns a client of the agent of node, reached at addr
// (HOST:PORT; empty means node:DefaultPort), with the daemon's identity
// id (role control). It connects nothing yet.
func NewClient(id pki.Source, node, addr string) (*Client, error) {
	if addr == "" {
		addr = net.JoinHostPort(node, strconv.Itoa(DefaultPort))
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("agent address %q of node %s: %w; give HOST:PORT", addr, node, err)
	}
	if _, err := id.Current().ClientConfig(node); err != nil {
		return nil, err
	}
	c := &Client{id: id, node: node, base: "https://" + addr, connAge: maxConnAge, answerWait: answerTimeout, renewed: time.Now()}
	for _, k := range []struct {
		hc   **http.Client
		kind pki.Kind
	}{{&c.status, pki.KindStatus}, {&c.storage, pki.KindStorage}, {&c.compute, pki.KindCompute}} {
		*k.hc = &http.Client{
			Transport: &http.Transport{
				Proxy:               nil, // the cluster's own network, never a proxy
				DialTLSContext:      c.dialer(k.kind),
				IdleConnTimeout:     clientIdle,
				MaxIdleConnsPerHost: 4,
			},
			// An agent never redirects; following one would send the
			// operation somewhere the daemon did not choose.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return c, nil
}

// dialer returns the transport's dial for operations of kind: TCP within
// dialTimeout, then the TLS handshake within handshakeTimeout, with the
// configuration of the daemon's identity as it is now.
func (c *Client) dialer(kind pki.Kind) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		tc, err := c.id.Current().ClientConfig(c.node, kind)
		if err != nil {
			return nil, err
		}
		conn, err := (&net.Dialer{Timeout: dialTimeout, Control: setUserTimeout}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tconn := tls.Client(conn, tc)
		hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
		defer cancel()
		if err := tconn.HandshakeContext(hctx); err != nil {
			conn.Close()
			if ctx.Err() == nil && hctx.Err() != nil {
				return nil, errHandshakeTimeout{}
			}
			return nil, err
		}
		return tconn, nil
	}
}

// aged reports, once every connAge, that the client's connections are
// due to be made anew.
func (c *Client) aged() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.renewed) < c.connAge {
		return false
	}
	c.renewed = time.Now()
	return true
}

// setUserTimeout sets userTimeout on a connection's socket before it
// connects.
func setUserTimeout(_, _ string, rc syscall.RawConn) error {
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(userTimeout.Milliseconds()))
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("setting TCP_USER_TIMEOUT: %w", serr)
	}
	return nil
}

// errAnswerTimeout is a request whose answer did not come within the
// client's answerWait: a timeout, so Transient. The request may have
// been carried out; every operation is idempotent, so sending it again
// is safe.
type errAnswerTimeout struct{ wait time.Duration }

func (e errAnswerTimeout) Error() string {
	return fmt.Sprintf("no answer within %s (the agent answers within %s or not at all)", e.wait, writeTimeout)
}
func (errAnswerTimeout) Timeout() bool   { return true }
func (errAnswerTimeout) Temporary() bool { return true }

// errHandshakeTimeout is a TLS handshake that took longer than
// handshakeTimeout: a timeout, so Transient.
type errHandshakeTimeout struct{}

func (errHandshakeTimeout) Error() string   { return "TLS handshake timeout" }
func (errHandshakeTimeout) Timeout() bool   { return true }
func (errHandshakeTimeout) Temporary() bool { return true }

// Node is the node the client talks to.
func (c *Client) Node() string { return c.node }

// Close closes the client's idle connections. The client stays usable.
func (c *Client) Close() {
	for _, hc := range []*http.Client{c.status, c.storage, c.compute} {
		hc.CloseIdleConnections()
	}
}

// Status reads the node's state: RAM, bricks, mounts, and its boot id and
// the agent's start time, by which the daemon tells a rebooted node (every
// brick and mount gone) from a restarted agent (nothing lost), and the
// agent's certificate as the handshake verified it (Status.Certificate).
// Any agent role answers it.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	var st Status
	cs, err := c.send(ctx, c.status, http.MethodGet, "/v1/status", nil, &st)
	if err != nil {
		return nil, err
	}
	st.Certificate = cs.VerifiedChains[0][0]
	return &st, nil
}

// MakeBrick makes volume's brick on a storage node and returns it as the
// node's kernel has it (see Server.MakeBrick): idempotent for the same
// spec; another size or inode bound for an existing brick fails wrapping
// ErrConflict.
func (c *Client) MakeBrick(ctx context.Context, volume string, spec BrickSpec) (Brick, error) {
	if err := CheckVolume(volume); err != nil {
		return Brick{}, err
	}
	var b Brick
	err := c.do(ctx, c.storage, http.MethodPut, "/v1/bricks/"+volume, spec, &b)
	return b, err
}

// RemoveBrick unmounts volume's brick on a storage node, freeing its RAM
// (see Server.RemoveBrick): a brick that is not there is success; one in
// use fails wrapping ErrBusy, which is transient.
func (c *Client) RemoveBrick(ctx context.Context, volume string) error {
	if err := CheckVolume(volume); err != nil {
		return err
	}
	return c.do(ctx, c.storage, http.MethodDelete, "/v1/bricks/"+volume, nil, nil)
}

// Mount binds volume, mounted on a compute node (by the agent, from
// req.Servers, if it is not yet), over the job directory req.Target
// there, after the node checks it race-free (see Server.Mount):
// idempotent; a target that fails the checks wraps ErrInvalid with the
// reason, a volume not mounted on the node and no servers ErrNotFound.
func (c *Client) Mount(ctx context.Context, volume string, req MountRequest) (Mount, error) {
	if err := CheckVolume(volume); err != nil {
		return Mount{}, err
	}
	var m Mount
	err := c.do(ctx, c.compute, http.MethodPut, "/v1/mounts/"+volume, req, &m)
	return m, err
}

// Unmount removes volume's binds on a compute node: the one at target, or
// all of them if target is empty (see Server.Unmount). Nothing to remove
// is success. A bind in use fails wrapping ErrBusy (transient) unless
// detach is set, which detaches it instead.
func (c *Client) Unmount(ctx context.Context, volume, target string, detach bool) error {
	if err := CheckVolume(volume); err != nil {
		return err
	}
	q := url.Values{}
	if target != "" {
		q.Set("target", target)
	}
	if detach {
		q.Set("detach", "true")
	}
	path := "/v1/mounts/" + volume
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return c.do(ctx, c.compute, http.MethodDelete, path, nil, nil)
}

// Release takes volume off a compute node: every bind of it, its own mount
// at the node's volume root, and its gate (see Server.Release). Nothing
// there is success. In use, it fails wrapping ErrBusy (transient) unless
// detach is set, which detaches it instead.
func (c *Client) Release(ctx context.Context, volume string, detach bool) error {
	if err := CheckVolume(volume); err != nil {
		return err
	}
	path := "/v1/clients/" + volume
	if detach {
		path += "?detach=1"
	}
	return c.do(ctx, c.compute, http.MethodDelete, path, nil, nil)
}

// MakeVolume makes volume over spec's bricks through the glusterd of a
// storage node of the pool, sets its options and starts it, and returns
// it as glusterd has it (see Server.MakeVolume): idempotent; a volume of
// the name over other bricks fails wrapping ErrConflict.
func (c *Client) MakeVolume(ctx context.Context, volume string, spec VolumeSpec) (Volume, error) {
	if err := CheckVolume(volume); err != nil {
		return Volume{}, err
	}
	var v Volume
	err := c.do(ctx, c.storage, http.MethodPut, "/v1/volumes/"+volume, spec, &v)
	return v, err
}

// RemoveVolume stops (force) and deletes volume through a storage node's
// glusterd; an absent volume is success. The bricks keep the data until
// they are removed.
func (c *Client) RemoveVolume(ctx context.Context, volume string) error {
	if err := CheckVolume(volume); err != nil {
		return err
	}
	return c.do(ctx, c.storage, http.MethodDelete, "/v1/volumes/"+volume, nil, nil)
}

// ReconnectPeers closes the connections between a storage node's
// glusterd and its peers', for a new handshake with each (see
// Server.ReconnectPeers), and says how many it closed.
func (c *Client) ReconnectPeers(ctx context.Context) (int, error) {
	var r Reconnected
	err := c.do(ctx, c.storage, http.MethodPost, "/v1/peers/reconnect", nil, &r)
	return r.Closed, err
}

// SealVolume admits to volume the hosts spec names alone and makes it
// read-only for every client, mounted already or not (Server.SealVolume);
// a volume not in the pool fails wrapping ErrNotFound.
func (c *Client) SealVolume(ctx context.Context, volume string, spec SealSpec) error {
	if err := CheckVolume(volume); err != nil {
		return err
	}
	return c.do(ctx, c.storage, http.MethodPost, "/v1/volumes/"+volume+"/seal", spec, nil)
}

// Volumes lists the jobs' volumes of a storage node's trusted pool, by job.
func (c *Client) Volumes(ctx context.Context) ([]Volume, error) {
	var vs []Volume
	if err := c.do(ctx, c.storage, http.MethodGet, "/v1/volumes", nil, &vs); err != nil {
		return nil, err
	}
	return vs, nil
}

// BrickStatus is glusterd's view of volume's brick processes (see
// Server.BrickStatus).
func (c *Client) BrickStatus(ctx context.Context, volume string) ([]gluster.BrickState, error) {
	var bs []gluster.BrickState
	if err := c.do(ctx, c.storage, http.MethodGet, "/v1/volumes/"+volume+"/bricks", nil, &bs); err != nil {
		return nil, err
	}
	return bs, nil
}

// VolumeProfile is volume's file operations since it was made, summed
// over its bricks, the most called first (see Server.VolumeProfile): a
// volume made without VolumeSpec.Profile fails wrapping ErrInvalid.
func (c *Client) VolumeProfile(ctx context.Context, volume string) ([]gluster.FopStat, error) {
	if err := CheckVolume(volume); err != nil {
		return nil, err
	}
	var fs []gluster.FopStat
	if err := c.do(ctx, c.storage, http.MethodGet, "/v1/volumes/"+volume+"/profile", nil, &fs); err != nil {
		return nil, err
	}
	return fs, nil
}

// Peers is the node's glusterd's view of the other members of its
// trusted pool (see Server.Peers).
func (c *Client) Peers(ctx context.Context) ([]gluster.Peer, error) {
	var ps []gluster.Peer
	if err := c.do(ctx, c.storage, http.MethodGet, "/v1/peers", nil, &ps); err != nil {
		return nil, err
	}
	return ps, nil
}

// Error is an agent's refusal or failure, as it answered.
type Error struct {
	Node   string // the node whose agent answered
	Status int    // the HTTP status
	Code   string // the agent's code: "invalid", "busy", ...
	Msg    string // the agent's message: the problem and the fix
	// Gluster is the gluster command's failure behind it, if the agent
	// said so; nil otherwise.
	Gluster *gluster.Error
}

func (e *Error) Error() string { return fmt.Sprintf("agent on %s: %s", e.Node, e.Msg) }

// Is makes errors.Is(err, ErrBusy) and the other kinds hold for the
// agent's answers of that kind.
func (e *Error) Is(target error) bool {
	k := kindOf(e.Code)
	return k != nil && k == target
}

// Unwrap is the gluster command's failure behind the answer, so that
// errors.Is and errors.As reach it (gluster.ErrPeersDown,
// *gluster.Error); nil when the agent named none.
func (e *Error) Unwrap() error {
	if e.Gluster == nil {
		return nil
	}
	return e.Gluster
}

// answerError is the *Error of node's agent's answer resp, other than
// 200, to method path, whose body is data.
func answerError(node, method, path string, resp *http.Response, data []byte) *Error {
	var eb errorBody
	if json.Unmarshal(data, &eb) != nil || eb.Error == "" {
		eb = errorBody{Error: fmt.Sprintf("%s %s: %s", method, path, resp.Status), Code: codeInternal}
	}
	return &Error{Node: node, Status: resp.StatusCode, Code: eb.Code, Msg: eb.Error, Gluster: eb.Gluster}
}

// do sends one request and decodes the answer into out (if not nil).
func (c *Client) do(ctx context.Context, hc *http.Client, method, path string, in, out any) error {
	_, err := c.send(ctx, hc, method, path, in, out)
	return err
}

// send is do, returning the state of the connection the answer came on:
// its peer's certificate verified, and not revoked.
func (c *Client) send(ctx context.Context, hc *http.Client, method, path string, in, out any) (*tls.ConnectionState, error) {
	caller := ctx
	ctx, cancel := context.WithTimeoutCause(ctx, c.answerWait, errAnswerTimeout{c.answerWait})
	defer cancel()
	cs, err := c.sendOnce(ctx, hc, method, path, in, out)
	if err != nil && caller.Err() == nil && ctx.Err() != nil {
		// The answer's deadline, not the caller's: say so, transient.
		p, _, _ := strings.Cut(path, "?")
		return nil, fmt.Errorf("agent on %s: %s %s: %w", c.node, method, p, context.Cause(ctx))
	}
	return cs, err
}

// sendOnce is send within ctx.
func (c *Client) sendOnce(ctx context.Context, hc *http.Client, method, path string, in, out any) (*tls.ConnectionState, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("agent on %s: encoding the request: %w", c.node, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("agent on %s: %w", c.node, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set(version.Header, version.String())
	if c.Epoch > 0 {
		req.Header.Set(EpochHeader, strconv.FormatInt(c.Epoch, 10))
	}
	if c.aged() {
		c.Close()
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("agent on %s: %s %s: %w", c.node, method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	// The handshake checked the agent against the lists of its time; a
	// pooled connection may be older than the agent's revocation.
	if err := c.id.Current().CheckPeer(resp.TLS); err != nil {
		c.Close()
		return nil, fmt.Errorf("agent on %s: %s %s: %w", c.node, method, req.URL.Path, err)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody+1))
	if err == nil && len(data) > maxResponseBody {
		err = fmt.Errorf("answer longer than %d bytes", maxResponseBody)
	}
	if err != nil {
		return nil, fmt.Errorf("agent on %s: %s %s: reading the answer: %w", c.node, method, req.URL.Path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, answerError(c.node, method, req.URL.Path, resp, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return nil, fmt.Errorf("agent on %s: %s %s: decoding the answer: %w", c.node, method, req.URL.Path, err)
		}
	}
	return resp.TLS, nil
}

// Transient reports whether the same request, sent again later, may
// succeed without anyone changing anything: the agent did not answer (the
// node or its agent is down or restarting, the connection broke or timed
// out) or it answered ErrBusy. Everything else is permanent until someone
// acts: the agent's refusals (ErrInvalid, ErrForbidden, ErrNotFound,
// ErrConflict) and failures (code "internal"), a TLS handshake that failed
// on a certificate or a role, and the caller's own context ending.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, ErrBusy) {
		return true
	}
	if ae := (*Error)(nil); errors.As(err, &ae) {
		return false
	}
	// Trust failures: the certificates are wrong, and stay wrong.
	var (
		verr  *tls.CertificateVerificationError
		uaerr x509.UnknownAuthorityError
		herr  x509.HostnameError
		cerr  x509.CertificateInvalidError
		alert tls.AlertError
	)
	if errors.As(err, &verr) || errors.As(err, &uaerr) || errors.As(err, &herr) || errors.As(err, &cerr) || errors.As(err, &alert) {
		return false
	}
	if oe := (*net.OpError)(nil); errors.As(err, &oe) {
		if oe.Op == "remote error" { // a TLS alert from the agent: it refused our certificate
			return false
		}
		if oe.Op == "dial" {
			if de := (*net.DNSError)(nil); errors.As(err, &de) && de.IsNotFound {
				return false // a node name that does not resolve
			}
			return true
		}
	}
	if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
