package action_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/engine/memengine"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/stage"
)

// A stage-out unbinds the compute nodes by force, seals the RAMDISK and
// copies the output through the engine, verified only if every part was
// in reach without a break from before the copy to after it: a part that
// came back means copying again, at most three times; a part lost fails
// it, listing in the job's log what stays in RAM.
func TestStageOut(t *testing.T) {
	const (
		notVerified = "not verified: the part of the RAMDISK on RSA node rsa02 was out of reach"
		inventory   = "files only in RAM after the failed stage-out: 2 ("
		holds       = "the RAMDISK holds 2 files"
		again       = "stage-out: a part of the RAMDISK came back during the copy"
	)
	// output puts the job's output into its RAMDISK.
	output := func(r *rig) {
		r.write("result", "output")
		r.write("other", "more output")
	}
	// copies checks the order of the engine's calls: the seal before
	// the copies, n of them, each checked after.
	copies := func(n int) func(t *testing.T, r *rig) {
		return func(t *testing.T, r *rig) {
			t.Helper()
			wantUnbound(t, r)
			want := []string{memengine.Seal, memengine.Check}
			for range n {
				want = append(want, memengine.Stage, memengine.Check)
			}
			if got := r.calls(memengine.Seal, memengine.Check, memengine.Stage); !slices.Equal(got, want) {
				t.Errorf("the engine was asked %v; want %v", got, want)
			}
			if s, ok := r.mem.State(r.rd()); !ok || !s.Sealed {
				t.Errorf("the engine keeps %+v (%v); want the RAMDISK sealed", s, ok)
			}
			for _, task := range r.stages() {
				if task.Phase != "stage-out" || task.Data != r.j.Spec.Output || task.User.UID != r.j.UID {
					t.Errorf("the engine staged %+v; want stage-outs to %s as uid %d", task, r.j.Spec.Output, r.j.UID)
				}
			}
		}
	}
	// nothingCopied checks that nothing was copied.
	nothingCopied := func(t *testing.T, r *rig) {
		if got := r.calls(memengine.Stage); len(got) != 0 {
			t.Errorf("the engine was asked %v", got)
		}
	}
	// bumping makes each copy see a part of the RAMDISK come back (its
	// epoch grows) in the copies whose number from 1 keep says.
	bumping := func(keep func(n int) bool) func(*rig) {
		return func(r *rig) {
			n := 0
			r.stage = func(_ context.Context, rd engine.Ramdisk, _ stage.Task) error {
				n++
				if keep(n) {
					r.mem.Degrade(rd, engine.Degraded{Epoch: uint64(n)})
				}
				return nil
			}
		}
	}
	lostAt := func(at int) func(*rig) {
		return func(r *rig) {
			output(r)
			r.eng.check = func(n int, rd engine.Ramdisk) (engine.Degraded, error) {
				if n >= at {
					return engine.Degraded{Nodes: []string{"rsa02"}, Missing: true}, nil
				}
				return engine.Degraded{}, nil
			}
		}
	}
	runCases(t, lifecycle.StageOut, []actionCase{
		{name: "staged out", built: true, want: ev(lifecycle.EvStagedOut),
			log: []string{"stage-out: built-in copy with", "stage-out done in"}, notLog: []string{inventory},
			check: copies(1)},
		{name: "the mounts stay", built: true, setup: func(r *rig) { r.acc.failNext("Unbind", errInjected) },
			want: ev(lifecycle.EvStageOutFailed), reason: []string{errInjected.Error()},
			check: func(t *testing.T, r *rig) {
				if got := r.calls(memengine.Seal, memengine.Stage); len(got) != 0 {
					t.Errorf("the engine was asked %v with the compute nodes' mounts in place", got)
				}
			}},
		{name: "a compute node out of reach", built: true, setup: func(r *rig) { r.acc.failNext("Unbind", unreachable()) },
			// Fenced by the seal: the copy goes on.
			want: ev(lifecycle.EvStagedOut), log: []string{"stage-out: compute node n1 out of reach", "fenced"}, check: copies(1)},
		{name: "a compute node out of reach, the seal partial", built: true,
			setup: func(r *rig) {
				r.acc.failNext("Unbind", unreachable())
				r.mem.FailNext(memengine.Seal, fmt.Errorf("brick rsa02: %w", engine.ErrPartlySealed))
			},
			// The node fenced may write into the part not sealed.
			want: ev(lifecycle.EvStageOutFailed), reason: []string{engine.ErrPartlySealed.Error()}, check: nothingCopied},
		{name: "the seal partial", built: true,
			setup: func(r *rig) { r.mem.FailNext(memengine.Seal, fmt.Errorf("brick rsa02: %w", engine.ErrPartlySealed)) },
			// Nobody is left to write.
			want: ev(lifecycle.EvStagedOut), log: []string{"stage-out: the RAMDISK is read-only except, maybe, a part cut off"},
			check: func(t *testing.T, r *rig) {
				if got := r.calls(memengine.Stage); len(got) != 1 {
					t.Errorf("the engine was asked %v; want one copy", got)
				}
			}},
		{name: "the seal fails", built: true, setup: func(r *rig) { r.mem.FailNext(memengine.Seal, errInjected) },
			want: ev(lifecycle.EvStageOutFailed), reason: []string{errInjected.Error()}, check: nothingCopied},
		{name: "a file open for writing, its holder gone", built: true,
			setup: func(r *rig) { r.mem.FailNext(memengine.Seal, fmt.Errorf("sealing: %w", engine.ErrBusy)) },
			// The holders are looked for (none is found), and the seal
			// tried again.
			want: ev(lifecycle.EvStagedOut),
			check: func(t *testing.T, r *rig) {
				if got := r.calls(memengine.Seal, memengine.Device); !slices.Equal(got, []string{memengine.Seal, memengine.Device, memengine.Seal}) {
					t.Errorf("the engine was asked %v; want a seal, a search for holders, a seal", got)
				}
			}},
		{name: "a file open for writing", built: true, setup: func(r *rig) { r.t.Cleanup(r.mem.Hold(r.rd())) },
			want: ev(lifecycle.EvStageOutFailed), reason: []string{engine.ErrBusy.Error()}, check: nothingCopied},
		{name: "a part lost before the copy", built: true, setup: lostAt(1),
			want:   ev(lifecycle.EvStageOutFailed),
			reason: []string{notVerified, "'rsa retry 7'", holds, "the files on rsa02 cannot be listed until the node is back"},
			log:    []string{inventory, "\n  result\n", "\n  other\n"},
			check: func(t *testing.T, r *rig) {
				if tasks := r.stages(); len(tasks) != 1 || !tasks[0].Degraded {
					t.Errorf("the engine staged %+v; want one copy, degraded", tasks)
				}
			}},
		{name: "a part lost during the copy", built: true, setup: lostAt(2),
			want:   ev(lifecycle.EvStageOutFailed),
			reason: []string{notVerified, holds}, log: []string{inventory, "\n  result\n"}, check: copies(1)},
		{name: "a part lost, and the copy fails", built: true,
			setup: func(r *rig) {
				lostAt(2)(r)
				r.mem.FailNext(memengine.Stage, errInjected)
			},
			want:   ev(lifecycle.EvStageOutFailed),
			reason: []string{notVerified, "; the copy: " + errInjected.Error(), holds}, log: []string{inventory}},
		{name: "a part out of reach, its replicas serving", built: true,
			setup: func(r *rig) { r.degrade(engine.Degraded{Nodes: []string{"rsa02"}}) },
			want:  ev(lifecycle.EvStagedOut), log: []string{"stage-out: RSA node rsa02 out of reach; its replicas were copied instead"},
			check: func(t *testing.T, r *rig) {
				copies(1)(t, r)
				if tasks := r.stages(); len(tasks) != 1 || !tasks[0].Degraded {
					t.Errorf("the engine staged %+v; want one copy, degraded", tasks)
				}
			}},
		{name: "a part back once", built: true, setup: bumping(func(n int) bool { return n == 1 }),
			want: ev(lifecycle.EvStagedOut), log: []string{again}, check: copies(2)},
		{name: "a part back every time", built: true,
			setup: func(r *rig) {
				output(r)
				bumping(func(int) bool { return true })(r)
			},
			want:   ev(lifecycle.EvStageOutFailed),
			reason: []string{"not verified: a part of the RAMDISK left and came back during each of 3 copies", "'rsa retry 7'", holds},
			log:    []string{again, inventory},
			check: func(t *testing.T, r *rig) {
				copies(3)(t, r)
				if n := strings.Count(r.log(), again); n != 2 {
					t.Errorf("the job's log says %d times that a part came back; want 2", n)
				}
			}},
		{name: "the copy fails", built: true,
			setup: func(r *rig) {
				output(r)
				r.mem.FailNext(memengine.Stage, errInjected)
			},
			want:   ev(lifecycle.EvStageOutFailed),
			reason: []string{errInjected.Error() + "; " + holds + " (17B), listed by 'rsa log 7'"},
			notLog: []string{"cannot be listed"}, log: []string{inventory + "17B):"}},
		{name: "the copy fails, the RAMDISK empty", built: true, setup: func(r *rig) { r.mem.FailNext(memengine.Stage, errInjected) },
			want:   ev(lifecycle.EvStageOutFailed),
			reason: []string{errInjected.Error() + "; the RAMDISK holds 0 files"}, log: []string{"files only in RAM after the failed stage-out: 0 (0B)\n"}},
		{name: "the copy fails, more files in RAM than the log lists", built: true,
			setup: func(r *rig) {
				for i := range 201 {
					r.write(fmt.Sprintf("f%03d", i), "")
				}
				r.mem.FailNext(memengine.Stage, errInjected)
			},
			want:   ev(lifecycle.EvStageOutFailed),
			reason: []string{"the RAMDISK holds 201 files"},
			log:    []string{"files only in RAM after the failed stage-out: 201 (0B), the first 200:\n  f000\n", "\n  f199\n"},
			notLog: []string{"f200"}},
		{name: "the copy fails, a name in RAM with a line break", built: true,
			setup: func(r *rig) {
				r.write("result\n2026-01-01T00:00:00Z stage-out done in 1s", "")
				r.mem.FailNext(memengine.Stage, errInjected)
			},
			// One line per file: a name cannot forge the log's lines.
			want: ev(lifecycle.EvStageOutFailed), reason: []string{"the RAMDISK holds 1 files"},
			log: []string{"files only in RAM after the failed stage-out: 1 (0B):\n  result"}, notLog: []string{"\n2026-01-01T00:00:00Z"}},
		{name: "the check after the copy fails", built: true,
			setup: func(r *rig) {
				r.eng.check = func(n int, rd engine.Ramdisk) (engine.Degraded, error) {
					if n == 2 {
						return engine.Degraded{}, errInjected
					}
					return engine.Degraded{}, nil
				}
			},
			want:   ev(lifecycle.EvStageOutFailed),
			reason: []string{"the copy ended, but whether every part of the RAMDISK was in reach is unknown: " + errInjected.Error()}},
		{name: "the daemon stops", built: true,
			setup: func(r *rig) {
				output(r)
				r.stage = func(ctx context.Context, _ engine.Ramdisk, _ stage.Task) error {
					r.cancel()
					return ctx.Err()
				}
			},
			// It runs again when the daemon is back: nothing to list.
			want: ev(lifecycle.EvStageOutFailed), reason: []string{context.Canceled.Error()}, notLog: []string{inventory},
			check: func(t *testing.T, r *rig) {
				if got := r.calls(memengine.Stage); len(got) != 1 {
					t.Errorf("the engine was asked %v; want one copy", got)
				}
			}},
	})
}

