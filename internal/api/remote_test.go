package api

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

type countingEncoder struct{ n atomic.Int32 }

func (e *countingEncoder) Encode(context.Context, []byte) (string, error) {
	e.n.Add(1)
	return "MUNGE:AAAA", nil
}

// The remote client signs the request it was asked to send and no other:
// a redirect from whoever answers at the address is not followed, so it
// cannot collect a credential for a request of its choosing.
func TestRemoteClientFollowsNoRedirect(t *testing.T) {
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.Path)
		http.Redirect(w, r, "/v1/jobs/7/events", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	enc := &countingEncoder{}
	c := NewRemoteClient(strings.TrimPrefix(srv.URL, "http://"), enc)
	_, err := c.Jobs(context.Background(), false)
	if err == nil {
		t.Fatal("a redirect was taken for an answer")
	}
	if n := enc.n.Load(); n != 1 || len(asked) != 1 {
		t.Errorf("signed %d requests, the server saw %v; want one, the client's own", n, asked)
	}
}

// The TCP listener holds at most perHost connections from one address
// (and total from all): the one past the bound is closed at once, and a
// place comes back when a connection closes.
func TestListenTCPBounds(t *testing.T) {
	l, err := ListenTCP("127.0.0.1:0", 10, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	dial()
	dial()
	first, second := <-accepted, <-accepted
	defer second.Close()
	// The third from the same host is closed by the listener unseen.
	third := dial()
	third.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := third.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("a third connection from one host was kept: %v", err)
	}
	first.Close() // its place comes back
	dial()
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(2 * time.Second):
		t.Error("no place came back when a connection closed")
	}
}
