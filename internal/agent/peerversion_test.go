package agent

import (
	"bytes"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rsa-hpc/rsa/internal/version"
)

func TestPeerVersion(t *testing.T) {
	var p peerVersion
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	for _, c := range []struct {
		name   string
		header string
		want   string // in the log; "" for nothing logged
	}{
		{"first, the same version", "v0.2.0", `level=INFO msg="rsa serve runs this agent's version" version=v0.2.0`},
		{"again: nothing new", "v0.2.0", ""},
		{"the daemon upgraded first", "v0.3.0", `level=WARN msg="rsa serve runs another version than this agent, within the one release apart RSA supports; finish the upgrade" daemon_version=v0.3.0 agent_version=v0.2.0`},
		{"a daemon two releases on", "v0.4.0", `level=ERROR msg="rsa serve's version is outside the versions this agent works with; upgrade the older of the two" daemon_version=v0.4.0 agent_version=v0.2.0 why="versions 0.4 and 0.2 are more than one release apart`},
		{"a daemon without the header", "", `daemon_version="unknown (older than its version header)"`},
		{"a control character is not logged raw", "v0.3.0\x1b[2J", `daemon_version=v0.3.0\u001b[2J`},
		{"a long version is cut", strings.Repeat("v", 1000), "daemon_version=" + strings.Repeat("v", maxVersionLen) + " "},
	} {
		t.Run(c.name, func(t *testing.T) {
			buf.Reset()
			r := httptest.NewRequest("GET", "/v1/status", nil)
			if c.header != "" {
				r.Header.Set(version.Header, c.header)
			}
			p.note(log, r, "v0.2.0")
			got := buf.String()
			if c.want == "" && got != "" || !strings.Contains(got, c.want) {
				t.Errorf("logged %q, want %q", got, c.want)
			}
			if strings.Contains(got, "\x1b") {
				t.Errorf("logged a raw escape: %q", got)
			}
		})
	}
}
