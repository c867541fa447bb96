package service

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/daemon/board"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/refuse"
)

// TestViewPrivateData: with private_data, a job's spec, home, groups,
// error and wait are hidden from anyone but its user, root and the
// scheduler's users, who see it whole; without, everyone does. The
// public part (id, user, states, size) is shown to all. View, Jobs and Job
// answer alike.
func TestViewPrivateData(t *testing.T) {
	for _, tc := range []struct {
		name    string
		private bool   // private_data
		user    string // the job's account, if not nobody
		peer    api.Peer
		hidden  bool
	}{
		{"a stranger", true, "", strangerPeer, true},
		{"root from another host", true, "", api.Peer{UID: 0, Remote: true}, true},
		{"a new account with the owner's uid", true, "olduser", ownerPeer, true},
		{"root", true, "", rootPeer, false},
		{"the owner", true, "", ownerPeer, false},
		{"the scheduler's user", true, "", schedulerPeer, false},
		{"a stranger without private_data", false, "", strangerPeer, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(c *config.Config) { c.PrivateData = tc.private })
			j := r.job(lifecycle.OnDeck, lifecycle.Initial, func(j *job.Job) {
				j.Error = "stage-in of /home/nobody/in failed"
				if tc.user != "" {
					j.User = tc.user
				}
			})
			r.board.SetWait(j.ID, board.WaitCapacity, "waits for 1.0M on rsa1")
			v := r.svc.View(j, tc.peer)
			js, err := r.svc.Jobs(r.ctx, tc.peer, true)
			if err != nil || len(js) != 1 {
				t.Fatalf("Jobs = %d jobs, %v; want 1", len(js), err)
			}
			one, err := r.svc.Job(r.ctx, tc.peer, j.ID, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range []*api.JobView{v, &js[0], one} {
				what := []string{"View", "Jobs", "Job"}[i]
				if v.ID != j.ID || v.User != j.User || v.State != j.State || v.RSA != j.RSA || v.Version != j.Version {
					t.Errorf("%s hides the public part: %+v", what, v.Job)
				}
				shown := v.Spec == j.Spec && v.Home == j.Home && slices.Equal(v.Groups, j.Groups) && v.Error == j.Error &&
					v.Waiting != ""
				gone := v.Spec == job.Spec{} && v.Home == "" && v.Groups == nil && v.Error == "" && v.Waiting == ""
				switch {
				case tc.hidden && (!gone || !v.Private):
					t.Errorf("%s shows %s the private part: %+v", what, tc.name, v)
				case !tc.hidden && (!shown || v.Private):
					t.Errorf("%s hides the private part from %s: %+v", what, tc.name, v)
				}
			}
		})
	}
}

// TestDashboardPrivate: the dashboard sees jobs as a stranger does.
func TestDashboardPrivate(t *testing.T) {
	for _, private := range []bool{true, false} {
		t.Run(fmt.Sprint("private_data=", private), func(t *testing.T) {
			r := newRig(t, func(c *config.Config) { c.PrivateData = private })
			j := r.job(lifecycle.OnDeck, lifecycle.Initial, func(j *job.Job) {
				j.Scheduler, j.Spec.SchedulerID = config.SchedulerSlurm, "42"
			})
			r.board.SetWait(j.ID, board.WaitCapacity, "waits for RAM")
			got, err := r.svc.Dashboard().Jobs(r.ctx, 10)
			if err != nil || len(got) != 1 {
				t.Fatalf("dashboard jobs %+v, %v; want one", got, err)
			}
			d := got[0]
			if d.ID != j.ID || d.User != "nobody" || d.JobState != string(lifecycle.OnDeck) {
				t.Errorf("the dashboard hides the public part: %+v", d)
			}
			if hidden := d.SlurmID == "" && d.Waiting == ""; hidden != private {
				t.Errorf("private_data %v: the dashboard shows Slurm id %q, waiting %q", private, d.SlurmID, d.Waiting)
			}
		})
	}
}

// TestEventsOwnerOnly: a job's log is its user's and root's alone, with or
// without private_data.
func TestEventsOwnerOnly(t *testing.T) {
	r := newRig(t, func(c *config.Config) { c.PrivateData = false })
	j := r.job(lifecycle.OnDeck, lifecycle.Initial)
	r.logs.Append(j.ID, j.CreatedAt, "a line of the job's log")
	for _, tc := range []struct {
		name string
		peer api.Peer
		want error
	}{
		{"the owner", ownerPeer, nil},
		{"root", rootPeer, nil},
		{"a stranger", strangerPeer, refuse.ErrForbidden},
		{"the scheduler's user", schedulerPeer, refuse.ErrForbidden},
		{"root from another host", api.Peer{UID: 0, Remote: true}, refuse.ErrForbidden},
	} {
		_, log, err := r.svc.Events(r.ctx, tc.peer, j.ID)
		switch {
		case tc.want == nil && (err != nil || log == ""):
			t.Errorf("%s reads the log: %q, %v", tc.name, log, err)
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("%s reads the log: %q, %v; want %v", tc.name, log, err, tc.want)
		}
	}
	if _, _, err := r.svc.Events(r.ctx, rootPeer, j.ID+1); !errors.Is(err, refuse.ErrNotFound) {
		t.Errorf("the log of a job that is not there: %v", err)
	}
}

// TestJobLongPoll: Job answers at once for a version already passed,
// waits for the next commit (Core.Changes) otherwise, and gives up with
// the job as it is when wait has elapsed.
func TestJobLongPoll(t *testing.T) {
	r := newRig(t, nil)
	j := r.job(lifecycle.OnDeck, lifecycle.Initial)
	if v, err := r.svc.Job(r.ctx, ownerPeer, j.ID, 0, time.Hour); err != nil || v.Version != j.Version {
		t.Fatalf("Job after version 0: %+v, %v", v, err)
	}
	start := time.Now()
	if v, err := r.svc.Job(r.ctx, ownerPeer, j.ID, j.Version, 20*time.Millisecond); err != nil || v.Version != j.Version {
		t.Fatalf("Job with nothing new: %+v, %v", v, err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("Job with nothing new answered after %v, before its wait", d)
	}
	cancelled := make(chan error)
	go func() {
		time.Sleep(20 * time.Millisecond)
		_, err := r.svc.Act(r.ctx, ownerPeer, j.ID, api.VerbCancel, api.ActOptions{})
		cancelled <- err
	}()
	v, err := r.svc.Job(r.ctx, ownerPeer, j.ID, j.Version, time.Minute)
	if err := <-cancelled; err != nil {
		t.Fatal(err)
	}
	if err != nil || v.Version <= j.Version || v.State != lifecycle.Finished {
		t.Fatalf("Job waiting for the cancel: %+v, %v", v, err)
	}
	if _, err := r.svc.Job(r.ctx, ownerPeer, j.ID+1, 0, time.Minute); !errors.Is(err, refuse.ErrNotFound) {
		t.Errorf("Job of no job: %v", err)
	}
}
