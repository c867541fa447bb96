package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rsa-hpc/rsa/internal/job"
)

// Client talks to the daemon's socket (or, from another host, to its
// remote access: NewRemoteClient).
type Client struct {
	Socket string // where the daemon is, for messages
	base   string // the URL requests go to; "" is the socket's
	// others are the URLs of the other control host of a failover pair
	// (NewRemoteClient), tried when base cannot be reached; the one that
	// answered becomes base.
	others []string
	mu     sync.Mutex
	http   *http.Client
}

// NewClient returns a client for the socket at path.
func NewClient(path string) *Client {
	return &Client{Socket: path, http: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}}}
}

// Unreachable reports whether err means the daemon is not there (not
// started, restarting): worth retrying, unlike a refusal.
// A daemon killed while a request is on its way may leave the client a
// broken pipe (EPIPE: the request was being written to the dead socket),
// a reset or an early EOF; one not yet listening, a refused or missing
// socket. A daemon that is shutting down answers 503 to what it can no
// longer take: the next one will.
func Unreachable(err error) bool {
	var e *Error
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		(errors.As(err, &e) && e.Status == http.StatusServiceUnavailable) ||
		// A connection the daemon closed before the request went out
		// (past its limits, at once): net/http reports it by this text
		// alone (its error value is not exported).
		err != nil && strings.Contains(err.Error(), "http: server closed idle connection")
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var data []byte
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		data = b
	}
	c.mu.Lock()
	bases := append([]string{c.base}, c.others...)
	c.mu.Unlock()
	var resp *http.Response
	var err error
	for i, base := range bases {
		if base == "" {
			base = "http://rsa"
		}
		var rd io.Reader
		if data != nil {
			rd = bytes.NewReader(data)
		}
		req, rerr := http.NewRequestWithContext(ctx, method, base+path, rd)
		if rerr != nil {
			return rerr
		}
		resp, err = c.http.Do(req)
		if err == nil || !notListening(err) || i == len(bases)-1 {
			if err == nil && i > 0 {
				c.prefer(i, bases)
			}
			break
		}
	}
	if err != nil {
		switch {
		case errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT):
			return fmt.Errorf("cannot reach the rsa daemon at %s (is `rsa serve` running?): %w", c.Socket, err)
		case Unreachable(err):
			// The daemon closes at once a connection past its limits.
			return fmt.Errorf("the rsa daemon at %s closed the connection (restarting, or you hold too many connections to it): %w", c.Socket, err)
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&e)
		if e.Error == "" {
			e.Error = resp.Status
		}
		return &Error{Status: resp.StatusCode, Msg: e.Error}
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// notListening reports whether err means no daemon listens where a
// request went: a host refused the connection, or could not be reached.
func notListening(err error) bool {
	var op *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH) || (errors.As(err, &op) && op.Op == "dial")
}

// prefer makes bases[i], which answered, the first tried from now on.
func (c *Client) prefer(i int, bases []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.base = bases[i]
	c.others = append(slices.Clone(bases[:i]), bases[i+1:]...)
}

func (c *Client) Version(ctx context.Context) (VersionInfo, error) {
	var v VersionInfo
	return v, c.do(ctx, "GET", "/v1/version", nil, &v)
}

func (c *Client) Submit(ctx context.Context, r SubmitRequest) (*JobView, error) {
	var j JobView
	return &j, c.do(ctx, "POST", "/v1/jobs", r, &j)
}

func (c *Client) Jobs(ctx context.Context, all bool) ([]JobView, error) {
	var out struct {
		Jobs []JobView `json:"jobs"`
	}
	q := ""
	if all {
		q = "?all=1"
	}
	return out.Jobs, c.do(ctx, "GET", "/v1/jobs"+q, nil, &out)
}

// Job returns job id once its version exceeds after, or after wait.
func (c *Client) Job(ctx context.Context, id, after int64, wait time.Duration) (*JobView, error) {
	var j JobView
	q := url.Values{}
	q.Set("after", strconv.FormatInt(after, 10))
	q.Set("wait", wait.String())
	return &j, c.do(ctx, "GET", fmt.Sprintf("/v1/jobs/%d?%s", id, q.Encode()), nil, &j)
}

func (c *Client) Events(ctx context.Context, id int64) ([]job.Event, string, error) {
	var out struct {
		Events   []job.Event `json:"events"`
		StageLog string      `json:"stage_log"`
	}
	err := c.do(ctx, "GET", fmt.Sprintf("/v1/jobs/%d/events", id), nil, &out)
	return out.Events, out.StageLog, err
}

// Act applies a verb (start, finish, cancel, retry, discard) to a job.
func (c *Client) Act(ctx context.Context, id int64, verb string, o ActOptions) (*JobView, error) {
	var j JobView
	q := url.Values{}
	if o.Attach {
		q.Set("attach", "1")
	}
	if o.To != "" {
		q.Set("to", o.To)
	}
	path := fmt.Sprintf("/v1/jobs/%d/%s", id, verb)
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return &j, c.do(ctx, "POST", path, nil, &j)
}

func (c *Client) Nodes(ctx context.Context) ([]NodeView, error) {
	var out struct {
		Nodes []NodeView `json:"nodes"`
	}
	return out.Nodes, c.do(ctx, "GET", "/v1/nodes", nil, &out)
}

// Certificates are the daemon's TLS certificate and each agent's, as the
// daemon last saw them.
func (c *Client) Certificates(ctx context.Context) ([]CertificateView, error) {
	var out struct {
		Certificates []CertificateView `json:"certificates"`
	}
	return out.Certificates, c.do(ctx, "GET", "/v1/certificates", nil, &out)
}

// Settle forgets the debts owed on node, which will not answer again.
func (c *Client) Settle(ctx context.Context, node string, r SettleRequest) (*SettleReport, error) {
	var out SettleReport
	return &out, c.do(ctx, http.MethodPost, "/v1/nodes/"+url.PathEscape(node)+"/settle", r, &out)
}

// Drain drains node (r.Drain) or returns it to service.
func (c *Client) Drain(ctx context.Context, node string, r DrainRequest) (*NodeView, error) {
	var out NodeView
	return &out, c.do(ctx, http.MethodPost, "/v1/nodes/"+url.PathEscape(node)+"/drain", r, &out)
}

func (c *Client) GC(ctx context.Context, req GCRequest) (*GCReport, error) {
	var r GCReport
	var body any
	if req != (GCRequest{}) {
		body = req
	}
	return &r, c.do(ctx, "POST", "/v1/gc", body, &r)
}

// Quarantined are the RAMDISKs that hold data no job record knows of.
func (c *Client) Quarantined(ctx context.Context) ([]QuarantinedView, error) {
	var out struct {
		Quarantined []QuarantinedView `json:"quarantined"`
	}
	return out.Quarantined, c.do(ctx, "GET", "/v1/quarantined", nil, &out)
}

// Hook calls a scheduler hook.
func (c *Client) Hook(ctx context.Context, r HookRequest) (*HookReply, error) {
	var out HookReply
	err := c.do(ctx, http.MethodPost, "/v1/hooks", r, &out)
	return &out, err
}
