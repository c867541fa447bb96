package testutil

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/rsatest"
)

// commandLimit bounds a client command of a test: a hung one fails its
// test, which then cleans up, instead of running into the package's
// timeout, which cleans up nothing.
const commandLimit = 90 * time.Second

// jobPoll is how often WaitJob asks: each time by running squeue.
const jobPoll = 100 * time.Millisecond

// Sbatch submits a batch job as u from dir (rsatest.Slurm.Sbatch) and
// returns its id; a failure fails the test.
func Sbatch(t testing.TB, s rsatest.Slurm, u User, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandLimit)
	defer cancel()
	id, err := s.Sbatch(ctx, u.Name, dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// WaitJob waits up to within until Slurm's job id is in one of states,
// and returns that state. A slurmctld that does not answer is polled
// through (it may be restarting); a job that has ended in another state
// fails the test at once.
func WaitJob(t testing.TB, s rsatest.Slurm, id string, within time.Duration, states ...string) string {
	t.Helper()
	var got string
	WaitFor(t, fmt.Sprintf("Slurm job %s to be %v", id, states), within, jobPoll, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), commandLimit)
		defer cancel()
		st, _, err := s.Job(ctx, id)
		if err != nil {
			return false
		}
		got = st
		for _, want := range states {
			if st == want {
				return true
			}
		}
		if rsatest.Ended(st) {
			t.Fatalf("Slurm job %s ended %s, not %v", id, st, states)
		}
		return false
	})
	return got
}
