package thesis

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/engine"
	"github.com/rsa-hpc/rsa/internal/gluster"
)

func TestRAMDISKProfile(t *testing.T) {
	// As the daemon writes it (action.destroy's noteProfile).
	log := strings.Join([]string{
		"2026-12-04T15:00:01Z stage-out: 2048 files, 2.0 GiB",
		"2026-12-04T15:00:02Z " + engine.ProfileHead,
		engine.OpStat{Op: "WRITE", Calls: 16384, Mean: 52 * time.Microsecond}.LogLine(),
		engine.OpStat{Op: "CREATE", Calls: 2048, Mean: 213 * time.Microsecond}.LogLine(),
		"2026-12-04T15:00:03Z RAMDISK destroyed",
	}, "\n")
	got, err := RAMDISKProfile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := []gluster.FopStat{{Op: "WRITE", Calls: 16384, Mean: 52 * time.Microsecond}, {Op: "CREATE", Calls: 2048, Mean: 213 * time.Microsecond}}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if _, err := RAMDISKProfile("2026-12-04T15:00:01Z stage-out: done\n"); err == nil || !strings.Contains(err.Error(), "cluster.profile") {
		t.Errorf("a log without a profile: %v, want an error naming the setting that writes it", err)
	}
}
