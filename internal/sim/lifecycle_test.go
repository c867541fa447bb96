package sim

import (
	"bufio"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// The simulator must be the daemon's lifecycle and nothing else: replaying
// each job's events through lifecycle.Step directly, from the state the
// simulator created the job in, gives the outcomes the simulator saw, and
// no state changes between steps except through Step. The run is tuned to
// provoke the races (demotions, late stage-ins, waits for capacity), and
// the test checks that they happened, so that it cannot pass vacuously.
func TestTransitionsAreLifecycleStep(t *testing.T) {
	c := Defaults()
	c.Priority = SJF
	c.EstimateFactor = 3
	c.RSA.Proportion = 32
	c.RSA.StageInLead = 0
	c.Workload.Input = Fixed(64 * mib)
	c.Workload.Output = Fixed(64 * mib)
	rec := recorder{}
	c.Observe = rec.observe
	r := run(t, lublinHead(t, 2000), c)

	seen := map[lifecycle.RSAState]bool{}
	kinds := map[lifecycle.EventKind]bool{}
	for id, steps := range rec {
		j := steps[0].before
		if j.RSA != lifecycle.Initial || (j.State != lifecycle.OnDeck && j.State != lifecycle.Running) {
			t.Fatalf("job %d entered the lifecycle as %s/%s, not ONDECK or RUNNING/INITIAL", id, j.State, j.RSA)
		}
		for i, s := range steps {
			if !reflect.DeepEqual(s.before, j) {
				t.Fatalf("job %d step %d: the simulator changed the job outside Step: %+v, Step left %+v", id, i, s.before, j)
			}
			direct := lifecycle.Step(j, s.ev)
			if !reflect.DeepEqual(direct, s.out) {
				t.Fatalf("job %d step %d (%s): simulator saw %+v, Step gives %+v", id, i, s.ev.Kind, s.out, direct)
			}
			// The simulator sends an event only where the daemon would
			// act on it; the one exception is EvOnDeck to a demoted job
			// whose cleanup has not ended (apply sends it again after).
			if direct.Ignored && (s.ev.Kind != lifecycle.EvOnDeck || j.State != lifecycle.Demoted) {
				t.Fatalf("job %d step %d: %s ignored in %s/%s: the simulator fed an event in the wrong state", id, i, s.ev.Kind, j.State, j.RSA)
			}
			if !direct.Ignored {
				j = direct.Job
				kinds[s.ev.Kind] = true
				for _, ch := range direct.Changes {
					seen[ch.ToRSA] = true
				}
			}
		}
		if !j.Done() {
			t.Errorf("job %d ended the run as %s/%s, not FINISHED/RELEASED", id, j.State, j.RSA)
		}
	}
	for _, s := range []lifecycle.RSAState{lifecycle.Ready, lifecycle.InUseIn, lifecycle.InUseOut, lifecycle.StoppingStagingIn,
		lifecycle.Aborted, lifecycle.Ineligible, lifecycle.DoneStagingOut, lifecycle.Released} {
		if !seen[s] {
			t.Errorf("no job reached %s: the run no longer exercises it", s)
		}
	}
	for _, k := range []lifecycle.EventKind{lifecycle.EvDemoted, lifecycle.EvOnDeck, lifecycle.EvTick, lifecycle.EvStageInStopped} {
		if !kinds[k] {
			t.Errorf("no %s event applied: the run no longer exercises it", k)
		}
	}
	if r.Demotions == 0 || r.LateStageIns == 0 || r.JobsWithRSA == 0 {
		t.Errorf("demotions %d, late stage-ins %d, RSA jobs %d: want all above 0", r.Demotions, r.LateStageIns, r.JobsWithRSA)
	}
}

// lublinHead is the bundled trace's header and first n jobs.
func lublinHead(t testing.TB, n int) string {
	f, err := os.Open("testdata/lublin_256.swf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() && n > 0 {
		line := sc.Text()
		if !strings.HasPrefix(line, ";") {
			n--
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
