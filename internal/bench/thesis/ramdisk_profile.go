package thesis

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rsa-hpc/rsa/internal/gluster"
)

// The lines the daemon writes into a job's log as it tears the RAMDISK
// down with cluster.profile on: a head, then an operation a line.
const (
	profileHead    = "RAMDISK profile: the file operations its parts served"
	profileMissing = "RAMDISK profile: not read"
)

var profileLine = regexp.MustCompile(`^\s+([A-Z_]+)\s+(\d+) calls, mean ([\d.]+) ms$`)

// RAMDISKProfile reads the RAMDISK's profile from a job's own log (lines,
// as rsa log gives them): each operation's calls and mean latency at the
// RAMDISK's bricks over its life. The first profile in the log counts (a
// teardown tried again writes another). A log without one, or with the
// daemon's word that it could not read it, is an error.
func RAMDISKProfile(lines string) ([]gluster.FopStat, error) {
	ls := strings.Split(lines, "\n")
	for i, l := range ls {
		if strings.Contains(l, profileMissing) {
			return nil, fmt.Errorf("the job's log: %s", strings.TrimSpace(l))
		}
		if !strings.Contains(l, profileHead) {
			continue
		}
		var out []gluster.FopStat
		for _, op := range ls[i+1:] {
			m := profileLine.FindStringSubmatch(op)
			if m == nil {
				break
			}
			n, err := strconv.ParseInt(m[2], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("the job's log: RAMDISK profile line %q: %w", op, err)
			}
			ms, err := strconv.ParseFloat(m[3], 64)
			if err != nil {
				return nil, fmt.Errorf("the job's log: RAMDISK profile line %q: %w", op, err)
			}
			out = append(out, gluster.FopStat{Op: m[1], Calls: n, Mean: time.Duration(ms * float64(time.Millisecond))})
		}
		return out, nil
	}
	return nil, errors.New("the job's log has no RAMDISK profile: is cluster.profile on in rsa serve's config?")
}
