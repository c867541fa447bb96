package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/slurm"
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
	j.Spec.Name, j.Scheduler, j.State, j.RSA = name, config.SchedulerSlurmPoll, state, rsa
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

	// No assignment has run (the loop is not running): the hook holds.
	rep, err := d.awaitMount(ctx, slurmJob{name: "7"}, 50*time.Millisecond)
	if err != nil || rep.Verdict != api.Busy {
		t.Fatalf("start hook before the assignment decided: %+v, %v; want BUSY", rep, err)
	}

	// The loop's tick assigns: the node is full, so the job waits for
	// capacity, which a started job never does.
	runLoop(t, d)
	rep, err = d.awaitMount(ctx, slurmJob{name: "7"}, time.Minute)
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

// TestPollerNeverStartsAJobItsPrologDidNotHold: a start is the prolog's
// to report, as it holds the job until the mounts are made. The poller
// leaves a job Slurm holds in CONFIGURING to its prolog, and finds a job
// Slurm runs whose start nothing reported running without RSA: it never
// reports such a start (which would mount over directories the job
// already uses), says why in the job's log once, and tells the lifecycle
// each poll until the job's state takes it.
func TestPollerNeverStartsAJobItsPrologDidNotHold(t *testing.T) {
	cases := []struct {
		name     string
		state    lifecycle.JobState
		rsa      lifecycle.RSAState
		squeue   string // the job's state in squeue
		unheld   bool   // the poller finds it running without RSA
		reported string // what the job's log says, "" nothing
	}{
		{"held by its prolog", lifecycle.OnDeck, lifecycle.Ready, "CONFIGURING", false, ""},
		{"past its prolog, ready", lifecycle.OnDeck, lifecycle.Ready, "RUNNING", true, "runs without RSA: Slurm started the job without its prolog reaching rsa serve"},
		{"past its prolog, staging in", lifecycle.OnDeck, lifecycle.StagingIn, "RUNNING", true, "runs without RSA"},
		{"past its prolog, demoted", lifecycle.Demoted, lifecycle.Released, "RUNNING", true, "runs without RSA"},
		{"started by its prolog", lifecycle.Running, lifecycle.InUseIn, "RUNNING", false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := startDaemon(t, 1, 1<<30, time.Second)
			j := slurmJobOf(t, d, "7", c.state, c.rsa, 1<<30)
			d.slurmc = fakeSqueue(t, fmt.Sprintf("7|%s|None|1|n1|2026-11-29T10:00:00|%d|%d\n", c.squeue, j.UID, j.GID)+
				"8|RUNNING|None|1|n2|2026-11-29T10:00:00|1000|1000\n") // not RSA's: left alone
			p := poller{skip: map[string]bool{}, noStart: map[string]int{}, unheld: map[int64]bool{}}
			var posted []msg
			for range 2 {
				if err := d.pollOnce(context.Background(), &p); err != nil {
					t.Fatal(err)
				}
				posted = append(posted, drain(d.inbox)...)
			}
			for _, m := range posted {
				if m.ev.Kind == lifecycle.EvStarted {
					t.Fatalf("the poller reported a start: %+v", m.ev)
				}
			}
			switch {
			case !c.unheld && len(posted) > 0:
				t.Errorf("the poller posted %d events, want none: %+v", len(posted), posted[0].ev)
			case c.unheld && len(posted) != 2:
				t.Errorf("the poller posted %d events in two polls, want one each", len(posted))
			case c.unheld:
				m := posted[0]
				if m.id != j.ID || m.ev.Kind != lifecycle.EvStartedWithoutRSA || !strings.Contains(m.ev.Reason, "without its prolog reaching rsa serve") {
					t.Errorf("posted %+v for job %d, want %s with the reason", m.ev, m.id, lifecycle.EvStartedWithoutRSA)
				}
				var n job.Job
				m.edit(&n)
				if len(n.Hosts) != 1 || n.Hosts[0] != "n1" || n.StartedAt.IsZero() || n.Error != m.ev.Reason {
					t.Errorf("the event's record edit gives hosts %v, started %v, error %q", n.Hosts, n.StartedAt, n.Error)
				}
			}
			log := stageLog(t, d, j)
			if c.reported == "" && log != "" || c.reported != "" && (!strings.Contains(log, c.reported) || strings.Count(log, "runs without RSA") != 1) {
				t.Errorf("the job's log is %q, want it to say %q once", log, c.reported)
			}
		})
	}
}

