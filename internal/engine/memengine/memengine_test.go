package memengine_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/engine/enginetest"
	"github.com/rsa-hpc/rsa/internal/engine/memengine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/stage"
)

// twoNodes spreads size over two RSA nodes, so that one can be silent.
func twoNodes(size int64) []job.Part {
	return []job.Part{{Node: "rsa1", Bytes: size / 2}, {Node: "rsa2", Bytes: size - size/2}}
}

// The in-memory engine keeps every contract the suite checks without a
// kernel's file system.
func TestConformance(t *testing.T) {
	root := t.TempDir()
	m := memengine.New(root)
	enginetest.Run(t, enginetest.Harness{
		New:   func(*testing.T) engine.Engine { return m },
		Root:  root,
		Parts: twoNodes,
		UID:   4242,
		GID:   4242,
		Hold:  func(_ *testing.T, r engine.Ramdisk) func() { return m.Hold(r) },
		Silence: func(_ *testing.T, node string) func() {
			m.Silence(node)
			return func() { m.Answer(node) }
		},
	})
}

func ramdisk(root string, id int64) engine.Ramdisk {
	return engine.Ramdisk{Job: id, Dir: engine.DirFor(root, id), Parts: twoNodes(enginetest.Size), Build: 1, UID: 4242, GID: 4242}
}

// FailNext fails the next call of its method alone, once, before the call
// does anything.
func TestFailNext(t *testing.T) {
	injected := errors.New("injected")
	for _, tc := range []struct {
		method string
		call   func(*memengine.Engine, engine.Ramdisk) error
	}{
		{memengine.Construct, func(m *memengine.Engine, r engine.Ramdisk) error { return m.Construct(t.Context(), r) }},
		{memengine.Seal, func(m *memengine.Engine, r engine.Ramdisk) error { return m.Seal(t.Context(), r) }},
		{memengine.Revoke, func(m *memengine.Engine, r engine.Ramdisk) error { return m.Revoke(t.Context(), r) }},
		{memengine.Device, func(m *memengine.Engine, r engine.Ramdisk) error { _, _, err := m.Device(r); return err }},
		{memengine.Destroy, func(m *memengine.Engine, r engine.Ramdisk) error { return m.Destroy(t.Context(), r) }},
		{memengine.Usage, func(m *memengine.Engine, r engine.Ramdisk) error { _, err := m.Usage(r); return err }},
		{memengine.Check, func(m *memengine.Engine, r engine.Ramdisk) error { _, err := m.Check(t.Context(), r); return err }},
		{memengine.Probe, func(m *memengine.Engine, r engine.Ramdisk) error { _, err := m.Probe(r); return err }},
		{memengine.List, func(m *memengine.Engine, r engine.Ramdisk) error { _, err := m.List(t.Context()); return err }},
		{memengine.Stage, func(m *memengine.Engine, r engine.Ramdisk) error {
			return memengine.WithStager(m, nil).Stage(t.Context(), r, stage.Task{Phase: "stage-in"})
		}},
	} {
		t.Run(tc.method, func(t *testing.T) {
			root := t.TempDir()
			m := memengine.New(root)
			r := ramdisk(root, 7)
			if err := m.Construct(t.Context(), r); err != nil {
				t.Fatal(err)
			}
			m.FailNext(tc.method, injected)
			if err := tc.call(m, r); !errors.Is(err, injected) {
				t.Errorf("first %s after FailNext: %v; want the injected error", tc.method, err)
			}
			if err := tc.call(m, r); err != nil {
				t.Errorf("second %s after FailNext: %v; want success", tc.method, err)
			}
			calls := m.Calls()
			if n := len(calls); n != 3 || calls[1].Method != tc.method || calls[2].Method != tc.method {
				t.Errorf("Calls = %+v; want Construct, then %s twice", calls, tc.method)
			}
		})
	}
}

