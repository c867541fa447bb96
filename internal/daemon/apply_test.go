package daemon

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// TestApplyIgnoredEventChangesNothing: an event the job's state does not
// take changes nothing, the record edit it carries included (a stale
// allocation must not overwrite the job's, a second start must not take
// the job over), and answers a caller with a conflict; posted by the
// daemon itself, it is dropped without a word to anyone.
func TestApplyIgnoredEventChangesNothing(t *testing.T) {
	for _, c := range []struct {
		name  string
		state lifecycle.JobState
		rsa   lifecycle.RSAState
		ev    lifecycle.EventKind
	}{
		{"a stale completion", lifecycle.OnDeck, lifecycle.Ready, lifecycle.EvBooted},
		{"a second start", lifecycle.Running, lifecycle.InUseIn, lifecycle.EvStarted},
		// Fits beside what the job holds: it is the state that refuses it.
		{"an allocation after one", lifecycle.OnDeck, lifecycle.Ready, lifecycle.EvAssigned},
		{"a retry of what did not fail", lifecycle.Finished, lifecycle.StagingOut, lifecycle.EvRetry},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := newUnit(t)
			j := u.job(c.state, c.rsa, nil)
			before := u.get(j)
			u.run()
			edit := func(n *job.Job) {
				n.Alloc = []job.Part{{Node: "rsa02", Bytes: unitGiB}}
				n.Error, n.Owner.PID, n.Hosts = "edited", 4242, []string{"n9"}
			}
			ev := lifecycle.Event{Kind: c.ev, At: time.Now()}
			if !u.d.post(msg{id: j.ID, ev: ev, edit: edit}) {
				t.Fatal("the loop took no event")
			}
			// Handled after the post: the loop takes its inbox in order.
			_, err := u.d.call(context.Background(), msg{id: j.ID, ev: ev, edit: edit})
			if api.StatusOf(err) != http.StatusConflict {
				t.Errorf("a caller's %s in %s/%s: %v; want a conflict", c.ev, c.state, c.rsa, err)
			}
			got := u.get(j)
			if got.Version != before.Version || got.State != c.state || got.RSA != c.rsa || got.Error != "" ||
				!slices.Equal(got.Alloc, before.Alloc) || got.Owner.PID != 0 || len(got.Hosts) != 0 {
				t.Errorf("after ignored events the job is %+v; want it as it was, %+v", got, before)
			}
			if log := u.events(j); log != "" {
				t.Errorf("ignored events logged:\n%s", log)
			}
			if calls := u.callsOf(j.ID); len(calls) != 0 {
				t.Errorf("ignored events started work: %+v", calls)
			}
		})
	}
}

// TestApplyDropsAnAssignmentThatNoLongerFits: an allocation is committed
// only if it still fits beside what the committed jobs hold when its
// EvAssigned comes; one that no longer does (another job got the RAM
// since the decision) is dropped, the job still INITIAL to be decided
// again. Either way the reservation ends.
func TestApplyDropsAnAssignmentThatNoLongerFits(t *testing.T) {
	for _, c := range []struct {
		name  string
		taken bool // another job holds the RAM since the decision
	}{
		{"still fits", false},
		{"taken meanwhile", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := newUnit(t) // the test is the loop: it calls apply itself
			j := u.job(lifecycle.OnDeck, lifecycle.Initial, nil)
			parts := []job.Part{{Node: "rsa01", Bytes: unitNodeBytes}}
			u.d.book.Reserve(j, parts)
			if c.taken {
				u.job(lifecycle.Running, lifecycle.InUseIn, func(h *job.Job) { h.Alloc = slices.Clone(parts) })
			}
			before := u.get(j)
			dir := engine.DirFor(u.d.cfg.RamdiskRoot, j.ID)
			m := msg{id: j.ID, ev: lifecycle.Event{Kind: lifecycle.EvAssigned, At: time.Now()},
				edit: func(n *job.Job) { n.Alloc, n.Ramdisk = parts, dir }}
			if _, err := u.d.apply(context.Background(), m); err != nil {
				t.Fatal(err)
			}
			if slices.Contains(u.d.book.Reserved(), j.ID) {
				t.Error("the reservation outlived its EvAssigned")
			}
			got := u.get(j)
			switch {
			case c.taken && (got.Version != before.Version || got.RSA != lifecycle.Initial || len(got.Alloc) != 0):
				t.Errorf("an allocation that no longer fits: the job is %s with %+v (version %d, was %d); want it INITIAL as it was",
					got.RSA, got.Alloc, got.Version, before.Version)
			case !c.taken && (got.RSA != lifecycle.Booting || !slices.Equal(got.Alloc, parts) || got.Ramdisk != dir):
				t.Errorf("an allocation that fits: the job is %s with %+v at %q; want it BOOTING with %+v at %s", got.RSA, got.Alloc, got.Ramdisk, parts, dir)
			}
		})
	}
}
