package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/access"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/engine/memengine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/stage"
)

var errInjected = errors.New("injected failure")

// actionCase is one action of the lifecycle, run by the daemon to one of
// its ends.
type actionCase struct {
	name  string
	state lifecycle.JobState // the job's states when it is stored
	rsa   lifecycle.RSAState
	edit  func(j *job.Job)          // the job before it is stored
	setup func(u *unit, j *job.Job) // failures to come, before the loop runs
	// send are the events that start the action, sent in order; trigger,
	// if set, does instead.
	send    []lifecycle.EventKind
	trigger func(u *unit, j *job.Job)
	call    string // a call of the engine or node access the action makes ("" none)
	// event is the action's completion event, which after (if set) is
	// the rsa-state it takes the job to; an event that is no transition
	// (EvWaitCapacity) is found by until.
	event lifecycle.EventKind
	after lifecycle.RSAState
	// The job rests in restState/restRSA once until holds of it too (nil:
	// nothing more); its error has err ("": it has none).
	restState lifecycle.JobState
	restRSA   lifecycle.RSAState
	until     func(j *job.Job) bool
	err       string
	check     func(t *testing.T, u *unit, created, got *job.Job)
}

// TestActions: every action the lifecycle starts, run by the daemon over
// an engine in memory and a node access that mounts nothing, ends with
// its completion event on success and on each failure, which the daemon
// commits; the job then rests where the lifecycle says. Each call the
// action makes to the engine or the node access finds the job's new state
// committed already: a transition precedes its action.
func TestActions(t *testing.T) {
	for _, c := range actionCases() {
		t.Run(c.name, func(t *testing.T) {
			u := newUnit(t)
			j := u.job(c.state, c.rsa, c.edit)
			if c.setup != nil {
				c.setup(u, j)
			}
			u.run()
			if c.trigger != nil {
				c.trigger(u, j)
			} else {
				for _, k := range c.send {
					u.send(j, k)
				}
			}
			what := "rested " + string(c.restState) + "/" + string(c.restRSA)
			got := u.await(j, func(n *job.Job) bool {
				return n.State == c.restState && n.RSA == c.restRSA && (c.until == nil || c.until(n))
			}, what)
			if c.after != "" {
				evs, err := u.d.store.Events(context.Background(), j.ID)
				if err != nil {
					t.Fatal(err)
				}
				i := slices.IndexFunc(evs, func(e job.Event) bool { return e.Kind == string(c.event) })
				if i < 0 || evs[i].RSAState != c.after {
					t.Errorf("want %s to take the job to %s; its log:\n%s", c.event, c.after, u.events(j))
				}
			}
			if c.err == "" && got.Error != "" || !strings.Contains(got.Error, c.err) {
				t.Errorf("the job's error is %q, want one with %q", got.Error, c.err)
			}
			calls := u.callsOf(j.ID)
			for _, call := range calls {
				if a, ok := lifecycle.Work(call.state); !ok || !slices.Contains(call.by, a) {
					t.Errorf("%s made with the job %s in the store: the action's state was not committed first", call.what, call.state)
				}
			}
			if c.call != "" && !slices.ContainsFunc(calls, func(call unitCall) bool { return strings.HasPrefix(call.what, c.call) }) {
				t.Errorf("no call %q; the calls: %+v", c.call, calls)
			}
			if c.check != nil {
				c.check(t, u, j, got)
			}
		})
	}
}

// withoutInput makes a job output-only: it is READY once its RAMDISK is
// built.
func withoutInput(j *job.Job) { j.Spec.Input = "" }

// silence makes RSA node n silent: to the engine, which leaves its parts
// owed, and to the daemon, whose engine watches its nodes (engine.Nodes)
// and finds n down.
func silence(n string) func(u *unit, j *job.Job) {
	return func(u *unit, _ *job.Job) {
		u.mem.Silence(n)
		u.d.useEngine(&watching{Engine: u.d.engine, down: []string{n}})
	}
}

func rebuilt(j *job.Job) bool { return j.Build == 2 }

