package lifecycle

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// declared lists the values of the constants of type typ that the
// package's non-test files declare, in order: the lists the tests below
// walk are checked against them, so a new state or event cannot be left
// out of a decision.
func declared(t *testing.T, typ string) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatalf("listing the package: %v", err)
	}
	fset := token.NewFileSet()
	var out []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatalf("parsing the package: %v", err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				v := s.(*ast.ValueSpec)
				if id, ok := v.Type.(*ast.Ident); !ok || id.Name != typ {
					continue
				}
				for _, val := range v.Values {
					lit, ok := val.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: a %s constant is not a string literal", fset.Position(val.Pos()), typ)
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatalf("%s: %s constant %s: %v", fset.Position(val.Pos()), typ, lit.Value, err)
					}
					out = append(out, s)
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no constants of type %s found", typ)
	}
	return out
}

func sameSet[T ~string](t *testing.T, what string, got []T, want []string) {
	t.Helper()
	g := make([]string, len(got))
	for i, x := range got {
		g[i] = string(x)
	}
	slices.Sort(g)
	w := slices.Clone(want)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Errorf("%s = %v, want the declared %v", what, g, w)
	}
}

// TestStateListsComplete: AllRSAStates and AllJobStates list every state
// the package declares, once; every table below walks them.
func TestStateListsComplete(t *testing.T) {
	sameSet(t, "AllRSAStates", AllRSAStates, declared(t, "RSAState"))
	sameSet(t, "AllJobStates", AllJobStates, declared(t, "JobState"))
}

// is says which predicates on an rsa-state hold.
type is struct {
	inRAM, beingMounted, staging, watched, rebuilding, discardable bool
}

func isOf(s RSAState) is {
	return is{InRAM(s), BeingMounted(s), Staging(s), Watched(s), Rebuilding(s), Discardable(s)}
}

// meanings is what every rsa-state means, written from the state's doc
// comment: a new state must be added here, and so decided for each.
var meanings = map[RSAState]struct {
	phase Phase
	is    is
}{
	Initial:           {PhaseWaiting, is{}},
	Assigned:          {PhaseWaiting, is{}},
	Ineligible:        {PhaseWithoutRSA, is{}},
	Booting:           {PhaseBuild, is{rebuilding: true}},
	Booted:            {PhaseBuild, is{watched: true, rebuilding: true}},
	StagingIn:         {PhaseStageIn, is{staging: true}},
	StoppingStagingIn: {PhaseStageIn, is{}},
	Aborted:           {PhaseAborted, is{}},
	Ready:             {PhaseReady, is{watched: true}},
	MountingIn:        {PhaseInUseIn, is{beingMounted: true}},
	InUseIn:           {PhaseInUseIn, is{inRAM: true, watched: true}},
	UnmountBusy:       {PhaseInUseIn, is{}},
	UnmountNeeded:     {PhaseSwitch, is{}},
	Unmounting:        {PhaseSwitch, is{}},
	Unmounted:         {PhaseSwitch, is{}},
	Mounting:          {PhaseSwitch, is{beingMounted: true}},
	InUseOut:          {PhaseInUseOut, is{inRAM: true, watched: true}},
	StagingOut:        {PhaseStageOut, is{staging: true}},
	DoneStagingOut:    {PhaseStageOut, is{}},
	StageOutFailed:    {PhaseStageOut, is{discardable: true}},
	Teardown:          {PhaseTeardown, is{rebuilding: true}},
	Abandoning:        {PhaseTeardown, is{}},
	TeardownFailed:    {PhaseTeardown, is{}},
	Destroyed:         {PhaseTeardown, is{rebuilding: true}},
	OutputLost:        {PhaseOutputLost, is{}},
	Released:          {PhaseReleased, is{}},
}

