package daemon

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/daemon/watch"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/engine/memengine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/stage"
)

// nodesEngine is an engine whose parts are on nodes it watches
// (engine.Nodes): out are the RSA nodes that did not answer.
type nodesEngine struct {
	engine.Engine
	out map[string]bool
}

func (e *nodesEngine) Placeable(n string) bool     { return !e.out[n] }
func (e *nodesEngine) Unplaceable() string         { return "out of the test's reach" }
func (e *nodesEngine) Up(n string) bool            { return !e.out[n] }
func (e *nodesEngine) Incarnation(n string) string { return "inc-" + n }
func (e *nodesEngine) ComputeNodes() []string      { return nil }
func (e *nodesEngine) Health() []engine.NodeHealth { return nil }

var _ engine.Nodes = (*nodesEngine)(nil)

// The scheduler places a RAMDISK on the RSA nodes the engine says take
// new parts, each part with the incarnation the engine last saw there,
// and says in the engine's words why a job waits for the others; the
// engine is asked through its wrappers (WithRetry). An engine that does
// not watch nodes (memengine) has every node placeable and no
// incarnations.
func TestAssignAsksTheEngine(t *testing.T) {
	const gib = 1 << 30
	mem := func(t *testing.T) engine.Engine { return memengine.New(t.TempDir()) }
	for _, tc := range []struct {
		name   string
		engine func(t *testing.T) engine.Engine
		parts  map[string]string // node → incarnation of each part; nil: the job waits
		silent []string          // watch.Silent: the parts on every node
		reason string            // the wait's reason ends so
	}{
		{"every node up", func(t *testing.T) engine.Engine {
			return engine.WithRetry(&nodesEngine{Engine: mem(t)}, 3, 0)
		}, map[string]string{"rsa01": "inc-rsa01", "rsa02": "inc-rsa02"}, nil, ""},
		{"one node out", func(t *testing.T) engine.Engine {
			return engine.WithRetry(&nodesEngine{Engine: mem(t), out: map[string]bool{"rsa02": true}}, 3, 0)
		}, nil, []string{"rsa02"}, " (1 of 2 RSA nodes out of the test's reach; rsa nodes)"},
		{"no nodes of its own", mem, map[string]string{"rsa01": "", "rsa02": ""}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := passDaemon(t, 2, gib)
			d.useEngine(tc.engine(t))
			j := passJob(0, 2*gib, time.Now())
			j.ID = 1
			m, assigned := d.assign(j)
			if got := watch.Silent(d.engine, []job.Part{{Node: "rsa01"}, {Node: "rsa02"}}); !slices.Equal(got, tc.silent) {
				t.Errorf("silent among the parts: %v, want %v", got, tc.silent)
			}
			if tc.parts == nil {
				if !assigned || m.ev.Kind != lifecycle.EvWaitCapacity {
					t.Fatalf("event %+v (%v); want the first wait for capacity", m.ev, assigned)
				}
				if why := d.board.Wait(j.ID).Why; !strings.HasSuffix(why, tc.reason) {
					t.Errorf("waits because %q; want it to end %q", why, tc.reason)
				}
				return
			}
			if !assigned || m.ev.Kind != lifecycle.EvAssigned {
				t.Fatalf("not assigned: %+v (waits because %q)", m.ev, d.board.Wait(j.ID).Why)
			}
			var n job.Job
			m.edit(&n)
			parts := map[string]string{}
			for _, p := range n.Alloc {
				parts[p.Node] = p.Incarnation
			}
			if len(n.Alloc) != len(tc.parts) || !maps.Equal(parts, tc.parts) {
				t.Errorf("assigned %+v; want parts (node: incarnation) %v", n.Alloc, tc.parts)
			}
		})
	}
}

// stagingEngine stages itself (engine.Stager) and records what it was
// asked.
type stagingEngine struct {
	engine.Engine
	ramdisks []engine.Ramdisk
	tasks    []stage.Task
}

func (e *stagingEngine) Stage(_ context.Context, r engine.Ramdisk, t stage.Task) error {
	e.ramdisks, e.tasks = append(e.ramdisks, r), append(e.tasks, t)
	return nil
}

// An engine that stages on its own nodes is handed each stage, through
// its wrappers, with the job's RAMDISK and user; the daemon's own rule for
// the stages it runs here (stage.Task.Private) is not the engine's.
func TestStageByTheEngine(t *testing.T) {
	d := passDaemon(t, 2, 1<<30)
	se := &stagingEngine{Engine: memengine.New(t.TempDir())}
	d.useEngine(engine.WithRetry(se, 3, 0))
	j := passJob(0, 1<<30, time.Now())
	j.ID, j.Build, j.Ramdisk = 7, 2, "/run/rsa/ramdisk/7/ram"
	j.Alloc = []job.Part{{Node: "rsa01", Bytes: 1 << 30}}
	if err := d.actionEnv().Stage(context.Background(), j, "stage-in", "", j.Spec.Input, true); err != nil {
		t.Fatal(err)
	}
	if len(se.tasks) != 1 {
		t.Fatalf("the engine staged %d times, want once", len(se.tasks))
	}
	r, task := se.ramdisks[0], se.tasks[0]
	if r.Job != 7 || r.Build != 2 || !slices.Equal(r.Parts, j.Alloc) || r.UID != j.UID {
		t.Errorf("staged RAMDISK %+v; want job 7's build 2 on %v, uid %d", r, j.Alloc, j.UID)
	}
	if task.Phase != "stage-in" || task.Data != j.Spec.Input || task.Ramdisk != j.Ramdisk || task.User.UID != j.UID || task.User.Name != j.User ||
		!task.Degraded || task.Private || task.Log == nil {
		t.Errorf("staged %+v; want stage-in of %s as %s (uid %d), degraded, not private, with a log", task, j.Spec.Input, j.User, j.UID)
	}
}

// tuned is an engine with needs of placement and periods of its own.
type tuned struct{ engine.Engine }

func (tuned) Placement() engine.Placement { return engine.Placement{Even: true, Replica: 2} }
func (tuned) Periods() engine.Periods {
	return engine.Periods{Heartbeat: time.Second, LeftoverSweep: 2 * time.Second, ProbeTimeout: 3 * time.Second}
}

// The daemon takes its periods from the engine, through its wrappers; an
// engine without them gets the default periods. (The placement: package
// book's TestPlacementThroughWrappers.)
func TestEngineTunes(t *testing.T) {
	mem := func(t *testing.T) engine.Engine { return memengine.New(t.TempDir()) }
	for _, tc := range []struct {
		name    string
		engine  func(t *testing.T) engine.Engine
		periods engine.Periods
	}{
		{"no needs", mem, engine.DefaultPeriods()},
		{"its own, wrapped", func(t *testing.T) engine.Engine { return engine.WithRetry(tuned{mem(t)}, 3, 0) },
			engine.Periods{Heartbeat: time.Second, LeftoverSweep: 2 * time.Second, ProbeTimeout: 3 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := passDaemon(t, 2, 1<<30)
			d.useEngine(tc.engine(t))
			if p := d.periods(); p != tc.periods {
				t.Errorf("periods %+v, want %+v", p, tc.periods)
			}
		})
	}
}
