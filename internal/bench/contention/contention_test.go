package contention

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

func TestCost(t *testing.T) {
	lab := Model{Local: 20 * time.Millisecond, Revoke: 30 * time.Millisecond}
	thesis := Model{Local: ThesisLocal, Revoke: ThesisRevoke}
	for _, tc := range []struct {
		m    Model
		n    int
		want time.Duration
	}{
		{lab, 0, 20 * time.Millisecond}, // below 1 counts as 1
		{lab, 1, 20 * time.Millisecond},
		{lab, 2, 35 * time.Millisecond},
		{lab, 4, 42500 * time.Microsecond},
		{lab, 1024, 20*time.Millisecond + 29970703*time.Nanosecond}, // 30 ms · 1023/1024, truncated
		{thesis, 1, 80 * time.Millisecond},
		{thesis, 1024, 80*time.Millisecond + 439570312*time.Nanosecond}, // the storm's ≈ 0.52 s
	} {
		if got := tc.m.Cost(tc.n); got != tc.want {
			t.Errorf("%+v.Cost(%d) = %v, want %v", tc.m, tc.n, got, tc.want)
		}
	}
}

// TestThesisCalibration checks the constants against the thesis' numbers
// they come from (Table 5.2), within the rounding of the derivation.
func TestThesisCalibration(t *testing.T) {
	m := Model{Local: ThesisLocal, Revoke: ThesisRevoke}
	for _, tc := range []struct {
		n         int
		want, tol float64 // seconds
	}{
		{1, (224.0 - 52) / 2048, 0.005},      // the one-writer rsync stage-out
		{1024, (1109.86 - 41) / 2048, 0.005}, // the 2,048-way storm from 1,024 nodes
	} {
		if got := m.Cost(tc.n).Seconds(); got < tc.want-tc.tol || got > tc.want+tc.tol {
			t.Errorf("thesis Cost(%d) = %.4f s, want %.4f ± %.3f s", tc.n, got, tc.want, tc.tol)
		}
	}
}

func TestWrite(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "conf")
	m := Model{Root: "/srv/brick/../brick/", Local: 20*time.Millisecond + 999*time.Nanosecond, Revoke: 30 * time.Millisecond, Generation: 7}
	if err := m.Write(conf); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	if want := "root=/srv/brick\nlocal_us=20000\nrevoke_us=30000\ngeneration=7\n"; string(b) != want {
		t.Errorf("config:\n%s\nwant:\n%s", b, want)
	}
	if fi, err := os.Stat(conf); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("config mode: %v, %v; want 0644", fi.Mode(), err)
	}
	if left, _ := filepath.Glob(conf + ".tmp*"); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}

	for _, bad := range []Model{
		{Root: "brick"},
		{Root: ""},
		{Root: "/srv/brick\nroot=/"},
		{Root: "/srv/brick", Local: -time.Millisecond},
		{Root: "/srv/brick", Revoke: -time.Millisecond},
	} {
		if err := bad.Write(conf); err == nil {
			t.Errorf("Write(%+v) did not fail", bad)
		}
	}
	if b2, _ := os.ReadFile(conf); string(b2) != string(b) {
		t.Errorf("a refused Write changed the config: %q", b2)
	}

	if err := Disable(conf); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(conf); !os.IsNotExist(err) {
		t.Errorf("Disable left the config: %v", err)
	}
	if err := Disable(conf); err != nil {
		t.Errorf("Disable of an absent config: %v", err)
	}
}

