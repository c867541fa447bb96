package live

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"

	"github.com/rsa-hpc/rsa/internal/api"
)

// Jobs runs bin status --all --json with the daemon's config and
// returns every job it lists.
func Jobs(ctx context.Context, bin, config string) ([]api.JobView, error) {
	out, err := exec.CommandContext(ctx, bin, "--config", config, "status", "--all", "--json").Output()
	if err != nil {
		return nil, fmt.Errorf("rsa status: %w", err)
	}
	var r struct{ Jobs []api.JobView }
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("rsa status: %w", err)
	}
	return r.Jobs, nil
}

// Newest is RSA's newest record among jobs of each of the Slurm jobs
// ids (a job's name is its Slurm id), or with no ids, of every job; a job
// RSA has no record of is missing from the map.
func Newest(jobs []api.JobView, ids ...string) map[string]*api.JobView {
	found := map[string]*api.JobView{}
	for i := range jobs {
		j := &jobs[i]
		if len(ids) > 0 && !slices.Contains(ids, j.Spec.SchedulerID) {
			continue
		}
		if old := found[j.Spec.SchedulerID]; old == nil || j.ID > old.ID {
			found[j.Spec.SchedulerID] = j
		}
	}
	return found
}
