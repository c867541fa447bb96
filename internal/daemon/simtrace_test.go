package daemon

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/access"
	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/sim"
	"github.com/rsa-hpc/rsa/internal/stage"
	"github.com/rsa-hpc/rsa/internal/units"
)

// TestSimulatorTakesTheDaemonsDecisions: `rsa sim` says that every
// rsa-state a simulated job passes through is one the daemon would take
// on the same events. Small generated traces run through the simulator,
// and then through the daemon in lock step: the daemon creates each job
// when the simulator met it (so numbers its jobs in that order), is
// handed the simulator's scheduler events in the simulator's order, and
// each action it starts is held at its engine or node access call until
// the simulator's log says that action ended, and then ends as the
// simulator's did (a stage-in that did not fit fails, an unmount meets
// input still open). Every job must go through the same job-states and
// rsa-states by the same events in both, be given the same RAM on the
// same RSA nodes, and begin to wait for capacity at the same points.
//
// What depends on time is left out, since the daemon's clock is not the
// simulator's: no stage-in lead (a job on deck is served at once), an
// input-to-output switch due at the input mount (delay 0) or never
// within the trace, and no capacity wait. How long the simulator's
// actions take only decides their order, which the lock step follows;
// the cases mix instant actions with the thesis' timings to get more
// orders.
func TestSimulatorTakesTheDaemonsDecisions(t *testing.T) {
	cov := simCoverage{kinds: map[lifecycle.EventKind]int{}, assigned: map[string]int{}}
	for _, c := range simCases() {
		t.Run(c.name, func(t *testing.T) {
			steps, nodes := runSim(t, c)
			want := simHistories(steps)
			got := replayInDaemon(t, c, steps, nodes)
			for _, id := range sortedIDs(want) {
				if !slices.Equal(got[id].path, want[id].path) {
					t.Errorf("trace job %d:\n daemon    %q\n simulator %q", id, got[id].path, want[id].path)
				}
			}
			cov.add(steps)
		})
	}
	// The traces must exercise what the property is about, or it holds
	// of nothing.
	if cov.waits == 0 {
		t.Error("no job waited for RSA capacity")
	}
	for _, k := range []lifecycle.EventKind{lifecycle.EvIneligible, lifecycle.EvAssigned, lifecycle.EvDemoted,
		lifecycle.EvOnDeck, lifecycle.EvStageInStopped, lifecycle.EvStageInFailed, lifecycle.EvUnmountBusy, lifecycle.EvUnmounted} {
		if cov.kinds[k] == 0 {
			t.Errorf("no %s in any trace", k)
		}
	}
	for _, kind := range []string{"ONDECK in out", "ONDECK in", "ONDECK out", "RUNNING in out", "RUNNING out"} {
		if cov.assigned[kind] == 0 {
			t.Errorf("no job %s was assigned RSA nodes", kind)
		}
	}
	t.Logf("coverage: %d waits, events %v, assignments %v", cov.waits, cov.kinds, cov.assigned)
}

// simCase is one generated trace and the simulated machine it runs on.
type simCase struct {
	name     string
	seed     uint64
	priority sim.Priority // SJF demotes, FCFS never does
	rsaNodes int
	delay    time.Duration // 0: the switch to output is due at the input mount
	// instant: RSA's actions and the jobs' I/O take no time (a copy
	// through the shared file system a nanosecond).
	instant bool
	// crowded: 20 to 29 short jobs arrive seconds apart, and RSA builds
	// and tears down slowly (30 s, 20 s), so that a demoted job comes
	// on deck again while its teardown runs and other jobs wait for the
	// RAM that teardown releases.
	crowded bool
	sizes   simSizes
}

// simSizes is what a case's jobs read and write.
type simSizes int

const (
	// Input and output of 0 or 1 byte a node, each: jobs with input,
	// output, both or neither.
	mixedSizes simSizes = iota
	// Input that may not fit the RSA nodes a job gets (its stage-in
	// fails), and takes long to read (an unmount meets it open);
	// output of 0 or 1 byte a node.
	largeInput
	// Input and output of the same size, asked for with capacity=
	// (sim's --alloc capacity): the same request whether the job runs
	// or not, as the daemon's is.
	byCapacity
	// byCapacity with output of half the input's size: the request is
	// the larger, also for a job that starts before its RAMDISK is
	// built and asks again for its output.
	byCapacityLessOut
)

