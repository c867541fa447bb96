package gluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
// A part glusterd has online counts as in reach only once this host's
// client says so for certain: a brick just restarted is online to
// glusterd seconds before the client reconnects, and a listing in
// between leaves its files out. Check waits up to checkSettle for that.
// Epoch is the client's distribute generation, which grows each time a
// part comes (back) up: two Checks that differ in it saw a part come back
// in between.
func (e *Engine) Check(ctx context.Context, r engine.Ramdisk) (engine.Degraded, error) {
	if _, ok, err := e.mounted(r); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("the volume is not mounted at %s", r.Dir)
		}
		return engine.Degraded{}, fmt.Errorf("checking the RAMDISK of job %d: %w", r.Job, err)
	}
	vol := e.volume(r)
	out, online, err := e.nodesView(ctx, r, vol)
	if err != nil {
		return engine.Degraded{}, err
	}
	return e.settle(ctx, r, vol, out, online)
}

// nodesView is what the heartbeat and glusterd say of each part: out[i],
// part i is out of reach (its node lost, or its brick offline); online[i],
// glusterd has its brick online.
func (e *Engine) nodesView(ctx context.Context, r engine.Ramdisk, vol string) (out, online []bool, err error) {
	out = make([]bool, len(r.Parts))
	online = make([]bool, len(r.Parts))
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
			if states, err = e.brickStatus(ctx, r, vol); err != nil {
				return nil, nil, err
			}
		}
		addr, err := e.Nodes.Address(p.Node)
		if err != nil {
			return nil, nil, err
		}
		// glusterd lists only the bricks of the peers it reaches: one
		// not listed (its node's glusterd down or restarting) is left
		// to the client's view, which the copy reads through.
		for _, s := range states {
			if strings.HasPrefix(s.Brick, addr+":") {
				out[i] = !s.Online
				online[i] = s.Online
			}
		}
	}
	return out, online, nil
}

// brickStatus asks glusterd, through one of the job's RSA nodes, which of
// the volume's bricks are online.
func (e *Engine) brickStatus(ctx context.Context, r engine.Ramdisk, vol string) ([]gcli.BrickState, error) {
	co, err := e.coordinator(r)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	states, err := co.BrickStatus(cctx, vol)
	cancel()
	if err == nil {
		return states, nil
	}
	// glusterd answers for every peer or for none: a peer that fails the
	// question (a rebooted node's glusterd has the volume stopped) is out
	// of reach, and the others are taken as online, left to the client's
	// view.
	host, ok := stagingFailedOn(err)
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

// settle adds this host's client's view of the parts still taken as in
// reach, waited for until it is certain. A brick glusterd has online that
// the client is not connected to yet is waited for as well: the client
// tries again every 3 seconds.
func (e *Engine) settle(ctx context.Context, r engine.Ramdisk, vol string, out, online []bool) (engine.Degraded, error) {
	deadline := time.NewTimer(checkSettle)
	defer deadline.Stop()
	for {
		v := e.clientView(r, vol)
		pending := v.epoch == 0
		now := slices.Clone(out)
		for i := range now {
			if now[i] {
				continue
			}
			if e.Nodes.Down(r.Parts[i].Node) {
				// Lost to the heartbeat meanwhile (a cut link, whose
				// brick glusterd still has online): certain.
				out[i], now[i] = true, true
				continue
			}
			switch v.parts[i] {
			case reachDown:
				now[i] = true
				pending = pending || online[i]
			case reachUnknown:
				pending = true
			}
		}
		if !pending {
			dg := e.degraded(r, now)
			dg.Epoch = v.epoch
			return dg, nil
		}
		select {
		case <-ctx.Done():
			return engine.Degraded{}, fmt.Errorf("checking the RAMDISK of job %d: %w", r.Job, ctx.Err())
		case <-deadline.C:
			// Not certain after checkSettle: out of reach, as far as a
			// copy's listing can tell.
			if v.epoch == 0 {
				return engine.Degraded{}, fmt.Errorf("checking the RAMDISK of job %d: this host's Gluster client did not tell its distribute generation (%s/.meta/graphs/active/%s-dht/private) in %v", r.Job, r.Dir, vol, checkSettle)
			}
			for i := range out {
				out[i] = out[i] || v.parts[i] != reachUp
			}
			dg := e.degraded(r, out)
			dg.Epoch = v.epoch
			return dg, nil
		case <-time.After(settleStep):
		}
	}
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
			d.Lost = true
		}
	}
	slices.Sort(d.Nodes)
	return d
}

const (
	// checkTimeout bounds glusterd's answer: on a cut link it waits for
	// its peer until TCP gives up.
	checkTimeout = 15 * time.Second
	// checkSettle bounds the wait for this host's client to reconnect to
	// a brick glusterd has online: it tries every 3 seconds.
	checkSettle = 15 * time.Second
	settleStep  = 200 * time.Millisecond
)

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
	dump := func(xl string) string {
		b, _ := os.ReadFile(filepath.Join(r.Dir, ".meta", "graphs", "active", xl, "private"))
		return string(b)
	}
	dht := dump(vol + "-dht")
	v := view{parts: make([]reach, len(r.Parts))}
	if g, ok := dumpValue(dht, "gen"); ok {
		v.epoch, _ = strconv.ParseUint(g, 10, 64)
	}
	for i := range r.Parts {
		sub := i
		if e.Replica == 2 {
			sub = i / 2
		}
		client := connection(dump(fmt.Sprintf("%s-client-%d", vol, i)))
		status, ok := dumpValue(dht, fmt.Sprintf("subvolume_status[%d]", sub))
		switch {
		case client == reachDown:
			v.parts[i] = reachDown
		case client == reachUnknown || !ok:
			v.parts[i] = reachUnknown
		case status != "1" && e.Replica != 2:
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
	v, ok := dumpValue(priv, "connected")
	switch {
	case !ok:
		return reachUnknown
	case v == "0":
		return reachDown
	default:
		return reachUp
	}
}

// dumpValue finds "key = value" in a translator's private dump.
func dumpValue(priv, key string) (string, bool) {
	for line := range strings.Lines(priv) {
		k, v, ok := strings.Cut(line, "=")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}
