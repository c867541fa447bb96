package book

import (
	"slices"
	"strings"
	"testing"

	"github.com/rsa-hpc/rsa/internal/alloc"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/engine/memengine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/store"
)

const gib = int64(1) << 30

// jobs is a Source over records the test holds; reads counts the passes
// over them.
type jobs struct {
	active  []*job.Job
	owed    []store.Debt
	drained map[string]store.Drain
	reads   int
}

func (s *jobs) EachActive(fn func(*job.Job)) {
	s.reads++
	for _, j := range s.active {
		fn(j)
	}
}
func (s *jobs) Owed() []store.Debt              { return s.owed }
func (s *jobs) Drained() map[string]store.Drain { return s.drained }

// nodes is an engine whose nodes the test says are up, with their
// incarnations, and which places parts evenly over two replicas.
type nodes struct {
	engine.Engine
	down []string
}

func (e nodes) Unwrap() engine.Engine              { return e.Engine }
func (e nodes) Placeable(n string) bool            { return !slices.Contains(e.down, n) }
func (e nodes) Unplaceable() string                { return "silent" }
func (e nodes) Up(n string) bool                   { return e.Placeable(n) }
func (e nodes) Incarnation(n string) string        { return "boot-" + n }
func (e nodes) ComputeNodes() []string             { return nil }
func (e nodes) Health() []engine.NodeHealth        { return nil }
func (e nodes) Placement() engine.Placement        { return engine.Placement{Even: true, Replica: 2} }
func (e nodes) Certificates() []engine.Certificate { return nil }

func config2(userLimit int64) *config.Config {
	return &config.Config{Proportion: 1, MinJobNodes: 1, Limits: config.Limits{MaxUserCapacity: userLimit},
		Nodes: []config.Node{{Name: "rsa01", Capacity: 4 * gib}, {Name: "rsa02", Capacity: 4 * gib}}}
}

func waiting(id int64, uid uint32, capacity int64) *job.Job {
	return &job.Job{ID: id, UID: uid, User: "u", State: lifecycle.OnDeck, RSA: lifecycle.Initial,
		Spec: job.Spec{Input: "/in", Output: "/out", ComputeNodes: 1, Capacity: capacity}}
}

func holding(id int64, uid uint32, parts ...job.Part) *job.Job {
	j := waiting(id, uid, 0)
	j.State, j.RSA, j.Alloc = lifecycle.Running, lifecycle.InUseIn, parts
	for _, p := range parts {
		j.Spec.Capacity += p.Bytes
	}
	return j
}

// An engine's placement reaches the decision through its wrappers; an
// engine without one places freely.
func TestPlacementThroughWrappers(t *testing.T) {
	mem := memengine.New(t.TempDir())
	for _, c := range []struct {
		name string
		e    engine.Engine
		want engine.Placement
	}{
		{"none", mem, engine.Placement{}},
		{"its own, wrapped", engine.WithRetry(nodes{Engine: mem}, 3, 0), engine.Placement{Even: true, Replica: 2}},
	} {
		b := New(config2(0), c.e, &jobs{})
		if got := b.placement(); got != c.want {
			t.Errorf("%s: placement %+v, want %+v", c.name, got, c.want)
		}
	}
}

// What is held, reserved, drained or on a silent node is not free; a
// reservation carries the nodes' incarnations and ends with Release.
func TestSnapshot(t *testing.T) {
	src := &jobs{active: []*job.Job{holding(1, 1000, job.Part{Node: "rsa01", Bytes: gib})},
		owed: []store.Debt{{Node: "rsa02", Bytes: gib}}, drained: map[string]store.Drain{}}
	b := New(config2(0), memengine.New(t.TempDir()), src)
	w := waiting(2, 1000, 2*gib)
	if s := b.snapshot(w); s.Used["rsa01"] != gib || s.Used["rsa02"] != gib || s.Down != 0 {
		t.Errorf("held and owed: %+v", s.Used)
	}
	b.Reserve(waiting(3, 1001, gib), []job.Part{{Node: "rsa01", Bytes: gib}})
	if s := b.snapshot(w); s.Used["rsa01"] != 2*gib {
		t.Errorf("a reservation of another job's is not counted: %+v", s.Used)
	}
	if s := b.snapshot(waiting(3, 1001, gib)); s.Used["rsa01"] != gib {
		t.Errorf("a job's own reservation is counted against it: %+v", s.Used)
	}
	b.Release(3)
	if len(b.Reserved()) != 0 || b.snapshot(w).Used["rsa01"] != gib {
		t.Errorf("Release left %v reserved", b.Reserved())
	}
	src.drained["rsa02"] = store.Drain{}
	if s := b.snapshot(w); s.Used["rsa02"] != 4*gib || s.Drained != 1 {
		t.Errorf("a drained node is not full: %+v", s)
	}

	down := New(config2(0), nodes{Engine: memengine.New(t.TempDir()), down: []string{"rsa02"}}, &jobs{})
	if s := down.snapshot(w); s.Used["rsa02"] != 4*gib || s.Down != 1 || s.DownWord != "silent" {
		t.Errorf("a silent node is not full: %+v", s)
	}
	parts := down.Reserve(w, []job.Part{{Node: "rsa01", Bytes: gib}})
	if parts[0].Incarnation != "boot-rsa01" {
		t.Errorf("reserved %+v, without the node's incarnation", parts)
	}
}

