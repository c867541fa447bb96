package adapter

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/asuser"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
	"github.com/rsa-hpc/rsa/internal/slurm"
)

// fakeJobs is the daemon's port over records a test writes: it keeps what
// is posted and logged, and applies nothing. What a test must not reach
// (a creation, an applied event) fails.
type fakeJobs struct {
	mu     sync.Mutex
	jobs   []*job.Job // in id order
	posted []posted
	logs   map[int64][]string
	// pool is what Pool reports; uncounted is what it was last asked.
	pool      []PoolNode
	uncounted func(*job.Job) bool
}

// posted is one event handed to Post.
type posted struct {
	id   int64
	ev   lifecycle.Event
	edit func(*job.Job)
}

var _ Jobs = (*fakeJobs)(nil)

// add stores j as a scheduler adapter's job, with the next id.
func (f *fakeJobs) add(j *job.Job) *job.Job {
	f.mu.Lock()
	defer f.mu.Unlock()
	j.ID = int64(len(f.jobs) + 1)
	f.jobs = append(f.jobs, j)
	return j
}

// takePosted returns what was posted since it was last called.
func (f *fakeJobs) takePosted() []posted {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.posted
	f.posted = nil
	return p
}

// log is j's log, one string.
func (f *fakeJobs) log(j *job.Job) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var s string
	for _, l := range f.logs[j.ID] {
		s += l + "\n"
	}
	return s
}

func (f *fakeJobs) Latest(_ context.Context, name string) (*job.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, j := range slices.Backward(f.jobs) {
		if j.Scheduler != "" && j.Spec.SchedulerID == name {
			return j, nil
		}
	}
	return nil, nil
}

func (f *fakeJobs) List(_ context.Context, all bool, limit int) ([]*job.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*job.Job
	for _, j := range f.jobs {
		if all || !j.Machine().Done() {
			out = append(out, j)
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

func (f *fakeJobs) Create(context.Context, uint32, uint32, job.Spec, string, func(*job.Job) error) (*job.Job, error) {
	return nil, errors.New("fakeJobs: no job is created here")
}

func (f *fakeJobs) Call(context.Context, int64, lifecycle.Event, func(*job.Job)) (*job.Job, error) {
	return nil, errors.New("fakeJobs: no event is applied here")
}

func (f *fakeJobs) Post(id int64, ev lifecycle.Event, edit func(*job.Job)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.posted = append(f.posted, posted{id, ev, edit})
}

// Changed is never closed: nothing commits here.
func (f *fakeJobs) Changed() <-chan struct{} { return nil }

func (f *fakeJobs) CapacityWait(int64) string { return "" }

func (f *fakeJobs) JobLog(j *job.Job, line string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.logs == nil {
		f.logs = map[int64][]string{}
	}
	f.logs[j.ID] = append(f.logs[j.ID], line)
}

func (f *fakeJobs) Validate(*job.Spec, *asuser.Identity) error { return nil }

func (f *fakeJobs) View(j *job.Job, _ api.Peer) *api.JobView { return api.NewJobView(*j) }

func (f *fakeJobs) Pool(uncounted func(*job.Job) bool) []PoolNode {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.uncounted = uncounted
	return f.pool
}

// testAdapter is an adapter over fake jobs for Slurm in slurm-poll mode,
// whose squeue prints squeue; it logs to log (nil: nowhere).
func testAdapter(t *testing.T, squeue string, log io.Writer) (*Adapter, *fakeJobs) {
	t.Helper()
	if log == nil {
		log = io.Discard
	}
	f := &fakeJobs{}
	cfg := &config.Config{Scheduler: config.SchedulerSlurmPoll, Tick: time.Second}
	a := &Adapter{cfg: cfg, jobs: f, slurm: fakeSqueue(t, squeue), log: slog.New(slog.NewTextHandler(log, nil))}
	return a, f
}

// fakeSqueue is a Slurm client whose squeue prints out.
func fakeSqueue(t *testing.T, out string) slurm.Client {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "out"), []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "squeue"), []byte("#!/bin/sh\nexec cat "+filepath.Join(dir, "out")+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return slurm.Client{Bin: dir}
}

// slurmJobOf is RSA's record of a Slurm job, as a scheduler adapter makes
// it, in the given states.
func slurmJobOf(f *fakeJobs, name string, state lifecycle.JobState, rsa lifecycle.RSAState) *job.Job {
	now := time.Now()
	j := &job.Job{Spec: job.Spec{SchedulerID: name, Input: "/home/u/in", Output: "/home/u/out", Capacity: 1 << 30, ComputeNodes: 1},
		UID: 1000, GID: 1000, User: "u", Scheduler: config.SchedulerSlurmPoll, State: state, RSA: rsa, CreatedAt: now, UpdatedAt: now}
	if state == lifecycle.Running {
		j.StartedAt = now
	}
	return f.add(j)
}
