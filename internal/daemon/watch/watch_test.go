package watch

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/engine/memengine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/joblog"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// probing is an engine whose probe finds the nodes in down out of reach,
// and blocks while hold is set.
type probing struct {
	engine.Engine
	down []string
	hold chan struct{}
}

func (e *probing) Probe(engine.Ramdisk) (engine.Degraded, error) {
	if e.hold != nil {
		<-e.hold
	}
	return engine.Degraded{Nodes: e.down, Missing: true}, nil
}

// jobs is the daemon's side: its active jobs, and the events posted.
type jobs struct {
	mu     sync.Mutex
	active []*job.Job
	posted []lifecycle.Event
}

func (j *jobs) EachActive(fn func(*job.Job)) {
	for _, a := range j.active {
		fn(a)
	}
}

func (j *jobs) Ramdisk(a *job.Job) engine.Ramdisk {
	return engine.Ramdisk{Job: a.ID, Build: a.Build, Dir: a.Ramdisk, Parts: a.Alloc}
}

func (j *jobs) Post(_ int64, ev lifecycle.Event, _ func(*job.Job)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.posted = append(j.posted, ev)
}

func newWatch(t *testing.T, e engine.Engine, js *jobs) *Watch {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return &Watch{Engine: e, Jobs: js, Logs: joblog.New(t.TempDir(), log), Log: log}
}

// A part out of reach is reported once two probes in a row saw it, and
// never for a node the job has lost already, nor for a job whose RAMDISK
// is not watched in its state.
func TestProbeReportsTwiceSeen(t *testing.T) {
	e := &probing{Engine: memengine.New(t.TempDir()), down: []string{"rsa2"}}
	running := &job.Job{ID: 1, Build: 3, RSA: lifecycle.InUseIn, Ramdisk: "/r/1", Alloc: []job.Part{{Node: "rsa1"}, {Node: "rsa2"}}}
	known := &job.Job{ID: 2, Build: 1, RSA: lifecycle.InUseIn, Ramdisk: "/r/2", Alloc: []job.Part{{Node: "rsa2"}}, Lost: []string{"rsa2"}}
	idle := &job.Job{ID: 3, Build: 1, RSA: lifecycle.Initial, Alloc: []job.Part{{Node: "rsa2"}}}
	js := &jobs{active: []*job.Job{running, known, idle}}
	p := prober{Watch: newWatch(t, e, js), seen: map[int64][]string{}, hung: map[int64]<-chan struct{}{}}
	ctx := context.Background()
	p.round(ctx)
	if len(js.posted) != 0 {
		t.Fatalf("reported after one probe: %+v", js.posted)
	}
	p.round(ctx)
	if len(js.posted) != 1 {
		t.Fatalf("reported %d losses after two probes, want 1 (job 1's): %+v", len(js.posted), js.posted)
	}
	ev := js.posted[0]
	if ev.Kind != lifecycle.EvNodeLost || ev.Build != 3 || !slices.Equal(ev.Nodes, []string{"rsa2"}) || ev.Whole {
		t.Errorf("reported %+v; want rsa2 lost from build 3, not whole", ev)
	}
}

// A probe that does not answer is given up when its context ends, not
// waited for.
func TestProbeGivesUpWithItsContext(t *testing.T) {
	hold := make(chan struct{})
	e := &probing{Engine: memengine.New(t.TempDir()), down: []string{"rsa2"}, hold: hold}
	rd := engine.Ramdisk{Job: 7}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, done, err := Probe(ctx, e, rd)
	if err == nil {
		t.Fatal("a probe that never answered succeeded")
	}
	close(hold)
	if done != nil {
		<-done
	}
}
