package target

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rsa-hpc/rsa/internal/stage"
	"github.com/rsa-hpc/rsa/internal/testutil"
)

// TestUpDown brings every target up twice (the second Up must find the
// first), writes through it, and takes it down twice, leaving no mount,
// loop device or namespace.
func TestUpDown(t *testing.T) {
	testutil.RequireRoot(t)
	ctx := context.Background()
	base := t.TempDir()
	c := Config{RunDir: filepath.Join(base, "run"), DiskDir: filepath.Join(base, "disk"), Size: 64 << 20, Clients: 2, SharedNet: "10.76.8"}
	for _, name := range Names {
		t.Run(name, func(t *testing.T) {
			t.Cleanup(func() {
				if err := Down(context.Background(), c, name); err != nil {
					t.Errorf("Down: %v", err)
				}
			})
			first, err := Up(ctx, c, name)
			if err != nil {
				t.Fatalf("Up: %v", err)
			}
			again, err := Up(ctx, c, name)
			if err != nil {
				t.Fatalf("Up again: %v", err)
			}
			if again.Dir != first.Dir || again.Device != first.Device {
				t.Errorf("Up again gave %+v, want %+v", again, first)
			}
			for _, d := range append([]string{first.Dir}, first.Dirs...) {
				if err := os.WriteFile(filepath.Join(d, "probe-"+filepath.Base(d)), []byte("x"), 0o644); err != nil {
					t.Fatalf("write in %s: %v", d, err)
				}
			}
			if name == "shared@1g" {
				// Every client sees what each wrote: one volume.
				for _, d := range first.Dirs {
					for _, other := range first.Dirs {
						if _, err := os.Stat(filepath.Join(d, "probe-"+filepath.Base(other))); err != nil {
							t.Errorf("client %s does not see %s's file: %v", d, other, err)
						}
					}
				}
				b, err := SharedBaseline(ctx, c, 1)
				if err != nil {
					t.Fatalf("baseline: %v", err)
				}
				// tbf at 1 Gbit/s: well over 100 Mbit/s, never over the rate.
				for _, bps := range []float64{b.ToServer, b.FromServer} {
					if bps < 100e6 || bps > 1.05e9 {
						t.Errorf("baseline %+v: want 0.1-1.05 Gbit/s each way", b)
					}
				}
				t.Logf("iperf3: %.0f / %.0f Mbit/s", b.ToServer/1e6, b.FromServer/1e6)
				// The brick delays every create by the latency set, so ten
				// creates take at least ten times it, however loaded the
				// box. Without it, the quickest of ten takes less than the
				// latency: load stretches some creates, not each of them by
				// the whole latency (the floor is measured first, and
				// logged).
				const latency = 50 * time.Millisecond
				creates := func() (total, quickest time.Duration) {
					quickest = time.Hour
					for i := range 10 {
						t0 := time.Now()
						f, err := os.CreateTemp(first.Dir, "lat-"+strconv.Itoa(i)+"-")
						if err != nil {
							t.Fatal(err)
						}
						d := time.Since(t0)
						f.Close()
						total += d
						quickest = min(quickest, d)
					}
					return total, quickest
				}
				total, quickest := creates()
				t.Logf("10 creates without added latency: %s, the quickest %s", total, quickest)
				if err := SetSharedLatency(ctx, c, latency); err != nil {
					t.Fatal(err)
				}
				if total, _ := creates(); total < 10*latency {
					t.Errorf("10 creates with %s added to each took %s, less than %s", latency, total, 10*latency)
				}
				if err := SetSharedLatency(ctx, c, 0); err != nil {
					t.Fatal(err)
				}
				if _, quickest := creates(); quickest >= latency {
					t.Errorf("with the added latency removed, the quickest of 10 creates took %s, at least the %s that was added", quickest, latency)
				}
				moverSyncsEachFile(ctx, t, c, first.Dir)
			}
			// Down finds every client, also with a Config that counts fewer.
			one := c
			one.Clients = 1
			if err := Down(ctx, one, name); err != nil {
				t.Fatalf("Down: %v", err)
			}
			if err := Down(ctx, c, name); err != nil {
				t.Fatalf("Down again: %v", err)
			}
			mounts, err := os.ReadFile("/proc/self/mountinfo")
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(mounts), base) {
				t.Errorf("mounts left under %s after Down", base)
			}
			if first.Device != "" {
				// An attached loop device has a backing file in sysfs.
				if b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(first.Device), "loop/backing_file")); err == nil {
					t.Errorf("loop device %s left, over %s", first.Device, b)
				}
			}
			// Only shared@1g has a namespace: another target's Down
			// neither makes nor removes it.
			if _, err := os.Stat("/run/netns/" + sharedNetns); name == "shared@1g" && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("namespace %s left (%v)", sharedNetns, err)
			}
		})
	}
}

func TestUnknown(t *testing.T) {
	_, err := Up(context.Background(), Config{}, "nvme")
	var u *UnknownError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "shared@1g") {
		t.Errorf("Up(nvme) = %v, want an UnknownError naming the targets", err)
	}
}

// moverSyncsEachFile: a Durable copy into a Gluster mount (FUSE) reaches
// the brick with an fsync per file, since syncfs on FUSE does not; one with
// Sync alone sends none (so the count is the mover's).
func moverSyncsEachFile(ctx context.Context, t *testing.T, c Config, dir string) {
	t.Helper()
	src := t.TempDir()
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(src, "f"+strconv.Itoa(i)), []byte("output"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	interval, stop, err := SharedProfile(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("profile stop: %v", err)
		}
	}()
	for _, durable := range []bool{false, true} {
		if _, err := interval(ctx); err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, "durable-"+strconv.FormatBool(durable))
		if err := os.Mkdir(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		m := stage.Mover{Sync: true, Durable: durable}
		if _, err := m.Copy(ctx, src, dst); err != nil {
			t.Fatalf("copy (durable %v): %v", durable, err)
		}
		got, err := interval(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := int64(0)
		if durable {
			want = 3
		}
		var n int64
		for _, f := range got {
			if f.Op == "FSYNC" {
				n = f.Calls
			}
		}
		if n != want {
			t.Errorf("a copy of 3 files, Durable %v: %d fsyncs at the brick, want %d (%v)", durable, n, want, got)
		}
	}
}