// fakeSqueue is a Slurm client whose squeue prints out.
func fakeSqueue(t *testing.T, out string) slurm.Client {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "out"), []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "squeue"), []byte("#!/bin/sh\nexec cat "+filepath.Join(dir, "out")+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return slurm.Client{Bin: dir}
}

// drain takes every message posted so far.
func drain(inbox chan msg) []msg {
	var ms []msg
	for {
		select {
		case m := <-inbox:
			ms = append(ms, m)
		default:
			return ms
		}
	}
}

// TestAdoptedAlready: the poller and the prolog may meet the same Slurm
// job at once; whichever comes second finds the first one's RSA job. A
// done one is an earlier run of a requeued job, and a new run gets its own.
func TestAdoptedAlready(t *testing.T) {
	d := startDaemon(t, 1, 1<<30, time.Second)
	slurmJobOf(t, d, "7", lifecycle.OnDeck, lifecycle.Ready, 1<<30)
	slurmJobOf(t, d, "8", lifecycle.Finished, lifecycle.Released, 1<<30)
	for _, c := range []struct {
		name string
		want error
	}{{"7", errAdopted}, {"8", nil}, {"9", nil}} {
		if err := d.adoptedAlready(context.Background(), c.name); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("Slurm job %s: %v, want %v", c.name, err, c.want)
		}
	}
}

// TestPollerHintsAtInvalidAccountOnce: Slurm 23.11 and later without
// accounting storage report every pending job InvalidAccount and never
// Resources, so polling stages nothing in; the poller says what to do,
// once per run however many jobs and polls show it, and adopts none.
func TestPollerHintsAtInvalidAccountOnce(t *testing.T) {
	d := startDaemon(t, 1, 1<<30, time.Second)
	var logged strings.Builder
	d.log = slog.New(slog.NewTextHandler(&logged, nil))
	d.slurmc = fakeSqueue(t, "7|PENDING|InvalidAccount|1||2026-11-29T10:00:00|1000|1000\n"+
		"8|PENDING|InvalidAccount|1||2026-11-29T10:00:00|1000|1000\n")
	p := poller{skip: map[string]bool{}, noStart: map[string]int{}, unheld: map[int64]bool{}}
	for range 3 {
		if err := d.pollOnce(context.Background(), &p); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(logged.String(), "mpi.conf"); n != 1 {
		t.Errorf("the hint was logged %d times in three polls of two jobs, want once:\n%s", n, logged.String())
	}
	if jobs, err := d.store.List(context.Background(), true, 0); err != nil || len(jobs) != 0 {
		t.Errorf("the poller took on %d jobs (%v) that Slurm does not report on Resources", len(jobs), err)
	}
}

// TestPollerTakesNoneForNoNews: Slurm shows a pending job's Reason as None
// until its next scheduling pass after a submission or any scontrol update
// (an admin's, or RSA's own AdminComment): no news of its place, so a job
// on deck is not demoted for it; any other reason of a pending job is.
func TestPollerTakesNoneForNoNews(t *testing.T) {
	for _, c := range []struct {
		reason  string
		demoted bool
	}{{"None", false}, {"Resources", false}, {"Priority", true}, {"JobHeldAdmin", true}} {
		t.Run(c.reason, func(t *testing.T) {
			d := startDaemon(t, 1, 1<<30, time.Second)
			j := slurmJobOf(t, d, "7", lifecycle.OnDeck, lifecycle.Ready, 1<<30)
			d.slurmc = fakeSqueue(t, fmt.Sprintf("7|PENDING|%s|1||2026-11-29T10:00:00|%d|%d\n", c.reason, j.UID, j.GID))
			p := poller{skip: map[string]bool{}, noStart: map[string]int{}, unheld: map[int64]bool{}}
			if err := d.pollOnce(context.Background(), &p); err != nil {
				t.Fatal(err)
			}
			demoted := slices.ContainsFunc(drain(d.inbox), func(m msg) bool { return m.ev.Kind == lifecycle.EvDemoted })
			if demoted != c.demoted {
				t.Errorf("a job on deck that squeue shows PENDING %s: demoted %v, want %v", c.reason, demoted, c.demoted)
			}
		})
	}
}
