package agent

import (
	"log/slog"
	"net/http"
	"strconv"
	"sync"
)

// EpochHeader carries the lease epoch of the rsa serve of a failover pair
// that sends a request (store.TakeOver). A daemon of no pair, and a tool
// that drives the agent with the control certificate, send none.
const EpochHeader = "X-Rsa-Epoch"

// epochFence refuses requests of an rsa serve older than the newest this
// agent has seen: once the standby of a failover pair took over and
// called this agent, the one it replaced (one cut off that has not yet
// noticed it lost its lease) changes nothing here. The newest epoch is
// kept in memory: an agent restarted meanwhile learns it again from the
// next request of the active one.
type epochFence struct {
	mu     sync.Mutex
	newest int64
}

// admit checks r's epoch, and remembers it if it is the newest.
func (e *epochFence) admit(log *slog.Logger, r *http.Request) error {
	v := r.Header.Get(EpochHeader)
	if v == "" {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return failf(ErrInvalid, "%s %q is not a lease epoch (a positive number)", EpochHeader, shorten(v))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if n < e.newest {
		return failf(ErrForbidden, "fenced: this request comes from an rsa serve of lease epoch %d, and one of epoch %d has taken over since; the older one must stop", n, e.newest)
	}
	if n > e.newest {
		if e.newest > 0 {
			log.Warn("a new rsa serve of the failover pair took over: requests of the older one are refused from now on", "epoch", n, "previous", e.newest, "from", r.RemoteAddr)
		}
		e.newest = n
	}
	return nil
}
