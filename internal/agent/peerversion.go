package agent

import (
	"log/slog"
	"net/http"
	"sync"

	"github.com/rsa-hpc/rsa/internal/textsafe"
	"github.com/rsa-hpc/rsa/internal/version"
)

// maxVersionLen bounds the version a request may carry into the log.
const maxVersionLen = 128

// peerVersion remembers the version of rsa serve that last called this
// agent, and logs when it changes: an admin upgrading hosts one by one
// sees in each agent's log which daemon it serves, and a warning while the
// two differ.
type peerVersion struct {
	mu   sync.Mutex
	last string
}

// note records the version an authorised request carried (its
// version.Header; empty from a daemon of before the header).
func (p *peerVersion) note(log *slog.Logger, r *http.Request, own string) {
	v := r.Header.Get(version.Header)
	if len(v) > maxVersionLen {
		v = v[:maxVersionLen]
	}
	v = textsafe.Line(v)
	if v == "" {
		v = "unknown (older than its version header)"
	}
	p.mu.Lock()
	changed := p.last != v
	p.last = v
	p.mu.Unlock()
	if !changed {
		return
	}
	if ok, why := version.Compatible(v, own); !ok {
		log.Error("rsa serve's version is outside the versions this agent works with; upgrade the older of the two", "daemon_version", v, "agent_version", own, "why", why, "from", r.RemoteAddr)
		return
	}
	if v != own {
		log.Warn("rsa serve runs another version than this agent, within the one release apart RSA supports; finish the upgrade", "daemon_version", v, "agent_version", own, "from", r.RemoteAddr)
		return
	}
	log.Info("rsa serve runs this agent's version", "version", v, "from", r.RemoteAddr)
}
