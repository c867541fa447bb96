package gluster

import (
	"context"
	"fmt"
	"time"

	"github.com/rsa-hpc/rsa/internal/agent"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/stage"
)

// Stage runs t on one of r's RSA nodes, the first whose agent answered
// the last heartbeat, through that node's agent: the data moves between
// the file servers and the RSA nodes, not through the control host. The
// node mounts the volume for the stage and stages into its own mount, so
// t.Ramdisk and t.Private are not used.
func (e *Engine) Stage(ctx context.Context, r engine.Ramdisk, t stage.Task) error {
	if len(r.Parts) == 0 {
		return fmt.Errorf("job %d holds no RSA node to stage on", r.Job)
	}
	on := r.Parts[0].Node
	for _, p := range r.Parts {
		if e.Nodes.Up(p.Node) {
			on = p.Node
			break
		}
	}
	servers, err := e.servers(r)
	if err != nil {
		return err
	}
	cl, err := e.Nodes.Client(on)
	if err != nil {
		return err
	}
	fmt.Fprintf(t.Log, "%s %s on %s\n", time.Now().Format(time.RFC3339), t.Phase, on)
	limits := e.StageLimits
	req := agent.StageRequest{Phase: t.Phase, UID: t.User.UID, GID: t.User.GID, Groups: t.User.Groups, User: t.User.Name, Home: t.User.Home,
		Program: t.Program, Data: t.Data, Servers: servers, BWLimit: e.BWLimit,
		Degraded: t.Degraded, WholeSettle: e.WholeSettle, Limits: &limits, Image: t.Image}
	return cl.Stage(ctx, e.volume(r), req, t.Log, t.Progress)
}