// A failed Construct builds nothing: State and Device find no RAMDISK.
func TestFailedConstructBuildsNothing(t *testing.T) {
	root := t.TempDir()
	m := memengine.New(root)
	r := ramdisk(root, 7)
	m.FailNext(memengine.Construct, errors.New("injected"))
	if err := m.Construct(t.Context(), r); err == nil {
		t.Fatal("Construct after FailNext succeeded")
	}
	if s, ok := m.State(r); ok {
		t.Errorf("State after a failed Construct = %+v", s)
	}
	if _, ok, err := m.Device(r); ok || err != nil {
		t.Errorf("Device after a failed Construct: ok %v, %v", ok, err)
	}
}

// State follows a RAMDISK through its life as the daemon drives it.
func TestState(t *testing.T) {
	root := t.TempDir()
	m := memengine.New(root)
	r := ramdisk(root, 7)
	steps := []struct {
		name string
		do   func() error
		want memengine.State
	}{
		{"Construct", func() error { return m.Construct(t.Context(), r) }, memengine.State{Ramdisk: r, Present: true}},
		{"Seal", func() error { return m.Seal(t.Context(), r) }, memengine.State{Ramdisk: r, Present: true, Sealed: true}},
		{"Revoke", func() error { return m.Revoke(t.Context(), r) }, memengine.State{Ramdisk: r, Present: true, Sealed: true, Revoked: true}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got, ok := m.State(r)
		if !ok || got.Present != s.want.Present || got.Sealed != s.want.Sealed || got.Revoked != s.want.Revoked || got.Holds != 0 || len(got.Owed) != 0 || got.Ramdisk.Job != r.Job {
			t.Errorf("State after %s = %+v, %v; want %+v", s.name, got, ok, s.want)
		}
	}
	if err := m.Destroy(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	if got, ok := m.State(r); ok {
		t.Errorf("State after Destroy = %+v; want nothing left", got)
	}
}

// Degrade sets what Check and Probe report; a RAMDISK not there fails
// both.
func TestDegrade(t *testing.T) {
	root := t.TempDir()
	m := memengine.New(root)
	r := ramdisk(root, 7)
	if _, err := m.Check(t.Context(), r); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Check of a RAMDISK not built: %v; want an error wrapping fs.ErrNotExist", err)
	}
	if err := m.Construct(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	want := engine.Degraded{Nodes: []string{"rsa2"}, Missing: true, Epoch: 3}
	m.Degrade(r, want)
	for _, f := range []struct {
		name string
		get  func() (engine.Degraded, error)
	}{
		{"Check", func() (engine.Degraded, error) { return m.Check(t.Context(), r) }},
		{"Probe", func() (engine.Degraded, error) { return m.Probe(r) }},
	} {
		got, err := f.get()
		if err != nil || !slices.Equal(got.Nodes, want.Nodes) || got.Missing != want.Missing || got.Epoch != want.Epoch {
			t.Errorf("%s after Degrade = %+v, %v; want %+v", f.name, got, err, want)
		}
	}
}

// A rebuilt RAMDISK (build 2) has its own record: the first, destroyed
// with a debt, stays owed beside it, and List reports both.
func TestRebuild(t *testing.T) {
	root := t.TempDir()
	m := memengine.New(root)
	first := ramdisk(root, 7)
	if err := m.Construct(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	second := first
	second.Build = 2
	if err := m.Construct(t.Context(), second); err == nil {
		t.Fatal("Construct of build 2 over build 1, still present, succeeded")
	}
	m.Silence("rsa2")
	var debt *engine.DebtError
	if err := m.Destroy(t.Context(), first); !errors.As(err, &debt) {
		t.Fatalf("Destroy with rsa2 silent: %v; want a *DebtError", err)
	}
	if err := m.Construct(t.Context(), second); err != nil {
		t.Fatalf("Construct of build 2 once build 1 is gone but owed: %v", err)
	}
	m.Answer("rsa2")
	found, err := m.List(t.Context())
	want := []engine.Found{{Job: 7, Build: 1, Dir: first.Dir}, {Job: 7, Build: 2, Dir: first.Dir}}
	if err != nil || !slices.Equal(found, want) {
		t.Errorf("List = %+v, %v; want %+v", found, err, want)
	}
}

// WithStager makes the engine an engine.Stager, found through wrappers:
// each Stage is recorded with its phase and runs the test's function,
// unless FailNext failed it or its RAMDISK is not there.
func TestStager(t *testing.T) {
	root := t.TempDir()
	m := memengine.New(root)
	r := ramdisk(root, 7)
	var staged []stage.Task
	s, ok := engine.As[engine.Stager](engine.WithRetry(memengine.WithStager(m, func(_ context.Context, got engine.Ramdisk, task stage.Task) error {
		if got.Job != r.Job || got.Build != r.Build {
			t.Errorf("staged into %+v, want %+v", got, r)
		}
		staged = append(staged, task)
		return nil
	}), 3, 0))
	if !ok {
		t.Fatal("WithStager gives no engine.Stager through WithRetry")
	}
	if _, ok := engine.As[engine.Stager](m); ok {
		t.Error("the engine itself is an engine.Stager")
	}
	if err := s.Stage(t.Context(), r, stage.Task{Phase: "stage-in"}); !errors.Is(err, fs.ErrNotExist) || len(staged) != 0 {
		t.Errorf("Stage into a RAMDISK not built: %v, %d stages run; want an error wrapping fs.ErrNotExist, none run", err, len(staged))
	}
	if err := m.Construct(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	for _, phase := range []stage.Phase{stage.StageIn, stage.StageOut} {
		if err := s.Stage(t.Context(), r, stage.Task{Phase: phase}); err != nil {
			t.Errorf("%s: %v", phase, err)
		}
	}
	if len(staged) != 2 || staged[0].Phase != "stage-in" || staged[1].Phase != "stage-out" {
		t.Errorf("stages run: %+v; want stage-in, then stage-out", staged)
	}
	want := []memengine.Call{
		{Method: memengine.Stage, Job: 7, Build: 1, Phase: "stage-in"},
		{Method: memengine.Construct, Job: 7, Build: 1},
		{Method: memengine.Stage, Job: 7, Build: 1, Phase: "stage-in"},
		{Method: memengine.Stage, Job: 7, Build: 1, Phase: "stage-out"},
	}
	if got := m.Calls(); !slices.Equal(got, want) {
		t.Errorf("Calls = %+v; want %+v", got, want)
	}
}

// No file system has a RAMDISK's Device: a search of /proc for the
// processes that hold one (as the daemon's teardown makes, and signals
// what it finds) finds none, however many RAMDISKs were built.
func TestDeviceIsNoFileSystems(t *testing.T) {
	mounted := map[uint64]bool{}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "ID PARENT MAJ:MIN ..."
		fields := strings.Fields(sc.Text())
		var major, minor uint32
		if len(fields) < 3 {
			continue
		}
		if _, err := fmt.Sscanf(fields[2], "%d:%d", &major, &minor); err != nil {
			t.Fatalf("mountinfo line %q: %v", sc.Text(), err)
		}
		mounted[unix.Mkdev(major, minor)] = true
	}
	if err := sc.Err(); err != nil || len(mounted) == 0 {
		t.Fatalf("reading the mount table: %d devices, %v", len(mounted), err)
	}
	root := t.TempDir()
	m := memengine.New(root)
	for id := range int64(256) {
		r := ramdisk(root, id+1)
		if err := m.Construct(t.Context(), r); err != nil {
			t.Fatal(err)
		}
		dev, ok, err := m.Device(r)
		if err != nil || !ok {
			t.Fatalf("Device of job %d: %v, %v", r.Job, ok, err)
		}
		if mounted[dev] {
			t.Fatalf("job %d's RAMDISK has device %d:%d, a mounted file system's", r.Job, unix.Major(dev), unix.Minor(dev))
		}
	}
}
