package sweep

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// needRoot fails the test, rather than skipping it, where it cannot make
// devices: a sweep that was never run must not pass for one that works.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test makes loop devices and mounts a tmpfs: run go test as root")
	}
	for _, tool := range []string{"losetup", "fio"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("this test needs %s: apt-get install util-linux fio", tool)
		}
	}
}

// tinyConfig is a 64 MiB ram-dev and four points.
func tinyConfig(t *testing.T) Config {
	return Config{
		QDs:        []int{1, 4},
		BlockSizes: []int64{64 << 10, 1 << 20},
		Size:       64 << 20,
		Runtime:    2 * time.Second,
		Devices:    []string{RAMDevice},
		Fio:        true,
		RunDir:     t.TempDir(),
	}
}

func TestRunOnRAMDevice(t *testing.T) {
	needRoot(t)
	c := tinyConfig(t)
	devs, cleanup, err := Setup(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	points, runErr := Run(t.Context(), c, devs)
	// The second check, made the sweep's way, where fio's first
	// disagrees: fio's report of its 4 threads is one job's.
	for _, dir := range []Direction{Write, Read} {
		p := pass{path: devs[0].Path, dir: dir, qd: 4, bs: 64 << 10, size: c.Size, limit: c.Runtime}
		args, ok := fioArgsThreads(p)
		if !ok {
			t.Fatalf("fioArgsThreads(%+v): none", p)
		}
		if r, err := runFio(t.Context(), p, args); err != nil || r.Bytes != c.Size || r.MiBPerSec() <= 0 {
			t.Errorf("fio %s the sweep's way: %+v, %v; want all %d bytes at a positive rate", dir, r, err, c.Size)
		}
	}
	if err := cleanup(); err != nil {
		t.Errorf("cleanup: %v", err)
	}
	if runErr != nil {
		t.Fatal(runErr)
	}
	checkGone(t, devs)

	if len(points) != 8 {
		t.Fatalf("%d points, want 2 qd × 2 bs × 2 directions = 8", len(points))
	}
	for _, p := range points {
		if p.Skip != "" || p.Rate() <= 0 || p.Fio == nil || *p.Fio <= 0 {
			t.Errorf("%s %s qd %d bs %s: rate %v, fio %v, skip %q; want a positive rate and fio value",
				p.Device, p.Direction, p.QD, SizeLabel(p.BlockSize), p.Rate(), p.Fio, p.Skip)
		}
	}
	for _, r := range Rows(points) {
		if r.CheckValue == nil || r.Check != "fio" {
			t.Errorf("row %s %v has no fio cross-check", r.Case, r.Params)
		}
	}
}

func TestCleanupAfterCancel(t *testing.T) {
	needRoot(t)
	c := tinyConfig(t)
	ctx, cancel := context.WithCancel(t.Context())
	devs, cleanup, err := Setup(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := Run(ctx, c, devs); !errors.Is(err, context.Canceled) {
		t.Errorf("Run after cancel: %v, want context.Canceled", err)
	}
	if err := cleanup(); err != nil {
		t.Errorf("cleanup after cancel: %v", err)
	}
	checkGone(t, devs)
}

// checkGone fails the test if anything of devs is still attached, mounted
// or on disk. A loop device may have been taken by someone else since; it
// is only ours if its backing file is.
func checkGone(t *testing.T, devs []Device) {
	t.Helper()
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		backing, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(d.Path), "loop", "backing_file"))
		if err == nil && strings.TrimSpace(string(backing)) == d.Backing {
			t.Errorf("%s is still attached to %s", d.Path, d.Backing)
		}
		for line := range strings.Lines(string(mounts)) {
			if f := strings.Fields(line); len(f) > 4 && f[4] == d.Dir {
				t.Errorf("%s is still mounted", d.Dir)
			}
		}
		if _, err := os.Stat(d.Dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there (stat: %v)", d.Dir, err)
		}
	}
}
