package daemon

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// TestPassMemoDecidesAsEachJobAlone: a scheduling pass remembers the
// decisions to wait of jobs that hold nothing (planMemo). Over a mix of
// sizes on partly full nodes, the pass must reserve for exactly the jobs
// that deciding each one alone, in order, with nothing remembered,
// reserves for.
func TestPassMemoDecidesAsEachJobAlone(t *testing.T) {
	const gib = 1 << 30
	sizes := []int64{3, 1, 3, 2, 1, 1, 3, 1, 2, 1, 1, 1} // GiB; each node has 2 GiB free
	build := func() *Daemon {
		d := passDaemon(t, 3, 4*gib)
		now := time.Now()
		for i := range 3 { // 2 GiB held on each node
			j := passJob(i, 2*gib, now)
			j.State, j.RSA, j.StartedAt = lifecycle.Running, lifecycle.InUseIn, now
			j.Alloc = []job.Part{{Node: d.cfg.Nodes[i].Name, Bytes: 2 * gib}}
			if err := d.store.Create(context.Background(), j, nil); err != nil {
				t.Fatal(err)
			}
		}
		for i, s := range sizes {
			if err := d.store.Create(context.Background(), passJob(3+i, s*gib, now), nil); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}

	pass := build()
	pass.tick(context.Background(), time.Now())
	got := pass.book.Reserved()

	alone := build()
	var initial []job.Job
	alone.store.EachActive(func(j *job.Job) {
		if j.RSA == lifecycle.Initial {
			initial = append(initial, *j)
		}
	})
	slices.SortFunc(initial, func(a, b job.Job) int { return int(a.ID - b.ID) })
	var want []int64
	for _, j := range initial {
		if m, ok := alone.assign(&j); ok && m.ev.Kind == lifecycle.EvAssigned {
			want = append(want, j.ID)
		}
	}
	slices.Sort(want)
	if len(want) == 0 || len(want) == len(sizes) {
		t.Fatalf("the case reserves for %d of %d jobs: it tests nothing", len(want), len(sizes))
	}
	if !slices.Equal(got, want) {
		t.Errorf("the pass reserved for jobs %v, deciding each alone for %v", got, want)
	}
	if n := pass.board.Waiting(); n != len(sizes)-len(want) {
		t.Errorf("%d jobs wait after the pass, want %d (reserved: %v)", n, len(sizes)-len(want), got)
	}
}
