package thesis

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// meter counts, over one job, the bytes through the compute host's link
// (the host's end of its veth, both ways), the machine's CPU time in steal
// and softirq (what, beside the job itself, may have set its pace) and
// each emulated host's CPU time (its processes', those since gone too, as
// the cgroup cpuacct of its own that scripts/cluster-up puts it in counts
// them). A counter that cannot be read counts 0, and a host without
// accounting is left out (rows of a kernel without them say 0 or
// nothing, not fail).
type meter struct {
	link string // the link's statistics directory
	acct string // the hosts' cpuacct cgroups, one directory each
	at   linkCPU
}

type linkCPU struct {
	bytes int64
	cpu   cpuTicks
	hosts map[string]int64 // CPU time by host, in nanoseconds
}

// cpuShare is steal and softirq as percentages of all CPU time.
type cpuShare struct{ steal, softirq float64 }

type cpuTicks struct{ total, steal, softirq int64 }

// reading is what a meter counted.
type reading struct {
	linkBytes int64
	cpu       cpuShare
	hostCPU   map[string]float64 // CPU seconds by emulated host
}

// meter starts counting over c1's link and the cluster's hosts (their
// accounting where scripts/cluster-up makes it for cluster ID).
func (t ClusterT52) meter() *meter {
	m := &meter{link: fmt.Sprintf("/sys/class/net/vrsa%d-c1/statistics", t.ID), acct: fmt.Sprintf("/sys/fs/cgroup/cpuacct/rsa-cluster%d", t.ID)}
	m.at = m.now()
	return m
}

// read is what was counted since the meter started.
func (m *meter) read() reading {
	now := m.now()
	r := reading{linkBytes: now.bytes - m.at.bytes, hostCPU: map[string]float64{}}
	if d := now.cpu.total - m.at.cpu.total; d > 0 {
		r.cpu = cpuShare{steal: 100 * float64(now.cpu.steal-m.at.cpu.steal) / float64(d), softirq: 100 * float64(now.cpu.softirq-m.at.cpu.softirq) / float64(d)}
	}
	for h, ns := range now.hosts {
		if before, ok := m.at.hosts[h]; ok {
			r.hostCPU[h] = float64(ns-before) / 1e9
		}
	}
	return r
}

func (m *meter) now() linkCPU {
	var v linkCPU
	for _, f := range []string{"rx_bytes", "tx_bytes"} {
		if b, err := os.ReadFile(m.link + "/" + f); err == nil {
			n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			v.bytes += n
		}
	}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		v.cpu = parseCPU(string(b))
	}
	v.hosts = map[string]int64{}
	ents, _ := os.ReadDir(m.acct)
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(m.acct, e.Name(), "cpuacct.usage")); err == nil {
			if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
				v.hosts[e.Name()] = n
			}
		}
	}
	return v
}

// parseCPU reads /proc/stat's aggregate cpu line: user nice system idle
// iowait irq softirq steal ... in ticks.
func parseCPU(stat string) cpuTicks {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return cpuTicks{}
	}
	var t cpuTicks
	for i, s := range f[1:] {
		n, _ := strconv.ParseInt(s, 10, 64)
		if i < 8 { // guest and guest_nice are counted in user and nice already
			t.total += n
		}
		switch i {
		case 6:
			t.softirq = n
		case 7:
			t.steal = n
		}
	}
	return t
}