func TestMeanings(t *testing.T) {
	for _, s := range AllRSAStates {
		want, ok := meanings[s]
		if !ok {
			t.Errorf("%s: no meaning decided (add it to meanings)", s)
			continue
		}
		if got := PhaseOf(s); got != want.phase {
			t.Errorf("PhaseOf(%s) = %q, want %q", s, got, want.phase)
		}
		if got := isOf(s); got != want.is {
			t.Errorf("%s: predicates %+v, want %+v", s, got, want.is)
		}
	}
	if len(meanings) != len(AllRSAStates) {
		t.Errorf("meanings has %d states, AllRSAStates %d", len(meanings), len(AllRSAStates))
	}
	if p := PhaseOf("NO_SUCH_STATE"); p != "" {
		t.Errorf("PhaseOf of no rsa-state = %q, want none", p)
	}
}

// TestMeaningsAgree: the predicates agree with each other and with the
// machine's own (HoldsNodes, HasRamdisk, HoldsOutput, NeedsAdmin, Work).
func TestMeaningsAgree(t *testing.T) {
	for _, s := range AllRSAStates {
		p := PhaseOf(s)
		_, busy := Work(s)
		check := func(ok bool, what string) {
			t.Helper()
			if !ok {
				t.Errorf("%s (phase %s): %s", s, p, what)
			}
		}
		if InRAM(s) {
			check(HoldsNodes(s) && HasRamdisk(s), "in RAM without a RAMDISK that holds nodes")
			check(Watched(s), "in RAM but not watched for lost parts")
			check(p == PhaseInUseIn || p == PhaseInUseOut, "in RAM outside the in-use phases")
		}
		if Watched(s) {
			check(HasRamdisk(s), "watched without a RAMDISK")
			check(!busy, "watched while an action checks the RAMDISK itself")
		}
		if BeingMounted(s) {
			check(busy && HasRamdisk(s), "being mounted without a mount action on a RAMDISK")
			check(p == PhaseInUseIn || p == PhaseSwitch, "mounted outside the mount phases")
		}
		if Staging(s) {
			check(busy && HasRamdisk(s), "staging without a stage action on a RAMDISK")
			check(p == PhaseStageIn || p == PhaseStageOut, "staging outside the stage phases")
		}
		if Discardable(s) {
			check(NeedsAdmin(s) && HoldsOutput(s), "discardable without output waiting for an administrator")
		}
		if Rebuilding(s) {
			check(p == PhaseBuild || p == PhaseTeardown, "rebuilding outside build and teardown")
		}
		if HoldsOutput(s) {
			check(p == PhaseInUseOut || p == PhaseStageOut, "output held outside the output phases")
		}
		if p == PhaseWithoutRSA || p == PhaseOutputLost || p == PhaseReleased {
			check(!HoldsNodes(s), "holds nodes in a phase without RSA")
		}
	}
}

// TestJobMeanings: each predicate on a Job holds for exactly the listed
// rsa-states under each job-state, and none keeps a done job alive.
func TestJobMeanings(t *testing.T) {
	allBut := func(except ...RSAState) []RSAState {
		return slices.DeleteFunc(slices.Clone(AllRSAStates), func(s RSAState) bool { return slices.Contains(except, s) })
	}
	every := func(set []RSAState) map[JobState][]RSAState {
		m := map[JobState][]RSAState{}
		for _, js := range AllJobStates {
			m[js] = set
		}
		return m
	}
	holding := allBut(Initial, Ineligible, OutputLost, Released)
	tests := []struct {
		name string
		pred func(Job) bool
		want map[JobState][]RSAState
	}{
		{"CountsTowardLimits", CountsTowardLimits, every(allBut(Ineligible, Released, OutputLost))},
		{"KeepsRamdisk", KeepsRamdisk, map[JobState][]RSAState{
			OnDeck: append([]RSAState{Initial}, holding...), Demoted: append([]RSAState{Initial}, holding...),
			Running: append([]RSAState{Initial}, holding...), Finished: holding,
		}},
		{"SettledBeforeStart", SettledBeforeStart, map[JobState][]RSAState{
			OnDeck: {Ready, Ineligible, Aborted}, Demoted: {Ready, Ineligible, Aborted},
			Running: AllRSAStates, Finished: AllRSAStates,
		}},
		{"TimeSensitive", TimeSensitive, map[JobState][]RSAState{
			OnDeck: {Initial}, Demoted: {Initial}, Running: {Initial, InUseIn}, Finished: {Initial},
		}},
		{"Done", Job.Done, map[JobState][]RSAState{Finished: {Released, OutputLost}}},
	}
	for _, tc := range tests {
		for _, js := range AllJobStates {
			for _, s := range AllRSAStates {
				j := Job{State: js, RSA: s}
				if got, want := tc.pred(j), slices.Contains(tc.want[js], s); got != want {
					t.Errorf("%s(%s/%s) = %v, want %v", tc.name, js, s, got, want)
				}
				if j.Done() && (CountsTowardLimits(j) || KeepsRamdisk(j) || TimeSensitive(j)) {
					t.Errorf("%s/%s is done but counts, keeps a RAMDISK or waits for ticks", js, s)
				}
			}
		}
	}
}

