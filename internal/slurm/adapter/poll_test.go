package adapter

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

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
			a, f := testAdapter(t, "7|"+c.squeue+"|None|1|n1|2026-11-29T10:00:00|1000|1000\n"+
				"8|RUNNING|None|1|n2|2026-11-29T10:00:00|1000|1000\n", nil) // not RSA's: left alone
			j := slurmJobOf(f, "7", c.state, c.rsa)
			p := poller{skip: map[string]bool{}, noStart: map[string]int{}, unheld: map[int64]bool{}}
			var sent []posted
			for range 2 {
				if err := a.pollOnce(context.Background(), &p); err != nil {
					t.Fatal(err)
				}
				sent = append(sent, f.takePosted()...)
			}
			for _, m := range sent {
				if m.ev.Kind == lifecycle.EvStarted {
					t.Fatalf("the poller reported a start: %+v", m.ev)
				}
			}
			switch {
			case !c.unheld && len(sent) > 0:
				t.Errorf("the poller posted %d events, want none: %+v", len(sent), sent[0].ev)
			case c.unheld && len(sent) != 2:
				t.Errorf("the poller posted %d events in two polls, want one each", len(sent))
			case c.unheld:
				m := sent[0]
				if m.id != j.ID || m.ev.Kind != lifecycle.EvStartedWithoutRSA || !strings.Contains(m.ev.Reason, "without its prolog reaching rsa serve") {
					t.Errorf("posted %+v for job %d, want %s with the reason", m.ev, m.id, lifecycle.EvStartedWithoutRSA)
				}
				var n job.Job
				m.edit(&n)
				if len(n.Hosts) != 1 || n.Hosts[0] != "n1" || n.StartedAt.IsZero() || n.Error != m.ev.Reason {
					t.Errorf("the event's record edit gives hosts %v, started %v, error %q", n.Hosts, n.StartedAt, n.Error)
				}
			}
			log := f.log(j)
			if c.reported == "" && log != "" || c.reported != "" && (!strings.Contains(log, c.reported) || strings.Count(log, "runs without RSA") != 1) {
				t.Errorf("the job's log is %q, want it to say %q once", log, c.reported)
			}
		})
	}
}

// TestAdoptedAlready: the poller and the prolog may meet the same Slurm
// job at once; whichever comes second finds the first one's RSA job. A
// done one is an earlier run of a requeued job, and a new run gets its own.
func TestAdoptedAlready(t *testing.T) {
	a, f := testAdapter(t, "", nil)
	slurmJobOf(f, "7", lifecycle.OnDeck, lifecycle.Ready)
	slurmJobOf(f, "8", lifecycle.Finished, lifecycle.Released)
	for _, c := range []struct {
		name string
		want error
	}{{"7", errAdopted}, {"8", nil}, {"9", nil}} {
		if err := a.adoptedAlready(context.Background(), c.name); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("Slurm job %s: %v, want %v", c.name, err, c.want)
		}
	}
}

// TestPollerHintsAtInvalidAccountOnce: Slurm 23.11 and later without
// accounting storage report every pending job InvalidAccount and never
// Resources, so polling stages nothing in; the poller says what to do,
// once per run however many jobs and polls show it, and adopts none.
func TestPollerHintsAtInvalidAccountOnce(t *testing.T) {
	var logged strings.Builder
	a, f := testAdapter(t, "7|PENDING|InvalidAccount|1||2026-11-29T10:00:00|1000|1000\n"+
		"8|PENDING|InvalidAccount|1||2026-11-29T10:00:00|1000|1000\n", &logged)
	p := poller{skip: map[string]bool{}, noStart: map[string]int{}, unheld: map[int64]bool{}}
	for range 3 {
		if err := a.pollOnce(context.Background(), &p); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(logged.String(), "mpi.conf"); n != 1 {
		t.Errorf("the hint was logged %d times in three polls of two jobs, want once:\n%s", n, logged.String())
	}
	if jobs, err := f.List(context.Background(), true, 0); err != nil || len(jobs) != 0 {
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
			a, f := testAdapter(t, "7|PENDING|"+c.reason+"|1||2026-11-29T10:00:00|1000|1000\n", nil)
			slurmJobOf(f, "7", lifecycle.OnDeck, lifecycle.Ready)
			p := poller{skip: map[string]bool{}, noStart: map[string]int{}, unheld: map[int64]bool{}}
			if err := a.pollOnce(context.Background(), &p); err != nil {
				t.Fatal(err)
			}
			demoted := slices.ContainsFunc(f.takePosted(), func(m posted) bool { return m.ev.Kind == lifecycle.EvDemoted })
			if demoted != c.demoted {
				t.Errorf("a job on deck that squeue shows PENDING %s: demoted %v, want %v", c.reason, demoted, c.demoted)
			}
		})
	}
}
