// Package book keeps the daemon's account of the RSA nodes' RAM: what the
// committed jobs hold, worked out once per commit; what is reserved for
// the allocations decided but not yet committed; and, from both, what is
// free for a job now, the snapshot capacity.Decide takes.
//
// The loop alone decides, reserves and releases (Decide, Reserve,
// Release, Fits, BeginPass); Holdings, Allocated and Placeable may be
// called from any goroutine.
package book

import (
	"slices"
	"sync"

	"github.com/rsa-hpc/rsa/internal/alloc"
	"github.com/rsa-hpc/rsa/internal/capacity"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/store"
)

// Source is where the book reads what is held.
type Source interface {
	// EachActive calls fn with every active job's committed record.
	EachActive(fn func(*job.Job))
	// Owed is what teardowns left on silent RSA nodes: held there, by
	// no user, until the node confirms it gone.
	Owed() []store.Debt
	// Drained is the RSA nodes an administrator drained, by name.
	Drained() map[string]store.Drain
}

// Book is one daemon's account.
type Book struct {
	cfg    *config.Config
	engine engine.Engine
	src    Source

	mu sync.Mutex
	// held is what the committed jobs hold, worked out once from the
	// active jobs and dropped at every commit; nil: not worked out yet.
	held    *capacity.Holdings
	commits uint64 // counts the commits, for held and plans

	// Owned by the loop.
	reserved map[int64]reservation
	plans    *capacity.Memo // the scheduling pass's, while it runs
}

// reservation is an allocation decided for a job of uid's and not yet
// committed.
type reservation struct {
	uid   uint32
	parts []job.Part
}

// New is an empty book for the RSA nodes of cfg, built by e.
func New(cfg *config.Config, e engine.Engine, src Source) *Book {
	return &Book{cfg: cfg, engine: e, src: src, reserved: map[int64]reservation{}}
}

// Changed tells the book that a job's record was committed: what is held
// is worked out anew when next asked for.
func (b *Book) Changed() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held = nil
	b.commits++
}

func (b *Book) generation() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.commits
}

// BeginPass starts a scheduling pass, which ends with the returned func:
// meanwhile a job that holds nothing sees the decision every such job with
// its request saw since the last commit or reservation (a pass over 1,000
// waiting jobs decides once per distinct request).
func (b *Book) BeginPass() (end func()) {
	b.plans = capacity.NewMemo(b.generation())
	return func() { b.plans = nil }
}

// Decide is capacity.Decide for j over what is free now.
func (b *Book) Decide(j *job.Job) capacity.Decision {
	cj := request(j)
	_, reserved := b.reserved[j.ID]
	memo := b.plans != nil && (!lifecycle.HoldsNodes(j.RSA) || len(j.Alloc) == 0) && !reserved && (cj.Capacity != 0 || cj.Sized == "")
	if memo {
		if dec, ok := b.plans.Lookup(b.generation(), cj.Request); ok {
			return dec
		}
	}
	dec := capacity.Decide(cj, b.snapshot(j))
	if memo {
		b.plans.Remember(cj.Request, dec)
	}
	return dec
}

// request is what j asks of capacity.Decide.
func request(j *job.Job) capacity.Job {
	m := j.Machine()
	return capacity.Job{Request: alloc.Request{
		ComputeNodes: j.Spec.ComputeNodes, Capacity: j.Spec.Capacity,
		Running: j.State == lifecycle.Running, HasInput: m.HasInput, HasOutput: m.HasOutput,
	}, Sized: j.Spec.Sized, User: j.User}
}

// Reserve holds parts for j until its allocation is committed (Release),
// so that the next decision counts them, and returns them with each RSA
// node's incarnation as the engine knows it.
func (b *Book) Reserve(j *job.Job, parts []job.Part) []job.Part {
	parts = slices.Clone(parts)
	if nodes, ok := engine.As[engine.Nodes](b.engine); ok {
		for i := range parts {
			parts[i].Incarnation = nodes.Incarnation(parts[i].Node)
		}
	}
	b.reserved[j.ID] = reservation{uid: j.UID, parts: parts}
	if b.plans != nil {
		b.plans.Forget() // less is free now
	}
	return parts
}

// Release drops job id's reservation: its allocation is committed, or
// refused.
func (b *Book) Release(id int64) { delete(b.reserved, id) }

