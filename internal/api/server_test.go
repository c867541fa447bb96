package api

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// uidFromAddr is a fake peer function: each test client binds its socket
// to a name saying which uid it stands for ("uid-1001-3"), so one process
// can play many users.
func uidFromAddr(c net.Conn) (Peer, error) {
	f := strings.Split(filepath.Base(c.RemoteAddr().String()), "-")
	if len(f) != 3 {
		return Peer{}, fmt.Errorf("unnamed client %q", c.RemoteAddr())
	}
	uid, err := strconv.ParseUint(f[1], 10, 32)
	return Peer{UID: uint32(uid)}, err
}

func TestLimitListener(t *testing.T) {
	type step struct {
		uid   uint32
		close bool // close the uid's last admitted connection, server side
		want  bool // admitted
	}
	cases := []struct {
		name  string
		lim   Limits
		steps []step
		// logged is how many refusals of each uid the log reports.
		logged map[uint32]int
	}{
		{"per user and total", Limits{PerUser: 2, Total: 6}, []step{
			{uid: 1001, want: true}, {uid: 1001, want: true},
			// Past PerUser, logged once; another user still gets in.
			{uid: 1001, want: false}, {uid: 1001, want: false},
			{uid: 1002, want: true},
			// Root goes past PerUser, but Total holds everyone.
			{uid: 0, want: true}, {uid: 0, want: true}, {uid: 0, want: true},
			{uid: 1003, want: false}, {uid: 0, want: false},
			{uid: 1001, close: true},
			{uid: 1001, want: true}, // a closed connection frees its place
			{uid: 1001, want: false},
		}, map[uint32]int{1001: 1, 1003: 1, 0: 1}},
		{"trusted uid held to total only", Limits{PerUser: 1, Total: 4, Trusted: []uint32{64030}}, []step{
			{uid: 64030, want: true}, {uid: 64030, want: true}, {uid: 64030, want: true},
			{uid: 1001, want: true}, {uid: 1001, want: false},
			{uid: 64030, want: false},
		}, map[uint32]int{1001: 1, 64030: 1}},
		{"zero limits are the defaults", Limits{}, func() []step {
			var s []step
			for range DefaultPerUser {
				s = append(s, step{uid: 1001, want: true})
			}
			return append(s, step{uid: 1001, want: false}, step{uid: 1002, want: true})
		}(), map[uint32]int{1001: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			raw, err := net.Listen("unix", filepath.Join(dir, "sock"))
			if err != nil {
				t.Fatal(err)
			}
			var logs testutil.SyncBuffer
			l := newLimitListener(raw, c.lim, slog.New(slog.NewTextHandler(&logs, nil)), uidFromAddr)
			defer l.Close()
			accepted := make(chan net.Conn)
			go func() {
				for {
					sc, err := l.Accept()
					if err != nil {
						return
					}
					accepted <- sc
				}
			}()
			held := map[uint32][]net.Conn{} // server side, per uid
			for i, s := range c.steps {
				if s.close {
					n := len(held[s.uid])
					held[s.uid][n-1].Close()
					held[s.uid] = held[s.uid][:n-1]
					continue
				}
				laddr := &net.UnixAddr{Net: "unix", Name: filepath.Join(dir, fmt.Sprintf("uid-%d-%d", s.uid, i))}
				cc, err := net.DialUnix("unix", laddr, raw.Addr().(*net.UnixAddr))
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				defer cc.Close()
				refused := make(chan struct{})
				go func() { cc.Read(make([]byte, 1)); close(refused) }()
				select {
				case sc := <-accepted:
					if !s.want {
						t.Fatalf("step %d: uid %d was admitted, want refused", i, s.uid)
					}
					defer sc.Close()
					held[s.uid] = append(held[s.uid], sc)
				case <-refused:
					if s.want {
						t.Fatalf("step %d: uid %d was refused, want admitted", i, s.uid)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("step %d: neither admitted nor refused", i)
				}
			}
			for uid, n := range c.logged {
				if got := strings.Count(logs.String(), fmt.Sprintf("uid=%d ", uid)); got != n {
					t.Errorf("refusals of uid %d logged %d times, want %d:\n%s", uid, got, n, logs.String())
				}
			}
		})
	}
}

// admittedByte is what TestLimitListenerPeerCred's server writes on each
// connection it accepts, at once. A refused connection is closed by the
// listener before Accept returns, so its client reads the end of the
// stream instead: the client is told which it is, never left to guess
// from a silence that a slow server also makes.
const admittedByte = 'A'

// readAdmission reads a connection's first byte from
// TestLimitListenerPeerCred's server: "admitted", "refused" (closed
// unanswered), or what else it found. The deadline only ends a wait that
// would never end; it is far above the moment it takes the server to
// answer.
func readAdmission(c net.Conn) string {
	c.SetReadDeadline(time.Now().Add(time.Minute))
	b := make([]byte, 1)
	_, err := io.ReadFull(c, b)
	switch {
	case err == nil && b[0] == admittedByte:
		return "admitted"
	case errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET):
		return "refused"
	case err == nil:
		return fmt.Sprintf("answered %q", b)
	}
	return fmt.Sprintf("no answer (%v)", err)
}

