package cluster_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/api"
	"github.com/rsa-hpc/rsa/internal/job"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// TestNodeRunbooksLong: docs/operations.md's runbooks for an RSA node, in
// order, on one cluster. A node fails for good under a running job (rsa3
// halted: everything on it gone): the job reads its whole input from disk,
// and the node's part of its RAMDISK is a debt. The admin settles it (rsa
// settle), takes the node out of glusterd's pool (gluster peer detach
// NODE force) and out of [[nodes]], and restarts rsa serve: rsa nodes no
// longer lists it, and a job runs on the rest. A new machine takes its
// place (a glusterd that knows no pool): probed into the pool, back in
// [[nodes]], rsa serve restarted, it takes new RAMDISKs. Nothing is left.
func TestNodeRunbooksLong(t *testing.T) {
	u := testutil.EnsureNamedUser(t, testutil.TestUserName()+"-9") // before t.Parallel: useradd takes a lock
	t.Parallel()
	const capacity = "512M"
	c := startCluster(t, "RSA_CLUSTER_ID=8", "RSA_CLUSTER_CAPACITY="+capacity, "RSA_CLUSTER_LEAD=0")
	cluster := func(args ...string) {
		t.Helper()
		if out, err := c.script(t, 2*time.Minute, "cluster-up", args...); err != nil {
			t.Fatalf("cluster-up %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	block := fmt.Sprintf("\n[[nodes]]\nname     = %q\naddress  = %q\ncapacity = %q\n", "rsa3", c.addr("rsa3"), capacity)
	setConfig := func(with bool) {
		t.Helper()
		b, err := os.ReadFile(c.rsaConf)
		if err != nil {
			t.Fatal(err)
		}
		conf := string(b)
		switch has := strings.Contains(conf, block); {
		case has && !with:
			conf = strings.Replace(conf, block, "", 1)
		case !has && with:
			conf = strings.Replace(conf, "\n[[compute]]", block+"\n[[compute]]", 1)
		default:
			t.Fatalf("rsa.toml: rsa3's [[nodes]] there %v, want it %v first", has, !with)
		}
		if err := os.WriteFile(c.rsaConf, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		cluster("restart-rsa")
	}

	// A job reading its input from rsa2 and rsa3.
	c.rsa(t, "drain", "rsa1", "--reason", "placing a job on rsa2 and rsa3")
	w := workDir(t, u, "failed")
	in := filepath.Join(w, "in")
	sums := fill(t, u, in, 40, 64<<10)
	batch := script(t, u, filepath.Join(w, "job.sh"), fmt.Sprintf(`#!/bin/bash
#SBATCH -N 1
#SBATCH -o %[1]s/job.out
#RSA capacity=600M pool=rsa
#RSA_DATA_IN=%[2]s
#RSA_DELAY=3600
(cd %[2]s && sha256sum f*) > %[1]s/insums
touch %[1]s/read
for i in $(seq 3000); do [ -e %[1]s/go ] && break; sleep 0.1; done
(cd %[2]s && sha256sum f*) > %[1]s/resums 2>&1
`, w, in))
	id := c.sbatch(t, u, batch)
	j := c.waitRSA(t, id, 90*time.Second, "INUSE_IN")
	if held := []string{j.Alloc[0].Node, j.Alloc[1].Node}; !slices.Contains(held, "rsa3") {
		t.Fatalf("the job holds %v, not rsa3", held)
	}
	c.rsa(t, "undrain", "rsa1")
	testutil.WaitFor(t, "the job to read its input", 60*time.Second, poll, func() bool {
		_, err := os.Stat(filepath.Join(w, "read"))
		return err == nil
	})

	// rsa3 fails for good: its part becomes a debt, the job reads on from disk.
	cluster("halt", "rsa3")
	testutil.WaitFor(t, "rsa3 down, owed the job's part", 120*time.Second, poll, func() bool {
		n := c.nodes(t)["rsa3"]
		return n.Agent != nil && n.Agent.State == "down" && n.Owed > 0
	})
	letGo(t, w)
	c.waitJob(t, id, 60*time.Second, "COMPLETED")
	c.waitRSA(t, id, 60*time.Second, "RELEASED")
	if got := readFile(t, filepath.Join(w, "resums")); got != sums {
		t.Errorf("after rsa3 failed the job read:\n%s\nwant its whole input:\n%s", got, sums)
	}

	// Settle, detach, take it out of the config.
	if out := c.rsa(t, "settle", "rsa3", "--reason", "mainboard dead, replaced, ticket 4712"); !strings.Contains(out, "rsa3") {
		t.Errorf("rsa settle said %q", out)
	}
	if n := c.nodes(t)["rsa3"]; n.Owed != 0 {
		t.Errorf("rsa3 still owed %d after rsa settle", n.Owed)
	}
	// glusterd detaches no peer that holds bricks, and deletes no volume
	// whose bricks' peer is down: the dead node's bricks leave their
	// volumes first (each volume a job RSA forgot), then the volumes go.
	gluster := func(args ...string) string {
		return c.exec(t, "rsa1", append([]string{"gluster", "--mode=script"}, args...)...)
	}
	brick := regexp.MustCompile(`(?m)^Brick\d+: ((?:rsa3|` + regexp.QuoteMeta(c.addr("rsa3")) + `):\S+)$`)
	for _, v := range strings.Fields(gluster("volume", "list")) {
		for _, m := range brick.FindAllStringSubmatch(gluster("volume", "info", v), -1) {
			t.Logf("volume %s: removing the dead node's brick %s", v, m[1])
			gluster("volume", "remove-brick", v, m[1], "force")
		}
	}
	gluster("peer", "detach", "rsa3", "force")
	testutil.WaitFor(t, "the sweep to delete what the dead node's volumes left", 60*time.Second, poll, func() bool {
		return strings.TrimSpace(gluster("volume", "list")) == "No volumes present in cluster"
	})
	setConfig(false)
	if _, ok := c.nodes(t)["rsa3"]; ok {
		t.Errorf("rsa nodes lists rsa3 after it left [[nodes]]")
	}
	runData(t, c, u, "without rsa3", nil)

	// A new machine in rsa3's place, into the pool and the config.
	cluster("replace", "rsa3")
	c.exec(t, "rsa1", "gluster", "--mode=script", "peer", "probe", "rsa3")
	testutil.WaitFor(t, "rsa3 in the pool", 60*time.Second, poll, func() bool {
		return strings.Contains(c.exec(t, "rsa1", "gluster", "--mode=script", "pool", "list"), "Connected")
	})
	setConfig(true)
	testutil.WaitFor(t, "rsa3 to take new RAMDISKs", 60*time.Second, poll, func() bool {
		n := c.nodes(t)["rsa3"]
		return n.Agent != nil && n.Agent.State == "up" && n.Agent.Unpooled == ""
	})
	c.rsa(t, "drain", "rsa1", "--reason", "placing a job on the new rsa3")
	runData(t, c, u, "on the new rsa3", func(j *api.JobView) {
		if !slices.ContainsFunc(j.Alloc, func(p job.Part) bool { return p.Node == "rsa3" }) {
			t.Errorf("the job holds %+v, not the new rsa3", j.Alloc)
		}
	})
	c.rsa(t, "undrain", "rsa1")
	c.assertNoLeaks(t)
}

// runData runs a job over two RSA nodes that writes data as its output,
// checks what it holds (check, if set), and that its output is staged out
// whole and its RAMDISK released.
func runData(t *testing.T, c *cluster, u testutil.User, name string, check func(*api.JobView)) {
	t.Helper()
	w := workDir(t, u, strings.ReplaceAll(name, " ", "-"))
	id, j := c.dataJob(t, u, w, "#RSA capacity=600M pool=rsa", 1000000)
	if check != nil {
		check(j)
	}
	letGo(t, w)
	c.waitJob(t, id, 60*time.Second, "COMPLETED")
	c.waitRSA(t, id, 90*time.Second, "RELEASED")
	checkData(t, w)
}
