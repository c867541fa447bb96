package bench

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Provenance is where a row was measured and what else took the machine
// meanwhile: its host, kernel and CPU, the version (and so the commit) of
// the lab that measured it, the share of CPU time the hypervisor took
// from this guest during the run (steal), and the load when it began. A
// ratio means something only between rows of the same machine, measured
// alike; steal and load say whether a row's machine was busy elsewhere.
type Provenance struct {
	Host    string  `json:"host"`
	Kernel  string  `json:"kernel"`
	CPU     string  `json:"cpu,omitempty"` // "2 × Intel(R) Xeon(R) Processor"
	Version string  `json:"version"`       // rsa-lab's, as git describe gives it
	Steal   float64 `json:"steal_pct"`     // % of the CPU time of the run
	Load    float64 `json:"load"`          // 1-minute load average at the start
}

func (p Provenance) String() string {
	return fmt.Sprintf("%s, Linux %s, %s, rsa-lab %s; steal %.1f%%, load %.2f at the start", p.Host, p.Kernel, p.CPU, p.Version, p.Steal, p.Load)
}

// RunClock measures one run's provenance from Begin to End.
type RunClock struct {
	p     Provenance
	start cpuTimes
	err   error
}

// Begin starts measuring a run of the lab at version.
func Begin(version string) *RunClock {
	c := &RunClock{p: Provenance{Version: version, CPU: CPUModel()}}
	c.p.Host, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		c.p.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			c.p.Load, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	c.start, c.err = readCPUTimes()
	return c
}

// End is the run's provenance; its steal is -1 when /proc/stat could not
// be read.
func (c *RunClock) End() Provenance {
	p := c.p
	end, err := readCPUTimes()
	if c.err != nil || err != nil {
		p.Steal = -1
		return p
	}
	if total := end.total - c.start.total; total > 0 {
		p.Steal = 100 * float64(end.steal-c.start.steal) / float64(total)
	}
	return p
}

// Stamp sets p on every row that has no provenance of its own.
func Stamp(rows []Row, p Provenance) {
	for i := range rows {
		if rows[i].Run == nil {
			rows[i].Run = &p
		}
	}
}

// cpuTimes are the machine's CPU times, in ticks, from /proc/stat's cpu
// line: all of them (user to steal; guest time is inside user), and steal.
type cpuTimes struct{ total, steal uint64 }

func readCPUTimes() (cpuTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return cpuTimes{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var t cpuTimes
	for i, s := range f[1:9] { // user nice system idle iowait irq softirq steal
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return cpuTimes{}, fmt.Errorf("/proc/stat: %q: %w", line, err)
		}
		t.total += n
		if i == 7 {
			t.steal = n
		}
	}
	return t, nil
}

// CPUModel is the CPU's count and model, as /proc/cpuinfo names it.
func CPUModel() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%d × %s", runtime.NumCPU(), model)
}
