package cluster_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// testUp: the emulated cluster came up whole: the RSA hosts form one
// trusted pool, the compute hosts are idle Slurm nodes, each host has its
// own name, and a user's job runs on both compute hosts. Run first on a
// cluster no job has used yet (every compute host idle); it holds with rsa
// serve up or not, so it needs no cluster of its own.
func testUp(t *testing.T, c *cluster, u testutil.User) {
	for _, h := range c.storage {
		if n := c.connectedPeers(t, h); n != len(c.storage) {
			t.Errorf("gluster pool list on %s: %d connected peers, want %d", h, n, len(c.storage))
		}
	}
	if got := c.idleNodes(t); !slices.Equal(got, c.compute) {
		t.Errorf("idle nodes: %v, want %v", got, c.compute)
	}
	for _, h := range append(append([]string{"ctl"}, c.storage...), c.compute...) {
		if got := c.exec(t, h, "hostname"); got != h {
			t.Errorf("hostname on %s: %q", h, got)
		}
	}

	w := workDir(t, u, "up")
	out := filepath.Join(w, "hostname.%j.out")
	id := c.sbatch(t, u, "-N", "2", "-o", out, "--wrap", "srun hostname")
	c.waitJob(t, id, 60*time.Second, "COMPLETED")
	b, err := os.ReadFile(strings.ReplaceAll(out, "%j", id))
	if err != nil {
		t.Fatal(err)
	}
	hosts := strings.Fields(string(b))
	slices.Sort(hosts)
	if !slices.Equal(hosts, c.compute) {
		t.Errorf("srun hostname in a job of 2 nodes printed %q, want %v", b, c.compute)
	}
}
