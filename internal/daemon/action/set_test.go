package action_test

import (
	"slices"
	"testing"

	"github.com/rsa-hpc/rsa/internal/daemon/action"
	"github.com/rsa-hpc/rsa/internal/lifecycle"
)

// The set holds every action of the lifecycle's but the daemon's own
// bookkeeping (Assign, StopStageIn), each under its own kind.
func TestSet(t *testing.T) {
	want := []lifecycle.ActionKind{lifecycle.Construct, lifecycle.StageIn, lifecycle.MountIn, lifecycle.MountOut,
		lifecycle.Unmount, lifecycle.StageOut, lifecycle.Destroy}
	set := action.Set(&action.Env{})
	var got []lifecycle.ActionKind
	for k, a := range set {
		got = append(got, k)
		if a.Kind() != k {
			t.Errorf("the action under %s is %s's", k, a.Kind())
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the set holds %v; want %v", got, want)
	}
}
