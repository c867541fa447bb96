package service

import (
	"context"
	"fmt"
	"os/user"
	"slices"
	"strconv"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/config"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/refuse"
	"github.com/rsa-hpc/rsa/internal/store"
)

// Drain drains an RSA node (no new job is given RAM on it; jobs that hold
// it finish as usual) or returns it to service. The drain is kept in the
// store, so it outlives a restart of the daemon.
func (s *Service) Drain(ctx context.Context, p api.Peer, node string, r api.DrainRequest) (*api.NodeView, error) {
	if !p.Root() {
		return nil, refuse.Forbidden("only root may drain or return RSA nodes")
	}
	if !slices.ContainsFunc(s.cfg.Nodes, func(n config.Node) bool { return n.Name == node }) {
		return nil, refuse.NotFound("no RSA node %q (rsa nodes lists them)", node)
	}
	if r.Drain {
		if err := reasonGiven("drain reason", r.Reason, "say why the node is drained (--reason): whoever finds it drained needs to know"); err != nil {
			return nil, err
		}
		by := userName(p.UID)
		dr := store.Drain{Node: node, Reason: r.Reason, By: by, Since: time.Now()}
		if err := s.store.SetDrain(ctx, dr); err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.drains[node] = dr
		s.mu.Unlock()
		s.log.Warn("RSA node drained", "node", node, "by", by, "reason", r.Reason)
	} else {
		if err := s.store.ClearDrain(ctx, node); err != nil {
			return nil, err
		}
		s.mu.Lock()
		_, was := s.drains[node]
		delete(s.drains, node)
		s.mu.Unlock()
		if was {
			// Jobs waiting for RAM try it at the next tick.
			s.log.Info("RSA node back in service", "node", node)
		}
	}
	nodes, err := s.Nodes(ctx, p)
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if n.Name == node {
			return &n, nil
		}
	}
	return nil, fmt.Errorf("node %s vanished", node)
}

// Drained is the drained RSA nodes, by name: a copy.
func (s *Service) Drained() map[string]store.Drain {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]store.Drain, len(s.drains))
	for k, v := range s.drains {
		out[k] = v
	}
	return out
}

// userName is uid's user name, or uid as a number where passwd has none:
// who did something, for a record.
func userName(uid uint32) string {
	n := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(n); err == nil {
		return u.Username
	}
	return n
}

// reasonGiven refuses an administrator's reason, named name, that is
// missing (the refusal says missing) or that a record cannot keep as text.
func reasonGiven(name, reason, missing string) error {
	if err := job.CheckText(name, reason); err != nil {
		return refuse.Invalid("%v", err)
	}
	if reason == "" {
		return refuse.Invalid("%s", missing)
	}
	return nil
}
