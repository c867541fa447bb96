package adapter

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/slurm"
)

func TestHookVerdicts(t *testing.T) {
	type js = lifecycle.JobState
	type rs = lifecycle.RSAState
	cases := []struct {
		name string
		v    verdict
		job  js
		rsa  rs
		want string
		// inputOnly: a job without an output directory.
		inputOnly bool
	}{
		{"data_in waits for the copy", stageInVerdict, lifecycle.OnDeck, lifecycle.StagingIn, api.Busy, false},
		{"data_in waits for capacity", stageInVerdict, lifecycle.OnDeck, lifecycle.Initial, api.Busy, false},
		{"data_in done", stageInVerdict, lifecycle.OnDeck, lifecycle.Ready, api.Success, false},
		{"data_in without RSA", stageInVerdict, lifecycle.OnDeck, lifecycle.Ineligible, api.Success, false},
		{"data_in failed", stageInVerdict, lifecycle.OnDeck, lifecycle.Aborted, api.Failure, false},
		{"data_in for a cancelled job", stageInVerdict, lifecycle.Finished, lifecycle.StagingIn, api.Failure, false},
		{"prolog waits for the mount", mountVerdict, lifecycle.Running, lifecycle.MountingIn, api.Busy, false},
		{"prolog: mounted", mountVerdict, lifecycle.Running, lifecycle.InUseIn, api.Success, false},
		{"prolog: output mounted", mountVerdict, lifecycle.Running, lifecycle.InUseOut, api.Success, false},
		{"prolog waits for the assignment", mountVerdict, lifecycle.Running, lifecycle.Initial, api.Busy, false},
		{"prolog waits for a rebuild", mountVerdict, lifecycle.Running, lifecycle.Teardown, api.Busy, false},
		{"data_out waits for the copy", stageOutVerdict, lifecycle.Finished, lifecycle.StagingOut, api.Busy, false},
		{"data_out waits for unmounting", stageOutVerdict, lifecycle.Finished, lifecycle.Unmounting, api.Busy, false},
		{"data_out failed, output kept", stageOutVerdict, lifecycle.Finished, lifecycle.StageOutFailed, api.Failure, false},
		{"data_out done", stageOutVerdict, lifecycle.Finished, lifecycle.Teardown, api.Success, false},
		{"teardown waits", teardownVerdict, lifecycle.Finished, lifecycle.Teardown, api.Busy, false},
		{"teardown done", teardownVerdict, lifecycle.Finished, lifecycle.Released, api.Success, false},
		{"teardown leaves output to the admin", teardownVerdict, lifecycle.Finished, lifecycle.StageOutFailed, api.Success, false},
		{"epilog waits for unmounting", unmountVerdict, lifecycle.Finished, lifecycle.InUseOut, api.Busy, false},
		{"epilog done", unmountVerdict, lifecycle.Finished, lifecycle.StagingOut, api.Success, false},
		{"data_out: output lost with its RAMDISK", stageOutVerdict, lifecycle.Finished, lifecycle.OutputLost, api.Failure, false},
		{"prolog: output lost, the job goes on", mountVerdict, lifecycle.Running, lifecycle.OutputLost, api.Success, false},
		{"prolog: input lost with a node, no output: reads from disk at once", mountVerdict, lifecycle.Running, lifecycle.Teardown, api.Success, true},
		{"prolog: input still staging, no output: reads from disk at once", mountVerdict, lifecycle.Running, lifecycle.StoppingStagingIn, api.Success, true},
		{"prolog: input ready, no output: waits for its mount", mountVerdict, lifecycle.Running, lifecycle.MountingIn, api.Busy, true},
	}
	for _, c := range cases {
		j := &job.Job{State: c.job, RSA: c.rsa, Spec: job.Spec{Input: "/in", Output: "/out"}}
		if c.inputOnly {
			j.Spec.Output = ""
		}
		if got, msg := c.v(j); got != c.want {
			t.Errorf("%s: %s/%s gives %s (%q), want %s", c.name, c.job, c.rsa, got, msg, c.want)
		}
	}
}

func TestStageInTime(t *testing.T) {
	a := &Adapter{cfg: &config.Config{Slurm: config.Slurm{StageInLead: 10 * time.Minute, StageRate: 1 << 30},
		Nodes: []config.Node{{Name: "n", Capacity: 60 << 30}}}}
	now := time.Now()
	cases := []struct {
		name     string
		capacity int64
		start    time.Time
		want     time.Time // zero: at once
	}{
		{"start unknown", 0, time.Time{}, time.Time{}},
		{"due soon", 0, now.Add(5 * time.Minute), time.Time{}},
		{"due tomorrow, one node's share", 0, now.Add(24 * time.Hour), now.Add(24*time.Hour - 10*time.Minute - 60*time.Second)},
		{"due tomorrow, explicit capacity", 6 << 30, now.Add(24 * time.Hour), now.Add(24*time.Hour - 10*time.Minute - 6*time.Second)},
	}
	for _, c := range cases {
		got := a.stageInTime(job.Spec{Capacity: c.capacity}, c.start)
		if !got.Equal(c.want) {
			t.Errorf("%s: stage-in at %v, want %v", c.name, got, c.want)
		}
	}
}

