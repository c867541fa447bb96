package thesis

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/gluster"
)

// RAMDISKProfile reads the RAMDISK's profile from a job's own log (lines,
// as rsa log gives them), where the daemon wrote it at the teardown with
// cluster.profile on: each operation's calls and mean latency at the
// RAMDISK's bricks over its life (engine.ParseProfile). A log without
// one, or with the daemon's word that it could not read it, is an error.
func RAMDISKProfile(lines string) ([]gluster.FopStat, error) {
	ops, err := engine.ParseProfile(strings.Split(lines, "\n"))
	if errors.Is(err, engine.ErrNoProfile) {
		return nil, fmt.Errorf("%w: is cluster.profile on in rsa serve's config?", err)
	}
	if err != nil {
		return nil, err
	}
	fops := make([]gluster.FopStat, len(ops))
	for i, o := range ops {
		fops[i] = gluster.FopStat{Op: o.Op, Calls: o.Calls, Mean: o.Mean}
	}
	return fops, nil
}
