// Package bench runs every rsa-lab bench benchmark once, through the binary,
// as a test of the tools: each must run to the end on real targets, report
// well-formed rows beside the seeds' numbers, and leave nothing up. It
// asserts nothing about speed. make test runs each at a small size (fewer
// ranks, files, bytes and grid points: the same code end to end); the long
// run (make test-long, testutil.Long) runs the quick profiles at their own
// sizes.
package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/bench"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// labBin is rsa-lab, with the product's rsa beside it: the binary the
// thesis' jobs run through.
var labBin string

func TestMain(m *testing.M) { testutil.RunWithLab(m, &labBin) }

// run runs rsa-lab bench with args and --json, and returns its rows. The
// targets it brought up are taken down when the test ends.
func run(t *testing.T, args ...string) []bench.Row {
	t.Helper()
	testutil.RequireRoot(t)
	t.Cleanup(func() {
		if out, err := testutil.Command(t, labBin, "bench", "target", "down", "ram", "shared@1g").CombinedOutput(); err != nil {
			t.Errorf("rsa-lab bench target down: %v\n%s", err, out)
		}
	})
	var stdout, stderr bytes.Buffer
	// A benchmark's runs take minutes on a loaded machine (make test runs
	// test/cluster beside this package): the limit only ends a hung one.
	cmd := testutil.CommandWithin(t, 10*time.Minute, labBin, append(append([]string{"bench"}, args...), "--json")...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("rsa-lab bench %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	t.Logf("rsa-lab bench %s:\n%s", strings.Join(args, " "), stderr.String())
	var rows []bench.Row
	dec := json.NewDecoder(&stdout)
	for {
		var r bench.Row
		if err := dec.Decode(&r); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("rsa-lab bench %s --json printed a line that is not a row: %v", strings.Join(args, " "), err)
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		t.Fatalf("rsa-lab bench %s printed no rows", strings.Join(args, " "))
	}
	return rows
}

// leavesNoHome checks, when the test ends, that the benchmarks' homes
// (bench.StateHome, bench.RunHome) are gone if they were not there when
// it began: every part removes its own directory, the last one out the
// home. Called first, its check runs after every other cleanup.
func leavesNoHome(t *testing.T) {
	t.Helper()
	var absent []string
	for _, d := range []string{bench.StateHome, bench.RunHome} {
		if _, err := os.Stat(d); errors.Is(err, os.ErrNotExist) {
			absent = append(absent, d)
		}
	}
	t.Cleanup(func() {
		for _, d := range absent {
			if ents, err := os.ReadDir(d); err == nil {
				names := make([]string, 0, len(ents))
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("%s was made and left behind, holding %v", d, names)
			}
		}
	})
}

// find returns the first row of case c and metric m.
func find(t *testing.T, rows []bench.Row, c, m string) bench.Row {
	t.Helper()
	for _, r := range rows {
		if r.Case == c && r.Metric == m {
			return r
		}
	}
	t.Fatalf("no row %s %s among %d", c, m, len(rows))
	return bench.Row{}
}

// The thesis' cases: T52 through the real lifecycle (a daemon of the
// benchmark's own, a job of a real user's through rsa run, its output
// staged out to shared@1g), and T51, T53, T54, T55 and the lifecycle
// timings beside it.
func TestThesisQuick(t *testing.T) {
	leavesNoHome(t)
	t.Cleanup(func() {
		// t55 brings disk up (and takes its ram-blk down itself).
		if out, err := testutil.Command(t, labBin, "bench", "target", "down", "disk", "ram-blk").CombinedOutput(); err != nil {
			t.Errorf("rsa-lab bench target down: %v\n%s", err, out)
		}
	})
	// make test: fewer ranks, no fio cross-checks (internal/bench/crosscheck
	// tests how they are read) and no t55, bonnie++ on three targets, a
	// minute and a half of disk beside test/cluster; make test-long runs
	// the quick profile whole.
	cases := []struct {
		c, m string
		src  float64
	}{
		{"T51", "output_ratio", 1.135}, {"T51", "stage_out rsync", 52},
		{"T53", "output", 49.93}, {"T53", "t53_over_t52_rsa", 1.35},
		{"T54", "write_rate", 100.31}, {"T54", "open", 0}, {"T54", "with_open_ratio", 3.21},
		{"TLC", "construct", 12}, {"TLC", "stage_in", 0}, {"TLC", "switch", 0}, {"TLC", "destroy", 2},
	}
	args := []string{"thesis", "--profile", "quick", "--ranks", "16", "--fio=false", "--case", "t51,t52,t53,t54,tlc"}
	if testutil.Long() {
		args = []string{"thesis", "--profile", "quick", "--ranks", "64"}
		cases = append(cases, struct {
			c, m string
			src  float64
		}{"T55", "block_write", 0})
	}
	rows := run(t, args...)
	r := find(t, rows, "T52", "hold_ratio")
	if r.SourceValue == nil || *r.SourceValue != 30.9 || r.Value <= 0 {
		t.Errorf("T52 hold_ratio row %+v: want a positive ratio beside the thesis' 30.9", r)
	}
	for _, m := range []string{"hold", "safe", "stage_out rsync", "stage_out tar", "stage_out rsa copy"} {
		if r := find(t, rows, "T52", m); r.Value <= 0 || r.Unit != "s" {
			t.Errorf("T52 %s: %+v, want a positive time in seconds", m, r)
		}
	}
	for _, c := range cases {
		r := find(t, rows, c.c, c.m)
		if r.Value <= 0 || c.src != 0 && (r.SourceValue == nil || *r.SourceValue != c.src) {
			t.Errorf("%s %s: %+v, want a positive value beside the thesis' %v", c.c, c.m, r, c.src)
		}
	}
	if _, err := os.Stat("/var/tmp/rsa-bench/daemon"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the benchmark's daemon directory is left (%v)", err)
	}
}

// T52 on ram@1g: the emulated cluster (scripts/cluster-up) of RSA hosts
// on the gluster engine and a compute host behind a 1 Gbit/s link, both
// jobs real sbatch jobs of a real user; the cluster, its routes and the
// host's forwarding are gone afterwards. A whole emulated cluster for one
// benchmark: its name ends in Long, so make test-long runs it
// (scripts/go-test.sh); make test's TestThesisQuick runs T52 through the
// same lifecycle on one host, and test/cluster every part of the cluster.
func TestThesisRAMAt1gLong(t *testing.T) {
	leavesNoHome(t)
	fwd, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	if err != nil {
		t.Fatal(err)
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ranks := "8"
	if testutil.Long() {
		ranks = "32"
	}
	rows := run(t, "thesis", "--profile", "quick", "--case", "t52", "--ranks", ranks, "--size", "256K",
		"--ram-at-1g", "--local=false", "--repo", repo)
	for _, r := range rows {
		if r.Case == "T52" && r.Target == "ram" {
			t.Errorf("--local=false, yet a row on ram: %+v", r)
		}
	}
	ratio := find(t, rows, "T52", "hold_ratio")
	if ratio.Target != "ram@1g vs shared@1g" || ratio.Value <= 0 || ratio.SourceValue == nil || *ratio.SourceValue != 30.9 {
		t.Errorf("T52 hold_ratio row %+v: want ram@1g against shared@1g, beside the thesis' 30.9", ratio)
	}
	for _, m := range []string{"hold", "safe", "run"} {
		r := find(t, rows, "T52", m)
		if r.Value <= 0 || r.Unit != "s" || !strings.Contains(r.Params["via"], "Slurm") {
			t.Errorf("T52 %s: %+v, want a positive time of a Slurm job", m, r)
		}
	}
	if _, err := os.Stat("/var/tmp/rsa-bench/cluster"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the benchmark's cluster is left (%v)", err)
	}
	if now, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward"); err != nil || !bytes.Equal(now, fwd) {
		t.Errorf("ip_forward is %q after the benchmark, %q before (%v)", now, fwd, err)
	}
}

// The tools' runner: one tiny IOR, mdtest and fio job each, from job
// files of the test's own (the built-in ones run minutes; their grammar
// and contents are unit-tested), on ram, through the real tools: IOR and
// mdtest as scripts/build-ior.sh builds them (seconds once built), fio
// the system's.
func TestToolsQuick(t *testing.T) {
	leavesNoHome(t)
	testutil.RequireRoot(t)
	prefix := buildIOR(t)

	jobs := t.TempDir()
	for name, text := range map[string]string{
		"ior.jobs": `run tiny quick 2 -a POSIX -w -r -i 1 -s 1 -b 1m -t 256k -o {m0}/ior
seed tiny write_rate Seq_Write 9.17 MB/s GUPFS A.1 sample
`,
		"mdtest.jobs": `run tiny quick 2 -F -C -T -r -u -n 50 -d {each:md}
seed tiny create_rate Create-B 988 ops/s GUPFS Table 1 N=3
none Untar: no tool
`,
		"fio.jobs": "run tiny quick 1 tiny.fio BS=64k,1m\n",
		"tiny.fio": `[global]
ioengine=psync
direct=${DIRECT}
directory=${DIR}
filename=tiny
size=4m
bs=${BS}
[write]
rw=write
[read]
stonewall
rw=read
unlink=1
`,
	} {
		if err := os.WriteFile(filepath.Join(jobs, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rows := run(t, "tools", "--target", "ram", "--target-size", "256M", "--ior", prefix, "--jobs", jobs)
	count := map[string]int{}
	for _, r := range rows {
		count[r.Bench]++
		if r.Target != "ram" || r.Value <= 0 || r.Params["job"] != "tiny" {
			t.Errorf("row %+v: want a positive value of job tiny on ram", r)
		}
	}
	// IOR: write and read, a rate and a time each; mdtest: create, stat
	// and remove; fio: write and read at two block sizes.
	if count["ior"] != 4 || count["mdtest"] != 3 || count["fio"] != 4 {
		t.Errorf("rows by tool %v, want ior 4, mdtest 3, fio 4", count)
	}
	if r := find(t, rows, "Seq_Write", "write_rate"); r.SourceValue == nil || *r.SourceValue != 9.17 || r.Bench != "ior" {
		t.Errorf("IOR's write row %+v: want GUPFS A.1's 9.17 beside it", r)
	}
	if r := find(t, rows, "Create-B", "create_rate"); r.SourceValue == nil || *r.SourceValue != 988 || r.Params["ranks"] != "2" {
		t.Errorf("mdtest's create row %+v: want Table 1's 988 beside it", r)
	}
	if ents, err := os.ReadDir("/run/rsa-bench/ram"); err == nil && len(ents) > 0 {
		t.Errorf("the run left %d entries in the ram target", len(ents))
	}
	if !testutil.Long() {
		return
	}
	// make test-long: the built-in jobs of the quick profile, IOR's and
	// mdtest's with a seed's number beside some row (fio's seeds are the
	// disk target's).
	rows = run(t, "tools", "--target", "ram", "--profile", "quick", "--ior", prefix)
	seeded := map[string]int{}
	for _, r := range rows {
		if r.SourceValue != nil {
			seeded[r.Bench]++
		}
	}
	for _, tool := range []string{"ior", "mdtest"} {
		if seeded[tool] == 0 {
			t.Errorf("no %s row of the quick profile on ram stands beside a seed's number", tool)
		}
	}
}

// buildIOR builds IOR and mdtest (scripts/build-ior.sh, seconds once
// built) and returns their prefix.
func buildIOR(t *testing.T) string {
	t.Helper()
	out, err := testutil.CommandWithin(t, 10*time.Minute, filepath.Join(testutil.RepoRoot(t), "scripts", "build-ior.sh")).Output()
	if err != nil {
		t.Fatalf("scripts/build-ior.sh: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// IO500's phases, as a job of rsa-lab bench io500 runs them, with real
// IOR and mdtest on two ranks and a one-second stonewall: every phase
// measures something, find finds mdtest-hard's files, the score is
// IO500's formula, and nothing is left in the data directory.
func TestIO500Job(t *testing.T) {
	testutil.RequireRoot(t)
	prefix := buildIOR(t)
	data, results := t.TempDir(), t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd := testutil.CommandWithin(t, 5*time.Minute, labBin, "bench", "io500-job", "--data", data, "--results", results, "--ior", prefix,
		"--ranks", "2", "--stonewall", "1s", "--easy-block", "16m", "--hard-segments", "300", "--easy-files", "400", "--hard-files", "400", "--json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("rsa-lab bench io500-job: %v\n%s", err, stderr.String())
	}
	t.Logf("%s", stderr.String())
	var rep struct {
		Results []struct {
			Phase            string
			Value            float64
			Unit             string
			Scanned, Matched int64
		}
		Score struct{ BW, MD, Score float64 }
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("io500-job --json: %v\n%s", err, stdout.String())
	}
	if len(rep.Results) != 12 {
		t.Fatalf("%d phases reported, want IO500's 12: %+v", len(rep.Results), rep.Results)
	}
	for _, r := range rep.Results {
		want := "kIOPS"
		if strings.HasPrefix(r.Phase, "ior-") {
			want = "GiB/s"
		}
		if r.Value <= 0 || r.Unit != want {
			t.Errorf("phase %s: %g %s, want a positive rate in %s", r.Phase, r.Value, r.Unit, want)
		}
		// find looks at every file the two write phases of mdtest left,
		// and matches only mdtest-hard's (the newer ones) with 01 in
		// their names: some, not all.
		if r.Phase == "find" && (r.Matched <= 0 || r.Matched >= r.Scanned) {
			t.Errorf("find: %d matched of %d scanned, want some but not all", r.Matched, r.Scanned)
		}
	}
	if rep.Score.Score <= 0 || rep.Score.BW <= 0 || rep.Score.MD <= 0 {
		t.Errorf("score %+v: want each above 0", rep.Score)
	}
	if ents, err := os.ReadDir(data); err != nil || len(ents) != 0 {
		t.Errorf("the data directory holds %d entries after the run (%v), want none", len(ents), err)
	}
}

// A run split in two, as E3's input image runs it: the writes, then the
// phases a read-only file system allows on what they left, here behind a
// read-only bind mount, so that a read phase that wrote would fail.
func TestIO500JobParts(t *testing.T) {
	testutil.RequireRoot(t)
	prefix := buildIOR(t)
	data, results, ro := t.TempDir(), t.TempDir(), t.TempDir()
	job := func(part, dir string) []struct {
		Phase            string
		Value            float64
		Scanned, Matched int64
	} {
		var stdout, stderr bytes.Buffer
		cmd := testutil.CommandWithin(t, 5*time.Minute, labBin, "bench", "io500-job", "--part", part, "--data", dir, "--results", results, "--ior", prefix,
			"--ranks", "2", "--stonewall", "1s", "--easy-block", "16m", "--hard-segments", "300", "--easy-files", "400", "--hard-files", "400", "--json")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("rsa-lab bench io500-job --part %s: %v\n%s", part, err, stderr.String())
		}
		var rep struct {
			Results []struct {
				Phase            string
				Value            float64
				Scanned, Matched int64
			}
		}
		if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
			t.Fatalf("io500-job --part %s --json: %v\n%s", part, err, stdout.String())
		}
		return rep.Results
	}
	if w := job("write", data); len(w) != 4 {
		t.Fatalf("--part write ran %d phases, want the 4 writes: %+v", len(w), w)
	}
	mount := func(args ...string) {
		if out, err := testutil.Command(t, "mount", args...).CombinedOutput(); err != nil {
			t.Fatalf("mount %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	mount("--bind", data, ro)
	t.Cleanup(func() {
		if out, err := exec.Command("umount", ro).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", ro, err, out)
		}
	})
	mount("-o", "remount,bind,ro", ro)
	r := job("read", ro)
	var names []string
	for _, p := range r {
		names = append(names, p.Phase)
		if p.Value <= 0 {
			t.Errorf("phase %s: %g, want a positive rate", p.Phase, p.Value)
		}
		if p.Phase == "find" && (p.Matched <= 0 || p.Matched >= p.Scanned) {
			t.Errorf("find: %d matched of %d scanned, want some but not all", p.Matched, p.Scanned)
		}
	}
	if want := "find ior-easy-read mdtest-easy-stat ior-hard-read mdtest-hard-stat"; strings.Join(names, " ") != want {
		t.Errorf("--part read ran %q, want %q", names, want)
	}
}

// IO500's phases on the emulated cluster (E3), once per cell at a tiny
// size: a whole cluster, so make test-long runs it; make test's
// TestIO500Job runs the same phases on one host.
func TestIO500ClusterLong(t *testing.T) {
	leavesNoHome(t)
	prefix := buildIOR(t)
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	rows := run(t, "io500", "--ior", prefix, "--repo", repo, "--runs", "1", "--stonewall", "2s", "--easy-block", "64m",
		"--hard-segments", "500", "--easy-files", "1000", "--hard-files", "1000")
	cells := map[string]int{}
	for _, r := range rows {
		cells[r.Target]++
		if r.Value <= 0 {
			t.Errorf("row %+v: want a positive value", r)
		}
	}
	// 12 phases and 3 scores on each cell, and as many efficiencies on
	// each but tmpfs, the ceiling; the input image runs the 5 phases a
	// read-only file system allows, and has no score.
	for c, want := range map[string]int{"ram@1g": 15, "ram@1g private": 15, "ram@1g image": 5, "shared@1g": 15, "tmpfs": 15,
		"ram@1g per node vs tmpfs": 15, "ram@1g private per node vs tmpfs": 15, "ram@1g image per node vs tmpfs": 5, "shared@1g per node vs tmpfs": 15} {
		if cells[c] != want {
			t.Errorf("%d rows on %s, want %d (rows by target %v)", cells[c], c, want, cells)
		}
	}
	if _, err := os.Stat("/var/tmp/rsa-bench/cluster"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the benchmark's cluster is left (%v)", err)
	}
}

// A user gets a clear refusal, not a failed mount, from what needs root;
// the job's own writer needs nothing of the kind.
func TestBenchAsUser(t *testing.T) {
	u := testutil.EnsureUser(t)
	as := func(args ...string) (string, error) {
		cmd := testutil.Command(t, "setpriv", append([]string{"--reuid", fmt.Sprint(u.UID), "--regid", fmt.Sprint(u.GID), "--clear-groups", labBin}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, args := range [][]string{{"bench", "target", "up", "ram"}, {"bench", "tools"}, {"bench", "thesis"}} {
		if out, err := as(args...); err == nil || !strings.Contains(out, "needs root") {
			t.Errorf("rsa-lab %s as %s: %v\n%s", strings.Join(args, " "), u.Name, err, out)
		}
	}
	dir := testutil.MkdirOwned(t, u, filepath.Join(testutil.TempDir(t), "out"))
	if out, err := as("bench", "write", "--dir", dir, "--ranks", "4", "--size", "64K"); err != nil || !strings.Contains(out, "4 ranks wrote 65536 bytes each") {
		t.Errorf("rsa-lab bench write as %s: %v\n%s", u.Name, err, out)
	}
}
