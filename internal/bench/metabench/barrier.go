package metabench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// task is one process's part of a phase. prepare runs before the barrier
// and is not timed (Stat-B walks its directory there); work is timed and
// returns how many operations it did; finish runs after this process's
// clock has stopped. prepare and finish may be nil.
type task struct {
	rank    int
	prepare func() error
	work    func(ctx context.Context) (ops int, err error)
	finish  func()
}

// runTimed runs the tasks at once, one goroutine a process, and times them
// as METABENCH does: every process prepares, all meet at a barrier, and
// the phase lasts from the barrier's release to the last process's end.
// When any prepare fails, no process does its timed work.
func runTimed(ctx context.Context, tasks []task) (Result, error) {
	var (
		arrived, done sync.WaitGroup
		release       = make(chan struct{})
		start         time.Time // written before release is closed, read after
		abort         bool      // likewise
		ranks         = make([]RankResult, len(tasks))
		errs          = make([]error, len(tasks))
	)
	arrived.Add(len(tasks))
	for i, t := range tasks {
		done.Go(func() {
			if t.finish != nil {
				defer t.finish()
			}
			if t.prepare != nil {
				errs[i] = t.prepare()
			}
			arrived.Done()
			<-release
			if abort {
				return
			}
			ops, err := t.work(ctx)
			ranks[i] = RankResult{Rank: t.rank, Ops: ops, Elapsed: time.Since(start)}
			errs[i] = err
		})
	}
	arrived.Wait()
	abort = errors.Join(errs...) != nil
	start = time.Now()
	close(release)
	done.Wait()

	var res Result
	for i, r := range ranks {
		if errs[i] != nil {
			errs[i] = fmt.Errorf("process %d: %w", tasks[i].rank, errs[i])
		}
		res.Ops += r.Ops
		res.Elapsed = max(res.Elapsed, r.Elapsed)
	}
	res.Ranks = ranks
	return res, errors.Join(errs...)
}
