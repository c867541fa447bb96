package target

import (
	"testing"
	"time"
)

// The shape of what gluster volume profile info incremental prints, with
// two bricks: each interval's operations summed, latencies weighted, in
// microseconds (before GlusterFS 10) or nanoseconds (10 and 11).
const profileOut = `Brick: srv:/bricks/a
---------------------
Interval 3 Stats:
   Block Size:              65536b+             131072b+ 
 No. of Reads:                    0                    0 
No. of Writes:                    4                 2048 
 %-latency   Avg-latency   Min-Latency   Max-Latency   No. of calls         Fop
 ---------   -----------   -----------   -----------   ------------        ----
      0.00       0.00 us       0.00 us       0.00 us           2048     RELEASE
      5.33     200.00 us      45.00 us    6031.00 us           2048      CREATE
     60.10     300.50 us      20.00 us    9000.00 us           2052       WRITE
 
    Duration: 19 seconds
   Data Read: 0 bytes
Data Written: 2147483648 bytes
 
Brick: srv:/bricks/b
---------------------
Interval 3 Stats:
 %-latency   Avg-latency   Min-Latency   Max-Latency   No. of calls         Fop
 ---------   -----------   -----------   -----------   ------------        ----
      1.00  100000.00 ns   45000.00 ns  200000.00 ns           2048      CREATE
 
    Duration: 19 seconds
`

func TestParseProfile(t *testing.T) {
	got, err := parseProfile(profileOut)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]FopStat{
		"RELEASE": {2048, 0},
		"CREATE":  {4096, 150 * time.Microsecond},
		"WRITE":   {2052, 300500 * time.Nanosecond},
	}
	if len(got) != len(want) {
		t.Errorf("%d operations %v, want %d", len(got), got, len(want))
	}
	for op, w := range want {
		if g := got[op]; g != w {
			t.Errorf("%s: %+v, want %+v", op, g, w)
		}
	}
	// The cumulative table (profile info without incremental) is not an
	// interval's: none of it counts.
	cum, err := parseProfile("Brick: srv:/b\nCumulative Stats:\n      5.33     200.00 us      45.00 us    6031.00 us           2048      CREATE\n")
	if err != nil || len(cum) != 0 {
		t.Errorf("cumulative stats read as an interval: %v, %v", cum, err)
	}
	if none, err := parseProfile("Brick: srv:/b\nInterval 4 Stats:\n    Duration: 1 seconds\n"); err != nil || len(none) != 0 {
		t.Errorf("an idle interval: %v, %v", none, err)
	}
}
