package agent

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/stage"
)

// A stage request carries the limits its stage is held to (security issue
// 41, findings 1 and 8); one without them, or with limits no stage can
// have, is refused before anything is mounted or started.
func TestStageRequestLimits(t *testing.T) {
	good := StageRequest{Phase: "stage-in", UID: 1000, GID: 1000, User: "alice", Home: "/home/alice", Data: "/scratch/in", Servers: []string{"10.0.0.11"}}
	for _, c := range []struct {
		name   string
		limits *StageLimits
		want   string // "" for accepted
	}{
		{"the defaults", &StageLimits{Memory: 4 << 30, Pids: 1024, CPU: 2000, Network: stage.NetworkNone}, ""},
		{"no limit of any kind, the host's network", &StageLimits{Network: stage.NetworkHost}, ""},
		{"the smallest CPU share", &StageLimits{CPU: 10, Network: stage.NetworkNone}, ""},
		{"none at all", nil, "carries no limits"},
		{"negative memory", &StageLimits{Memory: -1, Network: stage.NetworkNone}, "negative"},
		{"negative pids", &StageLimits{Pids: -1, Network: stage.NetworkNone}, "negative"},
		{"negative CPU", &StageLimits{CPU: -1, Network: stage.NetworkNone}, "negative"},
		{"too little CPU", &StageLimits{CPU: 9, Network: stage.NetworkNone}, "below the kernel's smallest"},
		{"no network named", &StageLimits{}, `stage network ""`},
		{"an unknown network", &StageLimits{Network: "bridge"}, `stage network "bridge"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := good
			req.Limits = c.limits
			err := req.check()
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want ErrInvalid saying %q", err, c.want)
			}
		})
	}
}

// A stage request may bound the stage-out's wait for this node's client
// (cluster.whole_settle); 0 is the agent's own default, and a wait no
// config allows is refused.
func TestStageRequestWholeSettle(t *testing.T) {
	good := StageRequest{Phase: "stage-out", UID: 1000, GID: 1000, User: "alice", Home: "/home/alice", Data: "/scratch/out",
		Servers: []string{"10.0.0.11"}, Limits: &StageLimits{Network: stage.NetworkNone}}
	for _, c := range []struct {
		settle time.Duration
		want   string // "" for accepted
	}{
		{0, ""},
		{3 * time.Second, ""},
		{maxWholeSettle, ""},
		{-time.Second, "whole_settle -1s is not 0 to 5m0s"},
		{maxWholeSettle + 1, "whole_settle 5m0.000000001s is not 0 to 5m0s"},
	} {
		req := good
		req.WholeSettle = c.settle
		err := req.check()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("whole_settle %v refused: %v", c.settle, err)
		case c.want != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("whole_settle %v: %v, want ErrInvalid saying %q", c.settle, err, c.want)
		}
	}
}
