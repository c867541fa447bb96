package service

import (
	"errors"
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
	"github.com/rsa-hpc/rsa/internal/refuse"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// TestSubmitRefusals: root submits no job; a user may not set what only
// RSA (spec.sized) or a scheduler adapter (spec.name, spec.pool) sets; a
// uid without an account submits nothing. Each refusal comes before the
// job is admitted, so nothing is stored.
func TestSubmitRefusals(t *testing.T) {
	const noAccount = 4242424 // in no passwd
	out := job.Spec{Output: "/home/nobody/out", Capacity: 1 << 20}
	with := func(edit func(*job.Spec)) job.Spec {
		s := out
		edit(&s)
		return s
	}
	for _, tc := range []struct {
		name string
		peer api.Peer
		spec job.Spec
		want error
		says string
	}{
		{"root", rootPeer, out, refuse.ErrForbidden, "normal user"},
		{"root with a scheduler id", rootPeer, with(func(s *job.Spec) { s.SchedulerID = "42" }), refuse.ErrForbidden, "normal user"},
		{"uid 0 from another host", api.Peer{UID: 0, Remote: true}, out, refuse.ErrForbidden, "normal user"},
		{"spec.sized", ownerPeer, with(func(s *job.Spec) { s.Sized = "by hand" }), refuse.ErrInvalid, "spec.sized"},
		{"spec.name", ownerPeer, with(func(s *job.Spec) { s.SchedulerID = "42" }), refuse.ErrInvalid, "spec.name"},
		{"spec.name by the scheduler's user", schedulerPeer, with(func(s *job.Spec) { s.SchedulerID = "42" }), refuse.ErrInvalid, "spec.name"},
		{"spec.pool", ownerPeer, with(func(s *job.Spec) { s.Pool = "rsa" }), refuse.ErrInvalid, "spec.pool"},
		{"no account", api.Peer{UID: noAccount, GID: noAccount}, out, refuse.ErrForbidden, "no account"},
		{"nothing to accelerate", ownerPeer, job.Spec{Capacity: 1 << 20}, refuse.ErrInvalid, "nothing to accelerate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, nil)
			v, err := r.svc.Submit(r.ctx, tc.peer, api.SubmitRequest{Spec: tc.spec})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Submit = %v, %v; want %v saying %q", v, err, tc.want, tc.says)
			}
			if r.core.admitted != 0 || len(r.core.calls()) != 0 {
				t.Errorf("a refused submission reached the daemon: %d admitted, applied %+v", r.core.admitted, r.core.calls())
			}
			if js, _ := r.store.List(r.ctx, true, 100); len(js) != 0 {
				t.Errorf("a refused submission stored %+v", js[0])
			}
		})
	}
}

// TestSubmit: a user's job is admitted under the job limits as theirs, on
// deck with the site's expiry, watched and ticked once; one past
// max_jobs_per_user is refused until one of theirs ends; rsa run's
// attach makes the caller the job's owner, or is refused where the
// caller's process cannot be known.
func TestSubmit(t *testing.T) {
	testutil.RequireRoot(t) // the output directory is nobody's, checked with their rights
	r := newRig(t, func(c *config.Config) {
		c.Limits.MaxJobsPerUser = 1
		c.Limits.UnstartedExpiry = time.Hour
	})
	dir := filepath.Join(testutil.TempDir(t), "out")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	spec := job.Spec{Output: dir, Capacity: 1 << 20}
	v, err := r.svc.Submit(r.ctx, ownerPeer, api.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	j := r.get(v.ID)
	if j.UID != nobody || j.User != "nobody" || j.State != lifecycle.OnDeck || j.Scheduler != "" || j.UnstartedExpiry != time.Hour || j.Owner.PID != 0 {
		t.Errorf("the submitted job is %+v", j)
	}
	if v.Private || v.Spec.Output != dir {
		t.Errorf("the submitter sees %+v", v)
	}
	if calls := r.core.calls(); len(calls) != 1 || calls[0].id != j.ID || calls[0].kind != lifecycle.EvTick {
		t.Errorf("Apply calls %+v, want one tick of job %d", calls, j.ID)
	}
	if !slices.Equal(r.core.watched, []int64{j.ID}) {
		t.Errorf("watched %v, want job %d", r.core.watched, j.ID)
	}
	evs, err := r.store.Events(r.ctx, j.ID)
	if err != nil || len(evs) == 0 || evs[0].Kind != "submit" || !strings.Contains(evs[0].Message, "submitted by nobody") {
		t.Errorf("the job's first event is not its submission: %+v, %v", evs, err)
	}

	if _, err := r.svc.Submit(r.ctx, ownerPeer, api.SubmitRequest{Spec: spec}); !errors.Is(err, refuse.ErrLimit) {
		t.Fatalf("a second job past max_jobs_per_user 1: %v, want the limit", err)
	}
	if _, err := r.svc.Act(r.ctx, ownerPeer, j.ID, api.VerbCancel, api.ActOptions{}); err != nil {
		t.Fatal(err)
	}

	// rsa run through the standby of a pair: no process to watch.
	standby := ownerPeer
	standby.PID = 0
	if _, err := r.svc.Submit(r.ctx, standby, api.SubmitRequest{Spec: spec, Attach: true}); !errors.Is(err, refuse.ErrInvalid) {
		t.Fatalf("attach without a process: %v, want invalid", err)
	}
	run := ownerPeer
	run.PID = int32(os.Getpid())
	v, err = r.svc.Submit(r.ctx, run, api.SubmitRequest{Spec: spec, Attach: true})
	if err != nil {
		t.Fatalf("a job of the user's once the first ended: %v", err)
	}
	if j := r.get(v.ID); j.Owner.PID != os.Getpid() || j.Owner.StartTime == 0 {
		t.Errorf("the attached job's owner is %+v, want this process", j.Owner)
	}
	if js, _ := r.store.List(r.ctx, true, 100); len(js) != 2 {
		t.Errorf("%d jobs stored, want 2: the refused ones stored nothing", len(js))
	}
}
