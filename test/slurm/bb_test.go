package slurm

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Scripts of the user's: staging programs and what each compute node runs.
const (
	slowIn = `#!/bin/bash
# $1 RAMDISK, $2 input: slow enough for the test to see the stage-in.
sleep "${RSA_TEST_IN_DELAY:-2}"
cp -a "$2"/. "$1"/
`
	heldOut = `#!/bin/bash
# $1 RAMDISK, $2 output: waits for the test's go-ahead, then copies.
for _ in $(seq 600); do [[ -e "$(dirname "$2")/release-out" ]] && break; sleep 0.1; done
cp -a "$1"/. "$2"/
`
	nodeCheck = `#!/bin/bash
# On each compute node: is the input a tmpfs mount, and what does it hold?
set -u
fs=$(findmnt -n -o FSTYPE --mountpoint "$1" || echo none)
sum=$(cd "$1" && cat $(ls) | sha256sum | cut -d' ' -f1)
echo "$fs $sum" > "$2/seen-$SLURMD_NODENAME"
`
	nodeWrite = `#!/bin/bash
# On each compute node: write output into the RAMDISK at the output path.
set -u
fs=$(findmnt -n -o FSTYPE --mountpoint "$1" || echo none)
echo "$fs from $SLURMD_NODENAME" > "$1/$SLURMD_NODENAME"
`
)

// input fills dir with n files of the user's and returns the sha256 of
// their concatenation in name order.
func (c *cluster) input(dir string, n int) string {
	c.t.Helper()
	h := sha256.New()
	for i := range n {
		b := []byte(strings.Repeat(fmt.Sprintf("file %d of the input\n", i), 4000))
		p := filepath.Join(dir, fmt.Sprintf("f%02d", i))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			c.t.Fatal(err)
		}
		os.Chown(p, int(c.user.UID), int(c.user.GID))
		h.Write(b)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func TestBurstBuffer(t *testing.T) {
	c := startCluster(t, "bb", 2)
	t.Run("lifecycle", func(t *testing.T) { testLifecycle(c.in(t)) })
}

// testLifecycle: a two-node job reads its input from RAM on both nodes,
// writes its output into RAM, and its output reaches the disk after the
// job, while its nodes already run the next job.
func testLifecycle(c *cluster) {
	in, out := c.mkdir("in"), c.mkdir("out")
	sum := c.input(in, 20)
	w := c.work
	c.file("slow-in.sh", slowIn, 0o755)
	c.file("held-out.sh", heldOut, 0o755)
	c.file("node-check.sh", nodeCheck, 0o755)
	c.file("node-write.sh", nodeWrite, 0o755)
	id := c.sbatch("job.sh", fmt.Sprintf(`#!/bin/bash
#SBATCH -N 2
#RSA_DATA_IN=%[1]s
#RSA_STAGE_IN=%[3]s/slow-in.sh
#RSA_DATA_OUT=%[2]s
#RSA_STAGE_OUT=%[3]s/held-out.sh
#RSA_DELAY=2
echo "RSA_RAMDISK=$RSA_RAMDISK"
srun -N2 %[3]s/node-check.sh %[1]s %[3]s
sleep 4
srun -N2 %[3]s/node-write.sh %[2]s
`, in, out, w))

	// While it stages in, Slurm says so and bbstat shows RSA's progress.
	seen := map[string]bool{}
	var bbstat string
	c.waitFor("the job to start", 60*time.Second, func() bool {
		st, reason := c.job(id)
		seen[reason] = true
		if reason == "BurstBufferStageIn" && bbstat == "" {
			bbstat = c.root("scontrol", "show", "bbstat", id)
		}
		return st != "PENDING"
	})
	if !seen["BurstBufferStageIn"] {
		c.t.Errorf("squeue never showed BurstBufferStageIn while staging; reasons seen: %v", seen)
	}
	if !strings.Contains(bbstat, id) || !strings.Contains(bbstat, "STAGING_IN") {
		c.t.Errorf("scontrol show bbstat %s during stage-in said:\n%s", id, bbstat)
	}

	// After the job: its nodes are free while RSA still stages out.
	c.waitRSA(id, 60*time.Second, "STAGING_OUT")
	next := c.sbatch("next.sh", "#!/bin/bash\n#SBATCH -N 2\nsrun -N2 true\n")
	c.waitJob(next, 30*time.Second, "COMPLETED")
	if j := c.rsaJob(id); string(j.RSA) != "STAGING_OUT" {
		c.t.Fatalf("the next job ran, but RSA's job is %s, not still STAGING_OUT", j.RSA)
	}
	if _, err := os.Stat(filepath.Join(out, "n1")); err == nil {
		c.t.Fatal("output on disk before stage-out copied it")
	}
	c.file("release-out", "", 0o644)
	c.waitRSA(id, 30*time.Second, "RELEASED")
	c.waitJob(id, 30*time.Second, "COMPLETED")

	for _, n := range []string{"n1", "n2"} {
		got, err := os.ReadFile(filepath.Join(w, "seen-"+n))
		if want := "tmpfs " + sum + "\n"; err != nil || string(got) != want {
			c.t.Errorf("compute node %s saw its input as %q (err %v), want %q", n, got, err, want)
		}
		got, err = os.ReadFile(filepath.Join(out, n))
		if want := "tmpfs from " + n + "\n"; err != nil || string(got) != want {
			c.t.Errorf("output of %s on disk: %q (err %v), want %q", n, got, err, want)
		}
	}
	if o := c.output("job.sh", id); !strings.Contains(o, "RSA_RAMDISK=/") {
		c.t.Errorf("the job's environment has no RSA_RAMDISK:\n%s", o)
	}
	c.assertNoLeaks()
}
