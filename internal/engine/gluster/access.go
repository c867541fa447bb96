package gluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rsa-hpc/rsa/internal/access"
	"github.com/rsa-hpc/rsa/internal/agent"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/mount"
)

// Clients hands out the agent client of a node (package cluster below
// this one).
type Clients interface {
	Client(node string) (*agent.Client, error)
	// Up reports whether node's agent answered the last heartbeat: one
	// that did not is asked once, without patience.
	Up(node string) bool
}

// Agents is access.Access for compute nodes that are hosts of their own: each
// node's agent mounts the job's volume there (a Gluster client, behind the
// same gate as on the control host, so RSA_RAMDISK is valid on the node)
// and binds it over the job's directory after checking that directory on
// the node itself, with the site's policy the daemon sends along.
//
// An agent that does not answer (restarting, a connection lost) is asked
// again for up to Patience; its refusals are not repeated.
type Agents struct {
	Clients Clients
	// Servers are the addresses the job's compute nodes mount its volume
	// from (the gluster engine's RSA nodes; the engine's Open sets it).
	Servers  func(rd engine.Ramdisk) ([]string, error)
	Policy   mount.Policy
	Patience time.Duration // default one minute
	// ImageLoop asks the compute nodes for loop devices under input
	// images (image_mount = "loop").
	ImageLoop bool
}

var (
	_ access.Access        = Agents{}
	_ access.ImageBinder   = Agents{}
	_ access.PrivateBinder = Agents{}
)

// silentTry bounds the one try at an agent the heartbeat found silent.
const silentTry = 10 * time.Second

// agentRole names the directory's role as the agent does.
func agentRole(role access.Role) string {
	if role == access.OutputRole {
		return agent.RoleOutput
	}
	return agent.RoleInput
}

// patiently runs op until it succeeds, fails for good, or Patience ends.
func (a Agents) patiently(ctx context.Context, op func() error) error {
	patience := a.Patience
	if patience <= 0 {
		patience = time.Minute
	}
	deadline := time.Now().Add(patience)
	pause := 200 * time.Millisecond
	for {
		err := op()
		if err == nil || !agent.Transient(err) || errors.Is(err, agent.ErrBusy) || time.Now().Add(pause).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause = min(2*pause, 5*time.Second)
	}
}

func (a Agents) Bind(ctx context.Context, nodes []string, role access.Role, rd engine.Ramdisk, target string) error {
	return a.bind(ctx, nodes, role, rd, target, false)
}

// BindImage has each compute node mount the volume's input image, checked,
// read-only, and bind it over target (agent.MountRequest.Image). How each
// node's kernel reads it is in that node's agent log.
func (a Agents) BindImage(ctx context.Context, nodes []string, rd engine.Ramdisk, target string, opt mount.ImageOptions) (mount.ImageBacking, error) {
	a.ImageLoop = a.ImageLoop || opt.Loop
	return "", a.bind(ctx, nodes, access.InputRole, rd, target, true)
}

// BindPrivate has each compute node's agent make and mount its own file
// system in the volume and bind it over target (agent.MountRequest.Private).
func (a Agents) BindPrivate(ctx context.Context, nodes []string, rd engine.Ramdisk, target string, size int64, attrs access.RootAttrs) error {
	volume, req, err := a.request(nodes, access.OutputRole, rd, target)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		req.Private = &agent.PrivateSpec{Node: n, Size: size, GID: attrs.GID, Mode: attrs.Mode}
		if err := a.mountOn(ctx, n, volume, req); err != nil {
			// Output: the nodes mounted already stay so (access.Access).
			return fmt.Errorf("mounting the private output of job %d on %s: %w", rd.Job, n, err)
		}
	}
	return nil
}

// mountOn asks node n's agent, patiently, to mount volume as req says.
func (a Agents) mountOn(ctx context.Context, n, volume string, req agent.MountRequest) error {
	return a.patiently(ctx, func() error {
		cl, err := a.Clients.Client(n)
		if err != nil {
			return err
		}
		_, err = cl.Mount(ctx, volume, req)
		return err
	})
}

// request is the volume of rd and the request that mounts it over target
// on nodes, in role.
func (a Agents) request(nodes []string, role access.Role, rd engine.Ramdisk, target string) (string, agent.MountRequest, error) {
	if len(nodes) == 0 {
		return "", agent.MountRequest{}, errors.New("the job runs on no compute node yet")
	}
	servers, err := a.Servers(rd)
	if err != nil {
		return "", agent.MountRequest{}, err
	}
	return agent.BuildName(rd.Job, rd.Build), agent.MountRequest{Target: target, UID: rd.UID, Role: agentRole(role), Servers: servers,
		AllowedPaths: a.Policy.AllowedPaths, RefuseFSTypes: a.Policy.RefuseFSTypes}, nil
}

func (a Agents) bind(ctx context.Context, nodes []string, role access.Role, rd engine.Ramdisk, target string, image bool) error {
	volume, req, err := a.request(nodes, role, rd, target)
	if err != nil {
		return err
	}
	req.Image, req.ImageLoop = image, image && a.ImageLoop
	for i, n := range nodes {
		if err := a.mountOn(ctx, n, volume, req); err != nil {
			if role != access.OutputRole {
				// All or nothing: take back what the earlier nodes mounted.
				_ = a.Unbind(context.WithoutCancel(ctx), nodes[:i+1], rd, true)
			}
			if errors.Is(err, agent.ErrInvalid) {
				// The node's checks of the job's directory: their message
				// names the problem and the fix.
				return fmt.Errorf("on %s: %w", n, err)
			}
			return fmt.Errorf("mounting the RAMDISK of job %d on %s: %w", rd.Job, n, err)
		}
	}
	return nil
}

func (a Agents) Unbind(ctx context.Context, nodes []string, rd engine.Ramdisk, detach bool) error {
	volume := agent.BuildName(rd.Job, rd.Build)
	var errs []error
	var unreachable []string
	var lastUnreachable error
	for _, n := range nodes {
		release := func(ctx context.Context) error {
			cl, err := a.Clients.Client(n)
			if err != nil {
				return err
			}
			return cl.Release(ctx, volume, detach)
		}
		var err error
		silent := false
		if a.Clients.Up(n) {
			err = a.patiently(ctx, func() error { return release(ctx) })
		} else {
			// Silent: one try, bounded, as a cut link answers nothing.
			cctx, cancel := context.WithTimeout(ctx, silentTry)
			err = release(cctx)
			cancel()
			silent = err != nil && cctx.Err() != nil && ctx.Err() == nil
		}
		switch {
		case err == nil:
		case errors.Is(err, agent.ErrBusy):
			errs = append(errs, fmt.Errorf("on %s: %w (%w)", n, access.ErrBusy, err))
		case silent || agent.Transient(err):
			unreachable, lastUnreachable = append(unreachable, n), err
		default:
			errs = append(errs, fmt.Errorf("unmounting the RAMDISK of job %d on %s: %w", rd.Job, n, err))
		}
	}
	if len(unreachable) > 0 {
		un := &access.UnreachableError{Nodes: unreachable, Err: lastUnreachable}
		if len(errs) == 0 {
			return un
		}
		errs = append(errs, un)
	}
	return errors.Join(errs...)
}