// TestLimitListenerPeerCred holds a real user to the cap by the
// credentials the kernel reports: a child running as the test user opens
// one connection past its cap and sees it refused, while root still gets
// in.
func TestLimitListenerPeerCred(t *testing.T) {
	u := testutil.EnsureUser(t)
	dir := testutil.TempDir(t)
	// The child is this test binary, where the test user can run it.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "api.test")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "rsa.sock")
	l, err := ListenConfig{Limits: Limits{PerUser: 2}}.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	peers := make(chan Peer, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			// A failed write leaves the client without its answer,
			// which fails the test there.
			c.Write([]byte{admittedByte})
			peers <- c.(*peerConn).peer
		}
	}()

	child := exec.Command(bin, "-test.run=^TestHelperDial$")
	child.Env = []string{"RSA_TEST_DIAL=" + sock, "RSA_TEST_DIALS=3"}
	child.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.UID, Gid: u.GID}}
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Wait()
	defer child.Process.Kill()
	sc := bufio.NewScanner(out)
	var got []string
	for len(got) < 3 && sc.Scan() {
		got = append(got, sc.Text())
	}
	if want := "admitted admitted refused"; strings.Join(got, " ") != want {
		t.Fatalf("the test user's connections: %q, want %q", got, want)
	}
	for range 2 {
		if p := <-peers; p.UID != u.UID {
			t.Errorf("admitted peer uid %d, want the test user's %d", p.UID, u.UID)
		}
	}
	// Root, past the per-user cap and while the user is at theirs.
	for i := range 3 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if got := readAdmission(c); got != "admitted" {
			t.Fatalf("root's connection %d: %s, want admitted", i+1, got)
		}
		// The server sends the peer right after its answer.
		if p := <-peers; p.UID != 0 {
			t.Errorf("admitted peer uid %d, want root", p.UID)
		}
	}
}

// TestHelperDial is the child of TestLimitListenerPeerCred: it opens
// RSA_TEST_DIALS connections to RSA_TEST_DIAL and prints, for each in
// order, what the server told it (readAdmission).
func TestHelperDial(t *testing.T) {
	sock := os.Getenv("RSA_TEST_DIAL")
	if sock == "" {
		return // not a child
	}
	n, _ := strconv.Atoi(os.Getenv("RSA_TEST_DIALS"))
	var conns []net.Conn
	for range n {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		fmt.Println(readAdmission(c))
	}
	time.Sleep(time.Minute) // hold the connections until killed
}

type versionOnly struct{ Service }

func (versionOnly) Version(context.Context) VersionInfo { return VersionInfo{Version: "test"} }

// TestIdleTimeout: a connection left idle after a request is closed, and
// its place under the cap is free again.
func TestIdleTimeout(t *testing.T) {
	raw, err := net.Listen("unix", filepath.Join(t.TempDir(), "sock"))
	if err != nil {
		t.Fatal(err)
	}
	// Every client is uid 1001, allowed one connection.
	l := newLimitListener(raw, Limits{PerUser: 1}, slog.New(slog.DiscardHandler),
		func(net.Conn) (Peer, error) { return Peer{UID: 1001}, nil })
	srv := NewServer(versionOnly{}, slog.New(slog.DiscardHandler))
	srv.IdleTimeout = 200 * time.Millisecond
	go srv.Serve(l)
	defer srv.Close()

	for i := range 2 {
		c, err := net.Dial("unix", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET /v1/version HTTP/1.1\r\nHost: rsa\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("connection %d: %v (refused while the first one was idle?)", i+1, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		start := time.Now()
		c.SetReadDeadline(start.Add(5 * time.Second))
		if _, err := br.ReadByte(); err != io.EOF {
			t.Fatalf("connection %d: idle read returned %v, want EOF (closed by the server)", i+1, err)
		}
		if el := time.Since(start); el > 4*time.Second { // well before the 5 s read deadline
			t.Errorf("idle connection closed after %s, want about %s", el, srv.IdleTimeout)
		}
	}
}

// TestServerTimeouts: every timeout is set, and long polls fit.
func TestServerTimeouts(t *testing.T) {
	s := NewServer(versionOnly{}, slog.New(slog.DiscardHandler))
	for name, d := range map[string]time.Duration{"ReadHeaderTimeout": s.ReadHeaderTimeout,
		"ReadTimeout": s.ReadTimeout, "IdleTimeout": s.IdleTimeout} {
		if d <= 0 {
			t.Errorf("%s is not set", name)
		}
	}
	if s.WriteTimeout <= maxWait {
		t.Errorf("WriteTimeout %s cuts long polls of %s short", s.WriteTimeout, maxWait)
	}
	if s.MaxHeaderBytes <= 0 || s.MaxHeaderBytes > 1<<20 {
		t.Errorf("MaxHeaderBytes %d, want a small cap", s.MaxHeaderBytes)
	}
}

// TestClientRefused: a client turned away by the cap says so, and may
// retry (the daemon is not gone for good).
func TestClientRefused(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "sock")
	raw, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l := newLimitListener(raw, Limits{PerUser: 1}, slog.New(slog.DiscardHandler),
		func(net.Conn) (Peer, error) { return Peer{UID: 1001}, nil })
	srv := NewServer(versionOnly{}, slog.New(slog.DiscardHandler))
	go srv.Serve(l)
	defer srv.Close()
	hold := NewClient(sock) // keeps its connection open after the call
	if _, err := hold.Version(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err = NewClient(sock).Version(context.Background())
	if err == nil || !Unreachable(err) || !strings.Contains(err.Error(), "too many connections") {
		t.Errorf("a refused client got %v, want a retryable error naming the cause", err)
	}
}
