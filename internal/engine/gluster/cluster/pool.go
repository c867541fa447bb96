package cluster

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rsa-hpc/rsa/internal/gluster"
)

// The trusted pool: glusterd on every RSA node must see every other as a
// full, connected member ("Peer in Cluster (Connected)"), or a volume with
// bricks on both cannot be made or deleted through it. A handshake that
// stalls after a partition heals ("Accepted peer request"), a peer
// rejected because both sides changed a volume apart ("Peer Rejected"),
// or a glusterd that cannot reach another while both agents answer the
// daemon: each is a rift between two RSA nodes, and no new RAMDISK should
// span it. The agents answer the heartbeat all the same, so Up says
// nothing of it; CheckPool asks each node's glusterd, and Placeable keeps
// new jobs off as few nodes as leave no rift among the rest.

// rift is one RSA node's glusterd's view of another that is not a full,
// connected member of its pool.
type rift struct {
	from, to string // node names
	why      string // what from's glusterd says of to
}

func (r rift) String() string { return fmt.Sprintf("%s's glusterd sees %s %s", r.from, r.to, r.why) }

// rifts reads each node's view of its peers. addrs maps an RSA node's
// name to its address; views holds the nodes that answered. glusterd
// knows a peer by the name or address it was probed by: an RSA node's
// address, its name, or a domain name whose first label is its name. A
// peer known otherwise is not RSA's to judge (another member of the
// site's pool), and a node missing from a view is no rift: glusterd may
// know it by a name RSA does not.
func rifts(addrs map[string]string, views map[string][]gluster.Peer) []rift {
	known := map[string]string{}
	for n, a := range addrs {
		known[n] = n
		known[a] = n
	}
	nodeOf := func(host string) (string, bool) {
		if n, ok := known[host]; ok {
			return n, true
		}
		if net.ParseIP(host) != nil {
			return "", false
		}
		short, _, _ := strings.Cut(host, ".")
		n, ok := known[short]
		return n, ok && n == short
	}
	var out []rift
	for _, from := range slices.Sorted(maps.Keys(views)) {
		seen := map[string]bool{from: true}
		for _, p := range views[from] {
			to := ""
			for _, h := range p.Hostnames {
				if n, ok := nodeOf(h); ok {
					to = n
					break
				}
			}
			if to == "" || seen[to] {
				continue
			}
			seen[to] = true
			switch {
			case !p.InCluster():
				conn := "connected"
				if !p.Connected {
					conn = "disconnected"
				}
				out = append(out, rift{from, to, fmt.Sprintf("as %q (%s)", p.State, conn)})
			case !p.Connected:
				out = append(out, rift{from, to, "disconnected"})
			}
		}
	}
	return out
}

// estranged picks the nodes to keep new RAMDISKs off so that no rift is
// left among the rest, and says why for each: greedily the node in the
// most rifts, then the one most others name, then the last by name. A
// rejected or unreachable node is named by every other one and goes
// alone; a rift between two nodes costs one of them, not both.
func estranged(rs []rift) map[string][]rift {
	out := map[string][]rift{}
	left := slices.Clone(rs)
	for len(left) > 0 {
		in, named := map[string]int{}, map[string]int{}
		for _, r := range left {
			in[r.from]++
			in[r.to]++
			named[r.to]++
		}
		worst := ""
		for _, n := range slices.Sorted(maps.Keys(in)) {
			if worst == "" || cmp.Or(cmp.Compare(in[n], in[worst]), cmp.Compare(named[n], named[worst]), 1) > 0 {
				worst = n
			}
		}
		var keep []rift
		for _, r := range left {
			if r.from == worst || r.to == worst {
				out[worst] = append(out[worst], r)
			} else {
				keep = append(keep, r)
			}
		}
		left = keep
	}
	return out
}

// CheckPool asks the glusterd of every RSA node whose agent is up how it
// sees the others, each bounded by timeout, and marks the nodes no new
// RAMDISK may span (see Placeable). A node whose glusterd does not answer
// keeps what it said last: glusterd answers after whatever transaction
// its agent is running, and a glusterd that is down is seen by the others.
func (c *Cluster) CheckPool(ctx context.Context, timeout time.Duration) {
	var (
		mu    sync.Mutex
		views = map[string][]gluster.Peer{}
		errs  = map[string]error{}
		wg    sync.WaitGroup
	)
	for _, n := range c.StorageNodes() {
		if !c.Up(n) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := c.Client(n)
			var ps []gluster.Peer
			if err == nil {
				cctx, cancel := context.WithTimeout(ctx, timeout)
				ps, err = cl.Peers(cctx)
				cancel()
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs[n] = err
			} else {
				views[n] = ps
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for n, v := range views {
		c.peers[n] = v
	}
	for n := range errs {
		if v, ok := c.peers[n]; ok { // never answered: nothing to judge by
			views[n] = v
		}
	}
	out := estranged(rifts(c.storage, views))
	for _, n := range slices.Sorted(maps.Keys(c.storage)) {
		h := c.health[n]
		if err := errs[n]; err == nil {
			h.PoolErr = ""
		} else if h.PoolErr == "" {
			h.PoolErr = err.Error()
			c.log.Warn("glusterd did not say how it sees its trusted pool; keeping what it said last", "node", n, "err", err)
		}
		was := h.Unpooled
		h.Unpooled = ""
		// A node whose agent is silent takes nothing new anyway, and its
		// loss is told apart; its rifts only keep the blame off others.
		if rs := out[n]; len(rs) > 0 && h.Up {
			why := make([]string, len(rs))
			for i, r := range rs {
				why[i] = r.String()
			}
			h.Unpooled = strings.Join(why, "; ")
		}
		c.health[n] = h
		switch {
		case h.Unpooled == was:
		case h.Unpooled != "":
			c.log.Error("RSA node left out of new RAMDISKs: glusterd's trusted pool is split there; once the network between them is whole, restart glusterd on it (systemctl restart glusterd) if this stays",
				"node", n, "why", h.Unpooled)
		default:
			c.log.Info("RSA node back in glusterd's trusted pool: it takes new RAMDISKs again", "node", n)
		}
	}
}

// Unpooled reports whether CheckPool keeps any RSA node out of new
// RAMDISKs.
func (c *Cluster) Unpooled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.health {
		if h.Unpooled != "" {
			return true
		}
	}
	return false
}

// Placeable reports whether a new RAMDISK may have a brick on node: its
// agent answered the last heartbeat, runs a version rsa serve works with,
// and glusterd's pool has no rift that CheckPool keeps it out for.
func (c *Cluster) Placeable(node string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.health[node]
	return h.Up && h.Unpooled == "" && h.Incompatible == ""
}
