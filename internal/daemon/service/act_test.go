package service

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/refuse"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// TestActAuthorization is Act's table of who may do what to a job: its
// user and root act on it, no one else; its user retries or discards only
// a failed stage-out; an unknown verb, and a directory to stage out to
// with any verb but retry, are refused. A refusal reaches no loop (Apply)
// and leaves the record as it was; finishing an ended job again answers
// with the job as it is, without Apply.
func TestActAuthorization(t *testing.T) {
	const (
		onDeck     = "on deck"
		failedOut  = "failed stage-out"
		failedDown = "failed teardown"
		released   = "ended and released"
		tearing    = "ended, tearing down"
	)
	type states struct {
		job lifecycle.JobState
		rsa lifecycle.RSAState
	}
	jobs := map[string]states{
		onDeck:     {lifecycle.OnDeck, lifecycle.Initial},
		failedOut:  {lifecycle.Finished, lifecycle.StageOutFailed},
		failedDown: {lifecycle.Finished, lifecycle.TeardownFailed},
		released:   {lifecycle.Finished, lifecycle.Released},
		tearing:    {lifecycle.Finished, lifecycle.Teardown},
	}
	remoteRoot := api.Peer{UID: 0, Remote: true}
	for _, tc := range []struct {
		name  string
		job   string
		user  string // the job's account name, if not nobody
		peer  api.Peer
		verb  string
		to    string
		want  error               // the refusal's kind; nil: done
		apply lifecycle.EventKind // what reaches Apply; "": nothing
		rsa   lifecycle.RSAState  // the rsa-state after, if done and applied
	}{
		{"a stranger cancels", onDeck, "", strangerPeer, api.VerbCancel, "", refuse.ErrForbidden, "", ""},
		{"a stranger finishes", onDeck, "", strangerPeer, api.VerbFinish, "", refuse.ErrForbidden, "", ""},
		{"a stranger starts", onDeck, "", strangerPeer, api.VerbStart, "", refuse.ErrForbidden, "", ""},
		{"the scheduler's user cancels", onDeck, "", schedulerPeer, api.VerbCancel, "", refuse.ErrForbidden, "", ""},
		{"root from another host cancels", onDeck, "", remoteRoot, api.VerbCancel, "", refuse.ErrForbidden, "", ""},
		{"a new account with the uid cancels", onDeck, "olduser", ownerPeer, api.VerbCancel, "", refuse.ErrForbidden, "", ""},
		{"root cancels", onDeck, "", rootPeer, api.VerbCancel, "", nil, lifecycle.EvFinished, lifecycle.Released},
		{"the owner cancels", onDeck, "", ownerPeer, api.VerbCancel, "", nil, lifecycle.EvFinished, lifecycle.Released},
		{"the owner starts", onDeck, "", ownerPeer, api.VerbStart, "", nil, lifecycle.EvStarted, ""},

		{"the owner retries a failed stage-out", failedOut, "", ownerPeer, api.VerbRetry, "", nil, lifecycle.EvRetry, lifecycle.StagingOut},
		{"the owner discards a failed stage-out", failedOut, "", ownerPeer, api.VerbDiscard, "", nil, lifecycle.EvDiscard, lifecycle.Teardown},
		{"a stranger retries a failed stage-out", failedOut, "", strangerPeer, api.VerbRetry, "", refuse.ErrForbidden, "", ""},
		{"a stranger discards a failed stage-out", failedOut, "", strangerPeer, api.VerbDiscard, "", refuse.ErrForbidden, "", ""},
		{"the owner retries a failed teardown", failedDown, "", ownerPeer, api.VerbRetry, "", refuse.ErrForbidden, "", ""},
		{"the owner discards a failed teardown", failedDown, "", ownerPeer, api.VerbDiscard, "", refuse.ErrForbidden, "", ""},
		{"root retries a failed teardown", failedDown, "", rootPeer, api.VerbRetry, "", nil, lifecycle.EvRetry, lifecycle.Teardown},
		{"root discards a failed teardown", failedDown, "", rootPeer, api.VerbDiscard, "", refuse.ErrNotApplicable, "", ""},
		{"the owner retries a job on deck", onDeck, "", ownerPeer, api.VerbRetry, "", refuse.ErrForbidden, "", ""},
		{"root retries a job on deck", onDeck, "", rootPeer, api.VerbRetry, "", refuse.ErrNotApplicable, "", ""},
		{"root discards a job on deck", onDeck, "", rootPeer, api.VerbDiscard, "", refuse.ErrNotApplicable, "", ""},

		{"the owner's unknown verb", onDeck, "", ownerPeer, "explode", "", refuse.ErrNotFound, "", ""},
		{"root's unknown verb", failedOut, "", rootPeer, "", "", refuse.ErrNotFound, "", ""},
		{"a stranger's unknown verb", onDeck, "", strangerPeer, "explode", "", refuse.ErrNotFound, "", ""},
		{"to with cancel", onDeck, "", ownerPeer, api.VerbCancel, "/elsewhere", refuse.ErrInvalid, "", ""},
		{"to with finish", onDeck, "", rootPeer, api.VerbFinish, "/elsewhere", refuse.ErrInvalid, "", ""},
		{"to with discard", failedOut, "", ownerPeer, api.VerbDiscard, "/elsewhere", refuse.ErrInvalid, "", ""},
		{"to with start", onDeck, "", ownerPeer, api.VerbStart, "/elsewhere", refuse.ErrInvalid, "", ""},
		{"retry to a relative path", failedOut, "", ownerPeer, api.VerbRetry, "elsewhere", refuse.ErrInvalid, "", ""},
		{"retry of a failed teardown to elsewhere", failedDown, "", rootPeer, api.VerbRetry, "/elsewhere", refuse.ErrInvalid, "", ""},

		{"the owner finishes a released job", released, "", ownerPeer, api.VerbFinish, "", nil, "", ""},
		{"the owner cancels a released job", released, "", ownerPeer, api.VerbCancel, "", nil, "", ""},
		{"root finishes a job tearing down", tearing, "", rootPeer, api.VerbFinish, "", nil, "", ""},
		{"the owner finishes a failed stage-out", failedOut, "", ownerPeer, api.VerbFinish, "", nil, "", ""},
		{"a stranger finishes a released job", released, "", strangerPeer, api.VerbFinish, "", refuse.ErrForbidden, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, nil)
			st := jobs[tc.job]
			j := r.job(st.job, st.rsa, func(j *job.Job) {
				if tc.user != "" {
					j.User = tc.user
				}
			})
			v, err := r.svc.Act(r.ctx, tc.peer, j.ID, tc.verb, api.ActOptions{To: tc.to})
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Fatalf("Act = %v; want a refusal of kind %v", err, tc.want)
				}
			} else if err != nil {
				t.Fatalf("Act: %v", err)
			} else if v.ID != j.ID || v.Private {
				t.Errorf("Act answered with %+v, want job %d whole", v, j.ID)
			}
			calls := r.core.calls()
			switch {
			case tc.apply == "" && len(calls) != 0:
				t.Fatalf("Apply was called: %+v", calls)
			case tc.apply != "" && (len(calls) != 1 || calls[0].id != j.ID || calls[0].kind != tc.apply):
				t.Fatalf("Apply calls %+v, want one %s of job %d", calls, tc.apply, j.ID)
			}
			got := r.get(j.ID)
			if tc.apply == "" {
				if got.Version != j.Version || got.State != j.State || got.RSA != j.RSA || got.Spec.Output != j.Spec.Output {
					t.Errorf("the job changed: %+v, was %+v", got, j)
				}
				return
			}
			if tc.rsa != "" && got.RSA != tc.rsa {
				t.Errorf("the job is %s/%s after %s, want rsa-state %s", got.State, got.RSA, tc.verb, tc.rsa)
			}
			if tc.verb == api.VerbCancel && got.State != lifecycle.Finished {
				t.Errorf("a cancelled job is %s", got.State)
			}
		})
	}
}

