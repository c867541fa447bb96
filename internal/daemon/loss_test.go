package daemon

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// TestLossReportsApplyToTheirBuild: a loss report changes a job only when
// it is about the job's current RAMDISK build and a node the job holds; a
// stale one (a probe or heartbeat that raced a rebuild) changes nothing,
// and a current one about a RAMDISK whose replicas serve every file keeps a
// READY job READY, with the loss recorded.
func TestLossReportsApplyToTheirBuild(t *testing.T) {
	for _, c := range []struct {
		name     string
		ev       lifecycle.Event
		wantLost []string
	}{
		{"an earlier build's loss", lifecycle.Event{Build: 2, Nodes: []string{"rsa01"}, Whole: true}, []string{"rsa00"}},
		{"a later build's loss", lifecycle.Event{Build: 4, Nodes: []string{"rsa01"}, Whole: true}, []string{"rsa00"}},
		{"a node the job does not hold", lifecycle.Event{Build: 3, Nodes: []string{"rsa03"}, Whole: true}, []string{"rsa00"}},
		{"the current build, a held node", lifecycle.Event{Build: 3, Nodes: []string{"rsa01"}, Whole: true}, []string{"rsa00", "rsa01"}},
		{"held and foreign nodes: only the held one counts", lifecycle.Event{Build: 3, Nodes: []string{"rsa03", "rsa02"}, Whole: true}, []string{"rsa00", "rsa02"}},
		{"a loss already recorded", lifecycle.Event{Build: 3, Nodes: []string{"rsa00"}, Whole: true}, []string{"rsa00"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := passDaemon(t, 3, 1<<30)
			ctx := context.Background()
			j := passJob(0, 1<<30, time.Now())
			j.RSA, j.Build = lifecycle.Ready, 3
			j.Alloc = []job.Part{{Node: "rsa00", Bytes: 1 << 29}, {Node: "rsa01", Bytes: 1 << 29}, {Node: "rsa02", Bytes: 1 << 29}}
			j.Lost = []string{"rsa00"}
			if err := d.store.Create(ctx, j, nil); err != nil {
				t.Fatal(err)
			}
			ev := c.ev
			ev.Kind, ev.At = lifecycle.EvNodeLost, time.Now()
			if _, err := d.apply(ctx, msg{id: j.ID, ev: ev}); err != nil {
				t.Fatal(err)
			}
			got, err := d.store.Get(ctx, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != lifecycle.OnDeck || got.RSA != lifecycle.Ready {
				t.Errorf("after the report the job is %s/%s, want ONDECK/READY", got.State, got.RSA)
			}
			if !slices.Equal(got.Lost, c.wantLost) {
				t.Errorf("lost nodes %q, want %q", got.Lost, c.wantLost)
			}
		})
	}
}
