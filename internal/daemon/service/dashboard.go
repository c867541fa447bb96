package service

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/dashboard"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/store"
)

// Dashboard is the source of the read-only dashboard (dashboard.Handler):
// the service as a viewer who owns no job and is not root sees it, so
// private_data hides from the page exactly what it hides from any other
// user.
func (s *Service) Dashboard() dashboard.Source { return dashSource{s} }

type dashSource struct{ s *Service }

// anyone is the dashboard's viewer: no job's owner, not root.
func anyone() api.Peer { return api.Peer{UID: math.MaxUint32, GID: math.MaxUint32, Remote: true} }

func (s dashSource) Jobs(ctx context.Context, recent int) ([]dashboard.Job, error) {
	// Every active job, however old (one waiting for an administrator may
	// be), and the newest ended ones.
	active, err := s.s.store.List(ctx, false, 0)
	if err != nil {
		return nil, err
	}
	all, err := s.s.store.List(ctx, true, recent+len(active))
	if err != nil {
		return nil, err
	}
	shown := active
	ended := 0
	for _, j := range slices.Backward(all) { // newest first
		if j.Machine().Done() && ended < recent {
			shown = append(shown, j)
			ended++
		}
	}
	slices.SortFunc(shown, func(a, b *job.Job) int { return cmp.Compare(b.ID, a.ID) })
	var out []dashboard.Job
	for _, j := range shown {
		done := j.Machine().Done()
		v := s.s.View(j, anyone())
		dj := dashboard.Job{ID: v.ID, SlurmID: v.Spec.SchedulerID, User: v.User, JobState: string(v.State), RSAState: string(v.RSA),
			Capacity: v.Capacity(), Used: v.Used, Waiting: v.Waiting, Created: v.CreatedAt, Started: v.StartedAt,
			Finished: v.FinishedAt, Done: done, Modes: modes(v.Spec)}
		if p := v.Progress; p != nil && !done {
			dj.Phase, dj.Files, dj.Bytes, dj.TotalFiles, dj.TotalBytes = p.Phase, p.Files, p.Bytes, p.TotalFiles, p.TotalBytes
			dj.Rate = p.Rate()
			if dj.Rate > 0 && p.TotalBytes > p.Bytes {
				dj.ETA = time.Duration(float64(p.TotalBytes-p.Bytes) / dj.Rate * float64(time.Second))
			}
		}
		out = append(out, dj)
	}
	return out, nil
}

func (s dashSource) Nodes(ctx context.Context) ([]dashboard.Node, error) {
	views, used, err := s.s.ramUse(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]dashboard.Node, 0, len(views))
	for _, v := range views {
		out = append(out, dashboard.Node{Name: v.Name, Capacity: v.Capacity, Allocated: v.Used, Used: used[v.Name], State: v.State()})
	}
	return out, nil
}

// Events gives the job's state changes without their messages, which may
// hold paths: states and times are what anyone sees in rsa status.
func (s dashSource) Events(ctx context.Context, id int64) ([]dashboard.Event, error) {
	evs, err := s.s.store.Events(ctx, id)
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 {
		if _, err := s.s.store.Get(ctx, id); errors.Is(err, store.ErrNotFound) {
			return nil, dashboard.ErrNotFound
		}
	}
	out := make([]dashboard.Event, 0, len(evs))
	for _, e := range evs {
		out = append(out, dashboard.Event{At: e.At, JobState: string(e.JobState), RSAState: string(e.RSAState)})
	}
	return out, nil
}

// modes names the job's access modes other than the shared tree of files.
func modes(s job.Spec) string {
	var m []string
	if s.InputMode == job.InputImage {
		m = append(m, "input image")
	}
	if s.OutputMode == job.OutputPrivate {
		m = append(m, "private output")
	}
	return strings.Join(m, ", ")
}