func TestReadStats(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "conf")
	if s, err := ReadStats(conf); err != nil || s.Creates != 0 || s.Inflight != nil {
		t.Fatalf("no stats file: %+v, %v; want zero Stats, nil", s, err)
	}
	for _, tc := range []struct {
		text string
		want Stats
		mean float64
		bad  bool
	}{
		{text: "generation=3\ncreates=17\ndelay_us=510000\noverflow=2\ninflight_1=10\ninflight_2=7\n",
			want: Stats{Generation: 3, Creates: 17, Overflow: 2, Delay: 510 * time.Millisecond,
				Inflight: map[int]int64{1: 10, 2: 7}}, mean: 24.0 / 17},
		{text: "generation=4\ncreates=0\ndelay_us=0\noverflow=0\n", want: Stats{Generation: 4}},
		{text: "generation=4\ncreates=x\n", bad: true},
		{text: "generation=4\nbogus=1\n", bad: true},
		{text: "inflight_0=1\n", bad: true},
		{text: "creates\n", bad: true},
	} {
		if err := os.WriteFile(conf+".stats", []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := ReadStats(conf)
		if tc.bad {
			if err == nil {
				t.Errorf("ReadStats(%q) did not fail: %+v", tc.text, s)
			}
			continue
		}
		if err != nil {
			t.Errorf("ReadStats(%q): %v", tc.text, err)
			continue
		}
		if !reflect.DeepEqual(s, tc.want) {
			t.Errorf("ReadStats(%q) = %+v, want %+v", tc.text, s, tc.want)
		}
		if got := s.MeanInflight(); tc.want.Creates > 0 && got != tc.mean {
			t.Errorf("MeanInflight = %v, want %v", got, tc.mean)
		}
	}
}

// shimLab is a built shim, the tests' multi-threaded creator, a root and a
// configuration: what TestShim's steps share.
type shimLab struct {
	t            *testing.T
	lib, creater string
	root, conf   string
	model        Model
}

func (l *shimLab) env() []string {
	return append(os.Environ(), "LD_PRELOAD="+l.lib, EnvConf+"="+l.conf)
}

// run runs a command under the shim and returns how long it took.
func (l *shimLab) run(name string, args ...string) time.Duration {
	l.t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = l.env()
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		l.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return time.Since(start)
}

func (l *shimLab) sh(script string, args ...string) time.Duration {
	l.t.Helper()
	return l.run("sh", append([]string{"-c", script, "sh"}, args...)...)
}

func (l *shimLab) stats() Stats {
	l.t.Helper()
	s, err := ReadStats(l.conf)
	if err != nil {
		l.t.Fatal(err)
	}
	return s
}

func (l *shimLab) write(m Model) {
	l.t.Helper()
	l.model = m
	if err := m.Write(l.conf); err != nil {
		l.t.Fatal(err)
	}
}

// mkdir makes a directory under root (or anywhere, absolute) without the shim.
func (l *shimLab) mkdir(dir string) string {
	l.t.Helper()
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(l.root, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		l.t.Fatal(err)
	}
	return dir
}

// expectSum checks that the stats' Delay is the model's cost summed over
// their Inflight histogram: each counted create slept Cost(n) for its n.
func (l *shimLab) expectSum(s Stats) {
	l.t.Helper()
	var sum time.Duration
	for n, c := range s.Inflight {
		sum += time.Duration(c) * l.model.Cost(n)
	}
	if s.Delay != sum {
		l.t.Errorf("delay %v, but the histogram %v costs %v", s.Delay, s.Inflight, sum)
	}
}