// Reserved is the jobs that hold a reservation, in order.
func (b *Book) Reserved() []int64 {
	ids := make([]int64, 0, len(b.reserved))
	for id := range b.reserved {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Fits reports whether parts still fit beside what the committed jobs
// other than j hold: the last word before an allocation is committed.
func (b *Book) Fits(j *job.Job, parts []job.Part) bool {
	return capacity.Fits(b.cfg.Nodes, b.heldBesides(j), parts)
}

// snapshot is what is free for j now: what the committed jobs besides j
// hold, what is reserved for others, drained and silent nodes counted
// full.
func (b *Book) snapshot(j *job.Job) capacity.Snapshot {
	s := capacity.Snapshot{Policy: alloc.PolicyFrom(b.cfg, b.placement()), Nodes: b.cfg.Nodes, Used: b.heldBesides(j)}
	// Decisions made but not yet committed hold their RAM too: a tick
	// that assigns several waiting jobs must not give each the same free
	// bytes.
	for id, r := range b.reserved {
		if id != j.ID {
			for _, p := range r.parts {
				s.Used[p.Node] += p.Bytes
			}
		}
	}
	// A drained node gives nothing: it counts as full, so a job waits for
	// it (it is still part of what RSA can ever give) and says why.
	drained := b.src.Drained()
	for _, n := range b.cfg.Nodes {
		if _, ok := drained[n.Name]; ok {
			s.Used[n.Name] = n.Capacity
		} else if !b.Placeable(n.Name) {
			// The engine makes no part there now: its node did not
			// answer, or something else keeps new parts off it.
			s.Used[n.Name] = n.Capacity
			s.Down++
		}
	}
	s.Drained = len(drained)
	if nodes, ok := engine.As[engine.Nodes](b.engine); ok {
		s.DownWord = nodes.Unplaceable()
	}
	if s.UserLimit = b.cfg.Limits.MaxUserCapacity; s.UserLimit > 0 {
		s.UserHeld = b.userHeld(j)
	}
	return s
}

// placement is what the engine needs of the way a job's capacity is split
// over RSA nodes: nothing, unless it is an engine.Placer.
func (b *Book) placement() engine.Placement {
	if p, ok := engine.As[engine.Placer](b.engine); ok {
		return p.Placement()
	}
	return engine.Placement{}
}

// Placeable reports whether a new RAMDISK may have a part on RSA node n
// now, as far as the engine knows: always, on an engine whose parts are
// all on this host.
func (b *Book) Placeable(n string) bool {
	nodes, ok := engine.As[engine.Nodes](b.engine)
	return !ok || nodes.Placeable(n)
}

// userHeld is what j's user holds besides j: committed and reserved.
func (b *Book) userHeld(j *job.Job) int64 {
	total := b.Holdings().ByUser[j.UID]
	if lifecycle.HoldsNodes(j.RSA) {
		total -= j.Capacity()
	}
	for id, r := range b.reserved {
		if id != j.ID && r.uid == j.UID {
			for _, p := range r.parts {
				total += p.Bytes
			}
		}
	}
	return total
}

// Holdings is what the committed jobs hold, per RSA node and per user;
// callers must not change it. The scheduling pass asks for it once per
// waiting job; it is worked out from every active job only when a commit
// changed it (a pass over 1,000 waiting and 9,000 holding jobs took 9 s
// when each decision summed the active jobs itself).
func (b *Book) Holdings() *capacity.Holdings {
	b.mu.Lock()
	h, gen := b.held, b.commits
	b.mu.Unlock()
	if h != nil {
		return h
	}
	h = capacity.NewHoldings()
	// RAM a teardown left on a silent node is held there until the node
	// confirms it gone; it is no user's any more.
	for _, db := range b.src.Owed() {
		h.Owe(db.Node, db.Bytes)
	}
	b.src.EachActive(func(j *job.Job) {
		if lifecycle.HoldsNodes(j.RSA) {
			h.Hold(j.UID, j.Alloc)
		}
	})
	// Kept only if no commit came between the read and now.
	b.mu.Lock()
	if b.commits == gen {
		b.held = h
	}
	b.mu.Unlock()
	return h
}

// heldBesides is the RAM held on each node by the committed jobs other
// than j: a copy the caller may change.
func (b *Book) heldBesides(j *job.Job) map[string]int64 {
	if lifecycle.HoldsNodes(j.RSA) {
		return b.Holdings().Besides(j.Alloc)
	}
	return b.Holdings().Besides(nil)
}

// Allocated sums the RAM held on each node by the jobs whose state holds
// it and that only accepts (nil: every such job).
func (b *Book) Allocated(only func(*job.Job) bool) map[string]int64 {
	used := map[string]int64{}
	b.src.EachActive(func(j *job.Job) {
		if lifecycle.HoldsNodes(j.RSA) && (only == nil || only(j)) {
			for _, p := range j.Alloc {
				used[p.Node] += p.Bytes
			}
		}
	})
	return used
}
