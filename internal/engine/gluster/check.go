package gluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rsa-hpc/rsa/internal/engine"
	gcli "github.com/rsa-hpc/rsa/internal/gluster"
)

// Check asks three witnesses, and a part is out of reach if any says so:
// the heartbeat (the node lost: silent for cluster.down_after, as a dead
// node or a cut link is, which glusterd may take minutes to notice), glusterd (the brick's
// process gone), and this host's Gluster client, through the meta
// translator's .meta tree at the mount's root (virtual: no user can
// create or replace it), which knows of a link cut between this host and
// the brick alone. Brick i of the volume is part i: VOLUME-client-i.
func (e *Engine) Check(ctx context.Context, r engine.Ramdisk) (engine.Degraded, error) {
	var d engine.Degraded
	if _, ok, err := e.mounted(r); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("the volume is not mounted at %s", r.Dir)
		}
		return d, fmt.Errorf("checking the RAMDISK of job %d: %w", r.Job, err)
	}
	vol := e.volume(r)
	out := make([]bool, len(r.Parts))
	var states []gcli.BrickState
	asked := false
	for i, p := range r.Parts {
		// Lost to the heartbeat: silent for cluster.down_after. A node
		// only suspect (an agent restarting) is asked like the others.
		if e.Nodes.Down(p.Node) {
			out[i] = true
			continue
		}
		if !asked {
			asked = true
			co, err := e.coordinator(r)
			if err != nil {
				return d, err
			}
			cctx, cancel := context.WithTimeout(ctx, checkTimeout)
			states, err = co.BrickStatus(cctx, vol)
			cancel()
			if err != nil {
				// glusterd answers for every peer or for none: a peer
				// that fails the question (a rebooted node's glusterd
				// has the volume stopped) is out of reach, and the
				// others are taken as online, left to the client's view.
				host, ok := stagingFailedOn(err)
				if !ok {
					return d, fmt.Errorf("checking the RAMDISK of job %d: asking glusterd: %w", r.Job, err)
				}
				states = nil
				for _, q := range r.Parts {
					a, err := e.Nodes.Address(q.Node)
					if err != nil {
						return d, err
					}
					states = append(states, gcli.BrickState{Brick: a + ":", Online: q.Node != host && a != host})
				}
			}
		}
		addr, err := e.Nodes.Address(p.Node)
		if err != nil {
			return d, err
		}
		// glusterd lists only the bricks of the peers it reaches: one
		// not listed (its node's glusterd down or restarting) is left
		// to the client's view, which the copy reads through.
		offline := false
		for _, s := range states {
			if strings.HasPrefix(s.Brick, addr+":") {
				offline = !s.Online
			}
		}
		out[i] = offline || clientLost(r, vol, i)
	}
	return e.degraded(r, out), nil
}

// Probe is Check without glusterd: the heartbeat and this host's client.
// A brick whose process died is seen at once (its connection is reset); a
// cut link after the client's ping timeout.
func (e *Engine) Probe(r engine.Ramdisk) (engine.Degraded, error) {
	if _, ok, err := e.mounted(r); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("the volume is not mounted at %s", r.Dir)
		}
		return engine.Degraded{}, fmt.Errorf("probing the RAMDISK of job %d: %w", r.Job, err)
	}
	vol := e.volume(r)
	out := make([]bool, len(r.Parts))
	for i, p := range r.Parts {
		out[i] = e.Nodes.Down(p.Node) || clientLost(r, vol, i)
	}
	return e.degraded(r, out), nil
}

// degraded names the nodes of the parts out of reach (out[i]: part i).
func (e *Engine) degraded(r engine.Ramdisk, out []bool) engine.Degraded {
	var d engine.Degraded
	for i, o := range out {
		if !o {
			continue
		}
		if !slices.Contains(d.Nodes, r.Parts[i].Node) {
			d.Nodes = append(d.Nodes, r.Parts[i].Node)
		}
		// Replica 2 pairs parts 2k and 2k+1: data is lost only when
		// both are out of reach.
		if e.Replica != 2 || out[i^1] {
			d.Lost = true
		}
	}
	slices.Sort(d.Nodes)
	return d
}

// checkTimeout bounds glusterd's answer: on a cut link it waits for its
// peer until TCP gives up.
const checkTimeout = 15 * time.Second

// stagingFailedOn reads the peer glusterd names in "Staging failed on
// HOST. Error: ...".
func stagingFailedOn(err error) (string, bool) {
	_, rest, ok := strings.Cut(err.Error(), "Staging failed on ")
	if !ok {
		return "", false
	}
	host, _, ok := strings.Cut(rest, ". Error:")
	return host, ok && host != ""
}

// clientLost: this host's client of volume vol, mounted at r.Dir, is not
// connected to brick i.
func clientLost(r engine.Ramdisk, vol string, i int) bool {
	b, _ := os.ReadFile(filepath.Join(r.Dir, ".meta", "graphs", "active", fmt.Sprintf("%s-client-%d", vol, i), "private"))
	return disconnected(string(b))
}

// disconnected reads "connected = 0" from a protocol/client translator's
// private dump. The dump is only the section's header while the
// translator's lock is taken (as after a brick came back, for a while):
// that says nothing either way.
func disconnected(priv string) bool {
	for line := range strings.Lines(priv) {
		k, v, ok := strings.Cut(line, "=")
		if ok && strings.TrimSpace(k) == "connected" {
			return strings.TrimSpace(v) == "0"
		}
	}
	return false
}
