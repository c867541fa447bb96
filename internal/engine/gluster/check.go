package gluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
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
//
// Where two witnesses disagree, one of them is behind, and Check waits up
// to e.CheckSettle for them to agree (judge says when). A brick just
// restarted is online to glusterd seconds before the client reconnects,
// and a listing in between leaves its files out; a glusterd just
// restarted has every brick offline until it has reconnected to the
// running ones, while the client reads them all along. Epoch is the
// client's distribute generation, which grows each time a part comes
// (back) up: two Checks that differ in it saw a part come back in between.
func (e *Engine) Check(ctx context.Context, r engine.Ramdisk) (engine.Degraded, error) {
	if _, ok, err := e.mounted(r); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("the volume is not mounted at %s", r.Dir)
		}
		return engine.Degraded{}, fmt.Errorf("checking the RAMDISK of job %d: %w", r.Job, err)
	}
	vol := e.volume(r)
	said, err := e.glusterdView(ctx, r, vol)
	if err != nil {
		return engine.Degraded{}, err
	}
	asked := time.Now()
	settle := cmp.Or(e.CheckSettle, defaultCheckSettle)
	deadline := time.NewTimer(settle)
	defer deadline.Stop()
	// Lost to the heartbeat once, lost for this Check: a node back
	// meanwhile may have rebooted, its part empty.
	lost := make([]bool, len(r.Parts))
	for {
		v := e.clientView(r, vol)
		out := make([]bool, len(r.Parts))
		pending, reask := v.epoch == 0, false
		for i, p := range r.Parts {
			lost[i] = lost[i] || e.Nodes.Down(p.Node)
			j := judge(lost[i], said[i], v.parts[i])
			out[i] = j.out
			pending = pending || j.pending
			reask = reask || j.reask
		}
		if !pending {
			dg := e.degraded(r, out)
			dg.Epoch = v.epoch
			return dg, nil
		}
		select {
		case <-ctx.Done():
			return engine.Degraded{}, fmt.Errorf("checking the RAMDISK of job %d: %w", r.Job, ctx.Err())
		case <-deadline.C:
			// Not certain after settling: out of reach, as far as a
			// copy's listing can tell.
			if v.epoch == 0 {
				return engine.Degraded{}, fmt.Errorf("checking the RAMDISK of job %d: this host's Gluster client did not tell its distribute generation (%s/.meta/graphs/active/%s-dht/private) in %v", r.Job, r.Dir, vol, settle)
			}
			for i := range out {
				out[i] = out[i] || v.parts[i] != reachUp
			}
			dg := e.degraded(r, out)
			dg.Epoch = v.epoch
			return dg, nil
		case <-time.After(settleStep):
		}
		if reask && time.Since(asked) >= reaskStep {
			if said, err = e.glusterdView(ctx, r, vol); err != nil {
				return engine.Degraded{}, err
			}
			asked = time.Now()
		}
	}
}

// glusterdSays is glusterd's word on one brick.
type glusterdSays int8

const (
	// glusterdUnlisted: not in glusterd's answer (its node's glusterd down
	// or restarting, or its node lost to the heartbeat and not asked).
	glusterdUnlisted glusterdSays = iota
	glusterdOnline
	glusterdOffline
)

// verdict is judge's word on one part.
type verdict struct {
	out     bool // out of reach, as things stand
	pending bool // the witnesses disagree: wait for them to agree
	reask   bool // ask glusterd again while waiting: it is the one behind
}

// judge weighs the witnesses of one part: lost to the heartbeat (down),
// glusterd's word and this host's client's. Pure, so that TestJudge checks
// every combination (2 x 3 x 3) against the rule stated on its own.
func judge(down bool, gd glusterdSays, client reach) verdict {
	switch {
	case down:
		// Silent for cluster.down_after: certain.
		return verdict{out: true}
	case client == reachDown:
		// The client lost its connection. A brick glusterd has online
		// again is one the client reconnects to at its next try (every
		// 3 seconds): wait for it.
		return verdict{out: true, pending: gd == glusterdOnline}
	case gd == glusterdOffline:
		// A brick process that died resets the client's connection at
		// once, so a client still connected (or not yet sure) says
		// glusterd is behind: one just restarted has its bricks offline
		// until it reconnects to them. Ask it again until it agrees or
		// time is up; until then, out.
		return verdict{out: true, pending: true, reask: true}
	case client == reachUnknown:
		return verdict{pending: true}
	default:
		return verdict{}
	}
}

// glusterdView is what glusterd says of each part of r: said[i], of the
// brick of part i. Parts on nodes lost to the heartbeat are not asked for;
// if all are, glusterd is not asked at all.
func (e *Engine) glusterdView(ctx context.Context, r engine.Ramdisk, vol string) ([]glusterdSays, error) {
	said := make([]glusterdSays, len(r.Parts))
	var states []gcli.BrickState
	asked := false
	for i, p := range r.Parts {
		if e.Nodes.Down(p.Node) {
			continue
		}
		if !asked {
			asked = true
			var err error
			if states, err = e.brickStatus(ctx, r, vol); err != nil {
				return nil, err
			}
		}
		addr, err := e.Nodes.Address(p.Node)
		if err != nil {
			return nil, err
		}
		// glusterd lists only the bricks of the peers it reaches: one
		// not listed (its node's glusterd down or restarting) is left
		// to the client's view, which the copy reads through.
		for _, s := range states {
			if strings.HasPrefix(s.Brick, addr+":") {
				said[i] = glusterdOffline
				if s.Online {
					said[i] = glusterdOnline
				}
			}
		}
	}
	return said, nil
}