func actionCases() []actionCase {
	const (
		onDeck   = lifecycle.OnDeck
		running  = lifecycle.Running
		finished = lifecycle.Finished
	)
	return []actionCase{
		// --- assign ---
		{name: "assign: assigned", state: onDeck, rsa: lifecycle.Initial,
			send:  []lifecycle.EventKind{lifecycle.EvTick},
			event: lifecycle.EvAssigned, after: lifecycle.Assigned, restState: onDeck, restRSA: lifecycle.Ready,
			check: func(t *testing.T, u *unit, _, got *job.Job) {
				if !slices.Equal(got.Alloc, []job.Part{{Node: "rsa01", Bytes: unitGiB}}) || got.Ramdisk != engine.DirFor(u.d.cfg.RamdiskRoot, got.ID) || got.Build != 1 {
					t.Errorf("assigned %+v at %s, build %d; want 1 GiB on rsa01 at the job's RAMDISK directory, build 1", got.Alloc, got.Ramdisk, got.Build)
				}
			}},
		{name: "assign: ineligible", state: onDeck, rsa: lifecycle.Initial,
			edit:  func(j *job.Job) { j.Spec.Capacity = 3 * unitNodeBytes },
			send:  []lifecycle.EventKind{lifecycle.EvTick},
			event: lifecycle.EvIneligible, after: lifecycle.Ineligible, restState: onDeck, restRSA: lifecycle.Ineligible,
			err: "more than the accelerator's"},
		{name: "assign: waits for capacity", state: onDeck, rsa: lifecycle.Initial,
			setup: func(u *unit, _ *job.Job) {
				u.job(running, lifecycle.InUseIn, func(h *job.Job) {
					h.Alloc = []job.Part{{Node: "rsa01", Bytes: unitNodeBytes}, {Node: "rsa02", Bytes: unitNodeBytes}}
				})
			},
			send: []lifecycle.EventKind{lifecycle.EvTick},
			// Waiting is no transition: the record keeps when it began.
			event: lifecycle.EvWaitCapacity, restState: onDeck, restRSA: lifecycle.Initial,
			until: func(j *job.Job) bool { return !j.WaitingSince.IsZero() },
			check: func(t *testing.T, u *unit, created, got *job.Job) {
				if why := u.d.board.Wait(got.ID).Why; !strings.HasPrefix(why, "waiting for") {
					t.Errorf("the job waits because %q; want why", why)
				}
				if len(got.Alloc) != 0 {
					t.Errorf("a waiting job holds %+v", got.Alloc)
				}
			}},

		// --- construct ---
		{name: "construct: built", state: onDeck, rsa: lifecycle.Assigned, edit: withoutInput,
			send: []lifecycle.EventKind{lifecycle.EvTick}, call: "Construct",
			event: lifecycle.EvBooted, after: lifecycle.Booted, restState: onDeck, restRSA: lifecycle.Ready,
			check: func(t *testing.T, u *unit, _, got *job.Job) {
				if s, ok := u.mem.State(u.d.ramdisk(got)); !ok || !s.Present || s.Ramdisk.Build != 1 {
					t.Errorf("the engine keeps %+v (%v); want build 1 present", s, ok)
				}
			}},
		{name: "construct: fails", state: onDeck, rsa: lifecycle.Assigned,
			setup: func(u *unit, _ *job.Job) { u.mem.FailNext(memengine.Construct, errInjected) },
			send:  []lifecycle.EventKind{lifecycle.EvTick}, call: "Construct",
			event: lifecycle.EvBootFailed, after: lifecycle.Abandoning, restState: onDeck, restRSA: lifecycle.Ineligible,
			err: errInjected.Error()},
		{name: "construct: an RSA node silent", state: onDeck, rsa: lifecycle.Assigned, edit: withoutInput,
			setup: func(u *unit, j *job.Job) {
				silence("rsa01")(u, j)
				u.mem.FailNext(memengine.Construct, errInjected)
			},
			send: []lifecycle.EventKind{lifecycle.EvTick}, call: "Construct",
			// Built anew on the node that answers.
			event: lifecycle.EvBootLost, after: lifecycle.Teardown, restState: onDeck, restRSA: lifecycle.Ready, until: rebuilt,
			check: func(t *testing.T, u *unit, _, got *job.Job) {
				if !slices.Equal(got.Alloc, []job.Part{{Node: "rsa02", Bytes: unitGiB}}) || len(got.Lost) != 0 {
					t.Errorf("rebuilt on %+v, lost %v; want rsa02 alone, nothing lost", got.Alloc, got.Lost)
				}
			}},

		// --- stage-in ---
		{name: "stage-in: staged", state: onDeck, rsa: lifecycle.Booted,
			send: []lifecycle.EventKind{lifecycle.EvTick}, call: "Stage stage-in",
			event: lifecycle.EvStagedIn, after: lifecycle.Ready, restState: onDeck, restRSA: lifecycle.Ready,
			check: func(t *testing.T, u *unit, created, _ *job.Job) {
				if !slices.Contains(u.mem.Calls(), memengine.Call{Method: memengine.Stage, Job: created.ID, Build: 1, Phase: "stage-in"}) {
					t.Errorf("the engine staged no input: %+v", u.mem.Calls())
				}
			}},
		{name: "stage-in: fails", state: onDeck, rsa: lifecycle.Booted,
			setup: func(u *unit, _ *job.Job) { u.mem.FailNext(memengine.Stage, errInjected) },
			send:  []lifecycle.EventKind{lifecycle.EvTick}, call: "Stage stage-in",
			event: lifecycle.EvStageInFailed, after: lifecycle.Aborted, restState: onDeck, restRSA: lifecycle.Aborted,
			err: errInjected.Error()},
		{name: "stage-in: a part out of reach after the copy", state: onDeck, rsa: lifecycle.Booted,
			setup: func(u *unit, j *job.Job) {
				u.mem.Degrade(u.d.ramdisk(j), engine.Degraded{Nodes: []string{"rsa01"}, Missing: true})
			},
			send: []lifecycle.EventKind{lifecycle.EvTick}, call: "Stage stage-in",
			// The input is staged again into a new RAMDISK.
			event: lifecycle.EvStageInFailed, after: lifecycle.Aborted, restState: onDeck, restRSA: lifecycle.Ready, until: rebuilt,
			err: "rsa01 is out of reach"},

		// --- stop-stage-in ---
		{name: "stop-stage-in: the stage-in under way", state: onDeck, rsa: lifecycle.Booted,
			setup: func(u *unit, _ *job.Job) { u.blockStageIn() },
			trigger: func(u *unit, j *job.Job) {
				u.send(j, lifecycle.EvTick)
				u.awaitClosed(u.began, "the stage-in began")
				u.send(j, lifecycle.EvFinished)
			},
			call:  "Stage stage-in",
			event: lifecycle.EvStageInStopped, after: lifecycle.Aborted, restState: finished, restRSA: lifecycle.Released},
		{name: "stop-stage-in: none under way after a restart", state: onDeck, rsa: lifecycle.StoppingStagingIn,
			send:  []lifecycle.EventKind{lifecycle.EvResume},
			event: lifecycle.EvStageInStopped, after: lifecycle.Aborted, restState: onDeck, restRSA: lifecycle.Aborted},

		// --- mount-in ---
		{name: "mount-in: mounted", state: onDeck, rsa: lifecycle.Ready,
			send: []lifecycle.EventKind{lifecycle.EvStarted}, call: "Bind input directory",
			event: lifecycle.EvMounted, after: lifecycle.InUseIn, restState: running, restRSA: lifecycle.InUseIn,
			check: func(t *testing.T, u *unit, created, _ *job.Job) {
				if want := "Bind input directory " + u.in; !u.called(created.ID, want) {
					t.Errorf("no %q: %+v", want, u.callsOf(created.ID))
				}
			}},
		{name: "mount-in: the node access fails", state: onDeck, rsa: lifecycle.Ready,
			setup: func(u *unit, _ *job.Job) { u.acc.failNext("Bind", errInjected) },
			send:  []lifecycle.EventKind{lifecycle.EvStarted}, call: "Bind input directory",
			// The job reads from disk; the RAMDISK is rebuilt for output.
			event: lifecycle.EvMountFailed, after: lifecycle.Aborted, restState: running, restRSA: lifecycle.InUseOut, until: rebuilt,
			err: errInjected.Error()},
		{name: "mount-in: the input directory is gone", state: onDeck, rsa: lifecycle.Ready,
			edit:  func(j *job.Job) { j.Spec.Input = filepath.Join(filepath.Dir(j.Spec.Input), "gone") },
			send:  []lifecycle.EventKind{lifecycle.EvStarted},
			event: lifecycle.EvMountFailed, after: lifecycle.Aborted, restState: running, restRSA: lifecycle.InUseOut, until: rebuilt,
			err: "does not exist",
			check: func(t *testing.T, u *unit, created, _ *job.Job) {
				if slices.ContainsFunc(u.callsOf(created.ID), func(c unitCall) bool { return strings.HasPrefix(c.what, "Bind input") }) {
					t.Errorf("the node access was asked to mount over a directory the policy refuses")
				}
			}},
		{name: "mount-in: a part of the RAMDISK lost", state: onDeck, rsa: lifecycle.Ready,
			setup: func(u *unit, j *job.Job) {
				u.mem.Degrade(u.d.ramdisk(j), engine.Degraded{Nodes: []string{"rsa01"}, Missing: true})
			},
			send:  []lifecycle.EventKind{lifecycle.EvStarted},
			event: lifecycle.EvMountFailed, after: lifecycle.Aborted, restState: running, restRSA: lifecycle.InUseOut, until: rebuilt,
			err: "reads its input from disk"},

		// --- mount-out ---
		{name: "mount-out: mounted", state: running, rsa: lifecycle.Booted,
			send: []lifecycle.EventKind{lifecycle.EvTick}, call: "Bind output directory",
			event: lifecycle.EvMounted, after: lifecycle.InUseOut, restState: running, restRSA: lifecycle.InUseOut,
			check: func(t *testing.T, u *unit, created, _ *job.Job) {
				if want := "Bind output directory " + u.out; !u.called(created.ID, want) {
					t.Errorf("no %q: %+v", want, u.callsOf(created.ID))
				}
			}},
		{name: "mount-out: the node access fails", state: running, rsa: lifecycle.Booted,
			setup: func(u *unit, _ *job.Job) { u.acc.failNext("Bind", errInjected) },
			send:  []lifecycle.EventKind{lifecycle.EvTick}, call: "Bind output directory",
			// Some nodes may show the RAMDISK: what reaches it is staged out.
			event: lifecycle.EvMountFailed, after: lifecycle.InUseOut, restState: running, restRSA: lifecycle.InUseOut,
			err: errInjected.Error()},

		// --- unmount ---
		{name: "unmount: unmounted", state: running, rsa: lifecycle.InUseIn,
			edit: func(j *job.Job) { j.Spec.Delay = 0 },
			send: []lifecycle.EventKind{lifecycle.EvTick}, call: "Unbind",
			// Rebuilt for the output.
			event: lifecycle.EvUnmounted, after: lifecycle.Unmounted, restState: running, restRSA: lifecycle.InUseOut, until: rebuilt},
		{name: "unmount: busy", state: running, rsa: lifecycle.InUseIn,
			edit:  func(j *job.Job) { j.Spec.Delay = 0 },
			setup: func(u *unit, _ *job.Job) { u.acc.failNext("Unbind", access.ErrBusy) },
			send:  []lifecycle.EventKind{lifecycle.EvTick}, call: "Unbind",
			event: lifecycle.EvUnmountBusy, after: lifecycle.UnmountBusy, restState: running, restRSA: lifecycle.UnmountBusy,
			err: access.ErrBusy.Error()},

		// --- stage-out ---
		{name: "stage-out: staged out", state: running, rsa: lifecycle.InUseOut,
			send: []lifecycle.EventKind{lifecycle.EvFinished}, call: "Stage stage-out",
			event: lifecycle.EvStagedOut, after: lifecycle.DoneStagingOut, restState: finished, restRSA: lifecycle.Released,
			check: func(t *testing.T, u *unit, created, _ *job.Job) {
				var order []string
				for _, c := range u.mem.Calls() {
					if c.Job == created.ID && (c.Method == memengine.Seal || c.Method == memengine.Stage) {
						order = append(order, c.Method)
					}
				}
				if !slices.Equal(order, []string{memengine.Seal, memengine.Stage}) {
					t.Errorf("the engine was asked %v; want the RAMDISK sealed before the copy", order)
				}
			}},
		{name: "stage-out: the copy fails", state: running, rsa: lifecycle.InUseOut,
			setup: func(u *unit, j *job.Job) {
				u.mem.FailNext(memengine.Stage, errInjected)
				if err := os.WriteFile(filepath.Join(u.d.ramdisk(j).Dir, "result"), []byte("output"), 0o600); err != nil {
					u.t.Fatal(err)
				}
			},
			send: []lifecycle.EventKind{lifecycle.EvFinished}, call: "Stage stage-out",
			event: lifecycle.EvStageOutFailed, after: lifecycle.StageOutFailed, restState: finished, restRSA: lifecycle.StageOutFailed,
			err: errInjected.Error() + "; the RAMDISK holds 1 files"},
		{name: "stage-out: the mounts stay", state: running, rsa: lifecycle.InUseOut,
			setup: func(u *unit, _ *job.Job) { u.acc.failNext("Unbind", errInjected) },
			send:  []lifecycle.EventKind{lifecycle.EvFinished}, call: "Unbind detach",
			event: lifecycle.EvStageOutFailed, after: lifecycle.StageOutFailed, restState: finished, restRSA: lifecycle.StageOutFailed,
			err: errInjected.Error()},
		{name: "stage-out: a compute node out of reach", state: running, rsa: lifecycle.InUseOut,
			setup: func(u *unit, _ *job.Job) {
				u.acc.failNext("Unbind", &access.UnreachableError{Nodes: []string{"n1"}, Err: errInjected})
			},
			// Fenced by the seal: the copy goes on.
			send: []lifecycle.EventKind{lifecycle.EvFinished}, call: "Stage stage-out",
			event: lifecycle.EvStagedOut, after: lifecycle.DoneStagingOut, restState: finished, restRSA: lifecycle.Released},
		{name: "stage-out: the RAMDISK held open", state: running, rsa: lifecycle.InUseOut,
			setup: func(u *unit, j *job.Job) { u.t.Cleanup(u.mem.Hold(u.d.ramdisk(j))) },
			send:  []lifecycle.EventKind{lifecycle.EvFinished}, call: "Unbind detach",
			event: lifecycle.EvStageOutFailed, after: lifecycle.StageOutFailed, restState: finished, restRSA: lifecycle.StageOutFailed,
			err: engine.ErrBusy.Error()},
		{name: "stage-out: a part lost with its files", state: running, rsa: lifecycle.InUseOut,
			setup: func(u *unit, j *job.Job) {
				u.mem.Degrade(u.d.ramdisk(j), engine.Degraded{Nodes: []string{"rsa01"}, Missing: true})
			},
			send: []lifecycle.EventKind{lifecycle.EvFinished}, call: "Stage stage-out",
			event: lifecycle.EvStageOutFailed, after: lifecycle.StageOutFailed, restState: finished, restRSA: lifecycle.StageOutFailed,
			err: "not verified: the part of the RAMDISK on RSA node rsa01 was out of reach"},

		// --- destroy ---
		{name: "destroy: destroyed", state: onDeck, rsa: lifecycle.Ready,
			send: []lifecycle.EventKind{lifecycle.EvFinished}, call: "Destroy",
			event: lifecycle.EvDestroyed, after: lifecycle.Destroyed, restState: finished, restRSA: lifecycle.Released,
			check: func(t *testing.T, u *unit, created, _ *job.Job) {
				if s, ok := u.mem.State(u.d.ramdisk(created)); ok {
					t.Errorf("the engine keeps %+v after the teardown", s)
				}
			}},
		{name: "destroy: the engine fails", state: onDeck, rsa: lifecycle.Ready,
			setup: func(u *unit, _ *job.Job) { u.mem.FailNext(memengine.Destroy, errInjected) },
			send:  []lifecycle.EventKind{lifecycle.EvFinished}, call: "Destroy",
			event: lifecycle.EvDestroyFailed, after: lifecycle.TeardownFailed, restState: finished, restRSA: lifecycle.TeardownFailed,
			err: errInjected.Error()},
		{name: "destroy: the gate does not close", state: onDeck, rsa: lifecycle.Ready,
			setup: func(u *unit, _ *job.Job) { u.mem.FailNext(memengine.Revoke, errInjected) },
			send:  []lifecycle.EventKind{lifecycle.EvFinished}, call: "Unbind detach",
			event: lifecycle.EvDestroyFailed, after: lifecycle.TeardownFailed, restState: finished, restRSA: lifecycle.TeardownFailed,
			err: errInjected.Error()},
		{name: "destroy: the mounts stay", state: onDeck, rsa: lifecycle.Ready,
			setup: func(u *unit, _ *job.Job) { u.acc.failNext("Unbind", errInjected) },
			send:  []lifecycle.EventKind{lifecycle.EvFinished}, call: "Unbind detach",
			event: lifecycle.EvDestroyFailed, after: lifecycle.TeardownFailed, restState: finished, restRSA: lifecycle.TeardownFailed,
			err: errInjected.Error()},
		{name: "destroy: the RAMDISK held open", state: onDeck, rsa: lifecycle.Ready,
			setup: func(u *unit, j *job.Job) { u.t.Cleanup(u.mem.Hold(u.d.ramdisk(j))) },
			send:  []lifecycle.EventKind{lifecycle.EvFinished}, call: "Destroy",
			event: lifecycle.EvDestroyFailed, after: lifecycle.TeardownFailed, restState: finished, restRSA: lifecycle.TeardownFailed,
			err: engine.ErrBusy.Error()},
		{name: "destroy: an RSA node silent", state: onDeck, rsa: lifecycle.Ready,
			setup: func(u *unit, _ *job.Job) { u.mem.Silence("rsa01") },
			send:  []lifecycle.EventKind{lifecycle.EvFinished}, call: "Destroy",
			// Its part stays owed, held on the node until it answers.
			event: lifecycle.EvDestroyed, after: lifecycle.Destroyed, restState: finished, restRSA: lifecycle.Released,
			check: func(t *testing.T, u *unit, created, _ *job.Job) {
				wantDebt(t, u, created, "rsa01", unitGiB)
			}},
		{name: "destroy: a compute node out of reach", state: onDeck, rsa: lifecycle.Ready,
			setup: func(u *unit, _ *job.Job) {
				u.acc.failNext("Unbind", &access.UnreachableError{Nodes: []string{"n1"}, Err: errInjected})
			},
			send: []lifecycle.EventKind{lifecycle.EvFinished}, call: "Destroy",
			// Its mount stays owed, removed when it answers; it holds no
			// RSA RAM.
			event: lifecycle.EvDestroyed, after: lifecycle.Destroyed, restState: finished, restRSA: lifecycle.Released,
			check: func(t *testing.T, u *unit, created, _ *job.Job) {
				wantDebt(t, u, created, "n1", 0)
			}},
	}
}

