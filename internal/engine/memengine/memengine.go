// Package memengine is an engine.Engine that keeps its RAMDISKs in memory,
// only for tests: the daemon's unit tests run against it without root,
// mounts or RSA nodes. A RAMDISK's directory is a plain directory that
// Construct makes (so that staging code can read and write there) and
// Destroy removes with everything in it, as unmounting a tmpfs does.
//
// It keeps the contracts of engine.Engine that are bookkeeping, and passes
// enginetest's suite without its Kernel checks: Construct, Seal, Revoke
// and Destroy are idempotent; Seal and Destroy fail wrapping
// engine.ErrBusy while a test holds the RAMDISK (Hold); Destroy leaves the
// parts on silent nodes (Silence) and says so with an *engine.DebtError;
// Device, Usage, List, Check and Probe report what it keeps.
//
// It cannot emulate what the kernel enforces on a mounted file system:
// the directory belongs to whoever runs the test, not to the job's user,
// and no gate closes it; a sealed RAMDISK still takes writes (no EROFS);
// no process holds a RAMDISK unless a test says so with Hold; Usage.Used
// is the size of the files in it, not the blocks they take; Device is a
// number of its own, on which no file's stat agrees.
//
// It is no engine.Stager: the daemon runs its stages on this host as the
// job's user, which takes root. WithStager makes it one, whose stages a
// test carries out, so that the daemon's actions run as a normal user.
//
// A test makes any method fail next with FailNext, makes Check and Probe
// report a part out of reach with Degrade, and reads what was asked of
// the engine with Calls and State.
package memengine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/stage"
)

// The methods of engine.Engine, as FailNext and Call name them.
const (
	Construct = "Construct"
	Seal      = "Seal"
	Revoke    = "Revoke"
	Device    = "Device"
	Destroy   = "Destroy"
	Usage     = "Usage"
	Check     = "Check"
	Probe     = "Probe"
	List      = "List"
	// Stage is engine.Stager's method, which a Stager has.
	Stage = "Stage"
)

// fakeMajor is the major number of the Devices: Linux's majors have 12
// bits, so no file system's device has it, and a search of /proc for the
// processes holding a RAMDISK (package holders) never finds one.
const fakeMajor = 1 << 12

// ErrSilent is why Destroy left a part on a silent node (the Err of its
// *engine.DebtError).
var ErrSilent = errors.New("agent not answering")

// Engine is the in-memory engine. Its zero value is not usable: call New.
// Safe for concurrent use.
type Engine struct {
	root string

	mu       sync.Mutex
	disks    map[key]*disk
	lastDev  uint64
	failures map[string][]error
	silent   map[string]bool
	calls    []Call
}

var _ engine.Engine = (*Engine)(nil)

// key names one RAMDISK: a job's first one is build 1, whether its
// Ramdisk says 0 or 1 (engine.Ramdisk.Build).
type key struct {
	job   int64
	build int
}

func keyOf(r engine.Ramdisk) key { return key{r.Job, max(r.Build, 1)} }

type disk struct {
	r        engine.Ramdisk
	dev      uint64
	present  bool // visible at r.Dir: not destroyed
	sealed   bool
	revoked  bool
	holds    int
	degraded engine.Degraded
	// owed are the nodes whose parts Destroy left, silent then: the
	// RAMDISK is gone from r.Dir, its RAM there is not free.
	owed []string
}

// Call is one call the engine received.
type Call struct {
	Method string
	Job    int64 // 0 for List
	Build  int
	Phase  stage.Phase // a Stage's stage.Task.Phase; "" for the other methods
}

// State is what the engine keeps of one RAMDISK.
type State struct {
	Ramdisk engine.Ramdisk // as Construct was given it
	Present bool           // visible at its directory: constructed, not destroyed
	Sealed  bool
	Revoked bool
	Holds   int // Hold's not released
	// Owed are the nodes whose parts Destroy left, silent then.
	Owed []string
}

// New returns an engine whose RAMDISKs appear under root, as
// engine.DirFor(root, job); root is made when the first one is built.
func New(root string) *Engine {
	return &Engine{root: root, disks: map[key]*disk{}, failures: map[string][]error{}, silent: map[string]bool{}}
}

