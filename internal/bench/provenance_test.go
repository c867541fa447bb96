package bench

import (
	"os"
	"strings"
	"testing"
)

func TestRunClock(t *testing.T) {
	c := Begin("v9.9.9-1-gabc")
	for i := 0; i < 1e6; i++ { // a few ticks of CPU time
		_ = strings.Repeat("x", i%64)
	}
	p := c.End()
	host, _ := os.Hostname()
	if p.Host != host || p.Kernel == "" || !strings.Contains(p.CPU, "×") || p.Version != "v9.9.9-1-gabc" {
		t.Errorf("provenance %+v", p)
	}
	if p.Steal < 0 || p.Steal > 100 || p.Load < 0 {
		t.Errorf("steal %.2f%%, load %.2f: out of range", p.Steal, p.Load)
	}
	rows := []Row{{Metric: "a"}, {Metric: "b", Run: &Provenance{Host: "elsewhere"}}}
	Stamp(rows, p)
	if rows[0].Run == nil || rows[0].Run.Host != host || rows[1].Run.Host != "elsewhere" {
		t.Errorf("Stamp: %+v, %+v", rows[0].Run, rows[1].Run)
	}
}
