package thesis

import (
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/gluster"
)

func TestRAMDISKProfile(t *testing.T) {
	// As the daemon writes it (action.destroy's noteProfile), after a
	// stage-out's lines, and a second teardown's profile after it.
	log := `2026-12-04T15:00:01Z stage-out: 2048 files, 2.0 GiB
2026-12-04T15:00:02Z RAMDISK profile: the file operations its parts served, from its start to its teardown
  WRITE             16384 calls, mean 0.052 ms
  CREATE             2048 calls, mean 0.213 ms
2026-12-04T15:00:03Z RAMDISK destroyed
2026-12-04T15:00:04Z RAMDISK profile: the file operations its parts served, from its start to its teardown
  WRITE                 1 calls, mean 9.000 ms
`
	got, err := RAMDISKProfile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := []gluster.FopStat{{Op: "WRITE", Calls: 16384, Mean: 52 * time.Microsecond}, {Op: "CREATE", Calls: 2048, Mean: 213 * time.Microsecond}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i, w := range want {
		if g := got[i]; g.Op != w.Op || g.Calls != w.Calls || (g.Mean-w.Mean).Abs() > time.Microsecond {
			t.Errorf("%s = %+v, want %+v", w.Op, g, w)
		}
	}
	for _, tc := range []struct{ name, log, want string }{
		{"none", "2026-12-04T15:00:01Z stage-out: done\n", "no RAMDISK profile"},
		{"not read", "2026-12-04T15:00:02Z RAMDISK profile: not read (rsa2: connection refused)\n", "connection refused"},
	} {
		if _, err := RAMDISKProfile(tc.log); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}