// wantDebt checks that the store and the daemon owe exactly bytes of
// job j's first RAMDISK on node n.
func wantDebt(t *testing.T, u *unit, j *job.Job, n string, bytes int64) {
	t.Helper()
	debts, err := u.d.store.Debts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(debts) != 1 || debts[0].Node != n || debts[0].Job != j.ID || debts[0].Build != 1 || debts[0].Bytes != bytes {
		t.Errorf("debts %+v; want %d bytes of job %d's build 1 owed on %s", debts, bytes, j.ID, n)
	}
	if owed := u.d.owed(); len(owed) != len(debts) {
		t.Errorf("the daemon counts %d debts, the store %d", len(owed), len(debts))
	}
}

// blockStageIn makes each stage-in wait until it is stopped; u.began is
// closed when the first one begins.
func (u *unit) blockStageIn() {
	u.began = make(chan struct{})
	begun := false
	u.stage = func(ctx context.Context, _ engine.Ramdisk, task stage.Task) error {
		if task.Phase != "stage-in" {
			return nil
		}
		u.mu.Lock()
		if !begun {
			begun = true
			close(u.began)
		}
		u.mu.Unlock()
		<-ctx.Done()
		return ctx.Err()
	}
}

// awaitClosed waits for ch; the minute guards against what never comes.
func (u *unit) awaitClosed(ch <-chan struct{}, what string) {
	u.t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		u.t.Fatalf("%s: never", what)
	}
}
