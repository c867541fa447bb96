package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// Users on login nodes reach the daemon over TCP with a MUNGE credential per
// request: their own jobs' status, log, wait and cancel; never root, no
// administrator's action, no credential twice or for another request.
func TestRemoteAccessWithMunge(t *testing.T) {
	t.Parallel()
	sock := testutil.StartMunged(t)
	addr := freeAddr(t)
	e := setup(t, fmt.Sprintf("[remote]\nlisten = %q\nmunge_socket = %q\n", addr, sock))
	remote := func(u *testutil.User, args ...string) (string, error) {
		var cmd *exec.Cmd
		if u == nil {
			cmd = e.command(rsaBin, append([]string{"--server", addr}, args...)...)
		} else {
			cmd = e.as(*u, rsaBin, append([]string{"--server", addr}, args...)...)
		}
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/", "RSA_MUNGE_SOCKET=" + sock}
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	if _, stderr, err := e.rsa(false, "submit", "--out", e.mkdir("out"), "--capacity", "16M"); err != nil {
		t.Fatal(err, stderr)
	}
	testutil.WaitFor(t, "job 1 ready", step, poll, func() bool { return e.job(1).RSA == lifecycle.Ready })

	u := e.user
	if out, err := remote(&u, "status"); err != nil || !strings.Contains(out, "READY") {
		t.Errorf("remote status: %v\n%s", err, out)
	}
	if out, err := remote(&u, "log", "1"); err != nil || !strings.Contains(out, "submitted by "+u.Name) {
		t.Errorf("remote log: %v\n%s", err, out)
	}
	// Root from another host is nobody special: administrators act on
	// the RSA host.
	if out, err := remote(nil, "status"); err == nil || !strings.Contains(out, "root acts on the RSA host itself") {
		t.Errorf("remote root: %v\n%s", err, out)
	}
	if out, err := remote(&u, "retry", "1"); err == nil {
		t.Errorf("an administrator's action over the network: %s", out)
	}
	// Another user cannot cancel the job remotely either.
	other := testutil.EnsureOtherUser(t)
	if out, err := remote(&other, "cancel", "1"); err == nil || !strings.Contains(out, "belongs to") {
		t.Errorf("another user's remote cancel: %v\n%s", err, out)
	}

	// A credential is good for its own request, once.
	cred := func(payload []byte) string {
		cmd := e.as(u, "munge", "--socket="+sock)
		cmd.Stdin = bytes.NewReader(payload)
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("munge: %v", err)
		}
		return strings.TrimSpace(string(b))
	}
	get := func(path, c string) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		if c != "" {
			req.Header.Set("Authorization", "MUNGE "+c)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	c := cred(api.RequestPayload("GET", "/v1/jobs/1", nil))
	if st, body := get("/v1/jobs/1", c); st != http.StatusOK {
		t.Errorf("a good credential: %d %s", st, body)
	}
	if st, body := get("/v1/jobs/1", c); st != http.StatusUnauthorized || !strings.Contains(body, "replayed credential") {
		t.Errorf("the same credential again: %d %s", st, body)
	}
	if st, body := get("/v1/jobs/1/events", cred(api.RequestPayload("GET", "/v1/jobs/1", nil))); st != http.StatusForbidden {
		t.Errorf("a credential made for another request: %d %s", st, body)
	}
	if st, body := get("/v1/jobs", ""); st != http.StatusUnauthorized {
		t.Errorf("no credential: %d %s", st, body)
	}
	if st, body := get("/v1/jobs", "MUNGE:forged="); st != http.StatusUnauthorized {
		t.Errorf("a forged credential: %d %s", st, body)
	}

	// The owner waits for and cancels the job from the login node.
	if out, err := remote(&u, "cancel", "1"); err != nil {
		t.Errorf("remote cancel: %v\n%s", err, out)
	}
	if out, err := remote(&u, "wait", "1"); err != nil || !strings.Contains(out, "RAM released") {
		t.Errorf("remote wait: %v\n%s", err, out)
	}
	e.kill(syscall.SIGTERM)
	e.noLeaks()
}
