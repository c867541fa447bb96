package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// The daemon's transitions are exactly lifecycle.Step's: a real job's event
// log, replayed event by event through Step from the job's first state,
// gives the same changes in the same order. The simulator (rsa sim) drives
// the same Step, which internal/sim checks per job; together they say that
// the daemon and the simulator take the same transitions for the same
// events.
func TestDaemonTransitionsAreTheTables(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	in, out := e.mkdir("in"), e.mkdir("out")
	e.fill(in, 4, 4096)
	job := e.script("job.sh", inRAM+`waitram "$1"; cat "$1"/f* >/dev/null; waitram "$2"; echo r > "$2/r"
`)
	b := e.runBG("--in", in, "--out", out, "--delay", switchDelay, "--", job, in, out)
	if code := b.wait(t); code != 0 {
		t.Fatalf("exit %d: %s", code, b.errb.String())
	}
	if _, stderr, err := e.rsa(false, "wait", "1"); err != nil {
		t.Fatalf("wait: %v %s", err, stderr)
	}
	c := api.NewClient(filepath.Join(e.dir, "run", "rsa.sock"))
	evs, _, err := c.Events(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Job(context.Background(), 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	m := v.Machine()
	m.State, m.RSA, m.StartedAt = lifecycle.OnDeck, lifecycle.Initial, time.Time{}
	steps := 0
	for i := 0; i < len(evs); {
		if evs[i].Kind == "submit" {
			i++
			continue
		}
		// One Step call committed every change with the same event.
		k, at := evs[i].Kind, evs[i].At
		out := lifecycle.Step(m, lifecycle.Event{Kind: lifecycle.EventKind(k), At: at})
		for _, c := range out.Changes {
			if i >= len(evs) || evs[i].Kind != k || !evs[i].At.Equal(at) || evs[i].JobState != c.ToJob || evs[i].RSAState != c.ToRSA {
				t.Fatalf("event %q at %s: Step takes %s, the daemon logged %+v", k, at, c, evs[min(i, len(evs)-1)])
			}
			i++
		}
		if len(out.Changes) == 0 {
			t.Fatalf("event %q at %s: Step changes nothing, the daemon logged %+v", k, at, evs[i])
		}
		m = out.Job
		steps++
	}
	if !m.Done() || steps < 8 {
		t.Fatalf("replayed %d events to %s/%s, want the whole life of a job", steps, m.State, m.RSA)
	}
}