func TestIsFailure(t *testing.T) {
	want := map[EventKind]bool{
		EvOnDeck: false, EvDemoted: false, EvStarted: false, EvFinished: false, EvStartedWithoutRSA: false, EvStageInTime: false,
		EvAssigned: false, EvIneligible: true, EvWaitCapacity: false,
		EvBooted: false, EvBootFailed: true, EvBootLost: false,
		EvStagedIn: false, EvStageInFailed: true, EvStageInStopped: false,
		EvMounted: false, EvMountFailed: true,
		EvUnmounted: false, EvUnmountBusy: true,
		EvStagedOut: false, EvStageOutFailed: true,
		EvDestroyed: false, EvDestroyFailed: true,
		EvTick: false, EvResume: false, EvRetry: false, EvDiscard: false,
		EvRamdiskLost: true, EvNodeLost: true,
	}
	for _, k := range declared(t, "EventKind") {
		w, ok := want[EventKind(k)]
		if !ok {
			t.Errorf("event %s: not decided whether it is a failure (add it to want)", k)
			continue
		}
		if got := EventKind(k).IsFailure(); got != w {
			t.Errorf("%s.IsFailure() = %v, want %v", k, got, w)
		}
	}
}

// restingJobs are the jobs Step leaves behind, which the daemon commits:
// every job reachable from a new one (on deck, or adopted running) by any
// sequence of events, with and without input and output, at times before
// and after the switch is due, and with events that name a lost node.
func restingJobs(t *testing.T) []Job {
	var events []Event
	for _, k := range declared(t, "EventKind") {
		for _, at := range []time.Time{t0.Add(time.Second), t0.Add(time.Hour)} {
			e := Event{Kind: EventKind(k), At: at}
			events = append(events, e)
			e.Nodes = []string{"rsa2"}
			events = append(events, e)
			e.Whole = true
			events = append(events, e)
		}
	}
	type key struct {
		js         JobState
		s          RSAState
		in, out, l bool
	}
	seen := map[key]bool{}
	var queue, out []Job
	for _, js := range []JobState{OnDeck, Running} {
		for _, in := range []bool{false, true} {
			for _, outDir := range []bool{false, true} {
				queue = append(queue, Job{State: js, RSA: Initial, HasInput: in, HasOutput: outDir, Delay: 300 * time.Second, StartedAt: t0})
			}
		}
	}
	for len(queue) > 0 {
		j := queue[0]
		queue = queue[1:]
		k := key{j.State, j.RSA, j.HasInput, j.HasOutput, j.NodeLost}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, j)
		for _, e := range events {
			if o := Step(j, e); !o.Ignored {
				queue = append(queue, o.Job)
			}
		}
	}
	return out
}

