package gluster

import (
	"context"
	"fmt"
	"slices"
)

// StateInCluster is glusterd's name for a peer that is a full member of
// the trusted pool: it takes part in every transaction. Any other state
// of a peer that is connected ("Accepted peer request", "Peer Rejected",
// ...) is a handshake that did not finish: glusterd leaves such a peer
// out of the pool's transactions, and refuses volumes with bricks on it.
const StateInCluster = "Peer in Cluster"

// stateBefriended is glusterd's number for StateInCluster
// (GD_FRIEND_STATE_BEFRIENDED), for a CLI that gives no name.
const stateBefriended = 3

// Peer is another member of the trusted pool as the local glusterd sees
// it.
type Peer struct {
	UUID string `json:"uuid"`
	// Hostnames are the names and addresses glusterd knows the peer by,
	// the one it was probed by first.
	Hostnames []string `json:"hostnames"`
	Connected bool     `json:"connected"`
	// State is glusterd's name of the peer's state: StateInCluster when
	// all is well.
	State string `json:"state"`
}

// InCluster reports whether the peer is a full member of the pool.
func (p Peer) InCluster() bool { return p.State == StateInCluster }

// Peers is the local glusterd's view of the other members of its trusted
// pool. Read-only and local: glusterd asks no peer.
func (c *CLI) Peers(ctx context.Context) ([]Peer, error) {
	o, err := c.run(ctx, "peer", "status")
	if err != nil {
		return nil, err
	}
	return o.peers(), nil
}

// peers converts the peers of a peer status answer.
func (o *cliOutput) peers() []Peer {
	out := []Peer{}
	for _, p := range o.Peers {
		names := []string{}
		if p.Hostname != "" {
			names = append(names, p.Hostname)
		}
		for _, h := range p.Hostnames {
			if h != "" && !slices.Contains(names, h) {
				names = append(names, h)
			}
		}
		state := p.StateStr
		switch {
		case state == "" && p.State == stateBefriended:
			state = StateInCluster
		case state == "":
			state = fmt.Sprintf("state %d", p.State)
		}
		out = append(out, Peer{UUID: p.UUID, Hostnames: names, Connected: p.Connected == 1, State: state})
	}
	return out
}