// TestActNoJob: a verb on a job that is not there is refused as not found,
// whoever asks.
func TestActNoJob(t *testing.T) {
	r := newRig(t, nil)
	for _, p := range []api.Peer{rootPeer, ownerPeer, strangerPeer} {
		if _, err := r.svc.Act(r.ctx, p, 42, api.VerbCancel, api.ActOptions{}); !errors.Is(err, refuse.ErrNotFound) {
			t.Errorf("uid %d cancels a job that is not there: %v, want not found", p.UID, err)
		}
	}
	if calls := r.core.calls(); len(calls) != 0 {
		t.Errorf("Apply was called: %+v", calls)
	}
}

// TestActRetryTo: a directory to stage out to goes only with retry; the
// owner retries a failed stage-out to a directory of their own, and the retry reaches the loop with the record's new output
// directory, and the job's log says who moved it from where.
func TestActRetryTo(t *testing.T) {
	testutil.RequireRoot(t) // the directory is nobody's, checked with their rights
	r := newRig(t, nil)
	dir := filepath.Join(testutil.TempDir(t), "mine")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	j := r.job(lifecycle.Finished, lifecycle.StageOutFailed)
	// A directory fit for a retry is still refused with any other verb.
	for _, verb := range []string{api.VerbDiscard, api.VerbCancel, api.VerbFinish, api.VerbStart} {
		for _, p := range []api.Peer{ownerPeer, rootPeer} {
			_, err := r.svc.Act(r.ctx, p, j.ID, verb, api.ActOptions{To: dir})
			if !errors.Is(err, refuse.ErrInvalid) || !strings.Contains(err.Error(), "only with retry") {
				t.Errorf("uid %d: %s to %s: %v, want invalid, only with retry", p.UID, verb, dir, err)
			}
		}
	}
	if calls := r.core.calls(); len(calls) != 0 {
		t.Fatalf("Apply was called: %+v", calls)
	}
	v, err := r.svc.Act(r.ctx, ownerPeer, j.ID, api.VerbRetry, api.ActOptions{To: dir})
	if err != nil {
		t.Fatal(err)
	}
	if calls := r.core.calls(); len(calls) != 1 || calls[0].kind != lifecycle.EvRetry || !calls[0].edit {
		t.Fatalf("Apply calls %+v, want one retry with an edit", calls)
	}
	if got := r.get(j.ID); got.Spec.Output != dir || v.Spec.Output != dir || got.RSA != lifecycle.StagingOut {
		t.Errorf("after the retry the job is %s, output %s (view: %s); want STAGING_OUT to %s", got.RSA, got.Spec.Output, v.Spec.Output, dir)
	}
	want := `stage-out retried by nobody to "` + dir + `" instead of "` + j.Spec.Output + `"`
	if log := r.logs.Tail(j.ID, j.CreatedAt, 1<<10); !strings.Contains(log, want) {
		t.Errorf("the job's log is %q, lacks %q", log, want)
	}
}

