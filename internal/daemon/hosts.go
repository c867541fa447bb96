package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/rsa-hpc/rsa/internal/agent"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/stage"

	"github.com/rsa-hpc/rsa/internal/cluster"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/engine/gluster"
	"github.com/rsa-hpc/rsa/internal/mount"
	"github.com/rsa-hpc/rsa/internal/node"
)

// hosts is how the daemon reaches RSA nodes and compute nodes: the
// engine that builds RAMDISKs, the access that shows them on compute
// nodes, and for engine gluster the agents behind both.
type hosts struct {
	engine  engine.Engine
	access  node.Access
	cluster *cluster.Cluster
	admit   func(ctx context.Context, rd engine.Ramdisk, hosts []string) error
	// servers are the addresses a job's volume is mounted from.
	servers func(rd engine.Ramdisk) ([]string, error)
}

func newHosts(cfg *config.Config, o Options, policy mount.Policy) (hosts, error) {
	if cfg.Engine == config.EngineGluster {
		cl, err := cluster.New(cfg, o.Log)
		if err != nil {
			return hosts{}, err
		}
		g := &gluster.Engine{Root: cfg.RamdiskRoot, Nodes: cl, Control: cfg.Cluster.Address,
			Replica: cfg.Cluster.Replica, Shard: cfg.Cluster.Shard, PingTimeout: cfg.Cluster.PingTimeout,
			CheckTimeout: cfg.Cluster.CheckTimeout, CheckSettle: cfg.Cluster.CheckSettle, Log: o.Log}
		if err := g.Prepare(); err != nil {
			return hosts{}, err
		}
		return hosts{
			// An agent restarting, or glusterd busy with another job's
			// transaction, passes within half a minute.
			engine:  engine.WithRetry(g, 6, time.Second),
			access:  node.Agents{Clients: cl, Servers: g.Servers, Policy: policy},
			cluster: cl,
			admit:   g.Admit,
			servers: g.Servers,
		}, nil
	}
	local, err := engine.NewLocal(cfg.RamdiskRoot)
	if err != nil {
		return hosts{}, err
	}
	var access node.Access = node.Local{Policy: policy}
	if cfg.Slurm.NodeNamespaces != "" && cfg.Scheduler != config.SchedulerNone {
		access = node.Namespaces{Dir: cfg.Slurm.NodeNamespaces, Self: o.Self, Policy: policy}
	}
	return hosts{engine: engine.WithRetry(local, 3, 200*time.Millisecond), access: access}, nil
}

// stageRemote runs one stage of j on one of its RSA nodes, through that
// node's agent (the gluster engine): the data moves between the file
// servers and the RSA nodes, not through the control host.
func (d *Daemon) stageRemote(ctx context.Context, j *job.Job, t stage.Task) error {
	rd := d.ramdisk(j)
	if len(rd.Parts) == 0 {
		return fmt.Errorf("job %d holds no RSA node to stage on", j.ID)
	}
	on := rd.Parts[0].Node
	for _, p := range rd.Parts {
		if d.cluster.Up(p.Node) {
			on = p.Node
			break
		}
	}
	servers, err := d.servers(rd)
	if err != nil {
		return err
	}
	cl, err := d.cluster.Client(on)
	if err != nil {
		return err
	}
	fmt.Fprintf(t.Log, "%s %s on %s\n", time.Now().Format(time.RFC3339), t.Phase, on)
	req := agent.StageRequest{Phase: t.Phase, UID: j.UID, GID: j.GID, Groups: j.Groups, User: j.User, Home: j.Home,
		Program: t.Program, Data: t.Data, Servers: servers, BWLimit: d.cfg.Limits.StageBWLimit,
		Degraded: t.Degraded, WholeSettle: d.cfg.Cluster.WholeSettle,
		Limits: &agent.StageLimits{Memory: d.cfg.Limits.StageMemory, Pids: d.cfg.Limits.StagePids, CPU: d.cfg.Limits.StageCPU,
			Network: stage.Network(d.cfg.Limits.StageNetwork)}}
	return cl.Stage(ctx, agent.BuildName(j.ID, j.Build), req, t.Log, t.Progress)
}
