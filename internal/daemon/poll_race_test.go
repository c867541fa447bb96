package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/slurm/adapter"
)

// startDaemon is passDaemon with a state directory for the jobs' logs and
// the loop running (until the test ends), so that events can be posted and
// called; its tick is tick.
func startDaemon(t *testing.T, nodes int, capacity int64, tick time.Duration) *Daemon {
	t.Helper()
	d := passDaemon(t, nodes, capacity)
	d.cfg.StateDir = t.TempDir()
	if err := os.Mkdir(filepath.Join(d.cfg.StateDir, "logs"), 0o700); err != nil {
		t.Fatal(err)
	}
	d.cfg.Tick = tick
	d.cfg.Scheduler = config.SchedulerSlurmPoll
	return d
}

// runLoop runs d's loop until the test ends.
func runLoop(t *testing.T, d *Daemon) {
	ctx, cancel := context.WithCancel(context.Background())
	go d.loop(ctx)
	t.Cleanup(func() { cancel(); <-d.stopped })
}

// slurmJobOf is RSA's record of a Slurm job, as a scheduler adapter makes
// it, in the given states.
func slurmJobOf(t *testing.T, d *Daemon, name string, state lifecycle.JobState, rsa lifecycle.RSAState, capacity int64) *job.Job {
	t.Helper()
	now := time.Now()
	j := passJob(0, capacity, now)
	j.Spec.SchedulerID, j.Scheduler, j.State, j.RSA = name, config.SchedulerSlurmPoll, state, rsa
	if state == lifecycle.Running {
		j.StartedAt = now
	}
	if err := d.store.Create(context.Background(), j, nil); err != nil {
		t.Fatal(err)
	}
	return j
}

// TestStartHookHoldsTheJobUntilAssigned: the start hook (the prolog,
// pre_run) of a job still INITIAL holds the job while its assignment is
// under way: answered then, the job would run on disk where RSA mounts a
// moment later. When the assignment finds no capacity, the job is let go
// without RSA for good (INELIGIBLE, its log says why), never given a
// RAMDISK later over directories it already uses.
func TestStartHookHoldsTheJobUntilAssigned(t *testing.T) {
	const gib = 1 << 30
	d := startDaemon(t, 1, gib, 20*time.Millisecond)
	holder := slurmJobOf(t, d, "6", lifecycle.Running, lifecycle.InUseIn, gib)
	holder.Alloc = []job.Part{{Node: d.cfg.Nodes[0].Name, Bytes: gib}}
	if err := d.store.Commit(context.Background(), holder, nil); err != nil {
		t.Fatal(err)
	}
	j := slurmJobOf(t, d, "7", lifecycle.Running, lifecycle.Initial, gib)
	ctx := context.Background()
	root := api.Peer{UID: 0}

	// No assignment has run (the loop is not running): the hook holds.
	rep, err := d.api.Hook(ctx, root, prolog("7", 50*time.Millisecond))
	if err != nil || rep.Verdict != api.Busy {
		t.Fatalf("start hook before the assignment decided: %+v, %v; want BUSY", rep, err)
	}

	// The loop's tick assigns: the node is full, so the job waits for
	// capacity, which a started job never does.
	runLoop(t, d)
	rep, err = d.api.Hook(ctx, root, prolog("7", time.Minute))
	if err != nil || rep.Verdict != api.Success || !strings.Contains(rep.Message, "job runs without RSA: no RSA capacity was free when the job started") {
		t.Fatalf("start hook of a job no capacity is free for: %+v, %v; want SUCCESS, running without RSA", rep, err)
	}
	got, err := d.store.Get(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != lifecycle.Running || got.RSA != lifecycle.Ineligible {
		t.Errorf("the job is %s/%s, want RUNNING/INELIGIBLE: nothing is mounted for it later", got.State, got.RSA)
	}
	if log := stageLog(t, d, got); !strings.Contains(log, "runs without RSA: no RSA capacity was free") {
		t.Errorf("the job's log does not say it runs without RSA:\n%s", log)
	}
}

func stageLog(t *testing.T, d *Daemon, j *job.Job) string {
	t.Helper()
	b, err := os.ReadFile(d.stageLog(j))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

// prolog is the Slurm prolog's hook for Slurm job name, which has started
// (its RSA job records the start), waiting at most wait.
func prolog(name string, wait time.Duration) api.HookRequest {
	return api.HookRequest{Hook: "prolog", Args: []string{name}, Wait: wait}
}

// stageInVerdict is what Slurm's data_in hook answers for j.
func stageInVerdict(j *job.Job) (string, string) { return adapter.Verdict(lifecycle.GateStageIn, j) }