// FailNext makes the next call of method (Construct, Seal, ..., and a
// Stager's Stage) return err and do nothing else; several queue up, one
// per call. An unknown method panics: the test is wrong.
func (e *Engine) FailNext(method string, err error) {
	if !slices.Contains([]string{Construct, Seal, Revoke, Device, Destroy, Usage, Check, Probe, List, Stage}, method) {
		panic(fmt.Sprintf("memengine: FailNext of %q, which is no method of engine.Engine or engine.Stager", method))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failures[method] = append(e.failures[method], err)
}

// Silence makes node silent, as an RSA node whose agent is down: Destroy
// leaves its parts, and List does not see them, until Answer.
func (e *Engine) Silence(node string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.silent[node] = true
}

// Answer makes node answer again.
func (e *Engine) Answer(node string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.silent, node)
}

// Hold makes r busy, as a process with a file open for writing in it
// would, until release is called (once). Holding a RAMDISK that is not
// present panics: the test is wrong.
func (e *Engine) Hold(r engine.Ramdisk) (release func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.disks[keyOf(r)]
	if d == nil || !d.present {
		panic(fmt.Sprintf("memengine: Hold of the RAMDISK of job %d, which is not there", r.Job))
	}
	d.holds++
	return sync.OnceFunc(func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		d.holds--
	})
}

// Degrade makes Check and Probe of r report d from now on.
func (e *Engine) Degrade(r engine.Ramdisk, d engine.Degraded) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if dk := e.disks[keyOf(r)]; dk != nil {
		dk.degraded = d
	}
}

// State reports what the engine keeps of r; ok is false when nothing of
// it is left.
func (e *Engine) State(r engine.Ramdisk) (s State, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.disks[keyOf(r)]
	if d == nil {
		return State{}, false
	}
	return State{Ramdisk: d.r, Present: d.present, Sealed: d.sealed, Revoked: d.revoked, Holds: d.holds, Owed: slices.Clone(d.owed)}, true
}

// Calls lists the calls the engine received, in order.
func (e *Engine) Calls() []Call {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.calls)
}

// begin records a call of method on r and returns the failure FailNext
// queued for it, if any. The caller holds e.mu.
func (e *Engine) begin(method string, r engine.Ramdisk) error {
	e.calls = append(e.calls, Call{Method: method, Job: r.Job, Build: r.Build})
	q := e.failures[method]
	if len(q) == 0 {
		return nil
	}
	e.failures[method] = q[1:]
	return q[0]
}

// present is r's RAMDISK if it is visible at its directory.
func (e *Engine) present(r engine.Ramdisk) (*disk, error) {
	d := e.disks[keyOf(r)]
	if d == nil || !d.present {
		return nil, fmt.Errorf("the RAMDISK of job %d: %w", r.Job, fs.ErrNotExist)
	}
	return d, nil
}

func (e *Engine) Name() string { return "mem" }

// Construct makes r.Dir, as the real engines do below its gate.
func (e *Engine) Construct(ctx context.Context, r engine.Ramdisk) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(Construct, r); err != nil {
		return err
	}
	switch {
	case r.Dir != engine.DirFor(e.root, r.Job):
		return fmt.Errorf("RAMDISK of job %d must be at %s, not %s", r.Job, engine.DirFor(e.root, r.Job), r.Dir)
	case r.UID == 0:
		return fmt.Errorf("RAMDISK of job %d: refusing a RAMDISK for root", r.Job)
	case len(r.Parts) == 0:
		return fmt.Errorf("RAMDISK of job %d: no RSA node assigned", r.Job)
	}
	k := keyOf(r)
	if d := e.disks[k]; d != nil && d.present {
		return nil
	}
	for other, d := range e.disks {
		if other.job == r.Job && d.present {
			return fmt.Errorf("%s shows build %d of job %d's RAMDISK; not building %d over it", r.Dir, other.build, r.Job, k.build)
		}
	}
	if err := os.MkdirAll(engine.GateFor(e.root, r.Job), 0o700); err != nil {
		return fmt.Errorf("creating the RAMDISK's gate: %w", err)
	}
	if err := os.Mkdir(r.Dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("creating the RAMDISK of job %d: %w", r.Job, err)
	}
	e.lastDev++
	d := e.disks[k]
	if d == nil {
		d = &disk{}
		e.disks[k] = d
	}
	// A debt of an earlier Destroy stays owed: that RAM is still held.
	d.r, d.dev, d.present, d.sealed, d.revoked, d.degraded = r, unix.Mkdev(fakeMajor, uint32(e.lastDev)), true, false, false, engine.Degraded{}
	return nil
}

