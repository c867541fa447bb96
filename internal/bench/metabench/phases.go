package metabench

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
)

// phaseDir is the phase's directory in the run's: "create-a", "untar".
func phaseDir(p Phase) string { return strings.ToLower(string(p)) }

// phase sets p up as process 0 and runs it.
func (r *runner) phase(ctx context.Context, p Phase) (Result, error) {
	rel := phaseDir(p)
	if err := os.Mkdir(r.setupPath(rel), 0o755); err != nil {
		return Result{}, fmt.Errorf("set up: %w", err)
	}
	switch p {
	case CreateA:
		return r.createA(ctx, rel)
	case CreateB:
		return r.separate(ctx, rel, false, create)
	case CreateC:
		return r.shared(ctx, rel, false, create)
	case StatA:
		return r.separate(ctx, rel, true, stat)
	case StatB:
		return r.walked(ctx, rel, stat)
	case UtimeA:
		return r.separate(ctx, rel, true, utime)
	case UtimeB:
		return r.walked(ctx, rel, utime)
	case AppendA:
		return r.separate(ctx, rel, true, appender(r.appendData()))
	case AppendB:
		return r.walked(ctx, rel, appender(r.appendData()))
	case Untar:
		return r.untar(ctx, rel)
	case DeleteA:
		return r.separate(ctx, rel, true, unlink)
	case DeleteB:
		// By name, not by a readdir walk: a walk's place in a directory
		// that others are emptying is not stable.
		return r.shared(ctx, rel, true, unlink)
	}
	return Result{}, fmt.Errorf("unknown phase %q", p)
}

// createA: the last process alone creates every file in one directory
// that process 0 made, timing each batch of -f files.
func (r *runner) createA(ctx context.Context, rel string) (Result, error) {
	rank := r.c.NProc - 1
	var batches []Batch
	in := &entered{path: r.path(rank, rel)}
	res, err := runTimed(ctx, []task{{
		rank:    rank,
		prepare: in.enter,
		work: func(ctx context.Context) (int, error) {
			var err error
			batches, err = createBatches(ctx, in.d, r.c.NFile, r.c.Freq)
			n := 0
			for _, b := range batches {
				n += b.Files
			}
			return n, err
		},
		finish: in.leave,
	}})
	res.Batches = batches
	return res, err
}

// separate: process 0 makes a directory for each participant, with its
// share of the files when populate is set; each participant then applies
// op to its share in its own directory.
func (r *runner) separate(ctx context.Context, rel string, populate bool, op fileOp) (Result, error) {
	tasks := make([]task, r.n)
	for k := range tasks {
		sub := participantDir(k)
		start, count := share(r.c.NFile, r.n, k)
		if err := r.makeDir(ctx, populate, start, count, rel, sub); err != nil {
			return Result{}, err
		}
		tasks[k] = r.byName(r.c.rank(k), r.path(r.c.rank(k), rel, sub), start, count, op)
	}
	return runTimed(ctx, tasks)
}

// shared: process 0 makes one directory, holding all the files when
// populate is set; each participant applies op to its share of them.
func (r *runner) shared(ctx context.Context, rel string, populate bool, op fileOp) (Result, error) {
	if populate {
		if err := r.populate(ctx, r.setupPath(rel), 0, r.c.NFile); err != nil {
			return Result{}, err
		}
	}
	tasks := make([]task, r.n)
	for k := range tasks {
		start, count := share(r.c.NFile, r.n, k)
		tasks[k] = r.byName(r.c.rank(k), r.path(r.c.rank(k), rel), start, count, op)
	}
	return runTimed(ctx, tasks)
}

// walked is Stat-B's pattern, which Utime-B and Append-B repeat: process
// 0 fills one directory; before the barrier each participant opens it and
// reads past the entries of the participants before it; after the barrier
// it applies op to its share of the entries that follow, in readdir order.
func (r *runner) walked(ctx context.Context, rel string, op fileOp) (Result, error) {
	if err := r.populate(ctx, r.setupPath(rel), 0, r.c.NFile); err != nil {
		return Result{}, err
	}
	tasks := make([]task, r.n)
	for k := range tasks {
		rank := r.c.rank(k)
		start, count := share(r.c.NFile, r.n, k)
		var w *dirWalker
		tasks[k] = task{
			rank:    rank,
			prepare: func() (err error) { w, err = openAt(r.path(rank, rel), start); return err },
			work:    func(ctx context.Context) (int, error) { return w.each(ctx, count, op) },
			finish: func() {
				if w != nil {
					w.close()
				}
			},
		}
	}
	return runTimed(ctx, tasks)
}

// untar: process 0 makes a directory for each participant; each unpacks
// its client's local tarball into its own. Every participant unpacks the
// whole archive, so the work grows with N.
func (r *runner) untar(ctx context.Context, rel string) (Result, error) {
	tasks := make([]task, r.n)
	for k := range tasks {
		sub := participantDir(k)
		if err := r.makeDir(ctx, false, 0, 0, rel, sub); err != nil {
			return Result{}, err
		}
		rank := r.c.rank(k)
		dest := r.path(rank, rel, sub)
		var tarball *os.File
		tasks[k] = task{
			rank: rank,
			prepare: func() (err error) {
				tarball, err = os.Open(r.tarballs[rank%len(r.tarballs)])
				return err
			},
			work: func(ctx context.Context) (int, error) { return Extract(ctx, tarball, dest) },
			finish: func() {
				if tarball != nil {
					tarball.Close()
				}
			},
		}
	}
	return runTimed(ctx, tasks)
}

// byName is a task that enters path before the barrier and applies op to
// files start to start+count-1 after it.
func (r *runner) byName(rank int, path string, start, count int, op fileOp) task {
	in := &entered{path: path}
	return task{
		rank:    rank,
		prepare: in.enter,
		work:    func(ctx context.Context) (int, error) { return eachFile(ctx, in.d, start, count, op) },
		finish:  in.leave,
	}
}

// entered is a directory a process enters before the barrier and leaves
// after its clock stops.
type entered struct {
	path string
	d    dir
	open bool
}

func (e *entered) enter() (err error) {
	e.d, err = openDir(e.path)
	e.open = err == nil
	return err
}

func (e *entered) leave() {
	if e.open {
		e.d.close()
	}
}

// makeDir makes rel as process 0, holding files start to start+count-1
// when populate is set.
func (r *runner) makeDir(ctx context.Context, populate bool, start, count int, rel ...string) error {
	path := r.setupPath(rel...)
	if err := os.Mkdir(path, 0o755); err != nil {
		return fmt.Errorf("set up: %w", err)
	}
	if !populate {
		return nil
	}
	return r.populate(ctx, path, start, count)
}

// populate creates files start to start+count-1, zero-length, in path as
// process 0.
func (r *runner) populate(ctx context.Context, path string, start, count int) error {
	d, err := openDir(path)
	if err != nil {
		return fmt.Errorf("set up: %w", err)
	}
	defer d.close()
	if _, err := eachFile(ctx, d, start, count, create); err != nil {
		return fmt.Errorf("set up: %w", err)
	}
	return nil
}

// appendData is what each append writes: -b bytes, pseudo-random so that
// no layer below can compress them away.
func (r *runner) appendData() []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], uint64(r.c.NByte))
	data := make([]byte, r.c.NByte)
	rand.NewChaCha8(key).Read(data)
	return data
}
