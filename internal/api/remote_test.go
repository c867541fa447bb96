package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/munge"
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

// heldDecoder holds every credential until release is closed, telling
// entered of each it holds, then refuses it.
type heldDecoder struct {
	entered chan string
	release chan struct{}
}

func (d *heldDecoder) Decode(ctx context.Context, cred string) (*munge.Cred, error) {
	d.entered <- cred
	select {
	case <-d.release:
	case <-ctx.Done():
	}
	return nil, fmt.Errorf("%w: test", munge.ErrInvalid)
}

// One login node cannot take every place among the credentials checked at
// once: with its requests waiting on munged, another host's request is
// still checked, and the first holds at most maxDecodingPerHost places.
func TestRemoteDecodingBoundPerHost(t *testing.T) {
	dec := &heldDecoder{entered: make(chan string, 64), release: make(chan struct{})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewRemoteServer(nil, dec, Limits{}, slog.New(slog.DiscardHandler))
	go srv.Serve(l)
	defer srv.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	release := sync.OnceFunc(func() { close(dec.release) })
	defer release() // before wg.Wait: the held requests must end first

	// from sends a request from source address ip, signed cred.
	from := func(ip, cred string) <-chan int {
		tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}).DialContext}
		t.Cleanup(tr.CloseIdleConnections)
		req, err := http.NewRequest(http.MethodGet, "http://"+l.Addr().String()+"/v1/jobs", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", authScheme+" "+cred)
		status := make(chan int, 1)
		wg.Go(func() {
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Errorf("request from %s: %v", ip, err)
				status <- 0
				return
			}
			resp.Body.Close()
			status <- resp.StatusCode
		})
		return status
	}
	var first []<-chan int
	for i := range maxDecoding {
		first = append(first, from("127.0.0.2", fmt.Sprintf("A-%d", i)))
	}
	inA := 0
	for inA < maxDecodingPerHost {
		select {
		case <-dec.entered:
			inA++
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of one host's requests reached munged", inA)
		}
	}
	time.Sleep(200 * time.Millisecond) // room for any more to get in
	other := from("127.0.0.3", "B")
	for got := false; !got; {
		select {
		case cred := <-dec.entered:
			if got = cred == "B"; !got {
				inA++
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("another host's request waited behind %d of one host's: one login node holds every place among the credentials checked at once", inA)
		}
	}
	if inA > maxDecodingPerHost {
		t.Errorf("one host holds %d places among the credentials checked at once, want at most %d", inA, maxDecodingPerHost)
	}
	release()
	// Every request is answered once its place comes: the places come
	// back when a check ends.
	for i, st := range append(first, other) {
		select {
		case s := <-st:
			if s != http.StatusUnauthorized {
				t.Errorf("request %d: %d, want 401 (the test's refusal)", i, s)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("request %d never answered: a place was not given back", i)
		}
	}
}

// A remote client given both control hosts of a failover pair reaches the
// one that serves (the standby serves no remote access), and asks it
// first from then on.
func TestRemoteClientFailover(t *testing.T) {
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Write([]byte(`{"version":"test"}`))
	}))
	defer srv.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	standby := l.Addr().String()
	l.Close() // nothing listens there
	active := strings.TrimPrefix(srv.URL, "http://")
	c := NewRemoteClient(standby+", "+active, &countingEncoder{})
	for i := range 2 {
		v, err := c.Version(context.Background())
		if err != nil || v.Version != "test" {
			t.Fatalf("request %d: %+v %v", i+1, v, err)
		}
	}
	if c.base != "http://"+active || asked.Load() != 2 {
		t.Errorf("after two requests the client asks %s first (the server saw %d); want the active one", c.base, asked.Load())
	}
	// Neither answers: the error names where it asked.
	srv.Close()
	if _, err := c.Version(context.Background()); err == nil || !strings.Contains(err.Error(), standby) {
		t.Errorf("with neither serving: %v", err)
	}
}