// TestActStartAttach: a user's start with attach makes the calling process
// the job's owner, which the daemon then watches; root's attach is
// ignored, and one without a process to watch is refused.
func TestActStartAttach(t *testing.T) {
	for _, tc := range []struct {
		name  string
		peer  api.Peer
		want  error
		owner int // the job's owner's pid after; 0: none
	}{
		{"the owner", api.Peer{UID: nobody, PID: int32(os.Getpid())}, nil, os.Getpid()},
		{"root", api.Peer{UID: 0, PID: int32(os.Getpid())}, nil, 0},
		{"the owner through a standby", api.Peer{UID: nobody}, refuse.ErrInvalid, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, nil)
			j := r.job(lifecycle.OnDeck, lifecycle.Initial)
			_, err := r.svc.Act(r.ctx, tc.peer, j.ID, api.VerbStart, api.ActOptions{Attach: true})
			if !errors.Is(err, tc.want) {
				t.Fatalf("start with attach: %v, want %v", err, tc.want)
			}
			got := r.get(j.ID)
			if got.Owner.PID != tc.owner {
				t.Errorf("the job's owner is %+v, want pid %d", got.Owner, tc.owner)
			}
			if watched := tc.owner != 0; watched != slices.Contains(r.core.watched, j.ID) {
				t.Errorf("watched %v; want job %d watched: %v", r.core.watched, j.ID, watched)
			}
			if tc.want != nil && len(r.core.calls()) != 0 {
				t.Errorf("a refused start reached Apply: %+v", r.core.calls())
			}
		})
	}
}
