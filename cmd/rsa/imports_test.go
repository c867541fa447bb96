package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// The product binary links none of the lab: the benchmarks, the simulator
// and the plotting libraries they use build into rsa-lab alone. The graph
// is go list's, so build constraints and third-party modules count as they
// do in the build.
func TestProductLinksNoLab(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command lists rsa's imports: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps: %v\n%s", err, stderr)
	}
	forbidden := []string{
		"github.com/rsa-hpc/rsa/internal/bench",
		"github.com/rsa-hpc/rsa/internal/sim",
		"gonum.org/",
	}
	deps := strings.Fields(string(out))
	for _, dep := range deps {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, strings.TrimSuffix(f, "/")+"/") {
				t.Errorf("rsa imports %s: it belongs in rsa-lab (go list -deps ./cmd/rsa shows the path)", dep)
			}
		}
	}
	// A listing that lost rsa's own packages proved nothing.
	if len(deps) < 50 || !strings.Contains(string(out), "github.com/rsa-hpc/rsa/internal/daemon\n") {
		t.Fatalf("go list -deps listed %d packages, without internal/daemon:\n%s", len(deps), out)
	}
}
