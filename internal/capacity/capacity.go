// Package capacity takes RSA's capacity decisions: whether a job gets RAM
// on RSA nodes now, waits for it, or runs without RSA, and says why. It is
// the site's rule on top of alloc's placement: the per-user limit, jobs
// sized by their input, nodes drained or out of reach. It is pure: rsa
// serve and the simulator both hand it a Snapshot of what is free and
// commit its Decision themselves, so that the simulator predicts what the
// daemon does.
package capacity

import (
	"fmt"
	"maps"

	"github.com/rsa-hpc/rsa/internal/alloc"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/units"
)

// Job is what a job asks for.
type Job struct {
	alloc.Request
	// Sized, when the job has no capacity, says that it was to be sized
	// by its input, which does not fit (job.Spec.Sized): it gets no
	// RAMDISK (the proportion rule is for schedulers' jobs).
	Sized string
	User  string // the job's user, for the reasons
}

// Snapshot is what RSA can give a job now.
type Snapshot struct {
	Policy alloc.Policy
	Nodes  []config.Node
	// Used is the RAM given on each node to everything but the job:
	// committed jobs, decisions not yet committed, teardowns' debts. A
	// node that takes no new part now (drained, or out of reach) counts
	// as full.
	Used map[string]int64
	// Drained and Down are how many nodes count as full for being
	// drained and for being out of reach (in the engine's word,
	// DownWord), for the reasons.
	Drained, Down int
	DownWord      string
	// UserLimit is limits.max_user_capacity (0: none); UserHeld is what
	// the job's user holds besides this job, needed only under a limit.
	UserLimit, UserHeld int64
}

// Decision is Decide's answer.
type Decision struct {
	alloc.Decision
	// Personal is set when the verdict depends on the job's own user or
	// sizing, not on its Request alone: another job with the same
	// Request may be told otherwise.
	Personal bool
}

// Decide decides for j given s.
func Decide(j Job, s Snapshot) Decision {
	if j.Capacity == 0 && j.Sized != "" {
		return Decision{Decision: alloc.Decision{Verdict: alloc.Ineligible, Reason: j.Sized}, Personal: true}
	}
	dec := Decision{Decision: alloc.Plan(s.Policy, s.Nodes, s.Used, j.Request)}
	if dec.Verdict == alloc.Assign {
		if why := overUserLimit(j, s, dec.Parts); why != "" {
			dec = Decision{Decision: alloc.Decision{Verdict: alloc.Wait, Reason: why}, Personal: true}
		}
	}
	if dec.Verdict == alloc.Wait {
		if s.Drained > 0 {
			dec.Reason += fmt.Sprintf(" (%d of %d RSA nodes drained; rsa nodes)", s.Drained, len(s.Nodes))
		}
		if s.Down > 0 {
			dec.Reason += fmt.Sprintf(" (%d of %d RSA nodes %s; rsa nodes)", s.Down, len(s.Nodes), s.DownWord)
		}
	}
	return dec
}

// overUserLimit says why j must wait if parts would take its user past
// the user limit, or "".
func overUserLimit(j Job, s Snapshot, parts []job.Part) string {
	if s.UserLimit <= 0 {
		return ""
	}
	var want int64
	for _, p := range parts {
		want += p.Bytes
	}
	if s.UserHeld+want > s.UserLimit {
		return fmt.Sprintf("waiting: %s's jobs hold %s; %s more would pass the limit of %s per user (limits.max_user_capacity)",
			j.User, units.FormatSize(s.UserHeld), units.FormatSize(want), units.FormatSize(s.UserLimit))
	}
	return ""
}

// Fits reports whether parts fit on nodes beside used (what everything
// else holds): the last word before an allocation is committed. A part on
// a node not configured never fits.
func Fits(nodes []config.Node, used map[string]int64, parts []job.Part) bool {
	used = maps.Clone(used)
	if used == nil {
		used = map[string]int64{}
	}
	for _, p := range parts {
		used[p.Node] += p.Bytes
	}
	for _, n := range nodes {
		if used[n.Name] > n.Capacity {
			return false
		}
		delete(used, n.Name)
	}
	for _, b := range used {
		if b > 0 {
			return false
		}
	}
	return true
}

// Memo keeps, for one scheduling pass, the decisions to wait that hold for
// any job with the same Request (not Personal) and that holds no RAM: a
// thousand jobs waiting for the same shape of RAMDISK cost one plan and
// one reason, not a thousand. It holds only while the generation its
// caller counts (commits) stays the same: Lookup forgets everything when
// it changed. A nil Memo remembers nothing.
type Memo struct {
	gen   uint64
	waits map[alloc.Request]Decision
}

// NewMemo is an empty memo for generation gen.
func NewMemo(gen uint64) *Memo {
	return &Memo{gen: gen, waits: map[alloc.Request]Decision{}}
}

// Lookup is the decision remembered for r in generation gen.
func (m *Memo) Lookup(gen uint64, r alloc.Request) (Decision, bool) {
	if m == nil {
		return Decision{}, false
	}
	if m.gen != gen {
		m.Forget()
		m.gen = gen
		return Decision{}, false
	}
	d, ok := m.waits[r]
	return d, ok
}

// Remember keeps dec for r if it is a decision to wait that is not
// Personal.
func (m *Memo) Remember(r alloc.Request, dec Decision) {
	if m != nil && dec.Verdict == alloc.Wait && !dec.Personal {
		m.waits[r] = dec
	}
}

// Forget drops every decision: less is free now.
func (m *Memo) Forget() {
	if m != nil {
		clear(m.waits)
	}
}

// Holdings is the RAM the committed jobs hold, per RSA node and per user.
type Holdings struct {
	ByNode map[string]int64
	ByUser map[uint32]int64
}

// NewHoldings is empty holdings.
func NewHoldings() *Holdings {
	return &Holdings{ByNode: map[string]int64{}, ByUser: map[uint32]int64{}}
}

// Hold counts parts as held by uid.
func (h *Holdings) Hold(uid uint32, parts []job.Part) {
	for _, p := range parts {
		h.ByNode[p.Node] += p.Bytes
		h.ByUser[uid] += p.Bytes
	}
}

// Owe counts bytes as held on node by no user (what a teardown left on a
// silent node until it confirms it gone).
func (h *Holdings) Owe(node string, bytes int64) { h.ByNode[node] += bytes }

// Besides is what is held on each node by everything but parts (a job's
// own): a copy the caller may change.
func (h *Holdings) Besides(parts []job.Part) map[string]int64 {
	used := maps.Clone(h.ByNode)
	for _, p := range parts {
		used[p.Node] -= p.Bytes
	}
	return used
}
