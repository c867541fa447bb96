package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
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
