package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// TestActRefusals: a job's own user may retry or discard a failed
// stage-out, never a failed teardown (root's alone), and no one else's job;
// a retry to another directory takes only a directory the job's user owns,
// apart from RSA's own and the job's input, and only with retry. Each
// refusal comes before anything is posted to the loop (which does not run
// here), so none can change the job.
func TestActRefusals(t *testing.T) {
	testutil.RequireRoot(t)
	d := passDaemon(t, 1, 1<<30)
	dir := testutil.TempDir(t)
	mine := filepath.Join(dir, "mine")
	roots := filepath.Join(dir, "roots")
	for _, p := range []string{mine, roots} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const nobody = 65534 // the user the jobs belong to: in every passwd
	if err := os.Chown(mine, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	newJob := func(rsa lifecycle.RSAState) int64 {
		j := passJob(0, 1<<20, time.Now())
		j.UID, j.GID, j.User = nobody, nobody, "nobody"
		j.Spec.Input, j.Spec.Output = filepath.Join(dir, "in"), filepath.Join(dir, "out")
		j.State, j.RSA = lifecycle.Finished, rsa
		if err := d.store.Create(ctx, j, nil); err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	failedOut, failedDown := newJob(lifecycle.StageOutFailed), newJob(lifecycle.TeardownFailed)
	owner, other := api.Peer{UID: nobody}, api.Peer{UID: 1}
	cases := []struct {
		name   string
		peer   api.Peer
		id     int64
		verb   string
		to     string
		status int
		want   string
	}{
		{"another user's retry", other, failedOut, api.VerbRetry, "", 403, "only its user and root"},
		{"another user's discard", other, failedOut, api.VerbDiscard, "", 403, "only its user and root"},
		{"the owner's retry of a failed teardown", owner, failedDown, api.VerbRetry, "", 403, "only root may retry"},
		{"the owner's discard of a failed teardown", owner, failedDown, api.VerbDiscard, "", 403, "only root may discard"},
		{"to with discard", owner, failedOut, api.VerbDiscard, mine, 400, "only with retry"},
		{"to a relative path", owner, failedOut, api.VerbRetry, "mine", 400, "absolute path"},
		{"to RSA's state directory", owner, failedOut, api.VerbRetry, filepath.Join(d.cfg.StateDir, "x"), 400, "overlaps RSA's own"},
		{"to inside the input", owner, failedOut, api.VerbRetry, filepath.Join(dir, "in", "x"), 400, "separate directories"},
		{"to a directory the user does not own", owner, failedOut, api.VerbRetry, roots, 400, "owned by"},
		{"to a directory that is not there", owner, failedOut, api.VerbRetry, filepath.Join(dir, "none"), 400, "none"},
		{"root's retry of a failed teardown to elsewhere", api.Peer{UID: 0}, failedDown, api.VerbRetry, mine, 400, "only a failed stage-out"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := d.api.Act(ctx, c.peer, c.id, c.verb, api.ActOptions{To: c.to})
			if api.StatusOf(err) != c.status || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%s: %v, want status %d saying %q", c.name, err, c.status, c.want)
			}
			j, gerr := d.store.Get(ctx, c.id)
			if gerr != nil || j.Spec.Output != filepath.Join(dir, "out") || !lifecycle.NeedsAdmin(j.RSA) {
				t.Fatalf("the refused %s changed the job: %+v, %v", c.verb, j, gerr)
			}
		})
	}
}