func (e *Engine) Seal(ctx context.Context, r engine.Ramdisk) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(Seal, r); err != nil {
		return err
	}
	d, err := e.present(r)
	if err != nil {
		return fmt.Errorf("sealing: %w", err)
	}
	if d.holds > 0 {
		return fmt.Errorf("making RAMDISK %s read-only: a file is open for writing: %w", r.Dir, engine.ErrBusy)
	}
	d.sealed = true
	return nil
}

func (e *Engine) Revoke(ctx context.Context, r engine.Ramdisk) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(Revoke, r); err != nil {
		return err
	}
	// A gate that is not there is closed already.
	if d := e.disks[keyOf(r)]; d != nil && d.present {
		d.revoked = true
	}
	return nil
}

func (e *Engine) Device(r engine.Ramdisk) (uint64, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(Device, r); err != nil {
		return 0, false, err
	}
	d, err := e.present(r)
	if err != nil {
		return 0, false, nil
	}
	return d.dev, true, nil
}

// Destroy removes r.Dir with everything in it, unless r is held; the
// parts on silent nodes stay, owed (*engine.DebtError), until a Destroy
// once they answer.
func (e *Engine) Destroy(ctx context.Context, r engine.Ramdisk) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(Destroy, r); err != nil {
		return err
	}
	k := keyOf(r)
	d := e.disks[k]
	if d == nil {
		return nil
	}
	if d.present {
		d.revoked = true
		if d.holds > 0 {
			return fmt.Errorf("unmounting RAMDISK of job %d: %w", r.Job, engine.ErrBusy)
		}
		if err := os.RemoveAll(engine.GateFor(e.root, r.Job)); err != nil {
			return fmt.Errorf("removing the RAMDISK of job %d: %w", r.Job, err)
		}
		d.present = false
	}
	var owed []string
	for _, p := range d.r.Parts {
		if e.silent[p.Node] && !slices.Contains(owed, p.Node) {
			owed = append(owed, p.Node)
		}
	}
	slices.Sort(owed)
	d.owed = owed
	if len(owed) > 0 {
		return &engine.DebtError{Nodes: slices.Clone(owed), Err: ErrSilent}
	}
	delete(e.disks, k)
	return nil
}

// Usage: Size is r's, Used the size of the files in r.Dir, Files what is
// below it.
func (e *Engine) Usage(r engine.Ramdisk) (engine.Usage, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(Usage, r); err != nil {
		return engine.Usage{}, err
	}
	d, err := e.present(r)
	if err != nil {
		return engine.Usage{}, err
	}
	var used, files int64
	err = filepath.WalkDir(d.r.Dir, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != d.r.Dir {
			files++
		}
		if !de.Type().IsRegular() {
			return nil
		}
		info, err := de.Info()
		if err != nil {
			return err
		}
		used += info.Size()
		return nil
	})
	if err != nil {
		return engine.Usage{}, fmt.Errorf("reading the usage of the RAMDISK of job %d: %w", r.Job, err)
	}
	return engine.Usage{Used: used, Size: d.r.Size(), Files: files}, nil
}

// Check reports what Degrade set.
func (e *Engine) Check(ctx context.Context, r engine.Ramdisk) (engine.Degraded, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(Check, r); err != nil {
		return engine.Degraded{}, err
	}
	return e.degraded(r)
}

// Probe reports what Degrade set.
func (e *Engine) Probe(r engine.Ramdisk) (engine.Degraded, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(Probe, r); err != nil {
		return engine.Degraded{}, err
	}
	return e.degraded(r)
}

func (e *Engine) degraded(r engine.Ramdisk) (engine.Degraded, error) {
	d, err := e.present(r)
	if err != nil {
		return engine.Degraded{}, fmt.Errorf("checking: %w", err)
	}
	dg := d.degraded
	dg.Nodes = slices.Clone(dg.Nodes)
	return dg, nil
}

// List reports the RAMDISKs present, and those whose parts a Destroy
// left on nodes that answer now: as a real engine finds a silent node's
// part once it answers.
func (e *Engine) List(ctx context.Context) ([]engine.Found, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(List, engine.Ramdisk{}); err != nil {
		return nil, err
	}
	var out []engine.Found
	for k, d := range e.disks {
		if d.present || slices.ContainsFunc(d.owed, func(n string) bool { return !e.silent[n] }) {
			out = append(out, engine.Found{Job: k.job, Build: k.build, Dir: engine.DirFor(e.root, k.job)})
		}
	}
	slices.SortFunc(out, func(a, b engine.Found) int { return cmp.Or(cmp.Compare(a.Job, b.Job), cmp.Compare(a.Build, b.Build)) })
	return out, nil
}
