package admission

import (
	"errors"
	"testing"

	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/refuse"
)

// TestLimit: a new job is refused when its user has max_jobs_per_user
// jobs (refuse.ErrLimit, checked first) or all users together have
// max_active_jobs (refuse.ErrUnavailable); only jobs that hold or wait for
// RSA nodes count (lifecycle.CountsTowardLimits).
func TestLimit(t *testing.T) {
	const me, other = 1000, 1001
	jobOf := func(uid uint32, state lifecycle.JobState, rsa lifecycle.RSAState) *job.Job {
		return &job.Job{UID: uid, State: state, RSA: rsa}
	}
	var (
		waiting    = func(uid uint32) *job.Job { return jobOf(uid, lifecycle.OnDeck, lifecycle.Initial) }
		holding    = func(uid uint32) *job.Job { return jobOf(uid, lifecycle.Running, lifecycle.InUseIn) }
		failedOut  = func(uid uint32) *job.Job { return jobOf(uid, lifecycle.Finished, lifecycle.StageOutFailed) }
		ineligible = func(uid uint32) *job.Job { return jobOf(uid, lifecycle.Running, lifecycle.Ineligible) }
		released   = func(uid uint32) *job.Job { return jobOf(uid, lifecycle.Finished, lifecycle.Released) }
		lost       = func(uid uint32) *job.Job { return jobOf(uid, lifecycle.Finished, lifecycle.OutputLost) }
	)
	for _, tc := range []struct {
		name    string
		active  []*job.Job
		perUser int
		site    int
		want    error
	}{
		{"none", nil, 1, 1, nil},
		{"room for mine", []*job.Job{waiting(me)}, 2, 4, nil},
		{"mine waiting", []*job.Job{waiting(me)}, 1, 4, refuse.ErrLimit},
		{"mine holding", []*job.Job{holding(me)}, 1, 4, refuse.ErrLimit},
		{"mine failed to stage out", []*job.Job{failedOut(me)}, 1, 4, refuse.ErrLimit},
		{"mine hold nothing", []*job.Job{ineligible(me), released(me), lost(me)}, 1, 1, nil},
		{"others' do not count as mine", []*job.Job{waiting(other), holding(other)}, 1, 4, nil},
		{"the site is full", []*job.Job{waiting(other), holding(other)}, 1, 2, refuse.ErrUnavailable},
		{"the site is full with mine", []*job.Job{holding(me), waiting(other)}, 4, 2, refuse.ErrUnavailable},
		{"the site has room", []*job.Job{waiting(other), holding(other)}, 1, 3, nil},
		{"others hold nothing", []*job.Job{ineligible(other), released(other), lost(other)}, 1, 1, nil},
		{"both full: mine first", []*job.Job{holding(me), holding(other)}, 1, 2, refuse.ErrLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Limit(tc.active, me, "me", config.Limits{MaxJobsPerUser: tc.perUser, MaxActiveJobs: tc.site})
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("Limit = %v, want room", err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("Limit = %v, want %v", err, tc.want)
			}
		})
	}
}
