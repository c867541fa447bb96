package slurm

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// TestHookLatencyLong: the hooks slurmctld runs under its locks
// (job_process at every submission, paths at every start, pools every few
// seconds), as slurmctld's own log times them, under a burst of
// submissions: once with burst_buffer.lua asking the daemon over its
// socket (lua-socket), once starting rsa slurm-bb for every hook. The
// numbers are printed, not asserted; what is asserted is that each way was
// the one taken. RSA_HOOK_BURST sets the burst (default 100; make
// test-load: 500). RSA_HOOK_FLOOR=1 (make test-load) adds a third way, the
// floor: a burst_buffer.lua whose hooks return at once, which is what
// slurmctld's own Lua call costs under the same burst on this machine.
//
// It is a measurement, not a check make test needs: its name ends in
// Long, so only make test-long and make test-load run it
// (scripts/go-test.sh). What it asserts, make test asserts elsewhere:
// TestBurstBuffer's lifecycle (assertHooksCounted) finds job_process,
// paths and pools counted via=lua-socket, and the hooks that go through
// rsa slurm-bb counted via=rsa; internal/api's
// TestBurstBufferLuaOverTheSocket finds that burst_buffer.lua asks over
// the socket, and falls back to rsa slurm-bb with the same arguments when
// the socket does not answer.
func TestHookLatencyLong(t *testing.T) {
	burst := 100
	if v := os.Getenv("RSA_HOOK_BURST"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10 {
			t.Fatalf("RSA_HOOK_BURST=%q: give a number of at least 10", v)
		}
		burst = n
	}
	ways := []struct{ name, env, via string }{
		{"lua-socket", "RSA_SLURM_LUA_SOCKET=1", "lua-socket"},
		{"process", "RSA_SLURM_LUA_SOCKET=0", "rsa"},
	}
	if os.Getenv("RSA_HOOK_FLOOR") == "1" {
		ways = append(ways, struct{ name, env, via string }{"floor", "RSA_SLURM_LUA_SOCKET=1", ""})
	}
	for _, way := range ways {
		t.Run(way.name, func(t *testing.T) {
			c := startCluster(t, "bb", 2, way.env, "RSA_SLURM_CAPACITY=2G")
			if way.via == "" {
				// slurmctld 22.05 loads the script at every call.
				if err := os.WriteFile(filepath.Join(c.dir, "etc", "burst_buffer.lua"), []byte(floorLua), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			lat := c.hookBurst(burst, way.via != "")
			for _, hook := range []string{"job_process", "paths", "pools"} {
				ds := lat[hook]
				if len(ds) == 0 {
					t.Errorf("slurmctld's log timed no %s", hook)
					continue
				}
				slices.Sort(ds)
				q := func(p float64) time.Duration { return ds[min(len(ds)-1, int(float64(len(ds))*p))] }
				t.Logf("hook latency: way=%s hook=%s n=%d p50=%s p99=%s max=%s", way.name, hook, len(ds), q(.5), q(.99), ds[len(ds)-1])
			}
			if way.via == "" {
				return
			}
			// The metrics say which way each hook came.
			b := c.metrics()
			for _, hook := range []string{"job_process", "paths", "pools"} {
				labels := `{hook="` + hook + `",via="` + way.via + `"}`
				sum, count := metricValue(b, "rsa_slurm_hook_duration_seconds_sum"+labels), metricValue(b, "rsa_slurm_hook_duration_seconds_count"+labels)
				if count == 0 {
					t.Errorf("no rsa_slurm_hook_duration_seconds_count%s in the metrics: the hooks did not come the way they should", labels)
					continue
				}
				t.Logf("hook latency: way=%s hook=%s the daemon's own part: mean=%s over %d", way.name, hook,
					time.Duration(sum/count*float64(time.Second)).Round(time.Microsecond), int(count))
			}
		})
	}
}

// metricValue is the value of one series in Prometheus' text format, or 0.
func metricValue(text, series string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// ctldTiming is slurmctld's line for one Lua hook (DebugFlags=BurstBuffer):
// "slurm_bb_job_process ran for usec=1234" (a job's hooks name the job:
// "for JobId=7", on 23.11 "for job JobId=7").
var ctldTiming = regexp.MustCompile(`slurm_bb_(job_process|paths|pools)(?: for (?:job )?JobId=\d+)? ran for usec=(\d+)`)

// floorLua is a burst_buffer.lua that does nothing: every hook returns
// success at once (pools a fixed pool of RSA's name and the cluster's
// 2G), so jobs run without RSA.
const floorLua = `function slurm_bb_job_process() return slurm.SUCCESS end
function slurm_bb_pools() return slurm.SUCCESS, '{"pools":[{"id":"rsa","granularity":1048576,"quantity":2048,"free":2048}]}' end
function slurm_bb_paths() return slurm.SUCCESS end
function slurm_bb_setup() return slurm.SUCCESS end
function slurm_bb_data_in() return slurm.SUCCESS end
function slurm_bb_test_data_in() return slurm.SUCCESS, "" end
function slurm_bb_real_size() return slurm.SUCCESS end
function slurm_bb_pre_run() return slurm.SUCCESS end
function slurm_bb_post_run() return slurm.SUCCESS end
function slurm_bb_data_out() return slurm.SUCCESS end
function slurm_bb_test_data_out() return slurm.SUCCESS, "" end
function slurm_bb_job_teardown() return slurm.SUCCESS end
function slurm_bb_get_status() return slurm.SUCCESS, "" end
`

// hookBurst submits n RSA jobs at once from several processes, held, lets
// a few run (paths is called at a job's start), cancels the rest, and
// returns the hooks' latencies from slurmctld's log. rsa says whether RSA
// serves the hooks (the jobs' RAMDISKs are then released at the end).
func (c *cluster) hookBurst(n int, rsa bool) map[string][]time.Duration {
	out := c.mkdir("out")
	script := c.file("burst.sh", fmt.Sprintf("#!/bin/bash\n#SBATCH -N 1\n#RSA capacity=8M pool=rsa\n#RSA_DATA_OUT=%s\n#RSA_DELAY=0\necho $SLURM_JOB_ID > %[1]s/$SLURM_JOB_ID\n", out), 0o755)
	ids := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				o, err := c.asUser("sbatch", "--parsable", "-H", "-o", "/dev/null", script)
				if err != nil {
					errs <- fmt.Errorf("sbatch %d: %v: %s", i, err, o)
					continue
				}
				ids[i] = strings.TrimSpace(strings.Split(o, ";")[0])
			}
		}()
	}
	began := time.Now()
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	c.t.Logf("hook burst: %d submissions in %s", n, time.Since(began).Round(time.Millisecond))
	close(errs)
	for err := range errs {
		c.t.Fatal(err)
	}

	run := ids[:10]
	c.root("scontrol", "release", strings.Join(run, ","))
	for _, id := range run {
		c.waitJob(id, 120*time.Second, "COMPLETED")
	}
	c.root("scancel", "-u", c.user.Name)
	testutil.WaitFor(c.t, "the cancelled burst to leave the queue", 120*time.Second, poll, func() bool {
		return strings.TrimSpace(c.root("squeue", "-h", "-u", c.user.Name)) == ""
	})
	for _, id := range run {
		if b, err := os.ReadFile(filepath.Join(out, id)); err != nil || strings.TrimSpace(string(b)) != id {
			c.t.Errorf("job %s's output: %q, %v", id, b, err)
		}
	}
	for _, id := range run {
		if rsa {
			c.waitRSA(id, 60*time.Second, "RELEASED")
		}
	}
	c.assertNoLeaks()

	log, err := os.ReadFile(filepath.Join(c.dir, "log", "slurmctld.log"))
	if err != nil {
		c.t.Fatal(err)
	}
	lat := map[string][]time.Duration{}
	for _, m := range ctldTiming.FindAllStringSubmatch(string(log), -1) {
		us, _ := strconv.Atoi(m[2])
		lat[m[1]] = append(lat[m[1]], time.Duration(us)*time.Microsecond)
	}
	return lat
}
