package sim

import (
	"fmt"
	"math"
)

// eraFactor is how far past the thesis testbed's (2008) link and file
// system speeds a parameter may go before a mover left at that testbed's
// rsync rate is taken for a mix of eras.
const eraFactor = 10

// Warnings says what in c makes its answer untrustworthy for a site,
// one sentence each naming the flags: a mover at less than half the rate
// the file system serves one client (RSA's staging then can hardly win
// back the I/O the jobs wait for; the thesis' rsync was about as fast as
// its file system, and won on creates), and
// a machine of today's speeds with the thesis' 2008 rsync as its mover
// (a mover within 1 % of that rsync's rate: the flags print it rounded).
// A preset alone (Presets) draws none; a preset mixed with flags of
// another era does.
func (c Config) Warnings() []string {
	var out []string
	fs := c.FS.Bandwidth
	if c.FS.NodeBandwidth > 0 && c.FS.NodeBandwidth < fs {
		fs = c.FS.NodeBandwidth // one client's share: what one mover could get
	}
	for _, m := range []struct {
		flag string
		rate float64
	}{{"--stage-in-rate", c.RSA.StageInRate}, {"--stage-out-rate", c.RSA.StageOutRate}} {
		if m.rate > 0 && fs > 0 && m.rate < fs/2 {
			out = append(out, fmt.Sprintf("the mover (%s %s) copies at less than half the rate the file system serves one client (%s): RSA's staging can hardly beat the jobs' own I/O here; measure your mover (make bench-copy) and give its rate",
				m.flag, FormatRate(m.rate), FormatRate(fs)))
		}
	}
	def := Defaults()
	thesisMover := near(c.RSA.StageInRate, def.RSA.StageInRate) && near(c.RSA.StageOutRate, def.RSA.StageOutRate)
	for _, p := range []struct {
		flag      string
		got, then float64
	}{
		{"--fs-bandwidth", c.FS.Bandwidth, def.FS.Bandwidth},
		{"--fs-node-bandwidth", c.FS.NodeBandwidth, def.FS.NodeBandwidth},
		{"--rsa-link", c.RSA.Link, def.RSA.Link},
	} {
		if thesisMover && p.then > 0 && p.got >= eraFactor*p.then {
			out = append(out, fmt.Sprintf("%s %s is today's speed, but --stage-in-rate and --stage-out-rate are still the thesis' 2008 rsync (%s): a mix of eras; give your mover's measured rates",
				p.flag, FormatRate(p.got), FormatRate(def.RSA.StageOutRate)))
			break
		}
	}
	return out
}

// near reports whether a is within 1 % of b.
func near(a, b float64) bool { return math.Abs(a-b) <= math.Abs(b)/100 }