const (
	simComputeNodes = 8
	simNodeRAM      = 256 << 20
	simBytesPerNode = 100 << 20 // input per compute node asked for by capacity
	simNever        = 1000 * time.Hour
)

func simCases() []simCase {
	return []simCase{
		{name: "fcfs instant", seed: 1, priority: sim.FCFS, rsaNodes: 2, instant: true, sizes: mixedSizes},
		{name: "sjf thesis timings", seed: 2, priority: sim.SJF, rsaNodes: 3, sizes: mixedSizes},
		{name: "sjf large input", seed: 3, priority: sim.SJF, rsaNodes: 2, sizes: largeInput},
		{name: "fcfs large input instant", seed: 4, priority: sim.FCFS, rsaNodes: 4, delay: simNever, instant: true, sizes: largeInput},
		{name: "sjf by capacity", seed: 5, priority: sim.SJF, rsaNodes: 3, delay: simNever, sizes: byCapacity},
		{name: "fcfs by capacity, less output", seed: 6, priority: sim.FCFS, rsaNodes: 3, delay: simNever, sizes: byCapacityLessOut},
		{name: "sjf crowded", seed: 33, priority: sim.SJF, rsaNodes: 2, crowded: true, sizes: mixedSizes},
	}
}

// config is the simulator's configuration for c.
func (c simCase) config(t *testing.T) sim.Config {
	t.Helper()
	dist := func(s string) sim.Dist {
		d, err := sim.ParseDist(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	cfg := sim.Defaults()
	cfg.Nodes, cfg.ProcsPerNode = simComputeNodes, 1
	cfg.Priority = c.priority
	cfg.Seed = c.seed
	r := &cfg.RSA
	r.Nodes, r.RAM = c.rsaNodes, simNodeRAM
	r.Proportion, r.MinJobNodes = 2, 2
	r.Delay = c.delay
	r.StageInLead = 0
	switch c.sizes {
	case mixedSizes:
		cfg.Workload.Input, cfg.Workload.Output = dist("uniform:0-2"), dist("uniform:0-2")
	case largeInput:
		cfg.Workload.Input, cfg.Workload.Output = dist("exp:160M"), dist("uniform:0-2")
	case byCapacity:
		cfg.Workload.Input, cfg.Workload.Output = sim.Fixed(simBytesPerNode), sim.Fixed(simBytesPerNode)
		r.ByCapacity = true
	case byCapacityLessOut:
		cfg.Workload.Input, cfg.Workload.Output = sim.Fixed(simBytesPerNode), sim.Fixed(simBytesPerNode/2)
		r.ByCapacity = true
	}
	if c.crowded {
		r.Boot, r.Destroy = sim.Linear{Base: 30 * time.Second}, sim.Linear{Base: 20 * time.Second}
	}
	if c.instant {
		const fast = 1e18
		r.Boot, r.Destroy, r.Mount = sim.Linear{}, sim.Linear{}, 0
		r.StageInRate, r.StageOutRate, r.StageFileCost = fast, fast, 0
		r.Link, r.CreateRate = fast, fast
		cfg.FS.Bandwidth, cfg.FS.CreateRate, cfg.FS.NodeBandwidth = fast, fast, 0
	}
	return cfg
}

// capacity is what a job on n compute nodes asks for: its data size
// with byCapacity (as the simulator rounds it, to whole MiB), else
// nothing (RSA nodes by proportion).
func (c simCase) capacity(n int) int64 {
	if c.sizes != byCapacity && c.sizes != byCapacityLessOut {
		return 0
	}
	return int64(n) * simBytesPerNode
}

// trace is c's trace for simComputeNodes nodes (one processor each),
// drawn from its seed, with each job's compute nodes: 8 to 15 jobs about
// a minute apart, or crowded.
func (c simCase) trace() (string, map[int64]int) {
	r := rand.New(rand.NewPCG(c.seed, 43))
	jobs, gap, runs := 8+r.IntN(8), 120, 900
	if c.crowded {
		jobs, gap, runs = 20+r.IntN(10), 30, 300
	}
	var b strings.Builder
	fmt.Fprintf(&b, "; MaxNodes: %d\n", simComputeNodes)
	nodes := map[int64]int{}
	submit := 0
	for id := 1; id <= jobs; id++ {
		submit += r.IntN(gap)
		run := 5 + r.IntN(runs)
		procs := 1 + r.IntN(simComputeNodes)
		req := -1 // the scheduler estimates by the run time
		if r.IntN(3) > 0 {
			req = run * (1 + r.IntN(3))
		}
		fmt.Fprintf(&b, "%d %d -1 %d %d -1 -1 -1 %d -1 1 -1 -1 -1 0 -1 -1 -1\n", id, submit, run, procs, req)
		nodes[int64(id)] = procs
	}
	return b.String(), nodes
}

// simStep is one lifecycle.Step the simulator took (sim.Config.Observe).
type simStep struct {
	id     int64 // the trace's job id
	before lifecycle.Job
	ev     lifecycle.Event
	out    lifecycle.Outcome
	parts  []job.Part
}

// runSim simulates c's trace and returns every Step in the order the
// simulator took them, with the compute nodes of each job.
func runSim(t *testing.T, c simCase) ([]simStep, map[int64]int) {
	t.Helper()
	trace, nodes := c.trace()
	cfg := c.config(t)
	var steps []simStep
	cfg.Observe = func(id int64, before lifecycle.Job, ev lifecycle.Event, out lifecycle.Outcome, parts []job.Part) {
		steps = append(steps, simStep{id, before, ev, out, parts})
	}
	res, err := sim.Run(context.Background(), strings.NewReader(trace), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped.Total() > 0 || res.Jobs != len(nodes) {
		t.Fatalf("the simulator ran %d of the trace's %d jobs", res.Jobs, len(nodes))
	}
	return steps, nodes
}

// history is what a job went through: each change of its states, with
// the event that made it ("assigned>ONDECK/ASSIGNED"), the RAM it was
// given after each assignment ("nodes rsa001:256M"), and "wait" where it
// began to wait for RSA capacity.
type history struct {
	path []string
}

func (h *history) change(kind lifecycle.EventKind, js lifecycle.JobState, rs lifecycle.RSAState, parts []job.Part) {
	h.path = append(h.path, fmt.Sprintf("%s>%s/%s", kind, js, rs))
	if kind == lifecycle.EvAssigned && rs == lifecycle.Assigned {
		h.path = append(h.path, "nodes "+partsString(parts))
	}
}

func partsString(parts []job.Part) string {
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = p.Node + ":" + units.FormatSize(p.Bytes)
	}
	return strings.Join(s, ",")
}

// simHistories is each job's history as the simulator's steps tell it.
// An assignment that the simulator carries out returns its decision at
// once (the next step is the job's EvAssigned or EvIneligible); a step
// that asked for one and is followed by neither waits.
func simHistories(steps []simStep) map[int64]*history {
	hs := map[int64]*history{}
	waiting := map[int64]bool{}
	for i, s := range steps {
		h := hs[s.id]
		if h == nil {
			h = &history{}
			hs[s.id] = h
		}
		if s.out.Ignored {
			continue
		}
		for _, c := range s.out.Changes {
			h.change(s.ev.Kind, c.ToJob, c.ToRSA, s.parts)
		}
		if !s.out.Job.AwaitsNodes() {
			waiting[s.id] = false
		}
		if !slices.Contains(s.out.Actions, lifecycle.Action{Kind: lifecycle.Assign}) || waiting[s.id] {
			continue
		}
		decided := i+1 < len(steps) && steps[i+1].id == s.id &&
			(steps[i+1].ev.Kind == lifecycle.EvAssigned || steps[i+1].ev.Kind == lifecycle.EvIneligible)
		if !decided {
			waiting[s.id] = true
			h.path = append(h.path, "wait")
		}
	}
	return hs
}

func sortedIDs(hs map[int64]*history) []int64 {
	ids := make([]int64, 0, len(hs))
	for id := range hs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// The simulator's events by what the replay does with them.
var (
	// schedulerEvents are posted to the daemon as they are.
	schedulerEvents = []lifecycle.EventKind{lifecycle.EvOnDeck, lifecycle.EvDemoted, lifecycle.EvStarted, lifecycle.EvFinished}
	// completions end the daemon's action held at its gate, with the
	// outcome that makes the daemon's action end with the same event.
	completions = map[lifecycle.EventKind]error{
		lifecycle.EvBooted:         nil,
		lifecycle.EvStagedIn:       nil,
		lifecycle.EvStageInFailed:  errInjected,
		lifecycle.EvStageInStopped: nil, // the daemon cancelled it: it ends stopped
		lifecycle.EvMounted:        nil,
		lifecycle.EvUnmounted:      nil,
		lifecycle.EvUnmountBusy:    errInjected,
		lifecycle.EvStagedOut:      nil,
		lifecycle.EvDestroyed:      nil,
	}
	// The rest (EvAssigned, EvIneligible, ticks after the first) the
	// daemon makes itself: its assignment decides at once, as the
	// simulator's does, and RAM released ticks the waiting jobs.
)

// replay is the daemon's side of one case.
type replay struct {
	t     *testing.T
	u     *unit
	g     *gates
	c     simCase
	nodes map[int64]int // compute nodes, by trace job id
	// By trace job id: the daemon's job, the events of its log read so
	// far, whether it waits for capacity, and its history.
	jobs    map[int64]*job.Job
	read    map[int64]int
	waiting map[int64]bool
	hist    map[int64]*history
}

// replayInDaemon runs steps' scheduler events through a daemon whose
// actions end as steps say, and returns each job's history as the
// daemon's store tells it.
func replayInDaemon(t *testing.T, c simCase, steps []simStep, nodes map[int64]int) map[int64]*history {
	u := newUnit(t)
	r := &replay{t: t, u: u, g: newGates(t), c: c, nodes: nodes, jobs: map[int64]*job.Job{},
		read: map[int64]int{}, waiting: map[int64]bool{}, hist: map[int64]*history{}}
	cfg := u.d.cfg
	cfg.Proportion, cfg.MinJobNodes = 2, 2
	cfg.Nodes = nil
	for i := range c.rsaNodes {
		// The simulator's names for its RSA nodes.
		cfg.Nodes = append(cfg.Nodes, config.Node{Name: fmt.Sprintf("rsa%03d", i+1), Capacity: simNodeRAM})
	}
	u.d.useEngine(&gatedEngine{Engine: u.d.engine, g: r.g})
	u.d.access = &gatedAccess{Access: u.d.access, g: r.g}
	u.stage = func(ctx context.Context, rd engine.Ramdisk, task stage.Task) error {
		a := lifecycle.StageIn
		if task.Phase == "stage-out" {
			a = lifecycle.StageOut
		}
		err := r.g.hold(gateKey{rd.Job, a})
		if ctx.Err() != nil {
			return ctx.Err() // stopped: the copy reports that it stopped
		}
		return err
	}
	u.run()
	for i, s := range steps {
		_, done := completions[s.ev.Kind]
		switch {
		case r.jobs[s.id] == nil:
			r.create(s)
		case slices.Contains(schedulerEvents, s.ev.Kind):
			r.expect(steps, i)
			r.schedule(s)
		case done:
			r.expect(steps, i)
			r.complete(s)
		default:
			continue
		}
		r.quiesce()
		r.observe()
	}
	for id, j := range r.jobs {
		if got := r.u.get(j); !got.Machine().Done() {
			t.Errorf("trace job %d (the daemon's %d) is %s/%s in the daemon at the end, not done", id, j.ID, got.State, got.RSA)
		}
	}
	return r.hist
}

// create makes the job the simulator met in s as the daemon's create
// does: stored in the states lifecycle.NewJob gives it, then its first
// pass. (create itself would refuse the test's job user, who has no
// account when the test runs as root.)
func (r *replay) create(s simStep) {
	r.t.Helper()
	started := s.before.State == lifecycle.Running
	met := s.before
	met.HasInput, met.HasOutput, met.Delay = false, false, 0
	if s.ev.Kind != lifecycle.EvTick || !reflect.DeepEqual(met, lifecycle.NewJob(started, s.ev.At)) {
		r.t.Fatalf("the simulator met trace job %d as %+v with %s, not as lifecycle.NewJob with a tick", s.id, s.before, s.ev.Kind)
	}
	now := time.Now()
	m := lifecycle.NewJob(started, now)
	spec := job.Spec{ComputeNodes: r.nodes[s.id], Capacity: r.c.capacity(r.nodes[s.id]), Delay: s.before.Delay}
	if s.before.HasInput {
		spec.Input = r.u.in
	}
	if s.before.HasOutput {
		spec.Output = r.u.out
	}
	j := &job.Job{Spec: spec, UID: r.u.uid, GID: r.u.gid, User: "alice",
		State: m.State, RSA: m.RSA, StartedAt: m.StartedAt, CreatedAt: now, UpdatedAt: now}
	if err := r.u.d.store.Create(context.Background(), j, nil); err != nil {
		r.t.Fatal(err)
	}
	r.jobs[s.id] = j
	r.hist[s.id] = &history{}
	r.u.send(j, lifecycle.EvTick)
}

// expect fails the test unless the daemon's job is where the simulator's
// was when it took steps[i]: the lock step cannot go on past a
// divergence.
func (r *replay) expect(steps []simStep, i int) {
	r.t.Helper()
	s := steps[i]
	got := r.u.get(r.jobs[s.id])
	if got.State == s.before.State && got.RSA == s.before.RSA {
		return
	}
	r.t.Fatalf("before the simulator's %s to trace job %d (its step %d), the simulator has the job %s/%s, the daemon %s/%s\n daemon    %q\n simulator %q",
		s.ev.Kind, s.id, i, s.before.State, s.before.RSA, got.State, got.RSA, r.hist[s.id].path, simHistories(steps[:i])[s.id].path)
}

// schedule posts s's scheduler event, which the daemon must take, or
// refuse as not applying now (an API conflict), as the simulator's
// machine did.
func (r *replay) schedule(s simStep) {
	r.t.Helper()
	j := r.jobs[s.id]
	_, err := r.u.d.call(context.Background(), msg{id: j.ID, ev: lifecycle.Event{Kind: s.ev.Kind, At: time.Now()}})
	refused := api.StatusOf(err) == http.StatusConflict
	if err != nil && !refused || s.out.Ignored != refused {
		r.t.Fatalf("%s to trace job %d: the simulator's machine ignored it: %v; the daemon answered %v", s.ev.Kind, s.id, s.out.Ignored, err)
	}
}

// complete ends the daemon's action that s's event ends, as it ended in
// the simulator, and waits until the daemon committed its end.
func (r *replay) complete(s simStep) {
	r.t.Helper()
	if s.out.Ignored {
		r.t.Fatalf("the simulator ended an action of trace job %d with %s, which its machine ignored in %s/%s", s.id, s.ev.Kind, s.before.State, s.before.RSA)
	}
	a, _ := lifecycle.Work(s.before.RSA)
	if s.before.RSA == lifecycle.StoppingStagingIn {
		a = lifecycle.StageIn // the copy being stopped
	}
	j := r.jobs[s.id]
	was := r.u.get(j).Version
	r.g.release(gateKey{j.ID, a}, completions[s.ev.Kind])
	r.u.await(j, func(n *job.Job) bool { return n.Version > was }, "committed "+string(s.ev.Kind))
}

// quiesce returns once the loop has handled everything it was given and
// what that started in the loop itself (assignments, the ticks of
// released RAM): it handles every pending message before the next from
// its inbox, and answers this one (about no job) after them. What is left
// are actions held at their gates.
func (r *replay) quiesce() {
	if _, err := r.u.d.call(context.Background(), msg{id: 0, ev: lifecycle.Event{Kind: lifecycle.EvTick, At: time.Now()}}); err == nil {
		r.t.Fatal("a tick to no job was taken")
	}
}

// observe adds what the daemon committed since the last look to each
// job's history.
func (r *replay) observe() {
	r.t.Helper()
	for id, j := range r.jobs {
		got := r.u.get(j)
		evs, err := r.u.d.store.Events(context.Background(), j.ID)
		if err != nil {
			r.t.Fatal(err)
		}
		h := r.hist[id]
		for _, e := range evs[r.read[id]:] {
			h.change(lifecycle.EventKind(e.Kind), e.JobState, e.RSAState, got.Alloc)
		}
		r.read[id] = len(evs)
		waits := !got.WaitingSince.IsZero()
		if waits && !r.waiting[id] {
			h.path = append(h.path, "wait")
		}
		r.waiting[id] = waits
	}
}

// gateKey names one action of one job (the daemon's id).
type gateKey struct {
	job    int64
	action lifecycle.ActionKind
}

// gates hold each action of the daemon at its engine or node access call
// until the replay ends it.
type gates struct {
	t    *testing.T
	mu   sync.Mutex
	held map[gateKey]*gate
	// stop ends every held action with an error once the test ends.
	stop chan struct{}
}

type gate struct {
	arrived chan struct{} // closed when the action reaches its gate
	busy    bool
	end     chan error
}

func newGates(t *testing.T) *gates {
	g := &gates{t: t, held: map[gateKey]*gate{}, stop: make(chan struct{})}
	t.Cleanup(func() { close(g.stop) })
	return g
}

func (g *gates) at(k gateKey) *gate {
	g.mu.Lock()
	defer g.mu.Unlock()
	x, ok := g.held[k]
	if !ok {
		x = &gate{arrived: make(chan struct{}), end: make(chan error, 1)}
		g.held[k] = x
	}
	return x
}

var errSecondAction = errors.New("the same action of the job is running already")

// hold is the action's side: it waits for the replay to end it.
func (g *gates) hold(k gateKey) error {
	x := g.at(k)
	g.mu.Lock()
	second := x.busy
	x.busy = true
	g.mu.Unlock()
	if second {
		g.t.Errorf("job %d: a second %s while one is held", k.job, k.action)
		return errSecondAction
	}
	close(x.arrived)
	select {
	case err := <-x.end:
		return err
	case <-g.stop:
		return errors.New("the test ended")
	}
}

// release is the replay's side: it waits for the action to reach its
// gate (a minute guards against one that never comes), then ends it with
// err.
func (g *gates) release(k gateKey, err error) {
	g.t.Helper()
	x := g.at(k)
	select {
	case <-x.arrived:
	case <-time.After(time.Minute):
		g.t.Fatalf("job %d: no %s reached its gate", k.job, k.action)
	}
	g.mu.Lock()
	delete(g.held, k)
	g.mu.Unlock()
	x.end <- err
}

// gatedEngine holds Construct and Destroy at their gates. Its other
// optional interfaces are found through it (Unwrap).
type gatedEngine struct {
	engine.Engine
	g *gates
}

var _ engine.Unwrapper = (*gatedEngine)(nil)

func (e *gatedEngine) Unwrap() engine.Engine { return e.Engine }

func (e *gatedEngine) Construct(ctx context.Context, r engine.Ramdisk) error {
	if err := e.g.hold(gateKey{r.Job, lifecycle.Construct}); err != nil {
		return err
	}
	return e.Engine.Construct(ctx, r)
}

func (e *gatedEngine) Destroy(ctx context.Context, r engine.Ramdisk) error {
	if err := e.g.hold(gateKey{r.Job, lifecycle.Destroy}); err != nil {
		return err
	}
	return e.Engine.Destroy(ctx, r)
}

// gatedAccess holds the mounts and the unmount at the switch to output
// at their gates; the detaching unbinds of a stage-out or a teardown pass
// (those actions are held at their engine calls).
type gatedAccess struct {
	access.Access
	g *gates
}

func (a *gatedAccess) Bind(ctx context.Context, hosts []string, role access.Role, rd engine.Ramdisk, target string) error {
	k := gateKey{rd.Job, lifecycle.MountIn}
	if role == access.OutputRole {
		k.action = lifecycle.MountOut
	}
	if err := a.g.hold(k); err != nil {
		return err
	}
	return a.Access.Bind(ctx, hosts, role, rd, target)
}

func (a *gatedAccess) Unbind(ctx context.Context, hosts []string, rd engine.Ramdisk, detach bool) error {
	if !detach {
		if err := a.g.hold(gateKey{rd.Job, lifecycle.Unmount}); err != nil {
			return err
		}
	}
	return a.Access.Unbind(ctx, hosts, rd, detach)
}

// simCoverage is what the cases' simulations did, all together.
type simCoverage struct {
	kinds    map[lifecycle.EventKind]int // events that changed a job
	waits    int
	assigned map[string]int // by the job's state and directories when assigned
}

func (c *simCoverage) add(steps []simStep) {
	for _, h := range simHistories(steps) {
		for _, p := range h.path {
			if p == "wait" {
				c.waits++
			}
		}
	}
	for _, s := range steps {
		if s.out.Ignored || len(s.out.Changes) == 0 {
			continue
		}
		c.kinds[s.ev.Kind]++
		if s.ev.Kind == lifecycle.EvAssigned {
			kind := string(s.before.State)
			if s.before.HasInput {
				kind += " in"
			}
			if s.before.HasOutput {
				kind += " out"
			}
			c.assigned[kind]++
		}
	}
}