// TestShim builds the shim and runs real programs under it: dash, whose
// redirections call open64, coreutils' touch (open) and cp (openat), and
// creater (testdata/creater.c) for every interposed function and for one
// multi-threaded process, as glusterfsd is. The steps share a root and a
// configuration and run in order. Times are checked from below only.
func TestShim(t *testing.T) {
	for _, tool := range []string{"cc", "sh", "touch", "cp"} {
		testutil.RequireTool(t, tool)
	}
	ctx := context.Background()
	bin := t.TempDir()
	lib, err := Build(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	creater := filepath.Join(bin, "creater")
	if out, err := exec.CommandContext(ctx, "cc", "-O2", "-Wall", "-Werror", "-pthread", "-o", creater,
		filepath.Join("testdata", "creater.c")).CombinedOutput(); err != nil {
		t.Fatalf("cc creater: %v\n%s", err, out)
	}
	l := &shimLab{t: t, lib: lib, creater: creater, root: t.TempDir(), conf: filepath.Join(t.TempDir(), "conf")}
	local, revoke := 20*time.Millisecond, 30*time.Millisecond
	l.write(Model{Root: l.root, Local: local, Revoke: revoke, Generation: 1})

	t.Run("sequential", func(t *testing.T) {
		elapsed := l.sh(`for i in 1 2 3 4 5; do : > "$1/f$i"; done`, l.root) + l.run("touch", l.root+"/t1", l.root+"/t2")
		s := l.stats()
		if want := map[int]int64{1: 7}; s.Generation != 1 || s.Creates != 7 || !maps.Equal(s.Inflight, want) {
			t.Fatalf("stats %+v, want generation 1, 7 creates, all at n = 1", s)
		}
		if s.Delay != 7*local {
			t.Errorf("delay %v, want 7 × %v", s.Delay, local)
		}
		if elapsed < s.Delay {
			t.Errorf("the creates took %v, less than their delay %v", elapsed, s.Delay)
		}
	})

	t.Run("not counted", func(t *testing.T) {
		before := l.stats()
		outside := t.TempDir()
		l.mkdir(".glusterfs/00/11")
		l.sh(`: >> "$1/f1"; : > "$2/o1"; : > "$1/../$3"; : > "$1/.glusterfs/g"; : > "$1/.glusterfs/00/11/h"`,
			l.root, outside, "escaped-"+filepath.Base(l.root))
		l.run("touch", l.root+"/f2", outside+"/o2") // an existing file, and one outside
		for _, f := range []string{outside + "/o1", outside + "/o2", l.root + "/.glusterfs/00/11/h"} {
			if _, err := os.Stat(f); err != nil {
				t.Errorf("passed through, the create failed: %v", err)
			}
		}
		os.Remove(filepath.Join(filepath.Dir(l.root), "escaped-"+filepath.Base(l.root)))
		if after := l.stats(); after.Creates != before.Creates || after.Delay != before.Delay {
			t.Errorf("stats went from %+v to %+v: something not a create under root was counted", before, after)
		}
	})

	t.Run("every function", func(t *testing.T) {
		for _, fn := range []string{"open", "open64", "openat", "openat64", "openat-cwd"} {
			before := l.stats()
			l.run(l.creater, l.mkdir("fn-"+fn), "1", "2", fn)
			if after := l.stats(); after.Creates != before.Creates+2 || after.Inflight[1] != before.Inflight[1]+2 {
				t.Errorf("%s: creates %d → %d, inflight_1 %d → %d; want 2 more of each",
					fn, before.Creates, after.Creates, before.Inflight[1], after.Inflight[1])
			}
		}
		before := l.stats()
		src := filepath.Join(t.TempDir(), "src")
		if err := os.WriteFile(src, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		l.run("cp", src, l.root+"/copy")
		if after := l.stats(); after.Creates != before.Creates+1 {
			t.Errorf("cp: creates %d → %d, want one more", before.Creates, after.Creates)
		}
	})

	t.Run("generation", func(t *testing.T) {
		if s := l.stats(); s.Creates == 0 {
			t.Fatalf("nothing counted before the change: %+v", s)
		}
		l.write(Model{Root: l.root, Local: local, Revoke: revoke, Generation: 2})
		l.sh(`: >> "$1/f1"`, l.root) // not a create, but it reads the new configuration
		if s := l.stats(); s.Generation != 2 || s.Creates != 0 || s.Delay != 0 || s.Inflight != nil {
			t.Fatalf("after a new generation: %+v, want generation 2 and nothing counted", s)
		}
		l.sh(`: > "$1/g2"`, l.root)
		if s := l.stats(); s.Generation != 2 || s.Creates != 1 || s.Inflight[1] != 1 {
			t.Errorf("one create in generation 2: %+v", s)
		}
	})

	t.Run("one process, four threads", func(t *testing.T) {
		l.write(Model{Root: l.root, Local: local, Revoke: revoke, Generation: 3})
		dir := l.mkdir("storm")
		elapsed := l.run(l.creater, dir, "4", "5", "openat")
		s := l.stats()
		if s.Generation != 3 || s.Creates != 20 {
			t.Fatalf("stats %+v, want generation 3 and 20 creates", s)
		}
		contended := int64(0)
		for n, c := range s.Inflight {
			if n >= 2 {
				contended += c
			}
			if n > 4 {
				t.Errorf("inflight_%d: more in flight than the 4 threads", n)
			}
		}
		if contended == 0 {
			t.Errorf("no create saw another in flight: %v", s.Inflight)
		}
		l.expectSum(s)
		if s.Delay < 20*local || elapsed < s.Delay {
			t.Errorf("took %v for a delay of %v; want delay ≥ %v and the time ≥ the delay (serialised)", elapsed, s.Delay, 20*local)
		}
		t.Logf("4 threads × 5 creates: inflight %v, mean n %.2f, delay %v, took %v", s.Inflight, s.MeanInflight(), s.Delay, elapsed)
	})

	// Two clients taking turns, each with a round trip between its
	// creates (no create in flight meanwhile): each create arrives while
	// the other's is served, so both contend (n = 2), though at each
	// grant the other client has nothing in flight yet.
	t.Run("two clients taking turns", func(t *testing.T) {
		l.write(Model{Root: l.root, Local: local, Revoke: revoke, Generation: 40})
		dir := l.mkdir("turns")
		cmd := exec.Command(l.creater, dir, "2", "5", "openat")
		cmd.Env = append(l.env(), "CREATER_PAUSE_MS=2")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("creater: %v\n%s", err, out)
		}
		s := l.stats()
		if s.Creates != 10 || s.Inflight[2] < 5 {
			t.Errorf("two clients, a 2 ms round trip, %v a create: %+v; want 10 creates, most at n = 2", local, s)
		}
		l.expectSum(s)
	})

	// Separate processes have separate queues (the shim's state is per
	// process), so each create is at n = 1; their stats add up in one file.
	t.Run("four processes", func(t *testing.T) {
		l.write(Model{Root: l.root, Local: local, Revoke: revoke, Generation: 4})
		dir := l.mkdir("procs")
		var cmds []*exec.Cmd
		for p := range 4 {
			cmd := exec.Command("sh", "-c", `for i in 1 2 3 4 5; do : > "$1/p$2-$i"; done`, "sh", dir, string(rune('a'+p)))
			cmd.Env = l.env()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cmds = append(cmds, cmd)
		}
		for _, cmd := range cmds {
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
		}
		s := l.stats()
		if want := map[int]int64{1: 20}; s.Creates != 20 || !maps.Equal(s.Inflight, want) {
			t.Errorf("stats %+v, want 20 creates at n = 1 (none lost in the merge)", s)
		}
		l.expectSum(s)
	})

	t.Run("disabled", func(t *testing.T) {
		before := l.stats()
		if err := Disable(l.conf); err != nil {
			t.Fatal(err)
		}
		l.sh(`: > "$1/off1"`, l.root)
		if after := l.stats(); after.Creates != before.Creates {
			t.Errorf("disabled, yet a create was counted: %+v → %+v", before, after)
		}
		l.write(Model{Root: l.root, Local: local, Revoke: revoke, Generation: 4}) // back on, same generation
		l.sh(`: > "$1/on1"`, l.root)
		if after := l.stats(); after.Creates != before.Creates+1 {
			t.Errorf("enabled again: creates %d → %d, want one more", before.Creates, after.Creates)
		}
	})

	t.Run("table full", func(t *testing.T) {
		l.write(Model{Root: l.root, Generation: 5}) // free creates: only the counting
		l.run(l.creater, l.mkdir("spread"), "1", "4100", "spread")
		if s := l.stats(); s.Creates != 4096 || s.Overflow != 4 || s.Delay != 0 {
			t.Errorf("4,100 directories: %+v, want 4,096 creates and 4 overflows", s)
		}
	})
}

// TestBuildFails makes cc fail (its output path is a directory) and wants
// an error that names cc and carries what cc said.
func TestBuildFails(t *testing.T) {
	testutil.RequireTool(t, "cc")
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "contention.so"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Build(context.Background(), dir)
	if err == nil || !strings.Contains(err.Error(), "cc -shared") || !strings.Contains(err.Error(), "contention.so") ||
		!strings.Contains(err.Error(), "Is a directory") {
		t.Errorf("Build with an unwritable output: %v; want cc's command and its complaint", err)
	}
}
