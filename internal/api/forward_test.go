package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rsa-hpc/rsa/internal/munge"
)

// fakeMunge stands for munged in unit tests: its credentials say uid
// and carry the payload in the clear.
type fakeMunge struct{ uid uint32 }

type fakeCred struct {
	UID     uint32
	Payload []byte
}

func (f fakeMunge) Encode(_ context.Context, payload []byte) (string, error) {
	b, _ := json.Marshal(fakeCred{UID: f.uid, Payload: payload})
	return "MUNGE:" + base64.StdEncoding.EncodeToString(b), nil
}

func (fakeMunge) Decode(_ context.Context, cred string) (*munge.Cred, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(cred, "MUNGE:"))
	var c fakeCred
	if err != nil || json.Unmarshal(b, &c) != nil {
		return nil, munge.ErrInvalid
	}
	return &munge.Cred{UID: c.UID, Payload: c.Payload}, nil
}

// hookRecorder is a Service that answers hooks and records who asked.
type hookRecorder struct {
	Service
	mu    sync.Mutex
	peers []Peer
	args  [][]string
}

func (h *hookRecorder) Hook(_ context.Context, p Peer, r HookRequest) (*HookReply, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.peers = append(h.peers, p)
	h.args = append(h.args, r.Args)
	return &HookReply{Verdict: Success, Message: "ok"}, nil
}

func serveOn(t *testing.T, srv *http.Server, ln net.Listener) {
	t.Helper()
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// TestForwarder: a standby's socket hands each request to the active
// rsa serve for the caller SO_PEERCRED saw, and the active one believes
// that caller only from root on the other control host, for the request
// the credential was made for.
func TestForwarder(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := &hookRecorder{}
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, NewPeerServer(svc, fakeMunge{}, []string{"127.0.0.1"}, log), pl)
	active := pl.Addr().String()

	sock := filepath.Join(t.TempDir(), "rsa.sock")
	sl, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	where := func() (string, error) { return active, nil }
	serveOn(t, NewForwarder(func() (string, error) { return where() }, fakeMunge{uid: 0}, log), sl)

	ctx := context.Background()
	c := NewClient(sock)
	rep, err := c.Hook(ctx, HookRequest{Hook: "job_process", Args: []string{"/x/script", "1001"}})
	if err != nil || rep.Verdict != Success {
		t.Fatalf("forwarded hook: %+v %v", rep, err)
	}
	want := Peer{UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}
	if len(svc.peers) != 1 || svc.peers[0] != want || strings.Join(svc.args[0], " ") != "/x/script 1001" {
		t.Fatalf("the active one saw %+v with %v, want %+v with the hook's args", svc.peers, svc.args, want)
	}

	// With no active one, or one that does not answer, the caller is
	// told to wait (Unreachable), as for a restart.
	for _, tc := range []struct {
		name  string
		where func() (string, error)
	}{
		{"no active", func() (string, error) { return "", errors.New("no rsa serve holds the lease") }},
		{"active gone", func() (string, error) {
			l, _ := net.Listen("tcp", "127.0.0.1:0")
			addr := l.Addr().String()
			l.Close()
			return addr, nil
		}},
	} {
		where = tc.where
		_, err := c.Hook(ctx, HookRequest{Hook: "job_process", Args: []string{"/x/script", "1001"}})
		if !Unreachable(err) || !strings.Contains(err.Error(), "standby") {
			t.Errorf("%s: %v, want a 503 from the standby that says so", tc.name, err)
		}
	}
	where = func() (string, error) { return active, nil }

	// Straight to the active one's port, without the standby.
	direct := func(cred, caller, body string) int {
		req, _ := http.NewRequest("POST", "http://"+active+"/v1/hooks", strings.NewReader(body))
		if cred != "" {
			req.Header.Set("Authorization", "MUNGE "+cred)
		}
		req.Header.Set(ForwardHeader, caller)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	body := `{"hook":"job_process","args":["/x/script","1001"]}`
	sign := func(uid uint32, caller, body string) string {
		c, _ := fakeMunge{uid: uid}.Encode(ctx, ForwardPayload("POST", "/v1/hooks", caller, []byte(body)))
		return c
	}
	for _, tc := range []struct {
		name       string
		cred       string
		caller     string
		body       string
		wantStatus int
	}{
		{"root's credential for this request", sign(0, "uid=0 gid=0", body), "uid=0 gid=0", body, http.StatusOK},
		{"no credential", "", "uid=0 gid=0", body, http.StatusUnauthorized},
		{"garbage credential", "MUNGE:!!", "uid=0 gid=0", body, http.StatusUnauthorized},
		{"a user's credential", sign(1000, "uid=0 gid=0", body), "uid=0 gid=0", body, http.StatusForbidden},
		{"made for another caller", sign(0, "uid=1000 gid=1000", body), "uid=0 gid=0", body, http.StatusForbidden},
		{"made for another body", sign(0, "uid=0 gid=0", body), "uid=0 gid=0", `{"hook":"teardown","args":["7"]}`, http.StatusForbidden},
		{"a caller that does not parse", sign(0, "uid=0 gid=0 root", body), "uid=0 gid=0 root", body, http.StatusBadRequest},
		{"a remote user's credential", func() string {
			c, _ := fakeMunge{uid: 0}.Encode(ctx, RequestPayload("POST", "/v1/hooks", []byte(body)))
			return c
		}(), "uid=0 gid=0", body, http.StatusForbidden},
	} {
		if got := direct(tc.cred, tc.caller, tc.body); got != tc.wantStatus {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.wantStatus)
		}
	}

	// From an address that is not the other control host's: refused
	// whatever the credential.
	ol, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, NewPeerServer(svc, fakeMunge{}, []string{"10.9.9.9"}, log), ol)
	req, _ := http.NewRequest("POST", "http://"+ol.Addr().String()+"/v1/hooks", strings.NewReader(body))
	req.Header.Set("Authorization", "MUNGE "+sign(0, "uid=0 gid=0", body))
	req.Header.Set(ForwardHeader, "uid=0 gid=0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("from another address: status %d, want 403", resp.StatusCode)
	}
}