// A private output (each compute node's own file system) whose images a
// part lost may lack is never verified: the event names the nodes, which
// the lifecycle records.
func TestStageOutPrivate(t *testing.T) {
	const never = "not verified, and never will be: the part of the RAMDISK on RSA node rsa02 was lost"
	runCases(t, lifecycle.StageOut, []actionCase{
		{name: "lost while the compute nodes wrote", built: true,
			setup: func(r *rig) {
				r.port.rootOnly = true
				r.j.PrivateLost, r.j.Lost = true, []string{"rsa02"}
			},
			want: lifecycle.Event{Kind: lifecycle.EvStageOutFailed, Nodes: []string{"rsa02"}}, reason: []string{never, "'rsa discard 7'"},
			check: func(t *testing.T, r *rig) {
				if got := r.acc.made(); len(got) != 0 {
					t.Errorf("the node access was asked %+v", got)
				}
			}},
		{name: "a compute node out of reach", built: true,
			setup: func(r *rig) {
				r.port.rootOnly = true
				r.acc.failNext("Unbind", unreachable())
			},
			// Its file system may still take writes: nothing is
			// checked, and nothing owed, until it answers.
			want: ev(lifecycle.EvStageOutFailed), reason: []string{"compute node n1 not reachable"},
			check: func(t *testing.T, r *rig) {
				if len(r.port.owedMount) != 0 {
					t.Errorf("the daemon was told to owe the mounts %+v at a stage-out", r.port.owedMount)
				}
				if got := r.calls(memengine.Check, memengine.Seal, memengine.Stage); len(got) != 0 {
					t.Errorf("the engine was asked %v", got)
				}
			}},
		{name: "lost before the check", built: true,
			setup: func(r *rig) {
				r.port.rootOnly = true
				r.degrade(engine.Degraded{Nodes: []string{"rsa02"}, Missing: true})
			},
			want: lifecycle.Event{Kind: lifecycle.EvStageOutFailed, Nodes: []string{"rsa02"}}, reason: []string{never},
			check: func(t *testing.T, r *rig) {
				wantUnbound(t, r)
				if got := r.calls(memengine.Seal, memengine.Stage); len(got) != 0 {
					t.Errorf("the engine was asked %v", got)
				}
			}},
	})
}