// TestTimeSensitive: the daemon ticks only time-sensitive jobs, so every
// other job Step leaves behind must be one a tick, at any time, neither
// moves nor starts work for; and each time-sensitive pair is one a tick
// does move, for some job and time.
func TestTimeSensitive(t *testing.T) {
	times := []time.Time{t0.Add(-time.Hour), t0, t0.Add(299 * time.Second), t0.Add(300 * time.Second), t0.Add(24 * time.Hour)}
	type pair struct {
		js JobState
		s  RSAState
	}
	rests := map[pair]bool{}
	for _, j := range restingJobs(t) {
		rests[pair{j.State, j.RSA}] = true
		if TimeSensitive(j) {
			continue
		}
		for _, started := range []time.Time{{}, t0} {
			j.StartedAt = started
			for _, at := range times {
				if o := Step(j, Event{Kind: EvTick, At: at}); len(o.Changes) > 0 || len(o.Actions) > 0 {
					t.Errorf("%s/%s (input %v, output %v, node lost %v) is not time-sensitive, but a tick at %s moves it: %v %v",
						j.State, j.RSA, j.HasInput, j.HasOutput, j.NodeLost, at.Sub(t0), o.Changes, o.Actions)
				}
			}
		}
	}
	// Not vacuous: these wait in place, as the table's "Waits" comments say.
	for _, p := range []pair{{OnDeck, Ready}, {OnDeck, Ineligible}, {OnDeck, Booting}, {Running, InUseOut},
		{Running, UnmountBusy}, {Finished, StagingOut}, {Finished, StageOutFailed}, {Finished, TeardownFailed},
		{Finished, Released}, {Demoted, Released}} {
		if !rests[p] {
			t.Errorf("%s/%s: no Step leaves a job there", p.js, p.s)
		}
	}
	for _, js := range AllJobStates {
		for _, s := range AllRSAStates {
			if !TimeSensitive(Job{State: js, RSA: s}) {
				continue
			}
			moved := false
			for _, at := range times {
				j := Job{State: js, RSA: s, HasInput: true, HasOutput: true, Delay: 300 * time.Second, StartedAt: t0}
				o := Step(j, Event{Kind: EvTick, At: at})
				moved = moved || len(o.Changes) > 0 || len(o.Actions) > 0
			}
			if !moved {
				t.Errorf("%s/%s is time-sensitive, but no tick moves it", js, s)
			}
		}
	}
}

// TestRebuilding: of the build and teardown states, exactly the
// rebuilding ones lead a running job with an output directory to a
// RAMDISK at its output path when every action succeeds, without an
// administrator.
func TestRebuilding(t *testing.T) {
	success := map[ActionKind]EventKind{
		Assign: EvAssigned, Construct: EvBooted, StageIn: EvStagedIn, StopStageIn: EvStageInStopped,
		MountIn: EvMounted, MountOut: EvMounted, Unmount: EvUnmounted, StageOut: EvStagedOut, Destroy: EvDestroyed,
	}
	reachesOutput := func(j Job) bool {
		for range 20 {
			if j.RSA == InUseOut {
				return true
			}
			e := Event{Kind: EvTick, At: t0.Add(time.Hour)}
			if a, ok := Work(j.RSA); ok {
				e.Kind = success[a]
			}
			o := Step(j, e)
			if o.Ignored || len(o.Changes) == 0 && len(o.Actions) == 0 {
				return false // waits for something other than its own work
			}
			j = o.Job
		}
		return false
	}
	for _, s := range AllRSAStates {
		if p := PhaseOf(s); p != PhaseBuild && p != PhaseTeardown {
			continue
		}
		j := Job{State: Running, RSA: s, HasInput: true, HasOutput: true, Delay: 300 * time.Second, StartedAt: t0}
		if got, want := Rebuilding(s), reachesOutput(j); got != want {
			t.Errorf("Rebuilding(%s) = %v, but a running job there reaches INUSE_OUT: %v", s, got, want)
		}
	}
}
