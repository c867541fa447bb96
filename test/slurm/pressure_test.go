package slurm

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/testutil"
	"github.com/rsa-hpc/rsa/internal/units"
)

// TestStagingUnderPressure: a long stage-in runs while another job's
// stage-out runs. Both must progress, neither may read faster than
// limits.stage_bwlimit, and rsa status and scontrol show bbstat must go on
// answering; their latency is printed, not asserted (a loaded CI machine
// is slower, not wrong).
//
// make test moves 512 MiB each way: at the cap of 64 MiB/s that is about
// 8 s of both at once, and the rate is checked over stretches of 2 s or
// more. make test-long moves 1 GiB each way. RSA_PRESSURE_INPUT sizes the
// stage-in (make test-load: 8G, all this machine's RAM allows beside the
// rest: a 50 GiB input takes 50 GiB of RAM); with it, or under make
// test-long, the stage-out is 1 GiB.
func TestStagingUnderPressure(t *testing.T) {
	input, output := int64(512<<20), int64(512<<20)
	if testutil.Long() {
		input, output = 1<<30, 1<<30
	}
	if v := os.Getenv("RSA_PRESSURE_INPUT"); v != "" {
		n, err := units.ParseSize(v)
		if err != nil {
			t.Fatalf("RSA_PRESSURE_INPUT=%q: %v", v, err)
		}
		input, output = n, 1<<30
	}
	const limit = 64 << 20 // bytes per second, each stage
	mib := func(n int64) string { return fmt.Sprintf("%dM", n>>20) }
	c := startCluster(t, "bb", 2, "RSA_SLURM_CAPACITY="+mib(input+output+1<<30),
		fmt.Sprintf("RSA_SLURM_BWLIMIT=%d", limit))

	// The input: files of 256 MiB, written, not sparse (rsa copy skips
	// holes, which would stage in no time).
	in, out, out2 := c.mkdir("in"), c.mkdir("out"), c.mkdir("out2")
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i * 7)
	}
	for i := int64(0); i*256<<20 < input; i++ {
		p := filepath.Join(in, fmt.Sprintf("part%03d", i))
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		for range min(256, (input-i*256<<20)>>20) {
			if _, err := f.Write(chunk); err != nil {
				t.Fatal(err)
			}
		}
		f.Close()
		os.Chown(p, int(c.user.UID), int(c.user.GID))
	}

	// The writer ends once the reader stages in, so that its output
	// leaves RAM at the cap while the reader's input comes in.
	writer := c.sbatch("writer.sh", fmt.Sprintf(`#!/bin/bash
#SBATCH -N 1
#RSA capacity=%s pool=rsa
#RSA_DATA_OUT=%s
#RSA_DELAY=0
head -c %d /dev/zero | tr '\0' 'w' > %[2]s/result
for _ in $(seq 600); do [ -e %[4]s/go ] && exit 0; sleep 0.2; done
exit 1
`, mib(output+256<<20), out, output, c.work))
	c.waitRSA(writer, 120*time.Second, "INUSE_OUT")
	reader := c.sbatch("reader.sh", fmt.Sprintf(`#!/bin/bash
#SBATCH -N 1
#RSA capacity=%s pool=rsa
#RSA_DATA_IN=%s
#RSA_DATA_OUT=%s
#RSA_DELAY=0
cat %[2]s/* | wc -c > %[3]s/seen
`, mib(input+256<<20), in, out2))
	c.waitRSA(reader, 120*time.Second, "STAGING_IN")
	c.file("go", "", 0o644)

	// moved is a stage's bytes so far and when the daemon counted them
	// (its Progress.Updated).
	type moved struct {
		bytes int64
		at    time.Time
	}
	type sample struct {
		at           time.Time // when rsa status answered
		wrote, read  moved     // the writer's stage-out, the reader's stage-in
		wPhase, rPhs string
	}
	var samples []sample
	var statusLat, bbstatLat []time.Duration
	deadline := time.Now().Add(time.Duration(input/limit)*2*time.Second + 120*time.Second)
	for {
		began := time.Now()
		js := c.rsaJobs(writer, reader)
		s := sample{at: time.Now()}
		statusLat = append(statusLat, s.at.Sub(began))
		began = time.Now()
		c.root("scontrol", "show", "bbstat", reader)
		bbstatLat = append(bbstatLat, time.Since(began))
		if w := js[writer]; w != nil {
			s.wPhase = string(w.RSA)
			if w.Progress != nil && w.RSA == "STAGING_OUT" {
				s.wrote = moved{w.Progress.Bytes, w.Progress.Updated}
			}
		}
		if r := js[reader]; r != nil {
			s.rPhs = string(r.RSA)
			if r.Progress != nil && r.RSA == "STAGING_IN" {
				s.read = moved{r.Progress.Bytes, r.Progress.Updated}
			}
		}
		samples = append(samples, s)
		if s.rPhs != "" && s.rPhs != "STAGING_IN" {
			break // the stage-in ended (the loop began in it)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reader's stage-in did not end by %s; last: %+v", deadline.Format(time.TimeOnly), s)
		}
		time.Sleep(250 * time.Millisecond)
	}

	// Both moved while both ran.
	var overlap []sample
	for _, s := range samples {
		if s.wPhase == "STAGING_OUT" && s.rPhs == "STAGING_IN" {
			overlap = append(overlap, s)
		}
	}
	if len(overlap) < 2 {
		t.Fatalf("the stage-out and the stage-in never ran together (%d samples together of %d)", len(overlap), len(samples))
	}
	first, last := overlap[0], overlap[len(overlap)-1]
	if last.wrote.bytes <= first.wrote.bytes || last.read.bytes <= first.read.bytes {
		t.Errorf("while both ran (%s), the stage-out went from %d to %d bytes and the stage-in from %d to %d: one stood still",
			last.at.Sub(first.at).Round(time.Millisecond), first.wrote.bytes, last.wrote.bytes, first.read.bytes, last.read.bytes)
	}

	// Neither read faster than the cap: over any stretch of two seconds
	// or more, at most the cap plus the limiter's burst (a quarter). A
	// stretch runs between the moments the daemon counted the bytes, not
	// those the test read them: a slow rsa status or bbstat at one sample
	// must not shorten the stretch and so inflate the rate.
	over := func(name string, of func(sample) moved) float64 {
		var best float64
		for i, sa := range samples {
			for _, sb := range samples[i+1:] {
				a, b := of(sa), of(sb)
				d := b.at.Sub(a.at).Seconds()
				if d < 2 || a.bytes == 0 || b.bytes == 0 || a.at.IsZero() {
					continue
				}
				rate := float64(b.bytes-a.bytes) / d
				best = max(best, rate)
				if rate > limit*1.25+float64(limit)/4/d {
					t.Errorf("the %s read %s in %.1fs: %s/s, past limits.stage_bwlimit of %s/s", name,
						units.FormatSize(b.bytes-a.bytes), d, units.FormatSize(int64(rate)), units.FormatSize(limit))
					return best
				}
			}
		}
		return best
	}
	wRate := over("stage-out", func(s sample) moved { return s.wrote })
	rRate := over("stage-in", func(s sample) moved { return s.read })

	c.waitJob(reader, 120*time.Second, "COMPLETED")
	c.waitRSA(reader, 120*time.Second, "RELEASED")
	c.waitRSA(writer, 120*time.Second, "RELEASED")
	if b, err := os.ReadFile(filepath.Join(out2, "seen")); err != nil || strings.TrimSpace(string(b)) != fmt.Sprint(input) {
		t.Errorf("the reader saw %q bytes of input (err %v), want %d", b, err, input)
	}
	if b, err := os.ReadFile(filepath.Join(out, "result")); err != nil || int64(len(b)) != output || strings.Trim(string(b), "w") != "" {
		t.Errorf("the writer's output on disk: %d bytes (err %v), want %d bytes of 'w'", len(b), err, output)
	}
	c.assertNoLeaks()

	pct := func(ds []time.Duration, p float64) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[min(len(s)-1, int(float64(len(s))*p))].Round(time.Millisecond)
	}
	t.Logf("pressure: input=%s cap=%s/s overlap=%s fastest_2s stage-in=%s/s stage-out=%s/s status p50=%s p99=%s max=%s bbstat p50=%s p99=%s max=%s (%d samples)",
		units.FormatSize(input), units.FormatSize(limit), last.at.Sub(first.at).Round(time.Millisecond),
		units.FormatSize(int64(rRate)), units.FormatSize(int64(wRate)),
		pct(statusLat, .5), pct(statusLat, .99), pct(statusLat, 1), pct(bbstatLat, .5), pct(bbstatLat, .99), pct(bbstatLat, 1), len(samples))
}
