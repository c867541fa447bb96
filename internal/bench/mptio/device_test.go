package mptio

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rsa-hpc/rsa/internal/testutil"
)

// loopDevice attaches a loop device to a new file of size bytes in a test
// directory and detaches it when the test ends, failed or not. Where loop
// devices cannot be made (not root, no losetup, none free) the test cannot
// run: it fails under CI=true (testutil.CannotRun).
func loopDevice(t *testing.T, size int64) string {
	t.Helper()
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "losetup")
	image := filepath.Join(t.TempDir(), "image")
	if err := os.WriteFile(image, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(image, size); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), "losetup", "--find", "--show", image).CombinedOutput()
	if err != nil {
		testutil.CannotRun(t, "losetup --find --show: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		// Not t.Context(): it is cancelled by the time cleanups run.
		if out, err := exec.Command("losetup", "--detach", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup --detach %s: %v: %s", dev, err, out)
		}
	})
	return dev
}

// TestRunDevices is example 3's layout, scaled down, on two loop devices:
// -R dev0 -R dev1, thread k of each process on device k.
func TestRunDevices(t *testing.T) {
	dev0, dev1 := loopDevice(t, 4*mib), loopDevice(t, 4*mib)
	for _, direct := range []bool{false, true} {
		c := Config{Procs: 3, Threads: 2, Mode: Device, Devices: []string{dev0, dev1}, GlobalSize: 3 * mib,
			RecordSize: 64 * kib, Check: true, Direct: direct, Rotate: true, Seed: 3}
		res, err := Run(t.Context(), c)
		if err != nil {
			t.Fatalf("direct %v: %v", direct, err)
		}
		checkBytes(t, res)
		if res.Plan.Records != 8 || res.Plan.Segment(2, 1, 0) != (Segment{Path: dev1, Offset: 2 * 8 * 64 * kib, Records: 8}) {
			t.Errorf("layout: numrec %d, P2T1 %+v", res.Plan.Records, res.Plan.Segment(2, 1, 0))
		}
	}
}

func TestCheckDevices(t *testing.T) {
	dev := loopDevice(t, mib)
	notDevice := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDevice, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"fits", func(*Config) {}, ""},
		{"record not a block multiple", func(c *Config) { c.RecordSize = 1000 }, "-b 1000 is not a multiple of the logical block size"},
		{"offset not a block multiple", func(c *Config) { c.Offset = 100 }, "use -s 512"},
		{"too small", func(c *Config) { c.ProcSize = 2 * mib }, "lower -f/-F or -s"},
		{"offset past the end", func(c *Config) { c.Offset = mib }, "lower -f/-F or -s"},
		{"not a device", func(c *Config) { c.Devices = []string{notDevice} }, "is not a block device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Procs: 2, Threads: 1, Mode: Device, Devices: []string{dev}, ProcSize: 256 * kib, RecordSize: 64 * kib}
			tc.change(&c)
			p, err := NewPlan(c)
			if err != nil {
				t.Fatal(err)
			}
			err = CheckDevices(p)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

// TestCheckDevicesInUse holds a device open exclusively, as a mount does,
// and expects a run that writes to refuse it and one that only reads to
// accept it.
func TestCheckDevicesInUse(t *testing.T) {
	dev := loopDevice(t, mib)
	held, err := os.OpenFile(dev, os.O_RDONLY|unix.O_EXCL, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()

	c := Config{Procs: 1, Threads: 1, Mode: Device, Devices: []string{dev}, ProcSize: 256 * kib, RecordSize: 64 * kib}
	p, err := NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckDevices(p); err == nil || !strings.Contains(err.Error(), "is in use") {
		t.Errorf("writing to a held device: %v, want it refused", err)
	}
	c.Skip = []Test{SeqWrite, ReadModifyWrite, RandomWrite}
	if p, err = NewPlan(c); err != nil {
		t.Fatal(err)
	}
	if err := CheckDevices(p); err != nil {
		t.Errorf("reading a held device: %v", err)
	}
}
