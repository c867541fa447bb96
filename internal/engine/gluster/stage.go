package gluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/rsa-hpc/rsa/internal/agent"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/stage"
)

// Stage runs t through the agents of r's RSA nodes: the data moves between
// the file servers and the RSA nodes, not through the control host. Each
// node mounts the volume for the stage and stages into its own mount, so
// t.Ramdisk and t.Private are not used.
//
// The built-in copy of a stage-in is spread over every node of r whose
// agent answered the last heartbeat: each copies a share of the input
// through its own Gluster client (stage.Part), all at once, and when all
// have ended the first finishes the copy (multiply linked files, the
// directories' attributes, the listing). A share that fails stops the
// others and fails the stage; a share whose agent stops answering (its
// node rebooted, say) is copied again, once the others have ended, by a
// node whose share succeeded: whether the RAMDISK lost a part with that
// node is the daemon's check to find, as for a stage on one node. Any
// other stage runs on the first of those nodes.
func (e *Engine) Stage(ctx context.Context, r engine.Ramdisk, t stage.Task) error {
	if len(r.Parts) == 0 {
		return fmt.Errorf("job %d holds no RSA node to stage on", r.Job)
	}
	var up []string
	for _, p := range r.Parts {
		if e.Nodes.Up(p.Node) && !slices.Contains(up, p.Node) {
			up = append(up, p.Node)
		}
	}
	if len(up) == 0 {
		up = []string{r.Parts[0].Node} // it may answer yet; its error says why not
	}
	if t.Phase != stage.StageIn || t.Program != "" || t.Image || len(up) < 2 {
		return e.stageOn(ctx, up[0], r, t)
	}
	return e.stageSpread(ctx, up, r, t)
}

// stageSpread runs the shares of t's copy on nodes at once, then the
// finish on the first.
func (e *Engine) stageSpread(ctx context.Context, nodes []string, r engine.Ramdisk, t stage.Task) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sum := &progressSum{report: t.Progress, parts: make([]stage.Progress, len(nodes))}
	log := &lockedWriter{w: t.Log}
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for k, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			share := t
			share.Log = log
			share.Part = stage.Part{Index: k, Of: len(nodes)}
			share.Progress = func(p stage.Progress) { sum.set(k, p) }
			errs[k] = e.stageOn(ctx, n, r, share)
			if failedThere(errs[k]) {
				cancel() // the others' work is of no use now
			}
		}()
	}
	wg.Wait()
	// The first share to fail says why; the others were stopped.
	for k, err := range errs {
		if failedThere(err) {
			return fmt.Errorf("share %d of %d, on %s: %w", k+1, len(nodes), nodes[k], err)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Shares whose agent went silent, again on a node that did its own.
	done := slices.IndexFunc(errs, func(err error) bool { return err == nil })
	for k, err := range errs {
		if err == nil {
			continue
		}
		if done < 0 {
			return fmt.Errorf("share %d of %d, on %s: %w", k+1, len(nodes), nodes[k], err)
		}
		fmt.Fprintf(log, "%s %s: the agent on %s stopped answering (%v): its share again on %s\n", time.Now().Format(time.RFC3339), t.Phase, nodes[k], err, nodes[done])
		share := t
		share.Log = log
		share.Part = stage.Part{Index: k, Of: len(nodes)}
		share.Progress = func(p stage.Progress) { sum.set(k, p) }
		if err := e.stageOn(ctx, nodes[done], r, share); err != nil {
			return fmt.Errorf("share %d of %d, again on %s: %w", k+1, len(nodes), nodes[done], err)
		}
	}
	fin := t
	fin.Log = log
	fin.Part = stage.Part{Finish: true}
	fin.Progress = nil
	return e.stageOn(ctx, nodes[max(done, 0)], r, fin)
}

// failedThere: err is a share's own failure on its node (not its agent
// gone silent, not the stage stopped).
func failedThere(err error) bool {
	var se *agent.StageError
	return errors.As(err, &se)
}

// stageOn runs t on node on's agent.
func (e *Engine) stageOn(ctx context.Context, on string, r engine.Ramdisk, t stage.Task) error {
	servers, err := e.servers(r)
	if err != nil {
		return err
	}
	cl, err := e.Nodes.Client(on)
	if err != nil {
		return err
	}
	var share string
	switch {
	case t.Part.Finish:
		share = " (finishing the shares)"
	case t.Part.Of > 1:
		share = fmt.Sprintf(" (share %d of %d)", t.Part.Index+1, t.Part.Of)
	}
	fmt.Fprintf(t.Log, "%s %s on %s%s\n", time.Now().Format(time.RFC3339), t.Phase, on, share)
	limits := e.StageLimits
	req := agent.StageRequest{Phase: t.Phase, UID: t.User.UID, GID: t.User.GID, Groups: t.User.Groups, User: t.User.Name, Home: t.User.Home,
		Program: t.Program, Data: t.Data, Servers: servers, BWLimit: e.BWLimit,
		Degraded: t.Degraded, WholeSettle: e.WholeSettle, Limits: &limits, Image: t.Image, Part: t.Part}
	progress := t.Progress
	if progress == nil {
		progress = func(stage.Progress) {}
	}
	return cl.Stage(ctx, e.volume(r), req, t.Log, progress)
}

// progressSum reports the sum of the shares' progress: what each copied,
// and the largest total any of them measured (each measures the whole
// input).
type progressSum struct {
	mu     sync.Mutex
	report func(stage.Progress)
	parts  []stage.Progress
}

func (s *progressSum) set(k int, p stage.Progress) {
	if s.report == nil {
		return
	}
	s.mu.Lock()
	s.parts[k] = p
	var all stage.Progress
	for _, q := range s.parts {
		all.Files += q.Files
		all.Bytes += q.Bytes
		all.TotalFiles = max(all.TotalFiles, q.TotalFiles)
		all.TotalBytes = max(all.TotalBytes, q.TotalBytes)
	}
	s.mu.Unlock()
	s.report(all)
}

// lockedWriter serialises the shares' writes to one log.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
