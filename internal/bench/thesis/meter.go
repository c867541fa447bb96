package thesis

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// meter counts, over one job, the bytes through the compute host's link
// (the host's end of its veth, both ways) and the machine's CPU time in
// steal and softirq: what, beside the job itself, may have set its pace.
// A counter that cannot be read counts 0 (rows of a kernel without it
// say 0, not fail).
type meter struct {
	link string // the link's statistics directory
	at   linkCPU
}

type linkCPU struct {
	bytes int64
	cpu   cpuTicks
}

// cpuShare is steal and softirq as percentages of all CPU time.
type cpuShare struct{ steal, softirq float64 }

type cpuTicks struct{ total, steal, softirq int64 }

// meter starts counting over c1's link.
func (t ClusterT52) meter() *meter {
	m := &meter{link: fmt.Sprintf("/sys/class/net/vrsa%d-c1/statistics", t.ID)}
	m.at = m.now()
	return m
}

// read is the bytes and CPU shares since the meter started.
func (m *meter) read() (int64, cpuShare) {
	now := m.now()
	d := now.cpu.total - m.at.cpu.total
	var s cpuShare
	if d > 0 {
		s = cpuShare{steal: 100 * float64(now.cpu.steal-m.at.cpu.steal) / float64(d), softirq: 100 * float64(now.cpu.softirq-m.at.cpu.softirq) / float64(d)}
	}
	return now.bytes - m.at.bytes, s
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