// brickStatus asks glusterd, through one of the job's RSA nodes, which of
// the volume's bricks are online.
func (e *Engine) brickStatus(ctx context.Context, r engine.Ramdisk, vol string) ([]gcli.BrickState, error) {
	co, err := e.coordinator(r)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, cmp.Or(e.CheckTimeout, defaultCheckTimeout))
	states, err := co.BrickStatus(cctx, vol)
	cancel()
	if err == nil {
		return states, nil
	}
	// glusterd answers for every peer or for none: a peer that fails the
	// question (a rebooted node's glusterd has the volume stopped) is out
	// of reach, and the others are taken as online, left to the client's
	// view.
	host, ok := failedOn(err)
	if !ok {
		return nil, fmt.Errorf("checking the RAMDISK of job %d: asking glusterd: %w", r.Job, err)
	}
	states = nil
	for _, q := range r.Parts {
		a, err := e.Nodes.Address(q.Node)
		if err != nil {
			return nil, err
		}
		states = append(states, gcli.BrickState{Brick: a + ":", Online: q.Node != host && a != host})
	}
	return states, nil
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
	v := e.clientView(r, e.volume(r))
	out := make([]bool, len(r.Parts))
	for i, p := range r.Parts {
		// A client view not to be had now says nothing: the watcher
		// asks again.
		out[i] = e.Nodes.Down(p.Node) || v.parts[i] == reachDown
	}
	dg := e.degraded(r, out)
	dg.Epoch = v.epoch
	return dg, nil
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
			d.Missing = true
		}
	}
	slices.Sort(d.Nodes)
	return d
}

const (
	// defaultCheckTimeout bounds glusterd's answer unless e.CheckTimeout
	// says otherwise (config cluster.check_timeout, whose default it is):
	// on a cut link glusterd waits for its peer until TCP gives up.
	defaultCheckTimeout = 15 * time.Second
	// defaultCheckSettle bounds the wait for this host's client to
	// reconnect to a brick glusterd has online unless e.CheckSettle says
	// otherwise (config cluster.check_settle): it tries every 3 seconds.
	defaultCheckSettle = 15 * time.Second
	settleStep         = 200 * time.Millisecond
	// reaskStep paces the questions to a glusterd that is behind: each
	// is a round of its cluster-wide lock.
	reaskStep = time.Second
)

// failedOn is the peer whose glusterd failed the gluster command behind
// err (gluster.Error.FailedOn), which an agent's answer carries.
func failedOn(err error) (string, bool) {
	var ge *gcli.Error
	if !errors.As(err, &ge) {
		return "", false
	}
	return ge.FailedOn()
}

// reach is what this host's Gluster client says of one part.
type reach int8

const (
	// reachUnknown: the translator's dump was not to be had. It is only
	// its section's header while the translator's lock is taken, as for
	// a while after a brick came back.
	reachUnknown reach = iota
	reachUp
	reachDown
)

// view is this host's Gluster client's view of a RAMDISK: each part's
// reach, and the distribute translator's generation (0: unknown), which
// grows each time a part comes up.
type view struct {
	parts []reach
	epoch uint64
}

// clientView reads this host's client of volume vol, mounted at r.Dir,
// through the meta translator: brick i is VOL-client-i, the distribute
// translator VOL-dht, whose subvolume k is pair k (replica 2) or brick k.
// A part is up only when both say so: the client connects before it
// tells the distribute translator, which alone decides what a listing
// includes.
func (e *Engine) clientView(r engine.Ramdisk, vol string) view {
	// Not to be had (its lock taken, as for a while after a brick came
	// back): every part unknown, the generation 0.
	dist, err := gcli.ReadDistribution(r.Dir, vol)
	v := view{parts: make([]reach, len(r.Parts))}
	if err == nil {
		v.epoch = dist.Gen
	}
	for i := range r.Parts {
		sub := i
		if e.Replica == 2 {
			sub = i / 2
		}
		client := connection(gcli.MetaDump(r.Dir, fmt.Sprintf("%s-client-%d", vol, i)))
		switch {
		case client == reachDown:
			v.parts[i] = reachDown
		case client == reachUnknown || err != nil || sub >= len(dist.Up):
			v.parts[i] = reachUnknown
		case !dist.Up[sub] && e.Replica != 2:
			// Connected, not yet told to the distribute translator.
			v.parts[i] = reachUnknown
		default:
			// Replica 2: the pair is up when either part is, so its
			// status does not speak for this part; the client does.
			v.parts[i] = reachUp
		}
	}
	return v
}

// connection reads "connected = N" from a protocol/client translator's
// private dump.
func connection(priv string) reach {
	v, ok := gcli.DumpValue(priv, "connected")
	switch {
	case !ok:
		return reachUnknown
	case v == "0":
		return reachDown
	default:
		return reachUp
	}
}