// The user limit counts what the user holds and has reserved besides the
// job, and no other user's.
func TestUserLimit(t *testing.T) {
	src := &jobs{active: []*job.Job{
		holding(1, 1000, job.Part{Node: "rsa01", Bytes: gib}),
		holding(2, 1001, job.Part{Node: "rsa02", Bytes: 2 * gib}),
	}}
	b := New(config2(3*gib), memengine.New(t.TempDir()), src)
	b.Reserve(waiting(3, 1000, gib), []job.Part{{Node: "rsa02", Bytes: gib}})
	b.Reserve(waiting(4, 1001, gib), []job.Part{{Node: "rsa02", Bytes: gib}})
	if got := b.userHeld(waiting(5, 1000, gib)); got != 2*gib {
		t.Errorf("user 1000 holds %d besides job 5, want %d", got, 2*gib)
	}
	if got := b.userHeld(src.active[0]); got != gib {
		t.Errorf("user 1000 holds %d besides job 1, want %d (its reservation)", got, gib)
	}
	dec := b.Decide(waiting(5, 1000, 2*gib))
	if dec.Verdict != alloc.Wait || !strings.Contains(dec.Reason, "max_user_capacity") {
		t.Errorf("over the user limit: %+v", dec)
	}
}

// What is held is worked out once per commit, and a pass decides once per
// request until something changes.
func TestHoldingsPerCommit(t *testing.T) {
	src := &jobs{active: []*job.Job{holding(1, 1000, job.Part{Node: "rsa01", Bytes: gib})}}
	b := New(config2(0), memengine.New(t.TempDir()), src)
	b.Holdings()
	b.Holdings()
	if src.reads != 1 {
		t.Fatalf("%d passes over the jobs for two reads of the holdings, want 1", src.reads)
	}
	src.active = append(src.active, holding(2, 1000, job.Part{Node: "rsa02", Bytes: gib}))
	b.Changed()
	if h := b.Holdings(); src.reads != 2 || h.ByNode["rsa02"] != gib || h.ByUser[1000] != 2*gib {
		t.Errorf("after a commit: %+v after %d passes", h, src.reads)
	}
	if got := b.Allocated(func(j *job.Job) bool { return j.ID == 2 }); got["rsa01"] != 0 || got["rsa02"] != gib {
		t.Errorf("Allocated(job 2) = %v", got)
	}

	end := b.BeginPass()
	first := b.Decide(waiting(3, 1000, 7*gib))
	src.active = nil // unseen by the pass: no commit came
	if again := b.Decide(waiting(4, 1001, 7*gib)); again.Verdict != first.Verdict || again.Reason != first.Reason {
		t.Errorf("the pass decided the same request anew: %+v, then %+v", first, again)
	}
	end()
	b.Changed()
	if fresh := b.Decide(waiting(4, 1001, 7*gib)); fresh.Verdict != alloc.Assign {
		t.Errorf("after the pass and a commit freeing the nodes: %+v", fresh)
	}
}

// A reservation within a pass ends what the pass remembered: a job that
// waits is told what is free now, not before the reservation.
func TestReservationInAPass(t *testing.T) {
	src := &jobs{active: []*job.Job{holding(1, 1000, job.Part{Node: "rsa01", Bytes: 4 * gib})}}
	b := New(config2(0), memengine.New(t.TempDir()), src)
	defer b.BeginPass()()
	before := b.Decide(waiting(2, 1000, 6*gib))
	if before.Verdict != alloc.Wait {
		t.Fatalf("6 GiB with 4 free of 8: %+v", before)
	}
	small := waiting(3, 1001, 2*gib)
	dec := b.Decide(small)
	if dec.Verdict != alloc.Assign {
		t.Fatalf("2 GiB with 4 free: %+v", dec)
	}
	b.Reserve(small, dec.Parts)
	after := b.Decide(waiting(4, 1002, 6*gib))
	if after.Verdict != alloc.Wait || after.Reason == before.Reason {
		t.Errorf("after a reservation, the same reason to wait: %q", after.Reason)
	}
	t.Logf("before: %s; after: %s", before.Reason, after.Reason)
}