// A stage-in held for Slurm's first estimate (setupStart) is held while
// the start Slurm shows is the main scheduler's stamp from before the
// setup, and no longer once backfill has written one after it.
func TestAwaitingEstimate(t *testing.T) {
	created := time.Date(2026, 11, 25, 12, 0, 0, 400e6, time.UTC)
	stamp := created.Truncate(time.Second) // squeue shows whole seconds
	held := &job.Job{CreatedAt: created, NotBefore: created.Add(2 * time.Minute)}
	estimated := &job.Job{CreatedAt: created, NotBefore: created.Add(time.Hour), Expected: created.Add(70 * time.Minute)}
	due := &job.Job{CreatedAt: created}
	cases := []struct {
		name  string
		j     *job.Job
		start time.Time
		want  bool
	}{
		{"held, the main scheduler's stamp", held, stamp, true},
		{"held, no start at all", held, time.Time{}, true},
		{"held, backfill: nodes free now", held, stamp.Add(time.Second), false},
		{"held, backfill: due in an hour", held, created.Add(time.Hour), false},
		{"estimated before", estimated, stamp, false},
		{"due at once", due, stamp, false},
	}
	for _, c := range cases {
		if got := awaitingEstimate(c.j, slurm.Job{Start: c.start}); got != c.want {
			t.Errorf("%s: awaiting = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestOnlyChanges(t *testing.T) {
	var o onlyChanges
	steps := []struct {
		err  error
		news bool
	}{{nil, false}, {errors.New("down"), true}, {errors.New("down"), false}, {errors.New("other"), true}, {nil, true}, {nil, false}}
	for i, s := range steps {
		if got := o.changed(s.err); got != s.news {
			t.Errorf("step %d (%v): news = %v, want %v", i, s.err, got, s.news)
		}
	}
}

// A hook answers only for the job a scheduler adapter
// made for that Slurm id, and only when the uid and gid Slurm passes are
// that job's; the path file never gets a line that is not one RSA_*
// variable free of control characters.
func TestHookLookupMatchesSlurmsUser(t *testing.T) {
	ctx := context.Background()
	f := &fakeJobs{}
	a := &Adapter{jobs: f, log: slog.New(slog.NewTextHandler(io.Discard, nil)), cfg: &config.Config{}}
	now := time.Now()
	mk := func(name, in string, uid uint32) *job.Job {
		return f.add(&job.Job{Spec: job.Spec{SchedulerID: name, Input: in}, UID: uid, GID: uid, User: "u", Scheduler: config.SchedulerSlurm,
			State: lifecycle.OnDeck, RSA: lifecycle.Ready, Ramdisk: "/run/rsa/ramdisk/1/ram", CreatedAt: now, UpdatedAt: now})
	}
	victim := mk("77", "/home/v/in", 1001)
	for _, c := range []struct {
		uid, gid string
		ok       bool
	}{{"1001", "1001", true}, {"", "", true}, {"1002", "1001", false}, {"1001", "1002", false}, {"x", "", false}} {
		j, err := a.latest(ctx, slurmJob{name: "77", uid: c.uid, gid: c.gid})
		if c.ok != (err == nil) || (c.ok && j.ID != victim.ID) {
			t.Errorf("uid %q gid %q: %v, %v (ok %v)", c.uid, c.gid, j, err, c.ok)
		}
	}
	if _, err := a.latest(ctx, slurmJob{name: "77; rm -rf /"}); err == nil {
		t.Error("a job id that is not a number was looked up")
	}
	rep, err := a.hookPaths(ctx, slurmJob{name: "77", uid: "1001", gid: "1001"})
	if err != nil || rep.Verdict != api.Success || len(rep.Env) == 0 {
		t.Fatalf("paths: %+v %v", rep, err)
	}
	// setup of a Slurm id whose record is another user's: refused while
	// that job lives; a finished one is an earlier run (Slurm's ids
	// started again) and does not stand in the way.
	if rep, _ := a.hookSetup(ctx, slurmJob{name: "77", uid: "1002", gid: "1002"}, "0", ""); rep.Verdict != api.Failure || !strings.Contains(rep.Message, "belongs to uid 1001") {
		t.Errorf("setup over another user's live job: %+v", rep)
	}
	mk("79", "/home/v/in", 1001).State = lifecycle.Finished
	if rep, _ := a.hookSetup(ctx, slurmJob{name: "79", uid: "1002", gid: "1002"}, "0", "#!/bin/sh\ntrue\n"); !strings.Contains(rep.Message, "has no #RSA line") {
		t.Errorf("setup after another user's finished job of the same id: %+v", rep)
	}
	// A record from before control characters were refused.
	mk("78", "/home/v/x\nBASH_ENV=/tmp/evil.sh", 1001)
	rep, err = a.hookPaths(ctx, slurmJob{name: "78"})
	if err != nil || rep.Verdict != api.Failure || len(rep.Env) != 0 {
		t.Fatalf("paths of a record with a newline: %+v %v", rep, err)
	}
}

// A job whose own #SBATCH lines make it too small for the proportion rule
// is refused at sbatch, saying how to get RAM.
func TestTooSmallAtSbatch(t *testing.T) {
	a := &Adapter{cfg: &config.Config{Proportion: 128, MinJobNodes: 128, Slurm: config.Slurm{Pool: "rsa"}}}
	cases := []struct {
		script string
		refuse bool
	}{
		{"#SBATCH -N 2\n#RSA_DATA_IN=/in\n", true},
		{"#SBATCH -N 2\n#RSA in=/in capacity=8G pool=rsa\n", false},
		{"#SBATCH -N 256\n#RSA_DATA_IN=/in\n", false},
		{"#SBATCH --nodes=128-256\n#RSA_DATA_IN=/in\n", false},
		{"#RSA_DATA_IN=/in\n", false}, // -N on sbatch's command line, perhaps: not known here
	}
	for _, c := range cases {
		req, _, err := slurm.Parse([]byte("#!/bin/bash\n" + c.script + "true\n"))
		if err != nil {
			t.Fatal(err)
		}
		why := a.tooSmall(req)
		if (why != "") != c.refuse {
			t.Errorf("%q: %q, refuse = %v", c.script, why, c.refuse)
		}
		if c.refuse && (!strings.Contains(why, "a 2-node job") || !strings.Contains(why, "#RSA capacity=SIZE pool=rsa")) {
			t.Errorf("%q: the reason names neither the size nor the fix: %q", c.script, why)
		}
	}
}

// No caller over the network is the scheduler's user, whatever uid its
// credential carries: hooks and other users' private data stay on the
// RSA host.
func TestRemoteCallerIsNeverTheScheduler(t *testing.T) {
	a := &Adapter{cfg: &config.Config{Slurm: config.Slurm{Users: []string{"root", "nobody"}}}}
	for _, p := range []api.Peer{{UID: 0, Remote: true}, {UID: 65534, Remote: true}} {
		if a.IsScheduler(p) {
			t.Errorf("remote uid %d may call hooks", p.UID)
		}
	}
	if !a.IsScheduler(api.Peer{UID: 0}) {
		t.Error("root on the host may not call hooks")
	}
}

// TestHookPools: the pool Slurm sees is all RSA nodes' RAM; what is free
// leaves out what RSA holds beyond the jobs Slurm counts itself (those
// with pool capacity), and all of a node that takes no new part but what
// Slurm's own jobs hold there.
func TestHookPools(t *testing.T) {
	const gib = 1 << 30
	a, f := testAdapter(t, "", nil)
	a.cfg.Slurm.Pool = "rsa"
	f.pool = []PoolNode{
		{Name: "n1", Capacity: 10 * gib, Open: true, Held: 6 * gib, Uncounted: 2 * gib},
		{Name: "n2", Capacity: 10 * gib, Open: false, Held: 5 * gib, Uncounted: 1 * gib},
	}
	rep, err := a.hookPools()
	if err != nil || rep.Verdict != api.Success {
		t.Fatalf("pools: %+v, %v", rep, err)
	}
	// n1: 2 GiB RSA's own; n2: all but Slurm's 4 GiB.
	want := `{"pools":[{"free":12288,"granularity":1048576,"id":"rsa","quantity":20480}]}`
	if rep.Message != want {
		t.Errorf("pools says %s, want %s", rep.Message, want)
	}
	for _, c := range []struct {
		name      string
		j         job.Job
		uncounted bool
	}{
		{"sized by proportion", job.Job{RSA: lifecycle.InUseIn}, true},
		{"pool capacity", job.Job{Spec: job.Spec{Pool: "rsa"}, RSA: lifecycle.InUseIn}, false},
		{"pool capacity, output kept for the admin", job.Job{Spec: job.Spec{Pool: "rsa"}, RSA: lifecycle.StageOutFailed}, true},
	} {
		if got := f.uncounted(&c.j); got != c.uncounted {
			t.Errorf("%s: left out of Slurm's count %v, want %v", c.name, got, c.uncounted)
		}
	}
}
