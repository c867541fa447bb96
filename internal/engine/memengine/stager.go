package memengine

import (
	"context"
	"fmt"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/stage"
)

// StageFunc carries out one stage of the job of r, as engine.Stager's
// Stage does.
type StageFunc func(ctx context.Context, r engine.Ramdisk, t stage.Task) error

// Stager is an Engine that runs the jobs' stages itself (engine.Stager),
// as an engine with nodes of its own does: the daemon hands it each stage
// instead of running it on this host as the job's user. Make one with
// WithStager.
type Stager struct {
	*Engine
	stage StageFunc
}

var (
	_ engine.Engine = (*Stager)(nil)
	_ engine.Stager = (*Stager)(nil)
)

// WithStager returns e as an engine.Stager whose stages run fn; nil: a
// stage that does nothing and succeeds. Each Stage is recorded in e's
// Calls (with its phase), fails with what FailNext(Stage) queued, and
// fails wrapping fs.ErrNotExist when r is not there; only then is fn
// called, without e's lock, so that it may block until ctx ends and call
// e's methods.
func WithStager(e *Engine, fn StageFunc) *Stager {
	return &Stager{Engine: e, stage: fn}
}

func (s *Stager) Stage(ctx context.Context, r engine.Ramdisk, t stage.Task) error {
	if err := s.begin(r, t); err != nil {
		return err
	}
	if s.stage == nil {
		return nil
	}
	return s.stage(ctx, r, t)
}

// begin records a Stage of r and returns why it fails before fn runs.
func (s *Stager) begin(r engine.Ramdisk, t stage.Task) error {
	e := s.Engine
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(Stage, r); err != nil {
		return err
	}
	e.calls[len(e.calls)-1].Phase = t.Phase
	if _, err := e.present(r); err != nil {
		return fmt.Errorf("%s: %w", t.Phase, err)
	}
	return nil
}
