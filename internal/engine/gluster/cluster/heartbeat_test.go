package cluster

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/agent"
	"github.com/rsa-hpc/rsa/internal/engine"
)

// heartbeat is a Cluster of one RSA node, rsa1, whose clock the test
// moves: record is what Beat does with each answer.
type heartbeat struct {
	c   *Cluster
	now time.Time
}

func newHeartbeat(downAfter time.Duration) *heartbeat {
	hb := &heartbeat{now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	hb.c = &Cluster{downAfter: downAfter, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		now: func() time.Time { return hb.now }, lost: func(engine.NodeLoss) {}, noted: func(string, string) {},
		storage: map[string]string{"rsa1": "10.0.0.1"}, computeAt: map[string]string{},
		health: map[string]health{"rsa1": {Node: "rsa1", Role: "storage", State: StateSuspect, Silent: hb.now}}}
	return hb
}

// answer is one heartbeat answered by incarnation inc ("" for silence),
// after step.
func (hb *heartbeat) answer(step time.Duration, inc string) (*engine.NodeLoss, string) {
	hb.now = hb.now.Add(step)
	if inc == "" {
		return hb.c.record("rsa1", nil, errors.New("connection refused"))
	}
	return hb.c.record("rsa1", &agent.Status{Node: "rsa1", BootID: "boot-" + inc, Incarnation: inc, Started: hb.now}, nil)
}

// TestHeartbeatStates: an agent that stops answering is suspect (no new
// RAMDISK there, nothing undone), then down after down_after, which is a
// loss, once; one back with a new incarnation is a loss of the old one,
// and is placeable only after that loss has been published.
func TestHeartbeatStates(t *testing.T) {
	hb := newHeartbeat(8 * time.Second)
	c := hb.c
	if loss, inc := hb.answer(0, "a"); loss != nil || inc != "a" {
		t.Fatalf("first answer: loss %v, noted %q; want none, a", loss, inc)
	}
	if h := c.health["rsa1"]; h.State != StateUp || !c.Placeable("rsa1") {
		t.Fatalf("after an answer: state %s, placeable %v", h.State, c.Placeable("rsa1"))
	}

	// Silent: suspect at once, down (a loss, once) after down_after.
	var losses []*engine.NodeLoss
	for _, step := range []time.Duration{time.Second, 3 * time.Second, 3 * time.Second} {
		loss, _ := hb.answer(step, "")
		if loss != nil {
			t.Fatalf("silent for less than down_after: loss %+v", loss)
		}
		if h := c.health["rsa1"]; h.State != StateSuspect || c.Up("rsa1") || c.Placeable("rsa1") {
			t.Fatalf("silent for less than down_after: state %s, up %v", h.State, c.Up("rsa1"))
		}
	}
	for range 3 {
		if loss, _ := hb.answer(2*time.Second, ""); loss != nil {
			losses = append(losses, loss)
		}
	}
	if len(losses) != 1 {
		t.Fatalf("silent past down_after: %d losses, want 1", len(losses))
	}
	if l := losses[0]; l.Node != "rsa1" || l.Incarnation != "a" || !strings.Contains(l.Why, "has not answered for 8s") {
		t.Errorf("down: loss %+v, want rsa1's incarnation a, 'has not answered for 8s'", l)
	}
	if !c.Down("rsa1") {
		t.Errorf("silent past down_after: not down")
	}

	// Back as the same incarnation (a link that healed): up, no loss.
	if loss, _ := hb.answer(time.Second, "a"); loss != nil || !c.Placeable("rsa1") {
		t.Errorf("back as the same incarnation: loss %+v, placeable %v", loss, c.Placeable("rsa1"))
	}

	// Rebooted within one heartbeat, never silent: a loss of incarnation
	// a, and not placeable until it is published.
	loss, inc := hb.answer(time.Second, "b")
	if loss == nil || loss.Incarnation != "a" || inc != "b" || !strings.Contains(loss.Why, "rebooted") {
		t.Fatalf("rebooted: loss %+v, noted %q; want a loss of incarnation a, noted b", loss, inc)
	}
	if c.Placeable("rsa1") || c.health["rsa1"].Rebooted != 1 {
		t.Errorf("rebooted, loss not yet published: placeable %v, rebooted %d", c.Placeable("rsa1"), c.health["rsa1"].Rebooted)
	}
	c.placeable("rsa1", "b")
	if !c.Placeable("rsa1") || c.Incarnation("rsa1") != "b" {
		t.Errorf("loss published: placeable %v, incarnation %q", c.Placeable("rsa1"), c.Incarnation("rsa1"))
	}
	// A stale publication (incarnation b rebooted again meanwhile, and
	// went silent) does not make the node placeable.
	hb.answer(time.Second, "")
	c.placeable("rsa1", "b")
	if c.Placeable("rsa1") {
		t.Errorf("silent node made placeable by a stale publication")
	}
}

// TestIncompatibleAgent: an RSA node whose agent runs a version more than
// one release from rsa serve's answers (it is up, its parts are served)
// but takes no new RAMDISK, and says why; once upgraded it takes them
// again. One release apart is what a rolling upgrade needs.
func TestIncompatibleAgent(t *testing.T) {
	hb := newHeartbeat(8 * time.Second)
	c := hb.c
	c.version = "0.3.0"
	for _, s := range []struct {
		version   string
		placeable bool
	}{{"0.1.0", false}, {"0.2.4", true}, {"0.5.0", false}, {"0.3.0+2.gabc1234", true}, {"dev", true}} {
		hb.now = hb.now.Add(time.Second)
		hb.c.record("rsa1", &agent.Status{Node: "rsa1", BootID: "boot-a", Incarnation: "a", Started: hb.now, Version: s.version}, nil)
		if got := c.Placeable("rsa1"); got != s.placeable || !c.Up("rsa1") {
			t.Errorf("agent %s beside rsa serve 0.3.0: placeable %v, up %v; want placeable %v, up", s.version, got, c.Up("rsa1"), s.placeable)
		}
		if why := c.health["rsa1"].Incompatible; (why == "") != s.placeable || !s.placeable && !strings.Contains(why, "more than one release apart") {
			t.Errorf("agent %s: incompatible %q", s.version, why)
		}
	}
}
